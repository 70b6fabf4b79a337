"""``chunkscope tap``: serves until Ctrl-C, then exits 0 with every recording complete and usage written."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pandas as pd
import pytest
from _tap_helpers import AUTH, KEY, stream_body

import chunkscope as cs

SRC = Path(__file__).resolve().parents[2] / "src"


def start_cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", "chunkscope.cli", "tap", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_the_command_taps_calls_and_stops_cleanly_on_ctrl_c(
    provider: cs.LocalProvider, tmp_path: Path
) -> None:
    record, usage = tmp_path / "rec", tmp_path / "usage.parquet"
    process = start_cli("--upstream", provider.url, "--record", str(record), "--usage", str(usage))
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("chunkscope tap on http://127.0.0.1:"), first
        base = first.split()[3]
        for model in ("text", "fault-429"):
            httpx.post(f"{base}/v1/chat/completions", json=stream_body(model), headers=AUTH, timeout=10)
        # a stream still open at Ctrl-C ends as ABORTED and is recorded too
        with httpx.stream(
            "POST", f"{base}/v1/chat/completions", json=stream_body("slow-tokens"), headers=AUTH, timeout=10
        ) as response:
            next(response.iter_raw())
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "3 calls" in out and KEY not in out + err
    assert "RATE_LIMIT" in out  # the piped output: one line per finished call
    files = sorted(record.glob("*.jsonl"))
    assert len(files) == 3 and not list(record.glob("*.part"))
    for path in files:
        assert cs.ReplayAdapter(path).read().header["adapter"] == "Tap"
    frame = pd.read_parquet(usage)
    assert list(frame["model"]) == ["text", "fault-429", "slow-tokens"]


def test_a_bad_port_or_wire_is_one_line_and_exit_2(provider: cs.LocalProvider) -> None:
    for args in (["--port", "99999"], ["--wire", "grpc"]):
        process = start_cli("--upstream", provider.url, *args)
        _, err = process.communicate(timeout=20)
        assert process.returncode == 2
        assert err.count("\n") == 1 and err.startswith("chunkscope tap: ")


def test_listening_beyond_loopback_warns_loudly(provider: cs.LocalProvider) -> None:
    process = start_cli("--upstream", provider.url, "--host", "0.0.0.0")
    try:
        assert process.stdout is not None
        process.stdout.readline()
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert "WARNING" in err and "not only on loopback" in err


def _under_file_limit(limit: int, *args: str, hard: int | None = None) -> subprocess.Popen[str]:
    """``chunkscope tap`` in a child whose file limit is ``limit`` (as `ulimit -n` would set; ``hard``:
    the hard limit, by default the same)."""
    import resource

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", "chunkscope.cli", "tap", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard or limit)),
    )


def _flood(base: str, count: int) -> list[socket.socket]:
    host, port = base.removeprefix("http://").split(":")
    return [socket.create_connection((host, int(port)), timeout=5) for _ in range(count)]


def _stop(process: subprocess.Popen[str]) -> tuple[str, str]:
    process.send_signal(signal.SIGINT)
    return process.communicate(timeout=20)


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX file limit")
def test_under_a_low_file_limit_the_default_cap_answers_503_and_nobody_is_locked_out(
    provider: cs.LocalProvider,
) -> None:
    process = _under_file_limit(128, "--upstream", provider.url)
    try:
        assert process.stdout is not None
        base = process.stdout.readline().split()[3]
        idle = _flood(base, 200)  # far more than 128 descriptors could hold
        held = httpx.post(f"{base}/v1/chat/completions", json=stream_body("text"), headers=AUTH, timeout=10)
        assert held.status_code == 503  # answered at once, not left hanging
        for sock in idle:
            sock.close()
        deadline = time.monotonic() + 10
        while (
            got := httpx.post(f"{base}/v1/chat/completions", json=stream_body("text"), timeout=10)
        ).status_code == 503:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert got.status_code == 200
        _, err = _stop(process)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "Traceback" not in err and len(err) < 2000


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX file limit")
def test_the_command_raises_a_low_soft_file_limit_to_the_hard_one(provider: cs.LocalProvider) -> None:
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 1024:
        pytest.skip(f"the hard file limit here is {hard}")
    process = _under_file_limit(128, "--upstream", provider.url, hard=hard)
    try:
        assert process.stdout is not None
        base = process.stdout.readline().split()[3]
        idle = _flood(base, 200)  # more than a soft limit of 128 could serve
        got = httpx.post(f"{base}/v1/chat/completions", json=stream_body("text"), headers=AUTH, timeout=10)
        assert got.status_code == 200
        for sock in idle:
            sock.close()
        _stop(process)
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX file limit")
def test_accept_failures_are_one_line_not_a_flood(provider: cs.LocalProvider) -> None:
    process = _under_file_limit(128, "--upstream", provider.url, "--max-connections", "1000")
    try:
        assert process.stdout is not None
        base = process.stdout.readline().split()[3]
        idle = _flood(base, 200)  # the tap runs out of descriptors: accept() fails for the rest
        deadline = time.monotonic() + 10
        assert process.stderr is not None
        line = process.stderr.readline()  # said at once ...
        assert "cannot accept connections" in line and time.monotonic() < deadline
        for sock in idle:
            sock.close()
        while True:  # ... and the tap serves again once descriptors are free
            try:
                got = httpx.post(f"{base}/v1/chat/completions", json=stream_body("text"), timeout=10)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert got.status_code == 200
        _, err = _stop(process)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0
    assert "Traceback" not in err and len(err) < 1000  # ... once: asyncio logged a traceback per accept


def test_a_recordings_folder_others_can_write_to_is_one_line_and_exit_2(
    provider: cs.LocalProvider, tmp_path: Path
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    process = start_cli("--upstream", provider.url, "--record", str(folder))
    out, err = process.communicate(timeout=20)
    assert process.returncode == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"chunkscope tap: --record {folder}: ") and "chmod" in err


def test_the_limits_are_flags(provider: cs.LocalProvider) -> None:
    process = start_cli("--upstream", provider.url, "--max-connections", "1", "--head-timeout", "0.2")
    try:
        assert process.stdout is not None
        base = process.stdout.readline().split()[3]
        first, second = _flood(base, 2)
        assert second.recv(100).startswith(b"HTTP/1.1 503")  # over --max-connections 1
        assert first.recv(100) == b""  # idle past --head-timeout: closed
        first.close()
        second.close()
        bad = start_cli("--upstream", provider.url, "--keep-bytes", "0")
        _, bad_err = bad.communicate(timeout=20)
        assert bad.returncode == 2 and "--keep-bytes" in bad_err and bad_err.count("\n") == 1
        _stop(process)
    finally:
        if process.poll() is None:
            process.kill()


_RETRY_AFTER_STOP = """
import logging, resource, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
logging.basicConfig(stream=sys.stderr, format="%(message)s")
from chunkscope.tap import Tap
tap = Tap(upstream="http://127.0.0.1:9", max_connections=1000).start()
clients = []
try:
    for _ in range(100):
        clients.append(socket.create_connection(tap._bound, timeout=5))
except OSError:
    pass  # this process's own descriptors ran out too
time.sleep(0.3)  # the tap's accept() failed meanwhile: asyncio retries it in a second
for client in clients:
    client.close()
loop = tap._loop
loop.call_soon_threadsafe(lambda: loop.run_in_executor(None, time.sleep, 1.5))  # the loop outlives the retry
time.sleep(0.1)
tap.stop()
print("stopped")
"""


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX file limit")
def test_an_accept_retry_due_after_the_tap_stopped_says_nothing() -> None:
    """asyncio re-arms a failed accept a second later, also when the tap closed its socket in
    between; stopping then is quiet, not a traceback about file descriptor -1."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _RETRY_AFTER_STOP], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "stopped"
    assert "cannot accept connections" in done.stderr  # the retry was armed
    assert "Traceback" not in done.stderr and "file descriptor" not in done.stderr, done.stderr
