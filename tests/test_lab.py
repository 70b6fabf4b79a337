"""``chunkscope lab``: the README's main command serves the tutorial notebooks on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import chunkscope.cli.lab as lab_module
from chunkscope.cli.lab import find_notebooks_dir, lab_command, write_lab_settings

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_finds_the_checkouts_notebooks_folder_from_anywhere(tmp_path: Path) -> None:
    assert find_notebooks_dir(REPO_ROOT / "src") == REPO_ROOT / "notebooks"
    assert find_notebooks_dir(tmp_path) == REPO_ROOT / "notebooks"  # editable install: beside the source
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "mine.ipynb").write_text("{}")
    # another project's notebooks/ folder is not the tutorials
    assert find_notebooks_dir(tmp_path / "notebooks") == REPO_ROOT / "notebooks"


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def _fake_checkout(root: Path) -> Path:
    """A committed git repository shaped like a chunkscope checkout, with two tutorials."""
    (root / "src" / "chunkscope").mkdir(parents=True)
    (root / "src" / "chunkscope" / "__init__.py").write_text("")
    (root / "notebooks").mkdir()
    (root / "notebooks" / "01-a.ipynb").write_text('{"cells": []}')
    (root / "notebooks" / "02-b.ipynb").write_text('{"cells": [1]}')
    _git("init", "-q", cwd=root)
    _git("add", "-A", cwd=root)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "tutorials", cwd=root)
    return root


def test_a_checkout_serves_a_working_copy_that_git_ignores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    checkout = _fake_checkout(tmp_path / "checkout")
    monkeypatch.chdir(checkout / "src")
    served = lab_module._notebook_root(None)
    assert served == checkout / "my-notebooks"
    err = capsys.readouterr().err.splitlines()
    said = f"chunkscope lab: the tutorials' working copies are in {served} (edits and outputs stay there)"
    assert said in err
    assert f"chunkscope lab: copied 2 tutorial notebooks into {served}" in err
    # what running and saving in JupyterLab leaves: outputs in the notebook, a checkpoint beside it
    (served / "01-a.ipynb").write_text('{"cells": ["with outputs"]}')
    (served / ".ipynb_checkpoints").mkdir()
    (served / ".ipynb_checkpoints" / "01-a-checkpoint.ipynb").write_text("{}")
    (served / "Untitled.ipynb").write_text("{}")
    assert _git("status", "--porcelain", "--untracked-files=all", cwd=checkout) == ""
    assert (checkout / "notebooks" / "01-a.ipynb").read_text() == '{"cells": []}'
    assert lab_module._notebook_root(None) == served  # the next launch: the run notebook is kept
    assert (served / "01-a.ipynb").read_text() == '{"cells": ["with outputs"]}'
    assert "copied" not in capsys.readouterr().err


def test_a_working_copy_follows_the_tutorials_but_never_overwrites_the_users_work(tmp_path: Path) -> None:
    tutorials = tmp_path / "notebooks"
    tutorials.mkdir()
    for name in ("01-a.ipynb", "02-b.ipynb", "03-c.ipynb"):
        (tutorials / name).write_text(f"{name} v1")
    work = tmp_path / "work"
    first = lab_module.copy_tutorials(tutorials, work)
    assert (first.copied, first.updated, first.kept) == (["01-a.ipynb", "02-b.ipynb", "03-c.ipynb"], [], [])
    (work / "01-a.ipynb").write_text("my edits")  # edited
    (work / "03-c.ipynb").unlink()  # deleted: comes back
    for name in ("01-a.ipynb", "02-b.ipynb", "03-c.ipynb"):
        (tutorials / name).write_text(f"{name} v2")  # a `git pull` brings newer tutorials
    second = lab_module.copy_tutorials(tutorials, work)
    assert (second.copied, second.updated, second.kept) == (["03-c.ipynb"], ["02-b.ipynb"], ["01-a.ipynb"])
    assert (work / "01-a.ipynb").read_text() == "my edits"
    assert (work / "02-b.ipynb").read_text() == "02-b.ipynb v2"  # untouched: the newer tutorial
    assert (work / "03-c.ipynb").read_text() == "03-c.ipynb v2"
    assert any("01-a.ipynb differs from the tutorial" in line for line in second.report())
    third = lab_module.copy_tutorials(tutorials, work)
    assert (third.copied, third.updated) == ([], [])
    assert (work / "01-a.ipynb").read_text() == "my edits"
    assert not list(work.glob(".*.partial"))


def test_a_working_copy_from_before_the_record_keeps_what_differs(tmp_path: Path) -> None:
    tutorials = tmp_path / "notebooks"
    tutorials.mkdir()
    (tutorials / "01-a.ipynb").write_text("tutorial")
    (tutorials / "02-b.ipynb").write_text("tutorial 2")
    work = tmp_path / "work"
    work.mkdir()
    (work / "01-a.ipynb").write_text("a user's run")  # no record of what was copied: the user's
    (work / "02-b.ipynb").write_text("tutorial 2")
    copies = lab_module.copy_tutorials(tutorials, work)
    assert (copies.copied, copies.updated, copies.kept) == ([], [], ["01-a.ipynb"])
    assert (work / "01-a.ipynb").read_text() == "a user's run"


LEFTOVERS = (
    ".ipynb_checkpoints/01-streamchunk-protocol-checkpoint.ipynb",
    "01-streamchunk-protocol-checkpoint.ipynb",
    "01-streamchunk-protocol-Copy1.ipynb",
    "Untitled.ipynb",
    "01-streamchunk-protocol.ipynb~",
    ".#01-streamchunk-protocol.ipynb",
    ".01-streamchunk-protocol.ipynb.swp",
    "notes.txt",
    "scratch/01-a.ipynb",
)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_wheel_ships_only_the_committed_tutorials_whatever_the_checkout_holds(tmp_path: Path) -> None:
    source = tmp_path / "checkout"
    tracked = _git("ls-files", cwd=REPO_ROOT).splitlines()
    for name in tracked:
        if (REPO_ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(REPO_ROOT / name, source / name)
    for leftover in LEFTOVERS:  # JupyterLab's checkpoints, its "Duplicate", editors' backups and locks
        (source / "notebooks" / leftover).parent.mkdir(parents=True, exist_ok=True)
        (source / "notebooks" / leftover).write_text("{}")
    (source / "src" / "chunkscope" / "protocol.py~").write_text("")
    lab_module.copy_tutorials(source / "notebooks", source / lab_module.CHECKOUT_FOLDER_NAME)  # a user's
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [wheel] = (tmp_path / "dist").glob("chunkscope-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(name for name in names if name.startswith("chunkscope/_notebooks/"))
    committed = sorted(name for name in tracked if re.fullmatch(r"notebooks/[^/]+\.ipynb", name))
    assert shipped == [name.replace("notebooks/", "chunkscope/_notebooks/") for name in committed]
    assert not [name for name in names if "checkpoint" in name or name.endswith("~")], names
    assert "chunkscope/protocol/__init__.py" in names and "chunkscope/py.typed" in names
    assert not [name for name in names if lab_module.CHECKOUT_FOLDER_NAME in name], names


def test_the_source_distribution_leaves_out_the_working_copy() -> None:
    import tomllib

    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    targets = pyproject["tool"]["hatch"]["build"]["targets"]
    folder = lab_module.CHECKOUT_FOLDER_NAME
    # hatch reads the root .gitignore only, not the working copy's own
    assert f"/{folder}" in targets["sdist"]["exclude"]
    assert not any(folder in path for path in targets["wheel"]["only-include"])


def test_serves_on_loopback_only_and_offline(tmp_path: Path) -> None:
    command = lab_command(tmp_path, port=9999, open_browser=False)
    assert "--ServerApp.ip=127.0.0.1" in command
    assert "--ServerApp.port=9999" in command
    assert f"--ServerApp.root_dir={tmp_path}" in command
    assert "--no-browser" in command
    assert "--ServerApp.port_retries=0" in command  # JupyterLab never moves to a port the banner did not name
    assert "--LabApp.news_url=None" in command  # no announcements feed from the internet
    assert "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate" in command
    # Jupyter's own start-up lines (and its "token=..." URL) stay quiet: the banner is what stands out
    assert "--ServerApp.log_level=WARN" in command and "--LabApp.log_level=WARN" in command


WIDGETS_PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"


def test_lab_settings_turn_widget_state_saving_on_over_the_existing_overrides(tmp_path: Path) -> None:
    base = tmp_path / "share-jupyter-lab-settings"  # what JupyterLab would read without chunkscope
    (base / "overrides.d").mkdir(parents=True)
    admin = {
        "@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
        WIDGETS_PLUGIN: {"saveState": False, "other": 1},
    }
    (base / "overrides.json").write_text(json.dumps(admin))
    (base / "overrides.d" / "site.json").write_text('{"x:y": {"z": 1}}')
    (base / "page_config.json").write_text('{"disabledExtensions": ["a"]}')

    target = write_lab_settings(tmp_path / "launch" / "settings", base=base)

    overrides = json.loads((target / "overrides.json").read_text())
    assert overrides[WIDGETS_PLUGIN] == {"saveState": True, "other": 1}
    assert overrides["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}
    assert (target / "overrides.d" / "site.json").read_text() == '{"x:y": {"z": 1}}'
    assert (target / "page_config.json").read_text() == '{"disabledExtensions": ["a"]}'
    assert json.loads((base / "overrides.json").read_text()) == admin  # the shared folder is untouched
    assert write_lab_settings(tmp_path / "bare")  # no base folder: only chunkscope's override
    bare = json.loads((tmp_path / "bare" / "overrides.json").read_text())
    assert bare == {WIDGETS_PLUGIN: {"saveState": True}, NOTIFICATION_PLUGIN: NO_NEWS}


NOTIFICATION_PLUGIN = "@jupyterlab/apputils-extension:notification"
NO_NEWS = {"fetchNews": "false", "checkForUpdates": False}


def test_the_news_question_is_answered_never_in_the_installed_jupyterlabs_own_terms() -> None:
    # the installed JupyterLab's schema: an override it does not know would be ignored
    from jupyterlab.commands import get_app_dir  # type: ignore[import-untyped]

    schema_path = Path(get_app_dir()) / "schemas" / "@jupyterlab" / "apputils-extension" / "notification.json"
    properties = json.loads(schema_path.read_text(encoding="utf-8"))["properties"]
    assert lab_module.LAB_SETTINGS_OVERRIDES[NOTIFICATION_PLUGIN] == NO_NEWS
    never = [choice for choice in properties["fetchNews"]["oneOf"] if choice["title"] == "Never"]
    assert [choice["const"] for choice in never] == [NO_NEWS["fetchNews"]], properties["fetchNews"]
    assert properties["checkForUpdates"]["type"] == "boolean"


def test_lab_command_takes_a_port_retries_of_the_callers_without_repeating_it(tmp_path: Path) -> None:
    command = lab_command(tmp_path, open_browser=False, extra=["--ServerApp.port_retries=3"])
    # JupyterLab refuses to start when a setting is given twice on its command line
    assert [arg for arg in command if arg.startswith("--ServerApp.port_retries")] == [
        "--ServerApp.port_retries=3"
    ]


def test_kernel_sockets_are_unix_sockets_in_the_launch_folder_when_the_path_fits(tmp_path: Path) -> None:
    launch = Path("/tmp/rt/chunkscope-lab-1")
    assert lab_module._kernel_sockets(launch) == launch / "kernel"
    assert lab_module._kernel_sockets(Path("/tmp") / ("x" * 120)) is None  # too long for a socket: TCP
    command = lab_command(tmp_path, open_browser=False, kernel_sockets=Path("/tmp/rt/k"))
    assert "--KernelManager.transport=ipc" in command and "--KernelManager.ip=/tmp/rt/k" in command
    assert not any("KernelManager" in arg for arg in lab_command(tmp_path, open_browser=False))


def test_lab_command_points_jupyterlab_at_the_launch_settings(tmp_path: Path) -> None:
    command = lab_command(tmp_path / "nb", open_browser=False, settings_dir=tmp_path / "settings")
    assert f"--LabApp.app_settings_dir={tmp_path / 'settings'}" in command


class _Execed(Exception):
    pass


def test_run_lab_saves_widget_state_without_touching_user_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "runtime"
    user_settings = tmp_path / "user-settings"
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("JUPYTERLAB_SETTINGS_DIR", str(user_settings))
    dead = runtime / "chunkscope-lab-99999999"  # above Linux's pid_max: a launch long gone
    (dead / "settings").mkdir(parents=True)
    launched: list[tuple[list[str], dict[str, Any]]] = []  # argv, overrides.json as JupyterLab reads it

    def launch(argv: list[str]) -> None:
        [flag] = [arg for arg in argv if arg.startswith("--LabApp.app_settings_dir=")]
        overrides = json.loads((Path(flag.partition("=")[2]) / "overrides.json").read_text())
        launched.append((argv, overrides))

    def fake_exec(path: str, argv: list[str], env: dict[str, str]) -> None:
        launch(argv)
        raise _Execed  # a real exec never returns

    monkeypatch.setattr(lab_module.os, "execve", fake_exec)
    monkeypatch.setattr(lab_module.subprocess, "call", lambda argv, env: launch(argv) or 0)
    monkeypatch.setattr(lab_module, "_announce_when_serving", _say_now)
    with contextlib.suppress(_Execed):
        lab_module.run_lab(open_browser=False, notebook_dir=REPO_ROOT / "notebooks")
    [(command, overrides)] = launched
    [flag] = [arg for arg in command if arg.startswith("--LabApp.app_settings_dir=")]
    settings = Path(flag.partition("=")[2])
    assert settings.parent.parent == runtime  # the launch's own folder, not a shared one
    assert overrides[WIDGETS_PLUGIN]["saveState"] is True
    assert not user_settings.exists(), "chunkscope lab wrote into the user's JupyterLab settings"
    if os.name == "posix":
        assert settings.parent.name == f"chunkscope-lab-{os.getpid()}"
        assert not dead.exists(), "a dead launch's settings folder was left behind"
        # the kernels' sockets: Unix sockets in the launch's private folder when its path is short enough
        # for one (a real runtime folder's is; this test's tmp path may not be), else TCP on loopback
        ipc = ["--KernelManager.transport=ipc", f"--KernelManager.ip={settings.parent / 'kernel'}"]
        short = len(str(settings.parent / "kernel")) + 3 <= lab_module._SOCKET_PATH_MAX
        assert all(flag in command for flag in ipc) is short, command
    else:  # JupyterLab ran as a child process: its settings folder goes with it
        assert not settings.exists()


BANNER = re.compile(r"chunkscope lab: serving .* at (http://127\.0\.0\.1:(\d+)/lab\?token=(\S+))")


@pytest.mark.slow
def test_chunkscope_lab_serves_jupyterlab_on_the_notebooks_at_the_banners_url(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    beside = Path(sys.executable).with_name("chunkscope")  # this interpreter's own script first (venvs)
    executable = str(beside) if beside.exists() else shutil.which("chunkscope")
    assert executable, "the chunkscope command is not installed (pip install -e .[lab])"
    # a runtime folder whose path is as short as a real one (~/.local/share/jupyter/runtime): room for
    # the kernels' Unix sockets
    runtime = Path(tempfile.mkdtemp(prefix="cs-rt-"))
    request.addfinalizer(lambda: shutil.rmtree(runtime, ignore_errors=True))
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("JUPYTER_TOKEN", "JUPYTER_TOKEN_FILE")},
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    log_path = tmp_path / "lab.log"
    log = log_path.open("wb")
    busy = socket.socket()  # the port asked for is taken: the banner must name the one really served
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    asked = busy.getsockname()[1]
    process = subprocess.Popen(
        [executable, "lab", "--no-browser", "--port", str(asked)],
        cwd=tmp_path,  # not the checkout: the command still finds its notebooks
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, log_path.read_text()
            text = log_path.read_text()
            banner = BANNER.search(text)
            if banner:
                try:
                    if httpx.get(f"http://127.0.0.1:{banner[2]}/api/status", timeout=10).status_code:
                        break
                except httpx.HTTPError:
                    pass
            assert time.monotonic() < deadline, text
            time.sleep(0.25)  # waiting for a real server to start
        url, port, token = banner[1], int(banner[2]), banner[3]
        assert f"chunkscope lab: port {asked} is busy; using {port} instead" in text
        # the working copy is served, not the committed tutorials; Jupyter's own "token=..." line is quiet
        assert f"chunkscope lab: serving {REPO_ROOT / 'my-notebooks'} at " in text, text
        assert "token=..." not in text and "[I " not in text, text
        base = f"http://127.0.0.1:{port}"
        page = httpx.get(url)  # the banner's URL as it is: no redirect to a login page
        assert page.status_code == 200 and "JupyterLab" in page.text, (page.status_code, page.headers)
        listing = httpx.get(f"{base}/api/contents", params={"token": token}).json()
        names = {item["name"] for item in listing["content"]}
        assert "01-streamchunk-protocol.ipynb" in names, names
        # the launch's override: ipywidgets writes widget state into saved notebooks
        plugin = httpx.get(f"{base}/lab/api/settings/{WIDGETS_PLUGIN}", params={"token": token}).json()
        assert plugin["schema"]["properties"]["saveState"]["default"] is True, plugin["schema"]
        # and JupyterLab never asks about Jupyter's news (its pop-up covered the first notebook)
        news = httpx.get(f"{base}/lab/api/settings/{NOTIFICATION_PLUGIN}", params={"token": token}).json()
        assert news["schema"]["properties"]["fetchNews"]["default"] == "false", news["schema"]
        # a kernel started as JupyterLab starts one answers, over the launch's Unix sockets, quietly
        printed, sockets = _run_code_in_a_new_kernel(
            port, token, "print(6 * 7)", sockets=lambda: sorted(p.name for p in runtime.glob("*/kernel-*"))
        )
        assert printed == "42\n" and sockets, sockets
        assert "without encryption" not in log_path.read_text(), log_path.read_text()
    finally:
        busy.close()
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _run_code_in_a_new_kernel(
    port: int, token: str, code: str, *, sockets: Callable[[], list[str]]
) -> tuple[str, list[str]]:
    """Start a kernel through the server's API and run ``code`` over its websocket: what it printed,
    and what ``sockets()`` found while the kernel ran."""
    import uuid

    import websocket  # websocket-client: a dependency of jupyter_server

    base = f"http://127.0.0.1:{port}"
    kernel = httpx.post(f"{base}/api/kernels", params={"token": token}, json={"name": "python3"}, timeout=60)
    assert kernel.status_code == 201, kernel.text
    kernel_id = kernel.json()["id"]
    socket_url = f"ws://127.0.0.1:{port}/api/kernels/{kernel_id}/channels?token={token}"
    connection = websocket.create_connection(socket_url, timeout=60)
    try:
        msg_id = uuid.uuid4().hex
        connection.send(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "msg_type": "execute_request",
                        "username": "test",
                        "session": msg_id,
                        "version": "5.3",
                    },
                    "parent_header": {},
                    "metadata": {},
                    "channel": "shell",
                    "content": {
                        "code": code,
                        "silent": False,
                        "store_history": False,
                        "user_expressions": {},
                        "allow_stdin": False,
                    },
                }
            )
        )
        printed = ""
        while True:
            message = json.loads(connection.recv())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "stream":
                printed += message["content"]["text"]
            elif message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                return printed, sockets()
    finally:
        connection.close()
        httpx.delete(f"{base}/api/kernels/{kernel_id}", params={"token": token}, timeout=60)


# --- what `chunkscope lab` says: the banner's URL, a busy port, bad flags -------------------------


@pytest.fixture
def launches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], dict[str, str]]]:
    """JupyterLab launches (argv, environment) that `chunkscope lab` made; none is really started."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("JUPYTERLAB_SETTINGS_DIR", str(tmp_path / "user-settings"))
    monkeypatch.delenv("JUPYTER_TOKEN", raising=False)
    monkeypatch.delenv("JUPYTER_TOKEN_FILE", raising=False)
    launched: list[tuple[list[str], dict[str, str]]] = []

    def fake_exec(path: str, argv: list[str], env: dict[str, str]) -> None:
        launched.append((argv, env))
        raise _Execed  # a real exec never returns

    def fake_call(argv: list[str], env: dict[str, str]) -> int:
        launched.append((argv, env))
        return 0

    monkeypatch.setattr(lab_module.os, "execve", fake_exec)
    monkeypatch.setattr(lab_module.subprocess, "call", fake_call)
    # No server starts here: say the banner at once (the waiting itself is tested below).
    monkeypatch.setattr(lab_module, "_announce_when_serving", _say_now)
    return launched


