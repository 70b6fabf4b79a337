"""``Tap``: a reverse proxy in front of one upstream that forwards bytes untouched and records each call.

The server side is uvicorn (the stack the local provider runs on) with a
plain ASGI app; the client side is httpx, reading ``aiter_raw`` so the body
reaches the client byte for byte, compressed as it came. Each read is
forwarded first, then put on a queue for the parser thread: translating,
checking, assembling, usage and recordings happen there, so none of them
can delay or alter what the client receives.

Safety: binds 127.0.0.1 unless told otherwise (then warns); forwards only
to the configured upstream (an absolute request URL is refused with 400; the
``Host`` header is never used for routing); upstream TLS is verified;
redirects go back to the client; request bodies over ``max_request_bytes``
are answered 413.
"""

from __future__ import annotations

import asyncio
import contextlib
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
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import uvicorn

from chunkscope.protocol import LlmError, StreamResult
from chunkscope.usage import UsageLog

from ._call import Parser, TapCall, now
from ._record import write_recording
from ._redact import ByteMask, redact_headers, redact_query, secrets_of
from ._wires import Wire, detect_wire, stream_failure, wire_named

__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "Tap", "TapExposedWarning"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

DEFAULT_MAX_REQUEST_BYTES = 8 << 20
"""Largest request body forwarded (8 MiB, as the local provider's); beyond it: 413."""

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "proxy-connection",
    }
)
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 10.0
_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


class TapExposedWarning(UserWarning):
    """The tap listens beyond loopback: anyone who can reach the port can spend the upstream's keys."""


class _UpstreamDropped(Exception):
    """Raised after the response started, so uvicorn drops the client's connection as the upstream did."""


class _QuietDrops(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], _UpstreamDropped))


def _install_log_filter() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietDrops) for f in logger.filters):
        logger.addFilter(_QuietDrops())


def _end_to_end(headers: list[tuple[bytes, bytes]], *also: str) -> list[tuple[bytes, bytes]]:
    """``headers`` without hop-by-hop ones (and those the Connection header names) nor ``also``."""
    named = {
        token.strip().lower()
        for name, value in headers
        if name.lower() == b"connection"
        for token in value.decode("latin-1").split(",")
    }
    drop = _HOP_BY_HOP | named | set(also)
    return [(n, v) for n, v in headers if n.decode("latin-1").lower() not in drop]


