"""``chunkscope lab``: JupyterLab on the tutorial notebooks, on loopback, offline.

The notebooks start their own :class:`~chunkscope.LocalProvider` inside the
kernel, so nothing here talks to a model provider: this module only finds the
notebooks folder and runs ``jupyter lab`` on 127.0.0.1 with it as root, with
JupyterLab's news feed and update check turned off (no network needed).

It also turns on ipywidgets' "save widget state" setting, for this launch only:
without it JupyterLab leaves the widgets out of a saved notebook, and the
timelines of a run come back as "model not found" errors when it is reopened.
The setting is a JupyterLab *settings override* in a settings folder of the
launch's own (``--LabApp.app_settings_dir``), so the user's settings stay untouched
and still win over it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "LAB_SETTINGS_OVERRIDES",
    "add_lab_parser",
    "find_notebooks_dir",
    "lab_command",
    "run_lab",
    "write_lab_settings",
]

LAB_HELP = "start JupyterLab on the tutorial notebooks (127.0.0.1, offline)"


def find_notebooks_dir(start: Path | None = None) -> Path | None:
    """The ``notebooks/`` folder to serve: under the current directory or one of its
    parents, else the one beside the source checkout (editable install); None if none.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "notebooks"
        if candidate.is_dir() and any(candidate.glob("*.ipynb")):
            return candidate
    checkout = Path(__file__).resolve().parents[2] / "notebooks"  # src/chunkscope/_lab.py → repo root
    return checkout if checkout.is_dir() else None


# JupyterLab settings overrides (plugin id → setting → default) for a chunkscope launch:
# save the widgets' state into the notebook, so a saved run still shows its timelines
LAB_SETTINGS_OVERRIDES: dict[str, dict[str, Any]] = {
    "@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True},
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
    port: int = 8888,
    open_browser: bool = True,
    settings_dir: Path | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The ``jupyter lab`` command line that :func:`run_lab` runs.

    ``settings_dir`` (a folder filled by :func:`write_lab_settings`) becomes
    JupyterLab's application settings folder, where its overrides are read.
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
    ]
    if settings_dir is not None:
        command.append(f"--LabApp.app_settings_dir={settings_dir}")
    if not open_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # containers and CI machines run as root
    command.extend(extra)
    return command


def run_lab(
    *,
    port: int = 8888,
    open_browser: bool = True,
    notebook_dir: Path | None = None,
    extra: Sequence[str] = (),
) -> int:
    """Run JupyterLab until it exits; returns its exit status (2 if no notebooks folder).

    On POSIX the process *becomes* JupyterLab (``exec``), so Ctrl-C and signals
    reach the server directly and nothing is left running behind it.
    """
    root = notebook_dir or find_notebooks_dir()
    if root is None or not root.is_dir():
        print(
            "chunkscope lab: no notebooks/ folder found here or beside the package; "
            "run it from a chunkscope checkout or pass --notebook-dir",
            file=sys.stderr,
        )
        return 2
    settings = write_lab_settings(_launch_settings_dir(), base=_default_app_settings_dir())
    command = lab_command(
        root.resolve(), port=port, open_browser=open_browser, settings_dir=settings, extra=extra
    )
    print(f"chunkscope lab: serving {root} on http://127.0.0.1:{port}/lab", file=sys.stderr, flush=True)
    if os.name == "posix":
        sys.stdout.flush()
        os.execv(command[0], command)  # same pid: the settings folder's name stays true
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:  # Ctrl-C already reached JupyterLab, which shuts itself down
        return 130
    finally:
        shutil.rmtree(settings.parent, ignore_errors=True)


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
    parser.add_argument("--port", type=int, default=8888, help="port on 127.0.0.1 (default 8888)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a web browser")
    parser.add_argument(
        "--notebook-dir", type=Path, default=None, help="folder to serve (default: the notebooks/ folder)"
    )
    parser.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    return run_lab(port=args.port, open_browser=not args.no_browser, notebook_dir=args.notebook_dir)
