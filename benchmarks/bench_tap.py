"""The tap's cost over loopback, side by side: direct vs chunkscope's tap vs mitmproxy in reverse mode.

Run: ``python benchmarks/bench_tap.py [--streams N] [--events E] [--gap S] [--concurrent C]``

Three processes besides this one: an upstream (a tiny asyncio HTTP server in
this file, speaking chat-completions SSE, each event stamped with the
monotonic clock — shared by every process of the machine — when it was
written), ``chunkscope tap`` in front of it, and ``mitmdump --mode
reverse:…`` (mitmproxy, what a user would pick instead; with
``stream_large_bodies=1`` so it streams instead of buffering; skipped when
``mitmdump`` is not on PATH or in ``$MITMDUMP``). Each proxy is measured against direct with
the streams alternating between the two (one each per round, the order rotating), so a noisy
moment of the machine falls on both alike; mitmdump runs only while it is measured (even idle it
takes CPU from the others on a small machine). Reported, per path:

- the latency of each event (written → read by the client) at p50 and p99, and what
  the proxy adds over direct;
- time to first byte (request sent → first body byte) at p50, and the overhead;
- the same for a bare asyncio relay (this file, ``--serve-bare-relay``: each side's bytes
  written to the other, nothing parsed or kept), the floor under any relay written in Python;
- the same for relays that read each request whole before forwarding it, as the tap must
  (``--serve-parsing-relay``): with h11 (httpx's parser), with the tap's own reader
  (``chunkscope.tap._framing``, nothing else of the tap) and with httptools (in C) when it is
  installed, the floors under a relay that checks its requests; and a relay with the tap's reader
  that forwards each head at once and its body as it comes (``head-first``), what the tap would
  gain by not holding a request until its body is whole;
- the CPU time each proxy process takes per stream (Linux): on a small machine, what it takes
  from the client and the upstream;
- ``--concurrent`` streams at once through the tap, each body compared with what
  the upstream sent (sha256): no byte lost.

Targets (issue 19): added latency per event p50 <= 50 µs, p99 <= 1 ms, first-byte overhead
<= 1 ms, ahead of mitmproxy on each; issue 25: first byte at most a tenth of mitmproxy's. The
machine is shared and noisy; no assertion is made.
Measured on the 2-core dev machine (load ~0.3), three runs, 30 streams of 200 events, each
proxy alternating with direct: the tap added p50 +79..114 µs, p99 +106..408 µs, first byte
+806..997 µs; mitmproxy 11.0.2 +151..201 µs, +490..868 µs, +2.8..3.9 ms. The tap's earlier
uvicorn + httpx stack added p50 +182..207 µs and first byte +2.0..2.8 ms. With the parse side
switched off (an experiment) the relay still adds p50 ~+100 µs and first byte ~+0.7 ms, and a
bare asyncio relay that parses nothing adds p50 +40..105 µs: the floor of one Python event-loop
hop on that machine, above the 50 µs target.

Issue 25, same machine shared with five other jobs (load 3..4 on 2 cores), defaults (20
streams of 200 events, 1 ms apart), three runs each of the code before and after, every row in
the same run: first byte — the tap before +787..904 µs, after +560..804 µs; the bare asyncio
relay +55..372 µs; mitmproxy 11.0.2 +1,738..2,568 µs (a tenth: ~170..260 µs, not reached).
Event p50: tap +37..64 µs, bare +15..35, mitmproxy +54..91. Where the tap's first byte goes
(timestamps in client, tap and upstream on the shared monotonic clock, 1,000 calls profiled):
the request waits whole at the tap (its body comes in a second read; forwarding the head first
would break "a trickled body forwards nothing"), then h11 parses it (~20 µs alone, ~250 Python
calls per exchange counting the response head: the bulk of the loop's ~45 µs of work on the
path); each loopback send() costs ~150 µs on the loaded machine, as the bare relay's do. Already
right and kept: the upstream connection is kept alive per client connection, TCP_NODELAY on both
sides, every read written to the client before anything else looks at it, the call built and
the parser fed only after the request went out. The rest is the tap's CPU (h11, the call, the
parser thread; the cyclic GC switched off changed nothing beyond the noise in five runs)
contending for the two shared cores with the client and the upstream. Tried and dropped, no
gain beyond the noise: building the call only after the first body bytes went out (it also let
a client see its answer before the call was listed), handing the response head to the parser
thread with the first body bytes.

Quiet machine (load < 0.1), three runs, every row in one run: first byte added — the tap
+458..547 µs, mitmproxy +1,348..1,646 µs (a tenth: ~135..165), bare relay -64..+103, the h11
parsing relay (each request read whole by h11 before it goes on, what the tap must do at least)
+163..305, the httptools parsing relay +91..137. The floor of a relay that reads requests with
h11 is already above a tenth of mitmproxy; only a C parser with nothing else on the path gets
under it. Traced with the shared monotonic clock in client and tap (raw sockets, 1 ms events):
the tap's code before the upstream write runs about five times slower than in a warm loop (the
client and upstream ran in between), the write itself lets the upstream preempt the tap's
thread (wall 220 µs, CPU 73 µs), and the call's construction costs ~150 µs of CPU after it.
Building the call after the first byte, a regex request parser in h11's place, and deferring
the parser thread's wake-up by 2 ms each moved the tap's figure by at most ~60 µs, in the noise.

Stop 33 (heads read by the tap's own reader instead of h11; same machine, load < 0.3), every
row in one run: long streams, first byte added — tap +652..787 µs, mitmproxy +2,496..2,744,
bare +163..199, h11 parsing relay +430..660, tap-reader relay +519, httptools +216..526;
CPU a stream: tap 20.9..23.5 ms, mitmproxy 23.9..29.1 ms, relays 7..10 ms. Short calls
(--events 2 --gap 0 --streams 300): tap +266 µs, mitmproxy +1,225 (a tenth: 123), floors
88..109; CPU a call: tap 495 µs, mitmproxy 1,584. Same run, the tap before and after that
change, short calls: first byte +268..292 -> +186..193 µs, CPU 858..957 -> 726 µs a call.

Stop 34 (no change to the tap; a fresh 2-core machine, load < 0.5), three runs, every row in one
run: first byte added — tap +601..828 µs, mitmproxy +2,712..2,997 (a tenth: 271..300), bare
-3..+130, h11 +545..662, tap-reader +323..481, head-first +376..440, httptools +264..378. Event
p50 — tap +99..125, bare +66..72 (1.5x: 99..108), mitmproxy +164..169. Short calls: tap +329 µs,
mitmproxy +1,379 (a tenth: 138), floors 97..137. The tenth of mitmproxy's first byte lies under
every relay that reads requests whole with a Python parser, the tap's reader included, and at
the C parser's; sending heads ahead of their bodies does not close it. The tap built its call
after the first byte in an A/B run: +654..724 µs against +705..840, within the noise.

Then short reads parsed on the event loop's thread (was: every read handed to the parser thread,
which woke it as the client was to read). Where the per-event cost was, one run each with the
tap's per-read work cut down: the parse made a no-op but each read still handed over, +122/128 µs
(as the whole tap, +126/132); nothing handed over, +76/90 (as the bare relay, +73/87); parsed on
the loop's thread, +106/105. Same runs, the tap before and after (30 streams, two runs): event p50
+141 -> +115, +139 -> +112 µs; first byte +866 -> +744, +905 -> +842 µs; CPU a stream 30.3 -> 22.7,
28.8 -> 22.4 ms. The whole benchmark after it, three runs (a noisier hour: mitmproxy's first byte
+3,296..3,854): tap event p50 +106..131 against bare +38..92 (ratios 1.36, 1.42, 2.8), first byte
+647..1,131; tap-reader +545..630, httptools +230..554, a tenth of mitmproxy 330..385.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import h11
import httpx

SRC = Path(__file__).resolve().parents[1] / "src"


# --- the upstream -----------------------------------------------------------------------------


def _event(n: int, stamp: bool) -> bytes:
    content = f"{time.perf_counter_ns()}" if stamp else f"token-{n:06d} "
    body = {
        "id": "bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "bench",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


_END = (
    b'data: {"id":"bench","object":"chat.completion.chunk","created":0,"model":"bench","choices":'
    b'[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,'
    b'"total_tokens":2}}\n\ndata: [DONE]\n\n'
)


async def _serve_upstream(port: int) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                request = json.loads(await reader.readexactly(length)) if length else {}
                events, gap, stamp = (
                    request.get("events", 10),
                    request.get("gap", 0.0),
                    request.get("stamp", 1),
                )
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n"
                )
                for n in range(events):
                    data = _event(n, bool(stamp))
                    writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                    await writer.drain()
                    if gap:
                        await asyncio.sleep(gap)
                writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(_END), _END))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


class _Pipe(asyncio.Protocol):
    """One side of the bare relay: what it receives, the other side's transport writes at once."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.other: _Pipe | None = None
        self.held = bytearray()  # what the client sent before the upstream connection was made

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.forward(data)

    def forward(self, data: bytes) -> None:
        other = self.other
        if other is not None and other.transport is not None:
            other.transport.write(data)
        else:
            self.held += data

    def connection_lost(self, exc: Exception | None) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.close()


