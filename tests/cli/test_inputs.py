"""The command line reads every input once, as a stream: pipes and FIFOs, bounded, named when unreadable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _cli_streams import example, write_log, write_recording, write_session_log

from chunkscope.cli import _inputs, main

SRC = str(Path(__file__).resolve().parents[2] / "src")


@contextmanager
def fifo_of(tmp_path: Path, data: bytes, name: str = "stream") -> Iterator[str]:
    """A named pipe that a thread fills with ``data`` once a reader opens it."""
    path = tmp_path / name
    os.mkfifo(path)

    def fill() -> None:
        with open(path, "wb") as handle:  # blocks until the command opens it
            handle.write(data)

    writer = threading.Thread(target=fill, daemon=True)
    writer.start()
    try:
        yield str(path)
    finally:
        if writer.is_alive():  # the command never opened it: unblock the writer
            with open(path, "rb") as handle:
                handle.read()
        writer.join(5)


@contextmanager
def pipe_of(data: bytes) -> Iterator[str]:
    """``/dev/fd/N`` of an anonymous pipe holding ``data``: what a shell's ``<(cat file)`` passes."""
    read_end, write_end = os.pipe()

    def fill() -> None:
        with os.fdopen(write_end, "wb") as handle:
            handle.write(data)

    writer = threading.Thread(target=fill, daemon=True)
    writer.start()
    try:
        yield f"/dev/fd/{read_end}"
    finally:
        writer.join(5)
        os.close(read_end)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["chunks", "recording", "session", "session-zstd"])
@pytest.mark.parametrize("via", ["fifo", "pipe"])
def test_check_reads_a_fifo_or_a_process_substitution_once_as_a_stream(
    kind: str, via: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "source.jsonl"
    if kind == "chunks":
        write_log(source, example())
    elif kind == "recording":
        write_recording(source, example())
    else:
        write_session_log(source, compress=kind == "session-zstd")
    data = source.read_bytes()
    main(["check", "--format", "json", str(source)])
    expected = json.loads(capsys.readouterr().out)
    opened = fifo_of(tmp_path, data) if via == "fifo" else pipe_of(data)
    with opened as path:
        code = main(["check", "--format", "json", path])
    out, err = capsys.readouterr()
    assert err == "" and code == 0
    document = json.loads(out)
    assert [(s["label"], s["chunks"], s["errors"]) for s in document["streams"]] == [
        (s["label"], s["chunks"], s["errors"]) for s in expected["streams"]
    ]


@pytest.mark.timeout(60)
def test_usage_reads_a_session_log_and_its_prices_from_pipes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_session_log(tmp_path / "session.jsonl").read_bytes()
    prices = (
        b'[[prices]]\nprovider = "*"\nmodel = "deepseek-v4-pro"\n'
        b"cache_miss_input = 1.0\ncache_hit_input = 0.1\noutput = 2.0\n"
    )
    with fifo_of(tmp_path, log, "log") as log_path, pipe_of(prices) as prices_path:
        code = main(["usage", log_path, "--prices", prices_path])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in err and "cost USD" in out


@pytest.mark.timeout(60)
def test_prices_from_dev_zero_are_refused_within_a_bounded_memory() -> None:
    # a child process, so its peak memory is its own: VmHWM (ru_maxrss would keep the forking parent's)
    code = (
        "import sys\n"
        "from chunkscope.cli import main\n"
        "status = main(['usage', 'nothing.jsonl', '--prices', '/dev/zero'])\n"
        "peak = int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) // 1024\n"
        "print(status, peak)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": SRC},  # a clean environment: its own peak,
        capture_output=True,
        text=True,
        timeout=50,
    )
    status, peak_mib = map(int, done.stdout.split())
    assert status == 2
    assert done.stderr.count("\n") == 1 and "--prices /dev/zero: over the" in done.stderr
    assert peak_mib < 400, f"peak {peak_mib} MiB"


def test_check_json_names_each_unreadable_file_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_log(tmp_path / "good.jsonl", example())
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    missing = tmp_path / "missing.jsonl"
    code = main(["check", "--format", "json", str(good), str(empty), str(missing)])
    document = json.loads(capsys.readouterr().out)
    assert code == 2 and document["unreadable"] == 2
    named = {entry["path"]: entry["reason"] for entry in document["unreadable_files"]}
    assert set(named) == {str(empty), str(missing)}
    assert "empty file" in named[str(empty)] and "cannot read it" in named[str(missing)]


def test_a_zstd_log_whose_decompressed_size_passes_the_bound_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import zstandard

    plain = write_session_log(tmp_path / "session.jsonl").read_bytes()
    bomb = tmp_path / "bomb.jsonl.zstd"
    # the log, then 4 MiB of padding spaces after its last newline: tiny compressed, big inside
    bomb.write_bytes(zstandard.ZstdCompressor().compress(plain + b"\n" * (4 << 20)))
    assert bomb.stat().st_size < 10_000
    monkeypatch.setattr(_inputs, "MAX_BYTES", 1 << 20)
    code = main(["check", str(bomb)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "over the 1,048,576-byte limit (decompressed)" in err and "[too-big]" in err


def test_a_plain_session_log_named_zstd_is_read_as_plain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_session_log(tmp_path / "session.jsonl")
    named = tmp_path / "session.jsonl.zstd"
    named.write_bytes(path.read_bytes())
    assert main(["check", str(named)]) == 0
    assert "corrupt" not in capsys.readouterr().err


def test_a_zstd_log_without_zstandard_installed_is_one_line_naming_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_session_log(tmp_path / "session.jsonl.zstd", compress=True)
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as on an install without the extra
    code = main(["check", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert 'pip install "chunkscope[usage]"' in err and str(path) in err
