"""``chunkscope lab``: JupyterLab on the tutorial notebooks, on loopback, offline.

The notebooks start their own :class:`~chunkscope.LocalProvider` inside the
kernel, so nothing here talks to a model provider: this module only finds the
tutorials and runs ``jupyter lab`` on 127.0.0.1, with JupyterLab's news feed,
its "get notified about Jupyter news?" question and its update check turned off
(no network needed).

The tutorials are never served where they are kept: running a notebook saves its
outputs into it, and JupyterLab writes checkpoints beside it. From a checkout they
are served from a working copy in the checkout's ``my-notebooks/`` folder (ignored
by git through a ``.gitignore`` of its own), so the committed ``notebooks/`` stay
as they are and the tests keep passing; from an installed wheel, from
``~/chunkscope-notebooks``. Only missing notebooks are copied, and a copy is
replaced by a newer tutorial only while it is untouched: a user's edits and
outputs are never overwritten (:func:`copy_tutorials`).

It also turns on ipywidgets' "save widget state" setting, for this launch only:
without it JupyterLab leaves the widgets out of a saved notebook, and the
timelines of a run come back as "model not found" errors when it is reopened.
The setting is a JupyterLab *settings override* in a settings folder of the
launch's own (``--LabApp.app_settings_dir``), so the user's settings stay untouched
and still win over it.

The kernels talk to the server over Unix sockets in the launch's private runtime
folder rather than over TCP ports any local user could reach (which ipykernel
warns about in the console for every notebook opened).

Jupyter's own start-up lines are quieted (its URL line shows the token as a
literal ``...``, which leads to a login page; warnings and errors still show), and
the banner names the URL that is really served, token included, so it opens
without a login page: the port is checked before JupyterLab starts (a busy one
moves to a free one, and the banner says so) and JupyterLab is told not to move
it again; the token is ``JUPYTER_TOKEN`` (or ``JUPYTER_TOKEN_FILE``'s) when set,
else a fresh one handed to JupyterLab through its environment (not its command
line, which other users of the machine can read). A bad ``--port`` or
``--notebook-dir`` gets one line naming the flag and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from chunkscope._extras import require_modules

from ._args import CommandLineError, check_port, existing_folder, parse_port, report

__all__ = [
    "LAB_SETTINGS_OVERRIDES",
    "add_lab_parser",
    "CopiedTutorials",
    "choose_port",
    "copy_tutorials",
    "find_notebooks_dir",
    "working_notebooks_dir",
    "lab_command",
    "lab_token",
    "lab_url",
    "run_lab",
    "wait_until_serving",
    "write_lab_settings",
]

LAB_HELP = "start JupyterLab on the tutorial notebooks (127.0.0.1, offline)"
DEFAULT_PORT = 8888
SERVE_WAIT_S = 120.0
"""How long the banner waits for JupyterLab to answer before printing its URL all the same."""

_MOVE_TRIES = 20  # a busy port moves to the next free one of the following ports, else to any free one


def _port_state(port: int) -> int:
    """0 if ``port`` can be listened on at 127.0.0.1 now, else the ``errno`` why not."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # as Tornado binds: a port whose old connections linger in TIME_WAIT is free, a listening one is not
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc.errno or errno.EADDRINUSE
    return 0


def _any_free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def choose_port(port: int) -> tuple[int, str | None]:
    """The port to serve for a requested one, and a line saying why it moved (None if it did not).

    0 means any free port. A busy port moves to the next free one of the following
    ports (else any free one). A port that cannot be used for another reason (one
    below 1024 without root) is a :class:`CommandLineError`.
    """
    if check_port(port) == 0:
        return _any_free_port(), None
    state = _port_state(port)
    if state == 0:
        return port, None
    if state != errno.EADDRINUSE:
        raise CommandLineError(f"--port {port} cannot be used on 127.0.0.1: {os.strerror(state)}")
    for candidate in range(port + 1, min(port + 1 + _MOVE_TRIES, 65536)):
        if _port_state(candidate) == 0:
            return candidate, f"port {port} is busy; using {candidate} instead"
    candidate = _any_free_port()
    return candidate, f"port {port} is busy; using {candidate} instead"


