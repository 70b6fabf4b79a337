"""``chunkscope tap``: serves until Ctrl-C, then exits 0 with every recording complete and usage written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pandas as pd
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
