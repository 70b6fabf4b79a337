"""``Tap``: a reverse proxy in front of one upstream that forwards bytes untouched and records each call.

The stack is asyncio's own transports and protocols (``loop.create_server``,
``loop.create_connection``, TLS through an ``ssl`` context) with HTTP/1.1
parsed only where it must be (``_framing``, h11's grammar in a few compiled
patterns): a request's head and body (buffered: the model is read from it,
the recording keeps it), and a response's head. Why not the provider's stack
(uvicorn + an httpx client): it parsed the response into events, re-framed it
for the client and passed every read through two coroutine hops (httpx's
``aiter_raw``, the ASGI ``send``), ~180 µs per event on loopback. Here the
upstream protocol's ``data_received`` writes each read straight to the
client's transport — status, headers, chunked framing and compression byte
for byte as the upstream sent them, no copy, no coroutine — and only then
tells the body's framing (``_framing``: a countdown or a chunk-size scan) what
of it was body, which is parsed with its arrival time: a short read there
and then, anything longer (and usage and recordings) on the parser thread
(``_PARSED_ON_THE_LOOP``), so none of it runs before the client has the
bytes, and a slow parse holds the loop once a call at most. A request goes
upstream before its call is built. Measured (``benchmarks/bench_tap.py``,
a 2-core machine): per event ~+100 µs at p50 where the old stack added
~190 and a bare asyncio relay with no parsing at all adds 70..90; first
byte ~+0.6..0.8 ms (was ~+2.0..2.8; mitmproxy ~+2.7..3.0 ms).

The request's HTTP version is passed on (an HTTP/1.0 client gets an
answer framed for HTTP/1.0, since it is relayed, not re-framed).

Each client connection is paired with one upstream connection, reused for
its next requests while both keep alive (a fresh one when the upstream has
closed). A slow client pauses the upstream's reads (``pause_writing``), so
memory stays bounded by the transports' high-water marks.

Safety: binds 127.0.0.1 unless told otherwise (then warns); forwards only
to the configured upstream (an absolute request URL is refused with 400; the
``Host`` header is never used for routing); upstream TLS is verified;
redirects go back to the client; request bodies over ``max_request_bytes``
are answered 413.

Limits, so a hostile client neither grows the tap nor locks others out: a
request head is read within ``max_head_bytes`` (431) and ``head_timeout``
(408, an idle connection closed; one timer per request, none per read), its
body within ``body_timeout`` (408);
connections beyond ``max_connections`` (by default what the file limit
leaves, two descriptors each) get 503 at once; asyncio's report of a failed
``accept`` is one line a minute. A request with two framings is refused (400).
The calls keep their bytes within ``keep_bytes``: a call past its share
stops appending to ``reads`` (its further reads go to a spill file beside its
recording, on the parser thread), and ended calls leave ``calls`` oldest first. A call's parsed
chunks are windowed within a share of their own (``Parser``): the oldest go, into a spill file
when the call is recorded, so its recording still holds them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import itertools
import json
import logging
import os
import queue
import socket
import ssl
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, cast

import httpx

from chunkscope.protocol import LlmError, StreamInspector, StreamResult
from chunkscope.sources.recording import stored_time
from chunkscope.usage import UsageLog

from ._call import Parser, TapCall, now
from ._framing import Body, Head, Message, ProtocolFault, head_end, request_head
from ._record import Spill, check_folder, chunk_lines, next_call_id, write_recording
from ._redact import ByteMask, key_fingerprint, mask_text, redact_headers, redact_query, secrets_of
from ._wires import Wire, detect_wire, stream_failure, wire_named

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_HEAD_TIMEOUT",
    "DEFAULT_KEEP_BYTES",
    "DEFAULT_MAX_HEAD_BYTES",
    "DEFAULT_MAX_REQUEST_BYTES",
    "Tap",
    "TapExposedWarning",
    "default_max_connections",
]

DEFAULT_MAX_REQUEST_BYTES = 8 << 20
"""Largest request body forwarded (8 MiB, as the local provider's); beyond it: 413."""
DEFAULT_MAX_HEAD_BYTES = 64 << 10
"""Largest request head (request line and headers) read, however it arrives; beyond it: 431."""
DEFAULT_HEAD_TIMEOUT = 20.0
"""Seconds a connection may take to send a whole request head (or sit idle between requests)."""
DEFAULT_BODY_TIMEOUT = 60.0
"""Seconds a request's body may take to arrive after its head (8 MiB in 60 s is 140 KB/s)."""
DEFAULT_KEEP_BYTES = 64 << 20
"""Bytes of request bodies and response reads the calls in ``Tap.calls`` keep in memory (64 MiB)."""
DEFAULT_MAX_PARSE_BACKLOG = 16 << 20
"""Response bytes forwarded but not yet parsed (16 MiB): past it the upstreams are read no faster than
the parser thread keeps up, so a parser behind a fast upstream never piles up memory."""

_log = logging.getLogger("chunkscope.tap")
_FILES_RESERVED = 64  # descriptors kept for the rest of the process: the listener, recordings, imports
_ACCEPT_LOG_EVERY = 60.0  # seconds between two reports of failing accepts (asyncio logs each one)

_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
        b"proxy-connection",
    }
)
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 10.0
_CONNECT_TIMEOUT = 30.0  # as the httpx client's was; a stalled upstream *body* is the client's to time out
_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
_BODY_METHODS = frozenset({b"POST", b"PUT", b"PATCH"})  # those that say Content-Length: 0 when empty
_PARSED_ON_THE_LOOP = 16 << 10
"""A read up to this size is parsed on the event loop's thread, right after it went to the client
(an SSE event is a few hundred bytes): handing each read to the parser thread woke it per event,
which took the cores from the client at the moment it was to read (~+40 µs an event on 2 cores).
Larger reads, spills and ends go to the thread, and every item of a call whose parse on the loop
took over ``_LOOP_PARSE_BUDGET``: a slow parse holds the forwarding once a call at most."""
_LOOP_PARSE_BUDGET = 0.002
_HEAD_PARSED_AFTER = 0.001  # seconds a response head waits for its first body bytes to be parsed with
_BYTES_KINDS: dict[str, Callable[[Any], int]] = {"read": len, "spill": lambda value: len(value[0])}
"""The parser queue's items that carry response bytes, and their size (the backlog counts them)."""