def lab_token(env: MutableMapping[str, str]) -> str:
    """The token JupyterLab will ask for; sets ``JUPYTER_TOKEN`` in ``env`` when it makes one.

    Jupyter's own order: ``JUPYTER_TOKEN``, else the contents of ``JUPYTER_TOKEN_FILE``;
    with neither, a fresh random token goes into ``env`` for the server to read.
    """
    if env.get("JUPYTER_TOKEN"):
        return env["JUPYTER_TOKEN"]
    token_file = env.get("JUPYTER_TOKEN_FILE")
    if token_file:
        try:
            return Path(token_file).read_text(encoding="utf-8")  # as Jupyter reads it, unstripped
        except (OSError, UnicodeError) as exc:
            raise CommandLineError(f"JUPYTER_TOKEN_FILE {token_file} cannot be read: {exc}") from None
    env["JUPYTER_TOKEN"] = secrets.token_hex(24)
    return env["JUPYTER_TOKEN"]


def lab_url(port: int, token: str) -> str:
    """The address that opens JupyterLab without a login page."""
    return f"http://127.0.0.1:{port}/lab?token={quote(token, safe='')}"


def _notebook_root(notebook_dir: Path | None) -> Path:
    """The folder to serve: ``notebook_dir`` as it is, else a working copy of the tutorials."""
    if notebook_dir is not None:
        return existing_folder(notebook_dir, flag="--notebook-dir")
    tutorials = find_notebooks_dir()
    try:
        if tutorials is not None:
            copies = copy_tutorials(tutorials, tutorials.parent / CHECKOUT_FOLDER_NAME)
        elif _has_notebooks(SHIPPED_NOTEBOOKS):
            copies = copy_tutorials(SHIPPED_NOTEBOOKS, Path.home() / WORKING_FOLDER_NAME)
        else:
            raise CommandLineError(
                "no notebooks/ folder found here or beside the package; "
                "run it from a chunkscope checkout or pass --notebook-dir"
            )
    except OSError as exc:
        raise CommandLineError(f"cannot make the working copy of the tutorial notebooks: {exc}") from None
    for line in copies.report():
        print(f"chunkscope lab: {line}", file=sys.stderr)
    return copies.folder


def _has_notebooks(folder: Path) -> bool:
    return folder.is_dir() and any(folder.glob("*.ipynb"))


def _is_checkout(folder: Path) -> bool:
    return (folder / "src" / "chunkscope" / "__init__.py").is_file() and _has_notebooks(folder / "notebooks")


def find_notebooks_dir(start: Path | None = None) -> Path | None:
    """The tutorials of a chunkscope checkout: the ``notebooks/`` folder of the checkout holding
    the current directory (or ``start``), else of the checkout this package runs from (an editable
    install); None if neither (a wheel's tutorials are :data:`SHIPPED_NOTEBOOKS`).

    Only a chunkscope checkout counts (``src/chunkscope`` beside ``notebooks/``): another
    project's ``notebooks/`` folder is not the tutorials.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if _is_checkout(folder):
            return folder / "notebooks"
    checkout = Path(__file__).resolve().parents[3]  # src/chunkscope/cli/lab.py → the repository's root
    return checkout / "notebooks" if _is_checkout(checkout) else None


SHIPPED_NOTEBOOKS = Path(__file__).resolve().parents[1] / "_notebooks"
"""The tutorials inside an installed wheel (``pyproject.toml`` puts ``notebooks/`` here)."""

WORKING_FOLDER_NAME = "chunkscope-notebooks"
"""An installed package's working copy: ``~/chunkscope-notebooks``."""

CHECKOUT_FOLDER_NAME = "my-notebooks"
"""A checkout's working copy: ``my-notebooks/`` beside ``notebooks/``, ignored by git."""

_COPIED_RECORD = ".chunkscope-copied.json"  # notebook name → sha256 of the tutorial last copied


@dataclass
class CopiedTutorials:
    """What :func:`copy_tutorials` did: the working folder, and which notebooks it wrote or kept."""

    folder: Path
    copied: list[str] = field(default_factory=list)
    """Missing from the folder: copied now."""
    updated: list[str] = field(default_factory=list)
    """Untouched copies of an older tutorial: replaced by the new one."""
    kept: list[str] = field(default_factory=list)
    """Copies the user changed (edited, or ran and saved) whose tutorial has changed: left as they are."""

    def report(self) -> list[str]:
        """One line per thing worth saying, for the launch's console."""
        lines = [f"the tutorials' working copies are in {self.folder} (edits and outputs stay there)"]
        if self.copied:
            what = "tutorial notebook" if len(self.copied) == 1 else "tutorial notebooks"
            lines.append(f"copied {len(self.copied)} {what} into {self.folder}")
        if self.updated:
            lines.append(f"updated the untouched {', '.join(self.updated)} to the newer tutorial")
        for name in self.kept:
            lines.append(
                f"{name} differs from the tutorial, which has changed: your copy is kept "
                "(delete it to get the tutorial's)"
            )
        return lines