def _say_now(port: int, line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _lab(*args: str) -> int:
    from chunkscope.cli import main

    try:
        return main(["lab", "--no-browser", *args])
    except _Execed:
        return 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _served_port(argv: list[str]) -> int:
    [flag] = [arg for arg in argv if arg.startswith("--ServerApp.port=")]
    return int(flag.partition("=")[2])


def test_banner_names_the_url_served_with_the_token_jupyterlab_was_given(
    launches: list[tuple[list[str], dict[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    port = _free_port()
    assert _lab("--port", str(port)) == 0
    [(argv, env)] = launches
    token = env["JUPYTER_TOKEN"]
    assert len(token) >= 32  # a fresh random token, not an empty one (no login page, but not open either)
    assert _served_port(argv) == port
    banner = capsys.readouterr().err.strip().splitlines()
    assert banner[-1].endswith(f"at http://127.0.0.1:{port}/lab?token={token}"), banner
    assert not any(token in arg for arg in argv), "the token is on the command line, where `ps` shows it"


def test_banner_uses_the_token_already_set_in_the_environment(
    launches: list[tuple[list[str], dict[str, str]]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUPYTER_TOKEN", "my token/1")
    assert _lab("--port", "0") == 0
    [(_, env)] = launches
    assert env["JUPYTER_TOKEN"] == "my token/1"
    assert "/lab?token=my%20token%2F1" in capsys.readouterr().err


def test_a_busy_port_moves_to_a_free_one_and_says_which(
    launches: list[tuple[list[str], dict[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert _lab("--port", str(port)) == 0
    [(argv, env)] = launches
    served = _served_port(argv)
    assert served != port
    err = capsys.readouterr().err
    assert f"chunkscope lab: port {port} is busy; using {served} instead" in err.splitlines()
    assert f"http://127.0.0.1:{served}/lab?token={env['JUPYTER_TOKEN']}" in err


def test_port_zero_serves_any_free_port_without_a_moved_line(
    launches: list[tuple[list[str], dict[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _lab("--port", "0") == 0
    [(argv, _)] = launches
    assert 0 < _served_port(argv) <= 65535
    err = capsys.readouterr().err
    assert "busy" not in err and f"127.0.0.1:{_served_port(argv)}/lab?token=" in err


@pytest.mark.parametrize("port", ["99999", "-1", "65536", "eighty"])
def test_an_invalid_port_is_refused_with_one_line(
    port: str, launches: list[tuple[list[str], dict[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _lab("--port", port) == 2
    assert launches == []
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert line.startswith("chunkscope lab: --port ") and port in line, line
    assert "1-65535" in line
    assert captured.out == ""


def test_a_missing_notebook_dir_is_named(
    tmp_path: Path, launches: list[tuple[list[str], dict[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-folder"
    assert _lab("--notebook-dir", str(missing)) == 2
    assert launches == []
    assert capsys.readouterr().err.splitlines() == [
        f"chunkscope lab: --notebook-dir {missing}: no such folder"
    ]


def test_a_notebook_dir_that_is_a_file_is_named(
    tmp_path: Path, launches: list[tuple[list[str], dict[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "notes.ipynb"
    a_file.write_text("{}")
    assert _lab("--notebook-dir", str(a_file)) == 2
    assert launches == []
    assert capsys.readouterr().err.splitlines() == [
        f"chunkscope lab: --notebook-dir {a_file} is a file, not a folder"
    ]


def test_an_unknown_lab_flag_prints_the_lab_usage(
    launches: list[tuple[list[str], dict[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        _lab("--prot", "9000")
    assert exited.value.code == 2
    assert launches == []
    err = capsys.readouterr().err
    assert err.startswith("usage: chunkscope lab ")
    assert "chunkscope lab: error: unrecognized arguments: --prot 9000" in err


def test_the_real_command_refuses_a_bad_port_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chunkscope.cli", "lab", "--no-browser", "--port", "99999"],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "chunkscope lab: --port 99999 is not a port (1-65535, or 0 for any free port)"
    ]


# --- the banner waits for the server ------------------------------------------------------------

_LATE_SERVER = """
import http.server, sys, threading, time
from chunkscope.cli.lab import _announce_when_serving
port = int(sys.argv[1])
_announce_when_serving(port, "BANNER")
print("launched", file=sys.stderr, flush=True)
time.sleep(1.0)  # JupyterLab takes its time to answer; the banner must wait for it
server = http.server.HTTPServer(("127.0.0.1", port), http.server.BaseHTTPRequestHandler)
print("answering", file=sys.stderr, flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
time.sleep(3.0)
"""


@pytest.mark.timeout(30)
def test_the_banner_is_printed_once_the_server_answers_not_before(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", _LATE_SERVER, str(port)], capture_output=True, text=True, env=env, timeout=20
    )
    lines = done.stderr.splitlines()
    assert done.returncode == 0, done.stderr
    assert "BANNER" in lines, lines
    assert lines.index("launched") < lines.index("answering") < lines.index("BANNER"), lines


@pytest.mark.timeout(10)
def test_waiting_for_a_server_that_never_answers_ends_at_its_timeout_or_when_it_dies() -> None:
    port = _free_port()
    started = time.monotonic()
    assert lab_module.wait_until_serving(port, timeout=0.5) is False
    assert time.monotonic() - started < 3.0
    started = time.monotonic()
    assert lab_module.wait_until_serving(port, timeout=60, alive=lambda: False) is False
    assert time.monotonic() - started < 1.0


def test_an_installed_package_serves_a_copy_of_its_notebooks_keeping_the_users_edits(tmp_path: Path) -> None:
    from chunkscope.cli.lab import working_notebooks_dir

    shipped = tmp_path / "site-packages" / "chunkscope" / "_notebooks"
    shipped.mkdir(parents=True)
    (shipped / "01-a.ipynb").write_text("shipped 1")
    (shipped / "02-b.ipynb").write_text("shipped 2")
    home = tmp_path / "home"
    folder, copied = working_notebooks_dir(home, shipped) or (None, 0)
    assert folder == home / "chunkscope-notebooks" and copied == 2
    (folder / "01-a.ipynb").write_text("my edits")
    (folder / "02-b.ipynb").unlink()  # deleting one brings the shipped one back
    assert working_notebooks_dir(home, shipped) == (folder, 1)
    assert (folder / "01-a.ipynb").read_text() == "my edits"
    assert (folder / "02-b.ipynb").read_text() == "shipped 2"
    assert working_notebooks_dir(home, tmp_path / "nothing") is None  # a checkout ships none