class _ParsingPipe(_Pipe):
    """The client side of the parsing relay: each request is read whole by h11 before a byte of it
    goes on, as the tap must (its limits, CL+TE and a trickled body are judged before forwarding)."""

    def __init__(self) -> None:
        super().__init__()
        self.request = bytearray()
        self.h11 = h11.Connection(h11.SERVER)

    def data_received(self, data: bytes) -> None:
        self.request += data
        self.h11.receive_data(data)
        while (event := self.h11.next_event()) is not h11.NEED_DATA:
            if isinstance(event, h11.EndOfMessage):
                rest, _ = self.h11.trailing_data
                whole = bytes(self.request[: len(self.request) - len(rest)])
                self.request = bytearray(rest)
                self.h11 = h11.Connection(h11.SERVER)
                if rest:  # (empty would mean end of input to h11)
                    self.h11.receive_data(bytes(rest))
                self.forward(whole)


class _CParsingPipe(_Pipe):
    """The same with httptools (llhttp, in C) instead of h11: what a C request parser would cost."""

    def __init__(self) -> None:
        import httptools

        super().__init__()
        self.request = bytearray()
        self.complete = False
        self.parser = httptools.HttpRequestParser(self)

    def on_message_complete(self) -> None:
        self.complete = True

    def data_received(self, data: bytes) -> None:
        self.request += data  # one request at a time: the bench's client waits for each answer
        self.parser.feed_data(data)
        if self.complete:
            self.complete = False
            whole, self.request = bytes(self.request), bytearray()
            self.forward(whole)