def copy_tutorials(source: Path, target: Path) -> CopiedTutorials:
    """Bring ``target`` up to date with the tutorials in ``source``; never overwrite a user's work.

    A missing notebook is copied. A copy still exactly as it was copied is replaced when its
    tutorial has changed (a ``git pull`` or an upgrade); a copy the user edited, or ran and
    saved, is kept and named in :attr:`CopiedTutorials.kept`. Deleting a copy brings the
    tutorial back on the next launch. ``target`` gets a ``.gitignore`` that ignores the whole
    folder, so a working copy inside a checkout never shows in ``git status``.
    """
    target.mkdir(parents=True, exist_ok=True)
    ignore = target / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# chunkscope lab's working copies of the tutorials: not in the repository\n*\n")
    record_path = target / _COPIED_RECORD
    record = _read_record(record_path)
    result = CopiedTutorials(target)
    for tutorial in sorted(source.glob("*.ipynb")):
        name, wanted = tutorial.name, tutorial.read_bytes()
        digest = _sha256(wanted)
        copy = target / name
        if copy.exists():
            current = copy.read_bytes()
            if current == wanted:
                record[name] = digest
                continue
            if record.get(name) == digest:
                continue  # the tutorial is the one copied: the differences are the user's
            if record.get(name) != _sha256(current):
                result.kept.append(name)  # the user's changes, made to an older tutorial
                continue
            result.updated.append(name)  # untouched since it was copied: the newer tutorial replaces it
        else:
            result.copied.append(name)
        _write_whole(copy, wanted)
        record[name] = digest
    _write_whole(record_path, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())
    return result


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_record(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: every existing copy counts as the user's
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items()}


def _write_whole(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (a file beside it, then a rename)."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def working_notebooks_dir(
    home: Path | None = None, shipped: Path = SHIPPED_NOTEBOOKS
) -> tuple[Path, int] | None:
    """An installed package's working copy, ``~/chunkscope-notebooks``, and how many were copied now.

    An installed package's folder may be read-only and is replaced on upgrade, so the
    notebooks are served from a copy in the user's home (:func:`copy_tutorials`). None
    when the package ships no notebooks (a checkout).
    """
    if not _has_notebooks(shipped):
        return None
    copies = copy_tutorials(shipped, (home or Path.home()) / WORKING_FOLDER_NAME)
    return copies.folder, len(copies.copied)