class TapExposedWarning(UserWarning):
    """The tap listens beyond loopback: anyone who can reach the port can spend the upstream's keys."""


def _end_to_end(message: Message, *also: bytes) -> list[tuple[bytes, bytes]]:
    """``message``'s headers as sent, without hop-by-hop ones (and those its Connection header
    names) nor ``also`` (lowercase names)."""
    drop = _HOP_BY_HOP | message.connection | set(also)
    return [(name, value) for name, value in message.raw if name.lower() not in drop]


def default_max_connections() -> int:
    """Client connections served at once: each takes two descriptors (the client's and the upstream's),
    so half of what the soft file limit leaves (at most 4,096), never so many that ``accept`` fails."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows: no file limit of this kind
        return 1024
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(1, min(4096, (soft - _FILES_RESERVED) // 2))


def _text(headers: list[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    return [(n.decode("latin-1"), v.decode("latin-1")) for n, v in headers]


def _reply_bytes(status: int, message: str, *, close: bool) -> bytes:
    """The tap's own JSON answer (400, 413, 502), framed by Content-Length."""
    body = json.dumps({"error": {"message": message, "type": "chunkscope_tap"}}).encode()
    head = b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n" % (
        status,
        http.HTTPStatus(status).phrase.encode(),
        len(body),
    )
    return head + (b"connection: close\r\n\r\n" if close else b"\r\n") + body


