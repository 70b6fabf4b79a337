"""Ctrl-C in any subcommand waiting on its input: one line on stderr and exit 130, never a traceback."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


@pytest.mark.parametrize("command", ["check", "show", "usage"])
def test_ctrl_c_while_waiting_on_a_fifo_is_one_line_and_exit_130(command: str, tmp_path: Path) -> None:
    fifo = tmp_path / "stream.jsonl"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen(
        [sys.executable, "-m", "chunkscope.cli", command, str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    writer = -1
    try:
        deadline = time.monotonic() + 30
        while writer < 0:  # a writer can open the FIFO only once the command opened it to read
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                assert exc.errno == errno.ENXIO and process.poll() is None and time.monotonic() < deadline
                time.sleep(0.01)
        # The command waits for bytes that never come. A SIGINT that lands between Python's last
        # check of its signal flag and the blocking read is only seen at the next one (a person
        # presses Ctrl-C again): send it once the process sleeps, and again if it still waits.
        for _ in range(4):
            _wait_until_asleep(process.pid)
            process.send_signal(signal.SIGINT)
            try:
                out, err = process.communicate(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            raise AssertionError("four Ctrl-C did not stop the command")
    finally:
        if writer >= 0:
            os.close(writer)
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert err == f"chunkscope {command}: interrupted\n"
    assert "Traceback" not in out


def _wait_until_asleep(pid: int) -> None:
    """Until the process is blocked in the kernel (state S in /proc), or two seconds pass."""
    deadline = time.monotonic() + 2
    stat = Path(f"/proc/{pid}/stat")
    while time.monotonic() < deadline:
        try:
            if stat.read_text().rpartition(")")[2].split()[0] == "S":
                return
        except (OSError, IndexError):
            return
        time.sleep(0.01)