# JupyterLab settings overrides (plugin id → setting → default) for a chunkscope launch:
# save the widgets' state into the notebook, so a saved run still shows its timelines
# and never ask about (or fetch) Jupyter's news: the question's pop-up covers the first notebook
LAB_SETTINGS_OVERRIDES: dict[str, dict[str, Any]] = {
    "@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}

# what JupyterLab reads from its application settings folder besides overrides.json
_CARRIED_OVER = ("overrides.d", "page_config.json", "page_config.json5")


def write_lab_settings(target: Path, *, base: Path | None = None) -> Path:
    """Fill ``target`` as a JupyterLab application settings folder; returns ``target``.

    It holds :data:`LAB_SETTINGS_OVERRIDES` merged over ``base``'s ``overrides.json``
    (``base`` is the folder JupyterLab would read otherwise: an administrator's
    overrides, ``overrides.d`` and page config are carried over, and only the settings
    chunkscope needs are changed). User settings still win over every override.
    """
    target.mkdir(parents=True, exist_ok=True)
    overrides: dict[str, Any] = {}
    if base is not None and base.is_dir() and base.resolve() != target.resolve():
        for name in _CARRIED_OVER:
            source = base / name
            if source.is_dir():
                shutil.copytree(source, target / name, dirs_exist_ok=True)
            elif source.is_file():
                shutil.copyfile(source, target / name)
        overrides = _read_overrides(base)
    for plugin, values in LAB_SETTINGS_OVERRIDES.items():
        overrides[plugin] = {**overrides.get(plugin, {}), **values}
    # JupyterLab reads overrides.json before overrides.json5: drop a stale json5 beside ours
    (target / "overrides.json5").unlink(missing_ok=True)
    (target / "overrides.json").write_text(json.dumps(overrides, indent=2) + "\n", encoding="utf-8")
    return target


def _read_overrides(folder: Path) -> dict[str, Any]:
    for name in ("overrides.json", "overrides.json5"):
        path = folder / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
            if name.endswith(".json5"):
                import json5  # a dependency of jupyterlab_server

                data: Any = json5.loads(text)
            else:
                data = json.loads(text)
        except (OSError, ValueError):  # JupyterLab too would ignore a file it cannot read
            return {}
        if isinstance(data, Mapping):
            return {str(k): dict(v) for k, v in data.items() if isinstance(v, Mapping)}
    return {}


def lab_command(
    root_dir: Path,
    *,
    port: int = DEFAULT_PORT,
    open_browser: bool = True,
    settings_dir: Path | None = None,
    kernel_sockets: Path | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The ``jupyter lab`` command line that :func:`run_lab` runs.

    ``settings_dir`` (a folder filled by :func:`write_lab_settings`) becomes
    JupyterLab's application settings folder, where its overrides are read.
    ``kernel_sockets`` (a path prefix in a private folder) makes the kernels talk to
    the server over Unix sockets there instead of TCP ports that any local user can
    reach (each kernel would also print a warning saying so into the console).
    """
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        f"--ServerApp.root_dir={root_dir}",
        # offline: no announcements feed, no version check against PyPI
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        # Jupyter's start-up lines bury the banner, and its URL line shows the token as a literal
        # "...", which opens a login page: only warnings and errors, the banner names the real URL
        "--ServerApp.log_level=WARN",
        "--LabApp.log_level=WARN",
    ]
    if not any(arg.startswith("--ServerApp.port_retries") for arg in extra):  # traitlets refuses it twice
        command.append(
            "--ServerApp.port_retries=0"
        )  # serve this port or fail: never one the banner did not name
    if settings_dir is not None:
        command.append(f"--LabApp.app_settings_dir={settings_dir}")
    if kernel_sockets is not None:
        command += ["--KernelManager.transport=ipc", f"--KernelManager.ip={kernel_sockets}"]
    if not open_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # containers and CI machines run as root
    command.extend(extra)
    return command


def run_lab(
    *,
    port: int = DEFAULT_PORT,
    open_browser: bool = True,
    notebook_dir: Path | None = None,
    extra: Sequence[str] = (),
) -> int:
    """Run JupyterLab until it exits; returns its exit status.

    Prints (on stderr) the URL it serves, token included, once the server
    answers there (``wait_until_serving``); a busy ``port``
    moves to a free one, with a line saying which. Bad input (a missing or
    non-folder ``notebook_dir``, a port that is not one) prints one line and
    returns 2 without starting anything.

    On POSIX the process *becomes* JupyterLab (``exec``), so Ctrl-C and signals
    reach the server directly and nothing is left running behind it.
    """
    require_modules("chunkscope lab", "jupyterlab", "jupyter_core")  # before anything is copied or printed
    env = dict(os.environ)
    try:
        root = _notebook_root(notebook_dir)
        port, moved = choose_port(port)
        token = lab_token(env)
    except CommandLineError as exc:
        return report("lab", exc)
    if moved:
        print(f"chunkscope lab: {moved}", file=sys.stderr)
    settings = write_lab_settings(_launch_settings_dir(), base=_default_app_settings_dir())
    command = lab_command(
        root.resolve(),
        port=port,
        open_browser=open_browser,
        settings_dir=settings,
        kernel_sockets=_kernel_sockets(settings.parent),
        extra=extra,
    )
    # The URL is printed once the server answers: a URL that refuses the first click helps no one.
    _announce_when_serving(port, f"\nchunkscope lab: serving {root} at {lab_url(port, token)}\n")
    if os.name == "posix":
        sys.stdout.flush()
        os.execve(command[0], command, env)  # same pid: the settings folder's name stays true
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:  # Ctrl-C already reached JupyterLab, which shuts itself down
        return 130
    finally:
        shutil.rmtree(settings.parent, ignore_errors=True)


def wait_until_serving(port: int, *, timeout: float, alive: Callable[[], bool] = lambda: True) -> bool:
    """True once an HTTP server answers on 127.0.0.1:``port`` (any status); False after ``timeout``
    seconds or as soon as ``alive()`` says the server's process is gone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
                # /api answers without the token and is not logged: no 403 warning in the console
                sock.sendall(b"GET /api HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                if sock.recv(5) == b"HTTP/":
                    return True
        except OSError:
            pass
        time.sleep(0.1)  # polling a real server's start: there is no event to wait on
    return False


def _announce_when_serving(port: int, line: str) -> None:
    """Print ``line`` on stderr once JupyterLab answers on ``port``, without holding up its start.

    On POSIX this process is about to *become* JupyterLab (``exec``), so the
    waiting is done by a detached grandchild (adopted by init: no zombie under
    the server) that gives up when the server's process ends. Elsewhere a
    daemon thread waits while JupyterLab runs as a child process.
    """
    if os.name != "posix":
        threading.Thread(target=_print_when_serving, args=(port, line, lambda: True), daemon=True).start()
        return
    sys.stderr.flush()
    server = os.getpid()  # exec keeps the pid: this is JupyterLab's, soon
    child = os.fork()
    if child:
        os.waitpid(child, 0)
        return
    try:
        if os.fork() == 0:
            _print_when_serving(port, line, lambda: _alive(server))
    finally:
        os._exit(0)  # the (grand)child never returns into the command


def _print_when_serving(port: int, line: str, alive: Callable[[], bool]) -> None:
    if wait_until_serving(port, timeout=SERVE_WAIT_S, alive=alive) or alive():
        print(line, file=sys.stderr, flush=True)


_LAUNCH_PREFIX = "chunkscope-lab-"


def _launch_settings_dir() -> Path:
    """This launch's own settings folder, in Jupyter's per-user runtime folder.

    Named for the process id, which JupyterLab keeps after ``exec``; the folders of
    launches whose process is gone are removed here (on POSIX, where that is knowable).
    """
    from jupyter_core.paths import jupyter_runtime_dir

    runtime = Path(jupyter_runtime_dir())
    runtime.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.name == "posix":
        for old in runtime.glob(f"{_LAUNCH_PREFIX}*"):
            pid = old.name.removeprefix(_LAUNCH_PREFIX)
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                shutil.rmtree(old, ignore_errors=True)
    folder = runtime / f"{_LAUNCH_PREFIX}{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)  # a dead launch's leftovers under a reused pid
    return folder / "settings"


_SOCKET_PATH_MAX = 100  # a Unix socket's path: 107 bytes on Linux, 103 on macOS; room for "-12"


def _kernel_sockets(launch_folder: Path) -> Path | None:
    """The path prefix of the kernels' Unix sockets, in the launch's own (private) folder; None
    (TCP on loopback, as Jupyter does by default) without Unix sockets or when the path is too long."""
    prefix = launch_folder / "kernel"
    if os.name != "posix" or len(os.fsencode(prefix)) + 3 > _SOCKET_PATH_MAX:
        return None
    return prefix


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # POSIX only: signal 0 checks, sends nothing
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _default_app_settings_dir() -> Path:
    """Where JupyterLab would read its settings overrides without chunkscope."""
    from jupyterlab.commands import get_app_dir  # type: ignore[import-untyped]

    return Path(get_app_dir()) / "settings"


def add_lab_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``chunkscope lab`` on a CLI's subparsers; sets ``func`` to a handler."""
    parser = subparsers.add_parser("lab", help=LAB_HELP, description=LAB_HELP)
    # --port is checked by the handler, not argparse: a bad value gets one line, not usage + error
    parser.add_argument(
        "--port",
        default=str(DEFAULT_PORT),
        metavar="N",
        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; a busy one moves to a free one; 0: any free one)",
    )
    parser.add_argument("--no-browser", action="store_true", help="do not open a web browser")
    parser.add_argument(
        "--notebook-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help=(
            f"folder to serve as it is (default: a working copy of the tutorials, in the checkout's "
            f"{CHECKOUT_FOLDER_NAME}/ folder, else ~/{WORKING_FOLDER_NAME})"
        ),
    )
    parser.set_defaults(func=_handle, subcommand_parser=parser)


def _handle(args: argparse.Namespace) -> int:
    try:
        port = parse_port(str(args.port))
    except CommandLineError as exc:
        return report("lab", exc)
    return run_lab(port=port, open_browser=not args.no_browser, notebook_dir=args.notebook_dir)