def _nodelay(transport: asyncio.BaseTransport) -> None:
    """Nagle off: a response's head and first body write would otherwise wait out a delayed ACK."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _gone(exc: BaseException | None, fallback: str) -> httpx.TransportError:
    """A socket failure as the httpx error ``stream_failure`` maps to its code (TRANSPORT, TIMEOUT)."""
    if isinstance(exc, TimeoutError):
        return httpx.ConnectTimeout(str(exc) or "timed out connecting")
    text = f"{fallback} ({exc})" if exc is not None and str(exc) else fallback
    return httpx.RemoteProtocolError(text)


class _Exchange:
    """One request and its response on a client connection: the call, its parser, where it stands."""

    __slots__ = (
        "call",
        "encoded",
        "ended",
        "forwarded",
        "head_timer",
        "kept",
        "label",
        "mask",
        "method",
        "on_loop",
        "parser",
        "put",
        "reads",
        "request",
        "response",
        "retried",
        "share",
        "started",
        "tap",
        "upstream",
    )

    call: TapCall
    parser: Parser
    reads: list[tuple[float, bytes | bytearray]]
    mask: ByteMask | None

    def __init__(self, tap: Tap, started: float, method: bytes, request: bytes) -> None:
        self.started = started
        self.method = method
        self.request = request  # the rewritten head and the body, as written to the upstream
        self.tap = tap
        self.label = tap._label
        self.put = tap._queue.put_nowait
        self.share = tap._share  # response bytes this call keeps in memory; the rest spill (or go)
        self.kept = 0
        self.ended = False
        self.forwarded = False  # a byte of the response reached the client
        self.retried = False
        self.encoded = False  # the upstream compressed the body anyway: its reads are not kept
        self.upstream: _Upstream | None = None  # the connection it went out on
        self.response: tuple[float, Message] | None = None  # the head, parsed with the first read
        self.head_timer: asyncio.TimerHandle  # ... or by this, if no body comes soon (set with it)
        self.on_loop = True  # short reads are parsed on the loop's thread (until one parse is slow)

    def attach(self, call: TapCall, parser: Parser) -> None:
        """The call, built once the request went out (the upstream works meanwhile)."""
        self.call = call
        self.parser = parser
        self.reads = call.reads
        self.mask = parser.mask if parser.secrets else None  # no credential: nothing to mask, no copy

    def headed(self, t: float, response: Message) -> None:
        for name, value in response.headers:
            if name == b"content-encoding" and value.strip().lower() not in (b"", b"identity"):
                # Asked for identity, sent compressed anyway: a key inside cannot be masked without
                # inflating it, so none of these bytes is kept or recorded (the parser still reads them).
                self.encoded = True
                self.call.withheld_encoding = value.strip().lower().decode("latin-1")
        # Status and headers are filled in with the first body bytes (or the end), after those went
        # to the client, so a head read alone does not keep the loop from the read that follows;
        # or shortly after, when no body comes (a model thinking): the table shows the status.
        self.response = (stored_time(t - self.started), response)
        self.head_timer = asyncio.get_running_loop().call_later(_HEAD_PARSED_AFTER, self._headed)

    def _headed(self) -> None:
        """The response head held for the first read is parsed now (its timer, if due, goes)."""
        if self.response is not None:
            t, response = self.response
            self.response = None
            self.head_timer.cancel()  # (harmless when it is what called)
            self.parse(t, "head", response)

    def read(self, t: float, body: bytes) -> None:
        """Body bytes of one read (already forwarded): kept on the call, and parsed."""
        if self.response is not None:
            self._headed()
        t = stored_time(t - self.started)  # the recording's own figure: live and replay agree
        if self.encoded:
            self.call.reads_dropped += len(body)
            self.parse(t, "read", body)
            return
        mask = self.mask
        # The mask's own bytearray is kept, not a copy: a key split across reads is masked in the
        # earlier read too, after it was stored (the spill file holds a read back until then).
        kept = mask.push(body) if mask is not None else body
        self.kept += len(kept)
        if self.kept <= self.share:
            self.reads.append((t, kept))
            self.parse(t, "read", body)
        else:  # past its share: parsed and recorded (on disk), not kept in memory
            self.call.reads_dropped += len(kept)
            self.hand(t, "spill", (body, kept), len(body))

    def parse(self, t: float, kind: str, value: Any) -> None:
        """A head or a read, parsed here and now (after the client got it) when that is short work
        and nothing of the call waits on the parser thread; else handed to that thread."""
        parser = self.parser
        if (
            self.on_loop
            and parser.handed == parser.parsed
            and (kind != "read" or (len(value) <= _PARSED_ON_THE_LOOP and parser.fits(len(value))))
        ):
            started = time.perf_counter()
            self.tap._parse(parser, kind, t, value)
            if time.perf_counter() - started > _LOOP_PARSE_BUDGET:
                self.on_loop = False  # a slow parse: the call's next items go to the parser thread
        else:
            self.hand(t, kind, value, len(value) if kind == "read" else 0)

    def hand(self, t: float, kind: str, value: Any, size: int) -> None:
        """An item for the parser thread, in the call's order (past the parse backlog, the upstream
        is not read until the parser catches up)."""
        tap = self.tap
        if size:
            tap._queued_in += size
            if tap._queued_in - tap._queued_out > tap.max_parse_backlog and self.upstream is not None:
                tap._behind(self.upstream)
        parser = self.parser
        parser.handed += 1
        self.put((parser, kind, t, value))

    def end(self, outcome: LlmError | None) -> None:
        if not self.ended:
            self.ended = True
            if self.response is not None:
                self._headed()
            # The end goes to the parser thread: the usage row and the recording (a file) are made there.
            self.hand(stored_time(now() - self.started), "end", outcome, 0)
            call = self.call
            self.tap._ended(call, min(self.kept, self.share) + len(call.request_body))

    def failure(self, exc: httpx.TransportError) -> LlmError:
        return stream_failure(exc, self.label, self.parser.secrets)


class _Upstream(asyncio.Protocol):
    """The upstream connection paired with one client connection: forwards each read as it arrives."""

    def __init__(self, client: _Client) -> None:
        self.client = client
        assert client.transport is not None
        self.sink = client.transport.write
        self.transport: asyncio.Transport | None = None
        self.exchange: _Exchange | None = None
        self.head: Head | None = None
        self.body: Body | None = None
        self.closed = False
        self.served = 0  # responses completed on this connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport; cast, not isinstance: another loop's (uvloop's) are not asyncio's classes.
        self.transport = cast(asyncio.Transport, transport)
        _nodelay(transport)
        if self.client.writing_paused:
            self.transport.pause_reading()

    @property
    def usable(self) -> bool:
        return not self.closed and self.transport is not None and not self.transport.is_closing()

    def send(self, exchange: _Exchange) -> None:
        assert self.transport is not None
        self.exchange = exchange
        exchange.upstream = self
        self.transport.write(exchange.request)
        self.head = Head(exchange.method)  # after the write: made while the upstream works
        self.body = None

    def data_received(self, data: bytes) -> None:
        # The hot path: the bytes go to the client first, as they came; then what they were is worked out.
        t = now()
        exchange = self.exchange
        if exchange is None:  # bytes no request asked for: not HTTP any more, and not the client's
            self._broken(None, ProtocolFault("bytes while no request was open"))
            return
        self.sink(data)
        exchange.forwarded = True
        body = self.body
        try:
            if body is None:
                head = self.head
                assert head is not None
                rest = head.feed(data)
                if rest is None:
                    return
                assert head.response is not None
                body = self.body = head.body()
                exchange.headed(t, head.response)
                data = rest
            part = body.feed(data) if data else b""
        except ProtocolFault as exc:
            self._broken(exchange, exc)
            return
        if part:
            exchange.read(t, part)
        if body.done:
            self._complete()

    def _complete(self) -> None:
        exchange, head, body = self.exchange, self.head, self.body
        assert exchange is not None and head is not None and body is not None
        self.exchange = None
        self.served += 1
        exchange.end(None)
        closes = head.closes or body.kind == "close" or bool(body.extra)
        if closes and self.transport is not None:
            self.transport.close()
        self.client.answered(close=closes)

    def _broken(self, exchange: _Exchange | None, exc: ProtocolFault) -> None:
        self.exchange = None
        if exchange is not None:
            exchange.end(exchange.failure(httpx.RemoteProtocolError(f"the upstream broke HTTP/1.1: {exc}")))
        if self.transport is not None:
            self.transport.abort()
        self.client.drop()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        client = self.client
        if client.upstream is self:
            client.upstream = None
        exchange = self.exchange
        if exchange is None or exchange.ended:
            return
        body = self.body
        if body is not None and body.kind == "close" and exc is None:
            body.done = True  # a body without a length ends with the connection
            self._complete()
            return
        self.exchange = None
        if not exchange.forwarded:
            self._lost_before_response(exchange, exc)
            return
        exchange.end(exchange.failure(_gone(exc, "the upstream closed the connection mid-response")))
        client.drop()  # the client sees the drop the upstream made, after every byte before it

    def _lost_before_response(self, exchange: _Exchange, exc: Exception | None) -> None:
        client = self.client
        if self.served and not exchange.retried and not client.closed:
            exchange.retried = True  # a kept-alive connection the upstream closed meanwhile: once more
            client.connect(exchange)
            return
        error = exchange.failure(_gone(exc, "the upstream closed the connection without a response"))
        client.unreachable(exchange, error)


def _checked(upstream: str, port: int, max_request_bytes: int, keep_calls: int) -> httpx.URL:
    """``Tap``'s upstream as a URL, its arguments checked (``ValueError`` naming one it cannot use)."""
    url = httpx.URL(upstream)
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(f"upstream must be an http:// or https:// URL, not {upstream!r}")
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be 0..65535, not {port}")
    if max_request_bytes < 1 or keep_calls < 1:
        raise ValueError("max_request_bytes and keep_calls must be positive")
    return url


def _refusal(request: Message, max_request_bytes: int) -> tuple[int, str] | None:
    """The status and reason the tap answers a request it will not forward with; None to forward it."""
    if request.method == b"CONNECT" or not request.target.startswith(b"/"):
        # An absolute URL (or CONNECT) asks for a forward proxy: the tap only ever reaches its upstream.
        return 400, "the tap is a reverse proxy for one upstream: send origin-form paths"
    if request.chunked and request.length is not None:
        # Two framings: whoever reads the other one sees a different next request (RFC 9112 §6.1).
        return 400, "a request with both Transfer-Encoding and Content-Length is refused"
    if request.length is not None and request.length > max_request_bytes:
        return 413, f"request body over {max_request_bytes} bytes"
    return None