def _framed(buffer: bytearray) -> tuple[int, Any] | None:
    """Where the request head in ``buffer`` ends and its body's framing, by the tap's own reader
    (``chunkscope.tap._framing``); None while the head is not whole."""
    from chunkscope.tap._framing import Body, head_end, request_head  # imported (and frozen) at start

    end = head_end(buffer)
    if end < 0:
        return None
    head = request_head(bytes(buffer[:end]))
    return end, Body("chunked") if head.chunked else Body("length", head.length or 0)


class _TapReaderPipe(_Pipe):
    """The same with the tap's own request reader (``chunkscope.tap._framing``: the head by a few
    compiled patterns, the body by a countdown or a chunked decoder), nothing else of the tap."""

    def __init__(self) -> None:
        super().__init__()
        self.request = bytearray()
        self.body: Any = None

    def data_received(self, data: bytes) -> None:
        self.request += data  # one request at a time: the bench's client waits for each answer
        if self.body is None:
            framed = _framed(self.request)
            if framed is None:
                return
            end, self.body = framed
            data = bytes(self.request[end:])
        if data:
            self.body.feed(data)
        if self.body.done:
            whole, self.request, self.body = bytes(self.request), bytearray(), None
            self.forward(whole)


class _HeadFirstPipe(_Pipe):
    """The tap's reader again, but each head goes on as soon as it is read and its body as it comes
    (what the bare relay gets for free: the upstream reads the head while the body is in flight).
    The tap does not do this (a trickled body forwards nothing there); the row shows what it would gain."""

    def __init__(self) -> None:
        super().__init__()
        self.head = bytearray()
        self.body: Any = None

    def data_received(self, data: bytes) -> None:
        if self.body is None:
            self.head += data
            framed = _framed(self.head)
            if framed is None:
                return
            end, self.body = framed
            data = bytes(self.head[end:])
            self.forward(bytes(self.head[:end]))
            self.head = bytearray()
        if data:
            self.body.feed(data)
            self.forward(data)
        if self.body.done:
            self.body = None


_RELAYS: dict[str, type[_Pipe]] = {
    "bare": _Pipe,
    "h11": _ParsingPipe,
    "httptools": _CParsingPipe,
    "tap-reader": _TapReaderPipe,
    "head-first": _HeadFirstPipe,
}


