"""``chunkscope lab``: the README's main command serves the tutorial notebooks on loopback."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from chunkscope._lab import find_notebooks_dir, lab_command

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
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