def _keeps_alive(request: Message) -> bool:
    """Whether the client keeps its connection after this request (HTTP/1.1 without ``close``)."""
    return request.http_version == b"1.1" and b"close" not in request.connection


class _Client(asyncio.Protocol):
    """One client connection: reads its requests (``_framing``), pairs it with an upstream connection."""

    def __init__(self, tap: Tap) -> None:
        self.tap = tap
        self.transport: asyncio.Transport | None = None
        self.request: Message | None = None
        self.framing = Body("none")  # the request body's: a countdown or a chunked decoder
        self.started = 0.0
        self.started_at = 0.0
        self.body = bytearray()
        self.keep_alive = True
        self.exchange: _Exchange | None = None
        self.upstream: _Upstream | None = None
        self.connecting: asyncio.Task[None] | None = None
        self.pending = bytearray()  # bytes the client sent while an exchange ran (a pipelined request)
        self.writing_paused = False
        self.closed = False
        self.refused = False
        self.timer: asyncio.TimerHandle | None = None  # the deadline of the head awaited
        self.head = bytearray()  # the head awaited, so far

    # --- asyncio's callbacks ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport; cast, not isinstance: another loop's (uvloop's) are not asyncio's classes.
        self.transport = cast(asyncio.Transport, transport)
        tap = self.tap
        if len(tap._clients) >= tap.max_connections:
            # Answered at once, never left hanging: the cap keeps descriptors free for those served.
            self.refused = True
            message = f"the tap serves {tap.max_connections} connections at once; try again shortly"
            self.transport.write(_reply_bytes(503, message, close=True))
            self.transport.close()
            return
        _nodelay(transport)
        tap._clients.add(self)
        self._await_head()

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return
        if self.exchange is not None or self.connecting is not None:
            self.pending += data
            if len(self.pending) > self.tap.max_request_bytes + (64 << 10):
                self._refuse(413, f"request body over {self.tap.max_request_bytes} bytes")
            return
        self._read(data)

    def pause_writing(self) -> None:
        # The client reads slower than the upstream sends: stop reading the upstream until it catches up.
        self.writing_paused = True
        upstream = self.upstream
        if upstream is not None and upstream.transport is not None:
            upstream.transport.pause_reading()

    def resume_writing(self) -> None:
        self.writing_paused = False
        upstream = self.upstream
        if upstream is not None and upstream.transport is not None and upstream not in self.tap._held:
            upstream.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.tap._clients.discard(self)
        if self.timer is not None:
            self.timer.cancel()
        self._close_upstream(
            LlmError("the client disconnected mid-response; the tap closed the upstream", "ABORTED")
        )

    # --- requests ---------------------------------------------------------------------

    def _await_head(self) -> None:
        """A request head is due: it must arrive whole within ``head_timeout`` (an idle connection too)."""
        if self.timer is not None:
            self.timer.cancel()
        self.head = bytearray()
        loop = asyncio.get_running_loop()
        self.timer = loop.call_later(self.tap.head_timeout, self._head_late)

    def _head_late(self) -> None:
        self.timer = None
        if self.closed or self.refused or self.request is not None:
            return
        if self.head:
            self._refuse(408, f"the request head did not arrive within {self.tap.head_timeout:g} s")
        else:  # idle: nothing to answer
            self.refused = True
            self._close()

    def _body_late(self) -> None:
        self.timer = None
        if not (self.closed or self.refused or self.exchange is not None or self.connecting is not None):
            self._refuse(408, f"the request body did not arrive within {self.tap.body_timeout:g} s")

    def _read(self, data: bytes) -> None:
        """Bytes of the request awaited: its head (within ``max_head_bytes``), then its body."""
        if self.request is None:
            head = self.head
            searched = max(0, len(head) - 2)  # a blank line cut by the read is found whole
            head += data
            end = head_end(head, searched)
            limit = self.tap.max_head_bytes
            if (end if end >= 0 else len(head)) > limit:  # one limit, however the head arrives
                self._refuse(431, f"the request head is over {limit} bytes")
                return
            if end < 0:
                return
            data, whole = bytes(head[end:]), bytes(head[:end])
            head.clear()
            try:
                request = request_head(whole)
            except ProtocolFault:
                self._refuse(400, "the tap could not parse the request as HTTP/1.1")
                return
            if not self._head(request, started=bool(data)):
                return
        framing = self.framing
        try:
            part = framing.feed(data) if data else b""
        except ProtocolFault:
            self._refuse(400, "the tap could not parse the request as HTTP/1.1")
            return
        if part:
            self.body += part
            if len(self.body) > self.tap.max_request_bytes:
                self._refuse(413, f"request body over {self.tap.max_request_bytes} bytes")
                return
        if framing.done:
            self._forward()
        else:
            self._body_due()

    def _head(self, request: Message, *, started: bool) -> bool:
        """A head read whole: refused (False), or its body is read next (``started``: some came)."""
        self.started = now()
        self.started_at = time.time()
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        refusal = _refusal(request, self.tap.max_request_bytes)
        if refusal is not None:
            self._refuse(*refusal)
            return False
        self.keep_alive = _keeps_alive(request)
        self.request = request
        self.framing = framing = Body("chunked") if request.chunked else Body("length", request.length or 0)
        expects = any(n == b"expect" and v.lower() == b"100-continue" for n, v in request.headers)
        if expects and not started and not framing.done and request.http_version == b"1.1":
            assert self.transport is not None
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        return True

    def _body_due(self) -> None:
        """A head came and its body is still awaited: it gets its own deadline (a trickled body must
        not hold a connection either). Set only then: a body in the head's read needs no timer."""
        if self.request is not None and self.timer is None and not self.refused:
            self.timer = asyncio.get_running_loop().call_later(self.tap.body_timeout, self._body_late)

    def _forward(self) -> None:
        request = self.request
        assert request is not None
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        tap, body = self.tap, bytes(self.body)
        started, started_at = self.started, self.started_at
        exchange = _Exchange(tap, started, request.method, tap._upstream_request(request, body))
        self.exchange = exchange
        upstream = self.upstream
        if upstream is not None and upstream.usable:
            upstream.send(exchange)
        else:
            self.connect(exchange)  # a task: it starts after the call below exists
        # Built while the upstream works, so the call is listed before any of its answer is forwarded.
        exchange.attach(*tap._call(request, body, started, started_at))

    def connect(self, exchange: _Exchange) -> None:
        """Open a fresh upstream connection for ``exchange`` (the first, or the old one closed)."""
        self.connecting = asyncio.get_running_loop().create_task(self._connect(exchange))

    async def _connect(self, exchange: _Exchange) -> None:
        tap = self.tap
        try:
            async with asyncio.timeout(_CONNECT_TIMEOUT):
                _, upstream = await asyncio.get_running_loop().create_connection(
                    lambda: _Upstream(self),
                    tap._connect_host,
                    tap._connect_port,
                    ssl=tap._ssl,
                    server_hostname=tap._connect_host if tap._ssl is not None else None,
                )
        except (OSError, TimeoutError) as exc:  # ssl.SSLError (an unverified certificate) is an OSError
            self.connecting = None
            if not self.closed and not exchange.ended:
                cause = (
                    _gone(exc, "")
                    if isinstance(exc, TimeoutError)
                    else httpx.ConnectError(str(exc) or type(exc).__name__)
                )
                self.unreachable(exchange, exchange.failure(cause))
            return
        self.connecting = None
        if self.closed or exchange.ended:  # the client left (or the tap stopped) meanwhile
            assert upstream.transport is not None
            upstream.transport.abort()
            return
        self.upstream = upstream
        upstream.send(exchange)

    # --- ends -------------------------------------------------------------------------

    def answered(self, *, close: bool) -> None:
        """The response ended whole: the next request, or close as the client or the upstream asked."""
        self.exchange = None
        if close or not self.keep_alive or self.closed:
            self._close()
            return
        rest = self.framing.extra + bytes(self.pending)  # what the client sent past the request
        self.request = None
        self.framing = Body("none")
        self.body = bytearray()
        self.pending = bytearray()
        self._await_head()
        if rest:
            self._read(rest)

    def unreachable(self, exchange: _Exchange, error: LlmError) -> None:
        """No response came: the call ends with ``error``, the client gets a 502 naming its code."""
        exchange.end(error)
        if self.closed:
            return
        assert self.transport is not None
        self.transport.write(
            _reply_bytes(
                502, f"the tap could not reach its upstream: {error.code}", close=not self.keep_alive
            )
        )
        self.answered(close=not self.keep_alive)

    def drop(self) -> None:
        """Close the client's connection after the bytes already forwarded (the upstream dropped)."""
        self.exchange = None
        self.keep_alive = False
        self._close()

    def _refuse(self, status: int, message: str) -> None:
        self.refused = True
        if self.transport is not None and not self.closed:
            self.transport.write(_reply_bytes(status, message, close=True))
        self._close()

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()  # after what is buffered: the client gets every byte before the end

    def _close_upstream(self, outcome: LlmError) -> None:
        if self.connecting is not None:
            self.connecting.cancel()
            self.connecting = None
        exchange = self.exchange
        if exchange is not None:
            exchange.end(outcome)
            self.exchange = None
        upstream = self.upstream
        if upstream is not None and upstream.transport is not None:
            upstream.exchange = None
            upstream.transport.abort()  # at once: the upstream stops generating for nobody

    def shutdown(self) -> None:
        """The tap stops: an open stream ends ABORTED, both connections close now."""
        self._close_upstream(LlmError("the tap stopped while the response streamed", "ABORTED"))
        if self.transport is not None:
            self.transport.abort()