def _text(headers: list[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    return [(n.decode("latin-1"), v.decode("latin-1")) for n, v in headers]


async def _reply(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": {"message": message, "type": "chunkscope_tap"}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


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
    ) -> None:
        url = httpx.URL(upstream)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"upstream must be an http:// or https:// URL, not {upstream!r}")
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0..65535, not {port}")
        if max_request_bytes < 1 or keep_calls < 1:
            raise ValueError("max_request_bytes and keep_calls must be positive")
        self.keep_calls = keep_calls
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
        self.profile = profile
        self.verify = verify
        self.calls: list[TapCall] = []
        """The latest ``keep_calls`` calls, oldest first; each fills in live (usage keeps every row)."""
        self._ids = itertools.count(1)
        self._queue: queue.SimpleQueue[tuple[Parser, str, float, Any] | None] = queue.SimpleQueue()
        self._parser_thread: threading.Thread | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._client: httpx.AsyncClient | None = None
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

    # --- the ASGI app ---------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        started = now()
        started_at = time.time()
        method: str = scope["method"]
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        query: bytes = scope.get("query_string", b"")
        if method == "CONNECT" or not raw_path.startswith(b"/"):
            # An absolute URL (or CONNECT) asks for a forward proxy: the tap only ever reaches its upstream.
            await _reply(send, 400, "the tap is a reverse proxy for one upstream: send origin-form paths")
            return
        headers: list[tuple[bytes, bytes]] = list(scope["headers"])
        length = next((v for n, v in headers if n == b"content-length"), None)
        if length is not None and length.isdigit() and int(length) > self.max_request_bytes:
            await _reply(send, 413, f"request body over {self.max_request_bytes} bytes")
            return
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            part = message.get("body", b"")
            size += len(part)
            if size > self.max_request_bytes:
                await _reply(send, 413, f"request body over {self.max_request_bytes} bytes")
                return
            parts.append(part)
            if not message.get("more_body"):
                break
        body = b"".join(parts)
        path = raw_path.decode("latin-1")
        text_query = query.decode("latin-1")
        wire = self._fixed_wire or detect_wire(path.partition("?")[0])
        text_headers = _text(headers)
        secrets = secrets_of(text_headers, text_query)
        model: str | None = None
        if wire is not None:
            with contextlib.suppress(ValueError, UnicodeDecodeError):
                parsed = json.loads(body) if body else None
                if isinstance(parsed, dict) and isinstance(parsed.get("model"), str):
                    model = parsed["model"]
            model = model or wire.model_of(path.partition("?")[0])  # Gemini, Bedrock: in the path
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
        )
        self.calls.append(call)
        if len(self.calls) > self.keep_calls:  # memory stays bounded in a tap left running for days
            del self.calls[0]
        parser = Parser(call, wire, self._label, secrets, ByteMask(secrets))
        target = self.upstream.copy_with(raw_path=self._prefix + raw_path + (b"?" + query if query else b""))
        forwarded = _end_to_end(headers, "host", "content-length", "expect")
        client = self._client
        assert client is not None
        request = client.build_request(method, target, headers=forwarded, content=body or None)
        await self._forward(call, parser, request, send, receive, started)

    async def _forward(
        self,
        call: TapCall,
        parser: Parser,
        request: httpx.Request,
        send: Send,
        receive: Receive,
        started: float,
    ) -> None:
        client = self._client
        assert client is not None
        put = self._queue.put_nowait
        try:
            response = await client.send(request, stream=True, follow_redirects=False)
        except httpx.HTTPError as exc:
            error = stream_failure(exc, self._label, parser.secrets)
            put((parser, "end", now() - started, error))
            await _reply(send, 502, f"the tap could not reach its upstream: {error.code}")
            return
        outcome: LlmError | None = None
        try:
            call.status = response.status_code
            call.timings.headers_s = now() - started
            raw_headers = _end_to_end(list(response.headers.raw))
            call.response_headers = redact_headers(_text(raw_headers))
            put((parser, "head", 0.0, None))
            await send(
                {"type": "http.response.start", "status": response.status_code, "headers": raw_headers}
            )
            pump = asyncio.ensure_future(self._pump(call, parser, response, send, started))
            watch = asyncio.ensure_future(_disconnected(receive))
            try:
                await asyncio.wait((pump, watch), return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (pump, watch):
                    if not task.done():
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task
            if not pump.cancelled() and pump.exception() is None:
                outcome = pump.result()
            elif pump.cancelled():
                outcome = LlmError(
                    "the client disconnected mid-response; the tap closed the upstream", "ABORTED"
                )
            else:
                raise pump.exception()  # type: ignore[misc]
        except asyncio.CancelledError:
            outcome = LlmError("the tap stopped while the response streamed", "ABORTED")
            raise
        finally:
            await response.aclose()  # an unfinished body closes the upstream connection at once
            put((parser, "end", now() - started, outcome))
        if outcome is not None and outcome.code != "ABORTED":
            raise _UpstreamDropped(outcome.code)  # the client sees the drop the upstream made

    async def _pump(
        self, call: TapCall, parser: Parser, response: httpx.Response, send: Send, started: float
    ) -> LlmError | None:
        """Forward every read as it arrives; the failure of the upstream's body, if any."""
        put = self._queue.put_nowait
        reads = call.reads
        mask = parser.mask
        try:
            async for data in response.aiter_raw():
                t = now() - started
                await send({"type": "http.response.body", "body": data, "more_body": True})
                reads.append((t, bytes(mask.push(data))))
                put((parser, "read", t, data))
        except httpx.TransportError as exc:
            return stream_failure(exc, self._label, parser.secrets)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return None

    # --- the parser thread ---------------------------------------------------------------

    def _parse_forever(self) -> None:
        get = self._queue.get
        while True:
            item = get()
            if item is None:
                return
            parser, kind, t, value = item
            try:
                if kind == "read":
                    parser.read(t, value)
                elif kind == "head":
                    parser.head()
                else:
                    self._finish(parser, parser.finish(t, value))
            except Exception as exc:  # a parse-side defect must never stop the thread
                if kind == "end":
                    failure = LlmError(f"the tap failed to parse the call: {type(exc).__name__}", "UNKNOWN")
                    parser.call._ended(StreamResult(error=failure))
                else:
                    parser.failure = LlmError(
                        f"the tap failed to parse the call: {type(exc).__name__}", "UNKNOWN"
                    )

    def _finish(self, parser: Parser, result: StreamResult) -> None:
        call = parser.call
        call.result = result  # the usage row and the recording read it; followers end below
        try:
            self.usage.record(
                result,
                provider=call.wire or "unknown",
                model=call.model or "unknown",
                tags={"via": "tap", "path": call.path.partition("?")[0]},
            )
            if self.record is not None and call.wire is not None:
                call.recording = str(write_recording(self.record, call, result))
        finally:
            call._ended(result)

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> Tap:
        """Bind, serve in a background thread, return once requests are answered."""
        with self._lock:
            if self.running:
                return self
            if self.record is not None:
                self.record.mkdir(parents=True, exist_ok=True)
            bind = "127.0.0.1" if self.host == "localhost" else self.host
            family = socket.AF_INET6 if ":" in bind else socket.AF_INET
            # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
            # and without it a response's head and first body write wait out a delayed ACK (40 ms).
            sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((bind, self.port))
            except OSError:
                sock.close()
                raise
            sock.set_inheritable(True)
            _install_log_filter()
            self._parser_thread = threading.Thread(
                target=self._parse_forever, name="chunkscope-tap-parser", daemon=True
            )
            self._parser_thread.start()
            config = uvicorn.Config(
                self,
                log_config=None,
                log_level="warning",
                access_log=False,
                lifespan="off",
                loop="asyncio",
                http="h11",
                ws="none",
                server_header=False,  # the upstream's own Server and Date headers pass through
                date_header=False,
                timeout_graceful_shutdown=1,
            )
            server = uvicorn.Server(config)
            failure: list[BaseException] = []

            def run() -> None:
                async def serve() -> None:
                    self._client = httpx.AsyncClient(
                        follow_redirects=False,
                        trust_env=False,  # never through another proxy the environment names
                        timeout=httpx.Timeout(
                            30.0, read=None
                        ),  # a stalled upstream is the client's to time out
                        transport=httpx.AsyncHTTPTransport(
                            verify=self.verify,  # upstream TLS verified (True: the system's CAs via certifi)
                            limits=httpx.Limits(max_connections=None, max_keepalive_connections=200),
                            # Nagle would hold a request's body behind its head for a delayed ACK.
                            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                        ),
                    )
                    for name in list(self._client.headers):  # forward the client's headers, add none
                        del self._client.headers[name]
                    try:
                        await server.serve(sockets=[sock])
                    finally:
                        await self._client.aclose()

                try:
                    asyncio.run(serve())
                except BaseException as exc:  # reported to start()
                    failure.append(exc)

            thread = threading.Thread(target=run, name="chunkscope-tap", daemon=True)
            thread.start()
            deadline = time.monotonic() + _START_TIMEOUT
            while not server.started:
                if not thread.is_alive() or time.monotonic() > deadline:
                    server.should_exit = True
                    thread.join(_STOP_TIMEOUT)
                    sock.close()
                    raise RuntimeError("the tap's server did not start") from (
                        failure[0] if failure else None
                    )
                time.sleep(0.002)
            self._server, self._thread = server, thread
            host, port = sock.getsockname()[:2]
            self._bound = (str(host), int(port))
            return self

    def stop(self) -> None:
        """Stop serving (open streams end as ABORTED), finish every call and recording (idempotent)."""
        with self._lock:
            server, thread, parser = self._server, self._thread, self._parser_thread
            self._server = self._thread = self._parser_thread = None
            self._bound = None
            if server is not None and thread is not None:
                server.should_exit = True
                thread.join(_STOP_TIMEOUT)
                if thread.is_alive():
                    server.force_exit = True
                    thread.join(_STOP_TIMEOUT)
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


async def _disconnected(receive: Receive) -> None:
    """Return when the client goes away (the request body was read already)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
