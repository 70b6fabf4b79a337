"""LocalProvider as a server: loopback only, context managers, fast stop, many streams, `chunkscope serve`."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
from _provider_wire_reader import fold_openai, parse_sse

from chunkscope._wires import WIRE_FACTS
from chunkscope.provider import LocalProvider

HELLO = "Hello! I am the chunkscope local provider."


def chat(model: str, **extra: object) -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True, **extra}


def non_loopback_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))  # no packet is sent: this only picks a route
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com", ""])
def test_refuses_any_host_that_is_not_loopback(host: str) -> None:
    with pytest.raises(ValueError, match="loopback"):
        LocalProvider(host=host)


def test_listens_on_127_0_0_1_only(provider: LocalProvider) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", provider.url)
    assert provider.base_url == provider.url + "/v1"
    server = provider._server
    assert server is not None
    assert [s.getsockname()[0] for srv in server.servers for s in srv.sockets] == ["127.0.0.1"]
    other = non_loopback_address()
    if other is not None:  # the same port on this machine's other interface is closed
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://{other}:{provider.url.rsplit(':', 1)[1]}/v1/models", timeout=2)


def test_sync_context_manager_serves_and_stops() -> None:
    with LocalProvider() as p:
        assert p.running
        assert "127.0.0.1" in repr(p)
        assert httpx.get(p.base_url + "/models").status_code == 200
        url = p.url
    assert not p.running
    assert "not running" in repr(p)
    with pytest.raises(RuntimeError, match="not running"):
        _ = p.url
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/v1/models")


def test_start_stop_are_idempotent_and_restartable() -> None:
    p = LocalProvider()
    assert p.start() is p.start()
    p.stop()
    p.stop()
    p.start()
    try:
        assert httpx.get(p.base_url + "/models").status_code == 200
    finally:
        p.stop()


def test_a_taken_port_raises_at_start(provider: LocalProvider) -> None:
    port = int(provider.url.rsplit(":", 1)[1])
    with pytest.raises(OSError):
        LocalProvider(port=port).start()


async def test_async_context_manager_inside_a_running_loop() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    try:
        async with LocalProvider() as p, httpx.AsyncClient() as client:
            response = await client.post(p.base_url + "/chat/completions", json=chat("text"))
    finally:
        task.cancel()
    assert fold_openai(parse_sse(response.text)).text == HELLO
    assert ticks > 1  # the loop kept running while the server started and stopped


async def test_sync_start_works_while_an_event_loop_runs_in_this_thread() -> None:
    # What a Jupyter cell does: the kernel's loop is running, the user writes `with`.
    with LocalProvider() as p:
        async with httpx.AsyncClient() as client:
            response = await client.post(p.url + "/v1/messages", json={**chat("text"), "max_tokens": 8})
    assert response.status_code == 200


def test_stop_is_fast_with_a_stalled_stream_open() -> None:
    p = LocalProvider().start()
    outcome: list[object] = []
    stalled = threading.Event()

    def read_stalled() -> None:
        try:
            with httpx.stream(
                "POST", p.base_url + "/chat/completions", json=chat("fault-stall"), timeout=60
            ) as r:
                events = 0
                for line in r.iter_lines():
                    events += line.startswith("data:")
                    if events == 3:  # the role chunk and 2 text deltas: the 30 s stall comes next
                        stalled.set()
            outcome.append("clean end")
        except httpx.HTTPError as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read_stalled)
    reader.start()
    assert stalled.wait(5)
    begin = time.monotonic()
    p.stop()
    assert time.monotonic() - begin < 3.0
    reader.join(5)
    assert len(outcome) == 1 and isinstance(outcome[0], httpx.RemoteProtocolError)


async def test_serves_100_concurrent_streams() -> None:
    async with (
        LocalProvider(token_delay=0.01) as p,
        httpx.AsyncClient(limits=httpx.Limits(max_connections=100), timeout=30) as client,
    ):

        async def one(i: int) -> str:
            response = await client.post(
                p.base_url + "/chat/completions",
                json=chat("echo", messages=[{"role": "user", "content": f"stream number {i}"}]),
            )
            reply = fold_openai(parse_sse(response.text))
            assert reply.ended
            return reply.text

        begin = time.monotonic()
        texts = await asyncio.gather(*(one(i) for i in range(100)))
        elapsed = time.monotonic() - begin
    assert texts == [f"stream number {i}" for i in range(100)]
    # One stream is 6 events, 5 pauses of 50 ms: served one after the other, 100 would take 25 s.
    assert elapsed < 10.0


def test_chunkscope_serve_starts_and_answers() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "chunkscope.cli", "serve", "--port", str(port), "--token-delay", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}" in first
        banner = first + "".join(proc.stdout.readline() for _ in range(len(WIRE_FACTS) + 2))
        assert "fault-stall" in banner and f"http://127.0.0.1:{port}/v1" in banner
        for facts in WIRE_FACTS.values():  # each wire's base URL, by its label
            assert f"{facts.label} base_url:" in banner, facts.name
        response = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=chat("text"), timeout=10)
        assert fold_openai(parse_sse(response.text)).text == HELLO
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.returncode == 0


@pytest.mark.parametrize(
    ("args", "said"),
    [(["--port", "70000"], "--port 70000 is not a port"), (["--token-delay", "-1"], "--token-delay -1 must")],
)
def test_chunkscope_serve_refuses_bad_arguments_with_a_message(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from chunkscope.cli import main

    assert main(["serve", *args]) == 2
    assert said in capsys.readouterr().err


def test_provider_loads_nothing_of_the_adapters_it_judges() -> None:
    code = (
        "import sys, chunkscope.provider, chunkscope.cli\n"
        "judged = ('chunkscope.adapters', 'chunkscope.notebook')\n"
        "bad = sorted(m for m in sys.modules if m.startswith(judged))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