async def _serve_bare_relay(port: int, upstream: int, parse: str = "bare") -> None:
    """The floor of any Python relay: bytes from each side written to the other, nothing parsed
    (``parse``: each request read whole first, by h11 or httptools, the floor of a relay that
    checks requests before it forwards them, as the tap must)."""
    loop = asyncio.get_running_loop()
    pairing: set[asyncio.Task[None]] = set()
    if parse in ("tap-reader", "head-first"):
        import gc

        import chunkscope.tap._framing  # noqa: F401 - the package's imports, then frozen as `chunkscope tap` does

        gc.freeze()  # (else each full collection walks them, ~50 ms, in the middle of the streams)

    def accepted() -> _Pipe:
        client = _RELAYS[parse]()

        async def pair() -> None:
            _, up = await loop.create_connection(_Pipe, "127.0.0.1", upstream)
            client.other, up.other = up, client
            if client.held and up.transport is not None:
                up.transport.write(bytes(client.held))
                client.held.clear()

        task = loop.create_task(pair())
        pairing.add(task)
        task.add_done_callback(pairing.discard)
        return client

    server = await loop.create_server(accepted, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


# --- the client ---------------------------------------------------------------------------------


async def _one(
    client: httpx.AsyncClient, url: str, events: int, gap: float, stamp: int
) -> tuple[float, list[float], bytes]:
    """(time to first byte, per-event latency in seconds, the body) of one stream."""
    body = {"model": "bench", "stream": True, "messages": [], "events": events, "gap": gap, "stamp": stamp}
    latencies: list[float] = []
    received = bytearray()
    start = time.perf_counter_ns()
    first = 0.0
    async with client.stream("POST", url, json=body) as response:
        async for data in response.aiter_raw():
            now = time.perf_counter_ns()
            if not received:
                first = (now - start) / 1e9
            received += data
            if stamp:
                for line in data.split(b"\n"):
                    if line.startswith(b'data: {"id":"bench"') and b'"content":"' in line:
                        sent = int(line.split(b'"content":"')[1].split(b'"')[0])
                        latencies.append((now - sent) / 1e9)
    return first, latencies, bytes(received)


async def _measure(
    urls: dict[str, str], streams: int, events: int, gap: float
) -> dict[str, tuple[list[float], list[float]]]:
    """Per path: (times to first byte, per-event latencies). The paths take turns stream by stream
    (the order rotating each round), so a noisy moment of the machine falls on all of them alike."""
    measured: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in urls}
    clients = {
        name: httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]),
            timeout=60,
        )
        for name in urls
    }
    try:
        for name, url in urls.items():
            for _ in range(3):  # warm each connection and each process (lazy imports, first records)
                await _one(clients[name], url, events, 0.0, 1)
        names = list(urls)
        for round_ in range(streams):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                first, each, _ = await _one(clients[name], urls[name], events, gap, 1)
                measured[name][0].append(first)
                measured[name][1].extend(each)
    finally:
        for client in clients.values():
            await client.aclose()
    return measured


def _cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system, every thread) process ``pid`` used so far; None off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _compare(proxy: str, port: int, up: int, args: argparse.Namespace, pid: int) -> None:
    """One proxy against direct, streams alternating between the two; prints both rows and the cost
    (with the proxy process's CPU time per stream: what it takes from the client and the upstream
    on a small machine)."""
    url = "http://127.0.0.1:{}/v1/chat/completions"
    before = _cpu_seconds(pid)
    measured = asyncio.run(
        _measure({"direct": url.format(up), proxy: url.format(port)}, args.streams, args.events, args.gap)
    )
    after = _cpu_seconds(pid)
    rows = {
        name: (statistics.median(latencies), _pct(latencies, 0.99), statistics.median(firsts))
        for name, (firsts, latencies) in measured.items()
    }
    for name, (p50, p99, first) in rows.items():
        print(f"{name:<24}{p50 * 1e6:>10.0f}µs{p99 * 1e6:>10.0f}µs{first * 1e6:>14.0f}µs")
    (b50, b99, bfirst), (p50, p99, first) = rows["direct"], rows[proxy]
    print(
        f"  added by {proxy}: event p50 +{(p50 - b50) * 1e6:.0f} µs, "
        f"p99 +{(p99 - b99) * 1e6:.0f} µs, first byte +{(first - bfirst) * 1e6:.0f} µs"
        + (
            f"; its CPU {(after - before) / (args.streams + 3) * 1e6:.0f} µs a stream"
            if before is not None and after is not None
            else ""
        )
    )


