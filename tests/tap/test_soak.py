"""A long-running ``chunkscope tap``: an endless stream and 1,000 short calls in bounded memory.

The tap runs as a child process (as users leave it running); its resident memory is read from
/proc while an upstream streams without end through it and 1,000 short calls go by. After a
warm-up, the memory stays flat within the ``--keep-bytes`` budget, however many bytes pass.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _tap_helpers import AUTH, stream_body

SRC = Path(__file__).resolve().parents[2] / "src"
BUDGET = 8 << 20
_PING = b": " + b"p" * 16380 + b"\n\n"  # an SSE comment: the stream never ends and never says anything
_SHORT = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


def _serve(connection: socket.socket, stop: threading.Event) -> None:
    with connection, contextlib.suppress(OSError):
        while not stop.is_set():
            head = b""
            while b"\r\n\r\n" not in head:
                part = connection.recv(65536)
                if not part:
                    return
                head += part
            length = next(
                (
                    int(h.split(b":")[1])
                    for h in head.split(b"\r\n")
                    if h.lower().startswith(b"content-length")
                ),
                0,
            )
            body = head.partition(b"\r\n\r\n")[2]
            while len(body) < length:
                body += connection.recv(65536)
            if b"/endless/" in head.split(b"\r\n", 1)[0]:
                connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
                while not stop.is_set():
                    connection.sendall(_PING)
                return
            connection.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n"
                % len(_SHORT)
                + _SHORT
            )


@contextlib.contextmanager
def upstream() -> Iterator[str]:
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_serve, args=(connection, stop), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the child's memory from /proc")
def test_an_endless_stream_and_1000_calls_run_in_flat_memory() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    with upstream() as url:
        process = subprocess.Popen(
            [sys.executable, "-m", "chunkscope.cli", "tap", "--upstream", url, "--keep-bytes", str(BUDGET)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert process.stdout is not None
            base = process.stdout.readline().split()[3]
            streamed = [0]
            done = threading.Event()

            def endless() -> None:
                with (
                    contextlib.suppress(httpx.HTTPError),
                    httpx.stream(
                        "POST",
                        f"{base}/endless/v1/chat/completions",
                        json=stream_body("endless"),
                        headers=AUTH,
                    ) as response,
                ):
                    for part in response.iter_raw():
                        streamed[0] += len(part)
                        if done.is_set():
                            return

            reader = threading.Thread(target=endless, daemon=True)
            reader.start()
            samples: list[tuple[int, int]] = []
            with httpx.Client(timeout=10) as client:
                for n in range(1000):
                    got = client.post(
                        f"{base}/v1/chat/completions", json=stream_body("text", f"{n}"), headers=AUTH
                    )
                    assert got.status_code == 200
                    if n % 100 == 99:
                        samples.append((streamed[0], rss(process.pid)))
            done.set()
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=30)
            reader.join(10)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, err
    warm = samples[1][1]  # after 200 calls and whatever streamed meanwhile
    growth = max(memory for _, memory in samples[1:]) - warm
    passed = samples[-1][0] - samples[1][0]
    print(f"streamed {samples[-1][0] >> 20} MiB; RSS {[m >> 20 for _, m in samples]} MiB")
    assert passed > 4 * BUDGET  # far more went through than the budget allows to keep
    assert growth < BUDGET + (16 << 20), [m >> 20 for _, m in samples]
    assert "chunkscope tap: 1000 calls" in out  # the list keeps the latest 1,000 of 1,001
