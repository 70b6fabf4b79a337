"""``chunkscope lab``: the README's main command serves the tutorial notebooks on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

import chunkscope._lab as lab_module
from chunkscope._lab import find_notebooks_dir, lab_command, write_lab_settings

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_finds_the_checkouts_notebooks_folder_from_anywhere(tmp_path: Path) -> None:
    assert find_notebooks_dir(REPO_ROOT / "src") == REPO_ROOT / "notebooks"
    assert find_notebooks_dir(tmp_path) == REPO_ROOT / "notebooks"  # editable install: beside the source


def test_serves_on_loopback_only_and_offline(tmp_path: Path) -> None:
    command = lab_command(tmp_path, port=9999, open_browser=False)
    assert "--ServerApp.ip=127.0.0.1" in command
    assert "--ServerApp.port=9999" in command
    assert f"--ServerApp.root_dir={tmp_path}" in command
    assert "--no-browser" in command
    assert "--LabApp.news_url=None" in command  # no announcements feed from the internet
    assert "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate" in command


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
    assert bare == {WIDGETS_PLUGIN: {"saveState": True}}


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

    def fake_exec(path: str, argv: list[str]) -> None:
        launch(argv)
        raise _Execed  # a real exec never returns

    monkeypatch.setattr(lab_module.os, "execv", fake_exec)
    monkeypatch.setattr(lab_module.subprocess, "call", lambda argv: launch(argv) or 0)
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
    else:  # JupyterLab ran as a child process: its settings folder goes with it
        assert not settings.exists()


@pytest.mark.slow
def test_chunkscope_lab_serves_jupyterlab_on_the_notebooks(tmp_path: Path) -> None:
    beside = Path(sys.executable).with_name("chunkscope")  # this interpreter's own script first (venvs)
    executable = str(beside) if beside.exists() else shutil.which("chunkscope")
    assert executable, "the chunkscope command is not installed (pip install -e .[lab])"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = uuid.uuid4().hex
    env = {
        **os.environ,
        "JUPYTER_TOKEN": token,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    log = (tmp_path / "lab.log").open("wb")
    process = subprocess.Popen(
        [executable, "lab", "--no-browser", "--port", str(port)],
        cwd=tmp_path,  # not the checkout: the command still finds its notebooks
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, (tmp_path / "lab.log").read_text()
            try:
                if httpx.get(f"{base}/api/status", params={"token": token}).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "lab.log").read_text()
            time.sleep(0.25)  # waiting for a real server to start
        page = httpx.get(f"{base}/lab", params={"token": token})
        assert page.status_code == 200 and "JupyterLab" in page.text
        listing = httpx.get(f"{base}/api/contents", params={"token": token}).json()
        names = {item["name"] for item in listing["content"]}
        assert "01-streamchunk-protocol.ipynb" in names, names
        # the launch's override: ipywidgets writes widget state into saved notebooks
        plugin = httpx.get(f"{base}/lab/api/settings/{WIDGETS_PLUGIN}", params={"token": token}).json()
        assert plugin["schema"]["properties"]["saveState"]["default"] is True, plugin["schema"]
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