async def _concurrent(url: str, count: int, events: int) -> tuple[int, int, float]:
    """(streams whose body matched, streams, seconds) for ``count`` streams at once."""
    expected = hashlib.sha256(b"".join(_event(n, False) for n in range(events)) + _END).hexdigest()
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        start = time.perf_counter()
        results = await asyncio.gather(
            *(_one(client, url, events, 0.0, 0) for _ in range(count)), return_exceptions=True
        )
        seconds = time.perf_counter() - start
    good = sum(
        1
        for r in results
        if not isinstance(r, BaseException) and hashlib.sha256(r[2]).hexdigest() == expected
    )
    return good, count, seconds


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=20)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--gap", type=float, default=0.001, help="seconds between upstream events")
    parser.add_argument("--concurrent", type=int, default=500)
    parser.add_argument("--serve-upstream", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--serve-bare-relay", type=int, nargs=2, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--serve-parsing-relay", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream is not None:
        asyncio.run(_serve_upstream(args.serve_upstream))
        return
    if args.serve_bare_relay is not None:
        asyncio.run(_serve_bare_relay(*args.serve_bare_relay))
        return
    if args.serve_parsing_relay is not None:
        port, upstream, how = args.serve_parsing_relay
        asyncio.run(_serve_bare_relay(int(port), int(upstream), parse=how))
        return
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    up, tap, mitm = _free_port(), _free_port(), _free_port()
    children = [subprocess.Popen([sys.executable, __file__, "--serve-upstream", str(up)], env=env)]
    children.append(
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "chunkscope.cli",
                "tap",
                "--upstream",
                f"http://127.0.0.1:{up}",
                "--port",
                str(tap),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )
    mitmdump = os.environ.get("MITMDUMP") or shutil.which("mitmdump")
    try:
        _wait_port(up)
        _wait_port(tap)
        print(f"{args.streams} streams x {args.events} events, {args.gap * 1000:g} ms apart, over loopback")
        print(f"{'path':<24}{'event p50':>12}{'event p99':>12}{'first byte p50':>16}")
        _compare("chunkscope tap", tap, up, args, children[1].pid)
        # The floors under any relay written in Python: the same hop with nothing parsed or kept,
        # and with each request read whole before it goes on (what the tap must do at least), by
        # h11 (the tap's parser) and by httptools (a C parser) when it is installed.
        floors = {
            "bare asyncio relay": "",
            "h11 parsing relay": "h11",
            "tap-reader relay": "tap-reader",
            "head-first relay": "head-first",
        }
        if importlib.util.find_spec("httptools") is not None:
            floors["httptools parsing relay"] = "httptools"
        else:
            print("  (httptools is not installed: the row of a relay parsing in C is left out)")
        for name, how in floors.items():
            bare = _free_port()
            serve = (
                ["--serve-parsing-relay", str(bare), str(up), how]
                if how
                else ["--serve-bare-relay", str(bare), str(up)]
            )
            relay = subprocess.Popen([sys.executable, __file__, *serve], env=env)
            children.append(relay)
            _wait_port(bare)
            _compare(name, bare, up, args, relay.pid)
            relay.terminate()
            relay.wait(10)
        if mitmdump:
            # Started only now: even idle, mitmdump takes CPU from the others on a small machine.
            command = [mitmdump, "-q", "--mode", f"reverse:http://127.0.0.1:{up}@{mitm}"]
            command += ["--set", "stream_large_bodies=1", "--set", "connection_strategy=lazy"]
            children.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            _wait_port(mitm)
            _compare("mitmproxy reverse", mitm, up, args, children[-1].pid)
            children[-1].terminate()
            children[-1].wait(10)
        else:
            print("  (mitmproxy: no mitmdump on PATH or in $MITMDUMP; its rows are left out)")
        good, count, seconds = asyncio.run(
            _concurrent(f"http://127.0.0.1:{tap}/v1/chat/completions", args.concurrent, 50)
        )
        print(
            f"{count} concurrent streams through the tap: {good} byte-identical, {count - good} lost or "
            f"altered, {seconds:.1f} s"
        )
    finally:
        children[1].send_signal(signal.SIGINT)
        try:
            out, _ = children[1].communicate(timeout=60)
            print("tap:", out.strip().splitlines()[-1] if out.strip() else "(no output)")
        except subprocess.TimeoutExpired:
            children[1].kill()
        for child in children:
            if child.poll() is None:
                child.terminate()
                child.wait(10)


if __name__ == "__main__":
    main()
