"""Stored streams under hostile input: bounded size and memory, blank lines at speed, kinds by magic bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zstandard

from chunkscope.sources import load_streams
from chunkscope.sources.dsh import DshLogError, read_dsh_session
from dsh_examples import EXAMPLE_5A, write

SRC = str(Path(__file__).resolve().parents[2] / "src")
HEADER = '{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}\n'


def _zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=19).compress(data)


@pytest.mark.timeout(60)
def test_a_zstd_bomb_is_refused_at_the_decompressed_bound_in_bounded_time_and_memory(tmp_path: Path) -> None:
    # ~300 MiB of blank lines after a real log: a few KB compressed, over the 256 MiB bound inside
    bomb = tmp_path / "session.jsonl.zstd"
    compressor = zstandard.ZstdCompressor(level=3)
    with open(bomb, "wb") as handle, compressor.stream_writer(handle) as out:
        out.write(EXAMPLE_5A.encode())
        for _ in range(300):
            out.write(b"\n" * (1 << 20))
    assert bomb.stat().st_size < 100_000
    code = (
        "import sys, time\n"
        "from chunkscope.sources import load_streams, SourceError\n"
        "start = time.perf_counter()\n"
        "try:\n"
        "    load_streams(sys.argv[1])\n"
        "    outcome = 'read'\n"
        "except SourceError as exc:\n"
        "    outcome = getattr(exc, 'code', type(exc).__name__)\n"
        "peak = int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) // 1024\n"
        "print(outcome, peak, round(time.perf_counter() - start, 1))\n"
    )
    # VmHWM: the child's own peak (ru_maxrss would keep the pytest process's, from before exec)
    done = subprocess.run(
        [sys.executable, "-c", code, str(bomb)],
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": SRC},  # a clean environment: its own peak,
        capture_output=True,
        text=True,
        timeout=55,
    )
    outcome, peak_mib, seconds = done.stdout.split()
    assert outcome == "too-big", (done.stdout, done.stderr)
    # the bound is on what comes out, not what is kept; the time bound is the 55 s watchdog above
    assert int(peak_mib) < 250, f"peak {peak_mib} MiB after {seconds} s"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("compress", [False, True])
def test_blank_lines_are_read_at_the_speed_of_the_rest(tmp_path: Path, compress: bool) -> None:
    blank = 32 << 20  # 32 Mi blank lines: ~2 minutes at the old 0.24 MB/s
    lines = EXAMPLE_5A.encode() + b"\n" * blank + EXAMPLE_5A.encode().split(b"\n", 1)[1]
    path = tmp_path / ("session.jsonl.zstd" if compress else "session.jsonl")
    path.write_bytes(_zstd(lines) if compress else lines)
    start = time.perf_counter()
    session = read_dsh_session(path)
    assert time.perf_counter() - start < 10
    assert session.lines == lines.count(b"\n") + (not lines.endswith(b"\n"))
    assert len(session.steps) == 1 and len(session.steps[0].attempts) == 2  # the step logged twice


def test_a_bound_on_the_decompressed_size_ends_the_read_with_too_big(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl.zstd"
    data = EXAMPLE_5A.encode() + b"\n" * (4 << 20)
    path.write_bytes(_zstd(data))
    with pytest.raises(DshLogError) as caught:
        read_dsh_session(path, max_bytes=1 << 20)
    assert caught.value.code == "too-big" and "decompressed" in str(caught.value)
    assert len(read_dsh_session(path, max_bytes=len(data)).steps) == 1


def test_a_plain_session_log_named_zstd_is_read_by_its_bytes(tmp_path: Path) -> None:
    plain = write(tmp_path / "session.jsonl.zstd", EXAMPLE_5A)
    assert [len(step.attempts) for step in read_dsh_session(plain).steps] == [1]
    assert [s.kind for s in load_streams(plain)] == ["dsh"]


def test_a_turn_end_without_turn_ends_the_current_turn_instead_of_refusing_the_file(tmp_path: Path) -> None:
    # the harness's own snapshot kit writes turn/end with only a reason
    chunk = {"type": "block-start", "index": 0, "blockType": "text"}
    events = [
        {"type": "turn/start", "data": {"turn": 1}},
        {"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": chunk}},
        {"type": "turn/end", "data": {"reason": {"kind": "done"}}},
    ]
    path = write(tmp_path / "session.jsonl", HEADER + "".join(json.dumps(e) + "\n" for e in events))
    session = read_dsh_session(path)
    assert session.problems == []
    assert session.turn_ends == {1: {"kind": "done"}}
    (attempt,) = session.attempts
    assert attempt.synthesized and attempt.result.chunks[-1].reason.kind == "aborted"
    wrong = json.dumps({"type": "turn/end", "data": {"turn": "1"}})
    bad = write(tmp_path / "bad.jsonl", HEADER + wrong + "\n")
    with pytest.raises(DshLogError) as caught:
        read_dsh_session(bad)
    assert caught.value.code == "record" and caught.value.line == 2


@pytest.mark.timeout(120)
def test_the_reader_keeps_a_constant_small_memory_per_logged_delta(tmp_path: Path) -> None:
    # one event per line (packChunks off), the layout that keeps the most per line; measured in a child
    code = (
        "import sys, tracemalloc\n"
        "from chunkscope.sources.dsh import DshLogWriter, read_dsh_session\n"
        "def stream(n):\n"
        "    deltas = [{'type': 'text-delta', 'index': 0, 'text': 'tok%d' % i} for i in range(n)]\n"
        "    return [{'type': 'block-start', 'index': 0, 'blockType': 'text'}, *deltas,\n"
        "            {'type': 'finish', 'reason': {'kind': 'stop'}}]\n"
        "def kept(path, steps):\n"
        "    with DshLogWriter(path, packed=False) as log:\n"
        "        for step in range(1, steps + 1):\n"
        "            log.step(1, step, stream(40))\n"
        "    tracemalloc.start()\n"
        "    session = read_dsh_session(path)\n"
        "    held = tracemalloc.get_traced_memory()[0]\n"
        "    tracemalloc.stop()\n"
        "    return held, session.lines\n"
        "small, small_lines = kept(sys.argv[1] + '/a.jsonl', 200)\n"
        "big, big_lines = kept(sys.argv[1] + '/b.jsonl', 1000)\n"
        "print(round((big - small) / (big_lines - small_lines)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": SRC},  # a clean environment: its own peak,
        capture_output=True,
        text=True,
        timeout=110,
    )
    per_line = int(done.stdout)  # bytes kept per extra line: the slope, whatever the fixed costs
    assert per_line < 350, f"{per_line} bytes kept per line (a parsed dict per line is ~600)"