class Tap:
    """A reverse proxy in front of ``upstream`` that shows, checks and records every call.

    ``with Tap(upstream="https://api.example.com") as tap:`` point a client's
    base URL at ``tap.base_url`` (plus the path prefix the client expects,
    e.g. ``/v1`` for the OpenAI SDK when ``upstream`` is a server's root);
    ``tap.calls`` is the live list of ``TapCall``; ``tap.usage`` the
    ``UsageLog`` with one row per call. ``record=DIR`` writes each call as a
    recording ``ReplayAdapter`` replays at its original timing. ``wire``:
    ``"auto"`` (from the request path, through the wire table) or a wire's
    name. ``host`` other than loopback listens on the network and warns.
    ``verify``: upstream TLS verification (True, or an ``ssl.SSLContext`` for a
    private CA). ``keep_calls`` bounds ``calls`` (the oldest go first).

    Limits (docs/tap.md): ``keep_bytes`` — request bodies and response reads the
    finished calls in ``calls`` keep in memory together (the oldest calls go
    first); a call keeps at most a quarter of it of its own response, the rest
    is parsed and recorded but not kept (``TapCall.reads_dropped``).
    ``max_head_bytes`` — a request head's size (431 beyond), ``head_timeout`` —
    seconds for a whole head to arrive (408, or an idle connection closed),
    ``body_timeout`` — seconds for its body to follow (408),
    ``max_connections`` — client connections at once (503 beyond; by default
    what the file limit allows), ``max_request_bytes`` — a request body (413),
    ``max_parse_backlog`` — response bytes forwarded but not parsed yet (past it the
    upstreams are not read until the parser thread is half-way caught up).
    ``profile``: the rule profile every call's chunks are checked under (``"strict"``, …).
    """

    def __init__(
        self,
        upstream: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        wire: str = "auto",
        record: str | os.PathLike[str] | None = None,
        usage: UsageLog | None = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        profile: str = "strict",
        verify: bool | ssl.SSLContext = True,
        keep_calls: int = 1000,
        keep_bytes: int = DEFAULT_KEEP_BYTES,
        max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES,
        head_timeout: float = DEFAULT_HEAD_TIMEOUT,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        max_connections: int | None = None,
        max_parse_backlog: int = DEFAULT_MAX_PARSE_BACKLOG,
    ) -> None:
        url = _checked(upstream, port, max_request_bytes, keep_calls)
        if min(keep_bytes, max_head_bytes, max_parse_backlog) < 1:
            raise ValueError("keep_bytes, max_head_bytes and max_parse_backlog must be positive")
        if not (head_timeout > 0 and body_timeout > 0):
            raise ValueError(f"head_timeout and body_timeout must be positive seconds, not {head_timeout!r}")
        if max_connections is not None and max_connections < 1:
            raise ValueError(f"max_connections must be positive, not {max_connections}")
        self.keep_calls = keep_calls
        self.keep_bytes = keep_bytes
        self._share = max(keep_bytes // 4, 1)
        self.max_head_bytes = max_head_bytes
        self.head_timeout = float(head_timeout)
        self.body_timeout = float(body_timeout)
        self.max_connections = max_connections if max_connections is not None else default_max_connections()
        self.upstream = url.copy_with(query=None, fragment=None)
        self._prefix = self.upstream.raw_path.rstrip(b"/")
        self.wire = wire
        self._fixed_wire: Wire | None = None if wire == "auto" else wire_named(wire)
        self.host = host
        self.port = port
        if host not in _LOOPBACK:
            warnings.warn(
                f"the tap listens on {host}, not only on loopback: anyone who can reach it can send "
                f"requests to {self.upstream.host} with the credentials they carry",
                TapExposedWarning,
                stacklevel=2,
            )
        self.record = Path(record) if record is not None else None
        self.usage = usage if usage is not None else UsageLog()
        self.max_request_bytes = max_request_bytes
        StreamInspector(profile)  # an unknown profile is refused here, not on the first call
        self.profile = profile
        self.verify = verify
        self.calls: list[TapCall] = []
        """The latest ``keep_calls`` calls, oldest first; each fills in live (usage keeps every row)."""
        self._ids = itertools.count(1)
        # The event loop's thread: each listed call → its bytes kept once ended (-1 while it runs).
        self._sizes: dict[TapCall, int] = {}
        self._ended_bytes = 0
        # The parser thread's spill files, a call's reads and its dropped chunks: None when spilling failed.
        self._spills: dict[Parser, Spill | None] = {}
        self._chunk_spills: dict[TapCall, Spill | None] = {}
        self._record_failed = False
        self._accept_failed_at: float | None = None
        self._queue: queue.SimpleQueue[tuple[Parser, str, float, Any] | None] = queue.SimpleQueue()
        self.max_parse_backlog = max_parse_backlog
        # Response bytes put on the queue (the loop's thread counts) and parsed (the parser's): each
        # counter has one writer, so no lock; their difference is the backlog.
        self._queued_in = 0
        self._queued_out = 0
        self._held: set[_Upstream] = set()  # upstreams not read until the parser catches up
        self._parser_thread: threading.Thread | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._listening: socket.socket | None = None  # the socket served (closed once the tap stops)
        self._clients: set[_Client] = set()
        self._connect_host = self.upstream.host
        self._connect_port = self.upstream.port or (443 if self.upstream.scheme == "https" else 80)
        self._host_header = self.upstream.netloc  # the upstream's, never the client's: no routing by Host
        self._ssl: ssl.SSLContext | None = None
        self._bound: tuple[str, int] | None = None
        self._lock = threading.Lock()
        self._label = f"the upstream at {self.upstream.scheme}://{self.upstream.netloc.decode('ascii')}"

    # --- addresses --------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://<host>:<port>``: where a client sends what it would send to ``upstream``."""
        if self._bound is None:
            raise RuntimeError("the tap is not running: use `with Tap(...) as tap:` or `start()`")
        host, port = self._bound
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    @property
    def where(self) -> str:
        """``base_url → upstream`` (``(stopped) → upstream`` when not running): the table's title."""
        upstream = str(self.upstream)
        return f"{self.base_url} → {upstream}" if self._bound is not None else f"(stopped) → {upstream}"

    @property
    def running(self) -> bool:
        """True between ``start()`` and ``stop()``."""
        return self._thread is not None and self._thread.is_alive()

    def __repr__(self) -> str:
        where = self.base_url if self._bound is not None else "not running"
        return f"<Tap {where} → {self._label.removeprefix('the upstream at ')} calls={len(self.calls)}>"

    # --- one request ----------------------------------------------------------------------

    def _upstream_request(self, request: Message, body: bytes) -> bytes:
        """The bytes for the upstream: the request rewritten (Host, the path prefix), its body buffered."""
        # The client's own header names and order, minus hop-by-hop ones; Host and length set here.
        # Accept-Encoding is the tap's: it asks for identity, so every body it keeps is plain and a
        # key echoed inside is masked (a compressed one could only be masked by inflating it).
        forwarded = _end_to_end(request, b"host", b"content-length", b"expect", b"accept-encoding")
        head = [
            b"%s %s%s HTTP/%s\r\n" % (request.method, self._prefix, request.target, request.http_version),
            b"Host: %s\r\n" % self._host_header,
            *(b"%s: %s\r\n" % (name, value) for name, value in forwarded),
            b"Accept-Encoding: identity\r\n",
        ]
        if body or request.method in _BODY_METHODS:
            head.append(b"Content-Length: %d\r\n" % len(body))
        head.append(b"\r\n")
        return b"".join(head) + body

    def _call(
        self, request: Message, body: bytes, started: float, started_at: float
    ) -> tuple[TapCall, Parser]:
        """The call of a request read whole (credentials redacted), and its parser."""
        method = request.method.decode("latin-1")
        raw_path, _, query = request.target.partition(b"?")
        path = raw_path.decode("latin-1")
        text_query = query.decode("latin-1")
        wire = self._fixed_wire or detect_wire(path)
        text_headers = _text(request.headers)  # names lowercased, as recorded before
        secrets = secrets_of(text_headers, text_query)
        model: str | None = None
        streams = False
        if wire is not None:
            parsed: Any = None
            with contextlib.suppress(ValueError, UnicodeDecodeError, RecursionError):
                parsed = json.loads(body) if body else None
            if isinstance(parsed, dict) and isinstance(parsed.get("model"), str):
                model = parsed["model"]
            model = model or wire.model_of(path)  # Gemini, Bedrock: in the path
            streams = wire.asks_stream(path, parsed)
        call = TapCall(
            id=next(self._ids),
            method=method,
            path=path + (f"?{redact_query(text_query)}" if text_query else ""),
            wire=wire.name if wire is not None else None,
            model=model,
            request_headers=redact_headers(text_headers),
            request_body=bytes(ByteMask(secrets).push(body)),  # a key quoted in the body too
            started_at=started_at,
            clock_start=started,
            profile=self.profile,
            key_fingerprint=key_fingerprint(text_headers, text_query),
        )
        self.calls.append(call)
        self._sizes[call] = -1
        if len(self.calls) > self.keep_calls:  # memory stays bounded in a tap left running for days
            self._unlist(self.calls[0])
        # A call that asked for a stream and got something else is read as its adapter reads it.
        parser = Parser(
            call,
            wire,
            self._label,
            secrets,
            ByteMask(secrets),
            expect_stream=streams,
            share=self._share,
            dropped=self._drop_chunks,
        )
        return call, parser

    def _unlist(self, call: TapCall) -> None:
        """``call`` leaves ``calls`` (its recording stays): the event loop's thread."""
        self.calls.remove(call)
        size = self._sizes.pop(call, -1)
        if size > 0:
            self._ended_bytes -= size

    def _ended(self, call: TapCall, size: int) -> None:
        """``call``'s last byte came (``size`` bytes kept): the oldest ended calls go past ``keep_bytes``."""
        if call not in self._sizes:
            return  # already out of ``calls`` (over ``keep_calls``)
        self._sizes[call] = size
        self._ended_bytes += size
        sizes = self._sizes
        while self._ended_bytes > self.keep_bytes:
            oldest = next(c for c, n in sizes.items() if n >= 0)
            self._unlist(oldest)

    # --- the parser thread ---------------------------------------------------------------

    def _parse_forever(self) -> None:
        get = self._queue.get
        while True:
            item = get()
            if item is None:
                return
            parser, kind, t, value = item
            self._parse(parser, kind, t, value)
            if kind in _BYTES_KINDS:
                self._parsed(_BYTES_KINDS[kind](value))  # counted however the parse went
            parser.parsed += 1  # after its work: the loop's thread parses the call's next read itself

    def _parse(self, parser: Parser, kind: str, t: float, value: Any) -> None:
        """One item of a call's parse side: a head, a read, a spill or an end (exceptions end here)."""
        try:
            if kind == "read":
                parser.read(t, value)
            elif kind == "spill":
                body, kept = value
                self._spill(parser, t, kept)
                parser.read(t, body)
            elif kind == "head":
                call = parser.call
                call.status = value.status_code
                call.timings.headers_s = t
                secrets = parser.secrets  # a key echoed in a header value (x-request-id: req-<key>)
                call.response_headers = [
                    (name, mask_text(text, secrets) if secrets else text)
                    for name, text in redact_headers(_text(_end_to_end(value)))
                ]
                parser.head()
            else:
                self._finish(parser, parser.finish(t, value))
        except Exception as exc:  # a parse-side defect must never stop the thread
            if kind == "end":
                failure = LlmError(f"the tap failed to parse the call: {type(exc).__name__}", "UNKNOWN")
                for spill in (self._spills.pop(parser, None), self._chunk_spills.pop(parser.call, None)):
                    if spill is not None:
                        spill.discard()
                parser.call._ended(StreamResult(error=failure))
            else:
                parser.failure = LlmError(
                    f"the tap failed to parse the call: {type(exc).__name__}", "UNKNOWN"
                )

    def _parsed(self, size: int) -> None:
        """``size`` bytes parsed (the parser's thread): the upstreams held for it read again at half
        the backlog (counted before ``_held`` is looked at; ``_behind`` does the opposite)."""
        self._queued_out += size
        if self._held and self._queued_in - self._queued_out <= self.max_parse_backlog // 2:
            loop = self._loop
            if loop is not None:
                with contextlib.suppress(RuntimeError):  # the loop closed: nothing to resume
                    loop.call_soon_threadsafe(self._release)

    def _behind(self, upstream: _Upstream) -> None:
        """The parser is past its backlog: ``upstream`` waits until it catches up (the loop's thread)."""
        if upstream.transport is not None and upstream not in self._held:
            self._held.add(upstream)
            upstream.transport.pause_reading()
            # Added before the backlog is looked at: a parser that caught up meanwhile saw it, or is seen.
            self._release()

    def _release(self) -> None:
        """The parser caught up: the upstreams held for it read again (unless their client is slow)."""
        if self._queued_in - self._queued_out > self.max_parse_backlog // 2:
            return  # behind again meanwhile
        held, self._held = self._held, set()
        for upstream in held:
            if upstream.transport is not None and not upstream.client.writing_paused:
                upstream.transport.resume_reading()

    def _drop_chunks(self, call: TapCall, times: list[float], chunks: list[Any]) -> None:
        """Chunks a call dropped past its share: their recording lines into its chunk spill (when it is
        recorded), so the recording still holds every chunk; the parser thread."""
        if self.record is None or call.wire is None:
            return
        spills = self._chunk_spills
        if call not in spills:
            try:
                spills[call] = Spill(self.record)
            except OSError as exc:
                spills[call] = None
                self._recording_failed(call, exc)
        spill = spills[call]
        if spill is not None:
            try:
                spill.write(chunk_lines(times, chunks))
            except OSError as exc:
                spill.discard()
                spills[call] = None
                self._recording_failed(call, exc)

    def _spill(self, parser: Parser, t: float, kept: bytes | bytearray) -> None:
        """A read past the call's share: into the call's spill file when it is recorded, else gone."""
        if self.record is None or parser.call.wire is None:
            return
        spills = self._spills
        if parser not in spills:
            try:
                spills[parser] = Spill(self.record, hold=parser.mask.longest)
            except OSError as exc:
                spills[parser] = None
                self._recording_failed(parser.call, exc)
        spill = spills[parser]
        if spill is not None:
            try:
                spill.add(t, kept)
            except OSError as exc:
                spill.discard()
                spills[parser] = None
                self._recording_failed(parser.call, exc)

    def _recording_failed(self, call: TapCall, exc: OSError) -> None:
        """Said on the call, and once per tap on stderr (the ``chunkscope.tap`` logger): never its result."""
        call.recording_error = f"{type(exc).__name__}: {exc}"
        if not self._record_failed:
            self._record_failed = True
            _log.warning(
                "chunkscope tap: a call could not be recorded into %s (%s); the calls go on, each "
                "failure is in its TapCall.recording_error",
                self.record,
                call.recording_error,
            )

    def _finish(self, parser: Parser, result: StreamResult) -> None:
        call = parser.call
        call.result = result  # the usage row and the recording read it; followers end below
        # A spill that failed (None) leaves the call unrecorded: a recording is whole or not at all.
        whole = self._spills.get(parser, True) is not None and self._chunk_spills.get(call, True) is not None
        spill = self._spills.pop(parser, None)
        chunk_spill = self._chunk_spills.pop(call, None)
        try:
            self.usage.record(
                result,
                provider=call.wire or "unknown",
                model=call.model or "unknown",
                tags={"via": "tap", "path": call.path.partition("?")[0]},
            )
            if self.record is not None and call.wire is not None and whole:
                try:
                    call.recording = str(write_recording(self.record, call, result, spill, chunk_spill))
                except OSError as exc:
                    self._recording_failed(call, exc)
        finally:
            for each in (spill, chunk_spill):
                if each is not None:
                    each.discard()
            call._ended(result)

    # --- lifecycle -------------------------------------------------------------------------

    def _ssl_context(self) -> ssl.SSLContext | None:
        if self.upstream.scheme != "https":
            return None
        if isinstance(self.verify, ssl.SSLContext):
            return self.verify  # the caller's, untouched
        context = httpx.create_ssl_context(verify=self.verify)  # as the httpx client made it: certifi's CAs
        context.set_alpn_protocols(["http/1.1"])
        return context

    async def _serve(self, sock: socket.socket, ready: threading.Event) -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(self._loop_exception)
        self._listening = sock
        self._stopping = asyncio.Event()
        server = await loop.create_server(lambda: _Client(self), sock=sock, backlog=2048)
        self._loop = loop
        ready.set()
        try:
            await self._stopping.wait()
        finally:
            server.close()
            for client in list(self._clients):
                client.shutdown()  # every open call's end is queued now, before the parser thread stops
            for _ in range(3):
                await asyncio.sleep(0)  # the transports' connection_lost callbacks run

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """asyncio reports each failed ``accept`` with a traceback (out of descriptors: one a
        connection, ~40 MB in 12 s); the tap says it in one line a minute, everything else as asyncio."""
        message = str(context.get("message", ""))
        exc = context.get("exception")
        if isinstance(exc, ValueError) and self._listening is not None and self._listening.fileno() == -1:
            # asyncio retries a failed accept a second later, also after the tap closed its socket
            # (fileno -1) meanwhile: nothing is left to resume, and nothing to say
            return
        if not message.startswith("socket.accept() out of system resource"):
            loop.default_exception_handler(context)
            return
        at = time.monotonic()
        if self._accept_failed_at is None or at - self._accept_failed_at >= _ACCEPT_LOG_EVERY:
            self._accept_failed_at = at
            _log.warning(
                "chunkscope tap: cannot accept connections (%s); lower max_connections below the file "
                "limit (ulimit -n) or raise it. Said once a minute while it lasts.",
                exc or message,
            )

    def start(self) -> Tap:
        """Bind, serve in a background thread, return once requests are answered.

        With ``record=DIR``: ``PermissionError`` (one line) for a folder another user owns
        or can write to; call ids go on after the recordings it holds.
        """
        with self._lock:
            if self.running:
                return self
            if self.record is not None:
                check_folder(self.record)
                self._ids = itertools.count(max(next(self._ids), next_call_id(self.record)))
            self._ssl = self._ssl_context()
            bind = "127.0.0.1" if self.host == "localhost" else self.host
            family = socket.AF_INET6 if ":" in bind else socket.AF_INET
            # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
            # and without it a response's head and first body write wait out a delayed ACK (40 ms).
            # (Both sides also set it themselves on connection_made.)
            sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((bind, self.port))
            except OSError:
                sock.close()
                raise
            self._parser_thread = threading.Thread(
                target=self._parse_forever, name="chunkscope-tap-parser", daemon=True
            )
            self._parser_thread.start()
            ready = threading.Event()
            failure: list[BaseException] = []

            def run() -> None:
                try:
                    asyncio.run(self._serve(sock, ready))
                except BaseException as exc:  # reported to start()
                    failure.append(exc)
                finally:
                    ready.set()

            thread = threading.Thread(target=run, name="chunkscope-tap", daemon=True)
            thread.start()
            if not ready.wait(_START_TIMEOUT) or failure or self._loop is None:
                self._thread = thread
                self._bound = None
                self._stop_serving()
                sock.close()
                self._queue.put(None)
                self._parser_thread.join(_STOP_TIMEOUT)
                self._parser_thread = None
                raise RuntimeError("the tap's server did not start") from (failure[0] if failure else None)
            self._thread = thread
            host, port = sock.getsockname()[:2]
            self._bound = (str(host), int(port))
            return self

    def _stop_serving(self) -> None:
        loop, stopping, thread = self._loop, self._stopping, self._thread
        self._loop = self._stopping = None
        self._thread = None
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop ended already
                loop.call_soon_threadsafe(stopping.set)
        if thread is not None:
            thread.join(_STOP_TIMEOUT)

    def stop(self) -> None:
        """Stop serving (open streams end as ABORTED), finish every call and recording (idempotent)."""
        with self._lock:
            parser = self._parser_thread
            self._parser_thread = None
            self._bound = None
            self._stop_serving()
            if parser is not None:
                self._queue.put(None)  # after every call's end: the recordings are complete
                parser.join(_STOP_TIMEOUT)

    def __enter__(self) -> Tap:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Tap:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)
