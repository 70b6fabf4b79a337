"""The one streaming-adapter core: everything an SSE wire adapter needs except its wire.

A wire format supplies two things (see ``SseAdapter``):

- a **request builder**: ``GenerateOptions`` → JSON body, plus its headers;
- a **pure translator** (``Translator``): ``feed(event) -> chunks`` for each
  SSE event ``(event_name, data_text)`` and ``end() -> chunks`` at the end of
  the body. No I/O, no clock: testable with a list of payloads.

``SseAdapter`` owns the rest, once for every wire: the credential (never in
``repr``/``vars``/pickles), the endpoint URL, the client slot, timeouts,
attribution headers, redirects (never followed: a credential never reaches
another origin), the guard (idle timeout, optional total deadline, abort),
bounded body decoding and SSE framing (``max_event_bytes``,
``max_body_bytes``), the drain after the content is complete, redaction, and
the mapping of every failure to ``LlmError`` (``_failures``).

Cancellation is told apart without ``Task.uncancel``: every network await
(the send, each read) runs as a task the guard owns, awaited through a
future the guard resolves. An abort or timeout resolves that future and
cancels only the guard's own task; a ``CancelledError`` the consumer's task
receives is therefore always the caller's, and passes through unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import zlib
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping
from typing import Any, ClassVar, Protocol

import httpx

from chunkscope.protocol import AnyChunk, LlmError

from ._base import GenerateOptions, LlmAdapter
from ._failures import (
    bounded,
    detach_credentials,
    error_from_response,
    loads,
    redact,
    request_id,
    transport_error,
)
from ._http import ClientSlot, endpoint_url, merge_headers, public_url, resolve_api_key

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_EVENT_BYTES",
    "Credential",
    "SseAdapter",
    "SseDecoder",
    "SseEvent",
    "Translator",
]

DEFAULT_MAX_EVENT_BYTES = 8 << 20
"""Largest single SSE event (its raw lines) accepted: 8 MiB. Beyond it: ``MALFORMED_RESPONSE``."""
DEFAULT_MAX_BODY_BYTES = 256 << 20
"""Largest response body accepted after decompression: 256 MiB. Beyond it: ``MALFORMED_RESPONSE``."""
DRAIN_SECONDS = 0.25
"""How long the rest of a body is read, after the content is complete, to reuse the connection."""

SseEvent = tuple[str, str]
"""One dispatched SSE event: ``(event_name, data)``; the name is ``"message"`` when none was sent."""

_INFLATE_PIECE = 1 << 20  # decompressed bytes handled per step: peak memory stays near the limits


# --- the credential -----------------------------------------------------------------


class Credential:
    """An API key held so that no ``repr``, ``vars()``, log line or pickle shows it.

    ``resolve(label)`` gives the key to send: the given one, else the ``env``
    variable read at that moment (``MISSING_CREDENTIAL`` / ``INVALID_CREDENTIAL``
    otherwise). A pickle carries only the variable's name: the receiving
    process reads its own environment.
    """

    __slots__ = ("_value", "env")

    def __init__(self, value: str | None, env: str | None) -> None:
        self._value = value
        self.env = env

    @property
    def given(self) -> bool:
        """True when a key was passed (rather than left to the environment)."""
        return self._value is not None

    def resolve(self, label: str) -> str:
        """The key to send (raises ``LlmError`` ``MISSING_CREDENTIAL`` / ``INVALID_CREDENTIAL``)."""
        return resolve_api_key(self._value, self.env, label=label)

    def peek(self) -> str | None:
        """The key if one can be resolved now, else None (for redaction only; never raises)."""
        try:
            return resolve_api_key(self._value, self.env, label="")
        except LlmError:
            return None

    def __repr__(self) -> str:
        return "<set>" if self._value is not None else f"<from ${self.env}>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Credential, (None, self.env))


# --- SSE framing ----------------------------------------------------------------------


class SseDecoder:
    """Bytes → SSE events (WHATWG framing: LF, CRLF or CR lines; BOM; comments; multi-line data).

    ``feed(data)`` returns the events completed by ``data``; ``end()`` returns
    an event left unterminated at the end of the body. Reads may split
    anywhere (inside a UTF-8 sequence, between CR and LF). An event whose raw
    text exceeds ``max_event_bytes`` sets ``failure`` (a ``ValueError``) as
    soon as it is seen, so one endless line never piles up in memory; the
    events before it are still returned, and every later ``feed`` raises it. Comment lines go to ``comments``
    (when ``keep_comments``). Invalid UTF-8 becomes U+FFFD, as in a browser.
    """

    __slots__ = (
        "_cr",
        "_parts",
        "_size",
        "_started",
        "comments",
        "failure",
        "keep_comments",
        "max_event_bytes",
    )

    def __init__(
        self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, *, keep_comments: bool = False
    ) -> None:
        self.max_event_bytes = max_event_bytes
        self.keep_comments = keep_comments
        self.comments: list[str] = []
        self._parts: list[bytes] = []  # the unterminated event so far
        self._size = 0
        self._cr = False  # the previous read ended in CR (maybe half of CRLF)
        self._started = False
        self.failure: ValueError | None = None

    def feed(self, data: bytes) -> list[SseEvent]:
        """The events ``data`` completes, up to an event past ``max_event_bytes`` (then ``failure``)."""
        if self.failure is not None:
            raise self.failure
        if not self._started:
            if not data:
                return []
            self._started = True
            if data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
        if self._cr or b"\r" in data:
            data = self._normalise(data)
        parts = self._parts
        if parts:
            if b"\n" not in data:
                self._hold(data)
                if self.failure is not None:
                    raise self.failure
                return []
            parts.append(data)
            data = b"".join(parts)
            parts.clear()
            self._size = 0
        blocks = data.split(b"\n\n")
        tail = blocks.pop()
        if tail:
            self._hold(tail)
        events: list[SseEvent] = []
        limit = self.max_event_bytes
        for block in blocks:
            if len(block) > limit:
                self.failure = ValueError(
                    f"an SSE event of {len(block)} bytes exceeds the limit of {limit} bytes"
                )
                return events
            # The common event, one ``data: `` line, takes no line parsing at all.
            if block.startswith(b"data: ") and b"\n" not in block:
                events.append(("message", block[6:].decode("utf-8", "replace")))
            elif block:
                self._parse(block, events)
        return events

    def end(self) -> list[SseEvent]:
        """The event left unterminated at the end of the body (its last line ends at EOF)."""
        data = b"".join(self._parts)
        self._parts.clear()
        self._size = 0
        self._cr = False
        events: list[SseEvent] = []
        if data.strip(b"\n"):
            self._parse(data.rstrip(b"\n"), events)
        return events

    def _hold(self, data: bytes) -> None:
        self._size += len(data)
        if self._size > self.max_event_bytes:
            self._parts.clear()
            size, self._size = self._size, 0
            self.failure = ValueError(
                f"an SSE event of more than {size} bytes exceeds the limit of {self.max_event_bytes} bytes"
            )
            return
        self._parts.append(data)

    def _normalise(self, data: bytes) -> bytes:
        if self._cr:
            self._cr = False
            if data.startswith(b"\n"):
                data = data[1:]  # the LF of a CRLF split across reads
        if data.endswith(b"\r"):
            self._cr = True  # may be half a CRLF: the line ends here either way
        return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

    def _parse(self, block: bytes, events: list[SseEvent]) -> None:
        name = "message"
        data: list[str] | None = None
        for raw in block.split(b"\n"):
            if not raw:
                if data is not None:  # a blank line inside the block ("\n\n\n" runs): dispatch
                    events.append((name, "\n".join(data)))
                name, data = "message", None
                continue
            line = raw.decode("utf-8", "replace")
            field, colon, value = line.partition(":")
            if not field:
                if self.keep_comments:
                    self.comments.append(value[1:] if value.startswith(" ") else value)
                continue
            if colon and value.startswith(" "):
                value = value[1:]
            if field == "data":
                if data is None:
                    data = [value]
                else:
                    data.append(value)
            elif field == "event":
                name = value or "message"
        if data is not None:
            events.append((name, "\n".join(data)))


# --- bounded body decoding ----------------------------------------------------------------


class _Body:
    """Raw body bytes → decoded bytes in bounded pieces, counting toward ``max_body_bytes``."""

    __slots__ = ("_inflater", "_started", "encoding", "limit", "total")

    SUPPORTED: ClassVar[frozenset[str]] = frozenset({"", "identity", "gzip", "x-gzip", "deflate"})

    def __init__(self, encoding: str, limit: int) -> None:
        self.encoding = encoding
        self.limit = limit
        self.total = 0
        self._started = False
        self._inflater: Any = None
        if encoding in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif encoding == "deflate":
            self._inflater = zlib.decompressobj()

    def _count(self, n: int) -> None:
        self.total += n
        if self.total > self.limit:
            raise ValueError(f"the response body exceeds the limit of {self.limit} bytes")

    def pieces(self, raw: bytes) -> Iterator[bytes]:
        inflater = self._inflater
        if inflater is None:
            self._count(len(raw))
            yield raw
            return
        data = raw
        while data:
            try:
                out = inflater.decompress(data, _INFLATE_PIECE)
            except zlib.error as exc:
                if self.encoding == "deflate" and not self._started:
                    # Servers send raw deflate as often as zlib-wrapped deflate.
                    self._inflater = inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._started = True
                    continue
                raise ValueError(f"the {self.encoding} body cannot be decompressed: {exc}") from None
            self._started = True
            data = inflater.unconsumed_tail
            if out:
                self._count(len(out))
                yield out
            if inflater.eof:
                break


# --- the translator contract ----------------------------------------------------------------


class Translator(Protocol):
    """A wire's pure translator: SSE events in, StreamChunks out; no I/O.

    ``feed(event)`` returns the chunks one event completes and raises
    ``LlmError`` for a failure the event reveals (the chunks it produced
    before the failure are then in ``salvage()``). ``done`` turns true when
    the content is complete (``[DONE]``, ``message_stop``): that feed
    returned the final chunks, ending with the finish. ``end()`` is called at
    the end of the body: ``[]`` when done, else it raises ``STREAM_CLOSED``.
    """

    done: bool
    request_id: str | None

    def feed(self, event: SseEvent) -> list[AnyChunk]: ...

    def end(self) -> list[AnyChunk]: ...

    def salvage(self) -> list[AnyChunk]: ...


# --- the guard ----------------------------------------------------------------------------------


class _Stopped(Exception):
    """The drain after a complete response ran out: the rest of the body is dropped."""


class _Guard:
    """Abort, idle timeout, total deadline and connection release for one request.

    ``run(coro, idle)`` awaits one network step as a task of its own; the
    guard ends it (abort, timeout, deadline) by resolving the future the
    consumer awaits and cancelling only that task. Between steps (the
    consumer holds a chunk) an abort releases the connection at once and is
    raised by ``check()``.
    """

    __slots__ = (
        "_closing",
        "_deadline",
        "_drain_until",
        "_loop",
        "_remove",
        "_task",
        "_waiter",
        "cause",
        "idle_timeout",
        "label",
        "response",
        "secrets",
        "signal",
    )

    def __init__(
        self,
        *,
        signal: Any,
        idle_timeout: float | None,
        total_timeout: float | None,
        label: str,
        secrets: tuple[str, ...],
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self.signal = signal
        self.idle_timeout = idle_timeout
        self.label = label
        self.secrets = secrets
        self.cause: LlmError | None = None
        self.response: httpx.Response | None = None
        self._task: asyncio.Task[Any] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._closing: asyncio.Task[None] | None = None
        self._drain_until: float | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._remove: Callable[[], None] | None = None
        if total_timeout is not None:
            self._deadline = self._loop.call_later(total_timeout, self._on_deadline, total_timeout)
        if signal is not None:
            self._remove = signal.add_callback(self._on_abort)

    # -- one network step --

    async def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Await ``coro`` as the guard's own task: its result, its error, or the guard's cause."""
        if self.cause is not None:
            coro.close()
            raise self.cause
        loop = self._loop
        task = loop.create_task(coro)
        waiter: asyncio.Future[None] = loop.create_future()
        task.add_done_callback(lambda t: _settle(waiter, t))
        limit = self.idle_timeout
        if self._drain_until is not None:
            left = max(0.0, self._drain_until - loop.time())
            limit = left if limit is None else min(limit, left)
        handle = loop.call_later(limit, self._on_idle, waiter) if limit is not None else None
        self._task, self._waiter = task, waiter
        try:
            await waiter  # a CancelledError here is the caller's: only the caller cancels this task
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            if handle is not None:
                handle.cancel()
            self._task = self._waiter = None
        if not task.done():
            task.cancel()  # the guard ended this step: wait for the read to let go of the connection
            await asyncio.wait((task,))
            if self.cause is None:
                raise _Stopped
            raise self.cause
        if self.cause is not None and task.cancelled():
            raise self.cause
        return task.result()

    def check(self) -> None:
        """Raise the abort or timeout ending the stream, if any (the signal's flag is read too)."""
        if self.cause is None:
            signal = self.signal
            if signal is None or not signal.aborted:
                return
            self.cause = self._aborted(signal.reason)
        raise self.cause

    def drain(self) -> None:
        """The content is complete: the rest of the body gets ``DRAIN_SECONDS`` in all, then is dropped."""
        self._drain_until = self._loop.time() + DRAIN_SECONDS

    async def close(self) -> None:
        """Release everything: timers, the abort callback, the response (idempotent)."""
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._remove is not None:
            self._remove()
            self._remove = None
        response, self.response = self.response, None
        closing, self._closing = self._closing, None
        if response is not None:
            await response.aclose()
        if closing is not None:
            await closing

    # -- ending (event-loop thread) --

    def _end(self, cause: LlmError | None) -> None:
        if self.cause is not None:
            return
        waiter = self._waiter
        if cause is None or (self._drain_until is not None and cause.code == "TIMEOUT"):
            # The content is complete: running out of time only costs the connection's reuse.
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            return
        self.cause = cause
        if waiter is not None:
            if not waiter.done():
                waiter.set_result(None)
            return
        response, self.response = self.response, None
        if response is not None:
            # The consumer holds a chunk: the connection is freed now, the cause raised at its next step.
            self._closing = self._loop.create_task(response.aclose())

    def _on_idle(self, waiter: asyncio.Future[None]) -> None:
        if waiter is not self._waiter or waiter.done():
            return
        if self._drain_until is not None:
            self._end(None)
            return
        what = f"{self.label} sent no bytes for {self.idle_timeout:g} s (idle timeout)"
        self._end(LlmError(what, "TIMEOUT"))

    def _on_deadline(self, seconds: float) -> None:
        self._deadline = None
        self._end(LlmError(f"{self.label} did not finish within {seconds:g} s (total timeout)", "TIMEOUT"))

    def _aborted(self, reason: Any) -> LlmError:
        text = f"{self.label} request aborted by the caller"
        if reason is not None:
            text += f" ({reason})"
        return LlmError(bounded(text, self.secrets), "ABORTED")

    def _on_abort(self, reason: Any) -> None:
        # Any thread may abort; the guard's state lives on its loop (a closed loop: long gone).
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._abort_now, reason)

    def _abort_now(self, reason: Any) -> None:
        if self.cause is None:
            self._end(self._aborted(reason))


def _settle(waiter: asyncio.Future[None], task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved here, so an abandoned step never logs "never retrieved"
    if not waiter.done():
        waiter.set_result(None)


_TRANSPORT_ERRORS = (httpx.HTTPError, httpx.StreamError, OSError)
_ERROR_BODY_LIMIT = 1 << 20


# --- the adapter ---------------------------------------------------------------------------------


class SseAdapter(LlmAdapter):
    """An adapter for a wire that answers a JSON POST with a server-sent event stream.

    Subclasses set ``path`` (appended to ``base_url``), ``api_name`` (errors
    say "<api_name> at <host>") and implement ``request_body(options)``,
    ``wire_headers(key)`` and ``translator(secrets)``; everything else is
    here. Constructor arguments shared by every wire: ``base_url``,
    ``api_key`` (else the ``api_key_env`` variable, read per stream),
    ``http_client`` (used as given, never closed; redirects are never
    followed even if it would), ``idle_timeout`` (longest silence, seconds;
    None = none), ``total_timeout`` (the whole call, seconds; None = none),
    ``headers`` (extra request headers; the ``User-Agent`` may be replaced,
    never removed), ``max_event_bytes`` and ``max_body_bytes``.
    """

    path: ClassVar[str] = ""
    api_name: ClassVar[str] = "API"
    default_api_key_env: ClassVar[str | None] = None

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        http_client: httpx.AsyncClient | None = None,
        idle_timeout: float | None = 60.0,
        total_timeout: float | None = None,
        headers: Mapping[str, str] | None = None,
        api_key_env: str | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            shown = public_url(base_url) if isinstance(base_url, str) else repr(base_url)
            example = "'https://api.example.com'"
            raise ValueError(f"base_url must be an http(s) URL such as {example}, not {shown}")
        for name, value in (("idle_timeout", idle_timeout), ("total_timeout", total_timeout)):
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be > 0 seconds, or None for no limit")
        if max_event_bytes <= 0 or max_body_bytes <= 0:
            raise ValueError("max_event_bytes and max_body_bytes must be positive")
        self.base_url = base_url.rstrip("/")
        self.url = endpoint_url(self.base_url, self.path)
        self.idle_timeout = idle_timeout
        self.total_timeout = total_timeout
        self.max_event_bytes = max_event_bytes
        self.max_body_bytes = max_body_bytes
        env = api_key_env if api_key_env is not None else self.default_api_key_env
        self._credential = Credential(api_key, env)
        self._extra_headers = dict(headers or {})
        self._clients = ClientSlot(http_client, _timeout)
        # Errors name the server, never the credentials a URL may carry (user info, query).
        self._label = f"{self.api_name} at {public_url(self.base_url)}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={public_url(self.base_url)!r}, api_key={self._credential!r}, "
            f"idle_timeout={self.idle_timeout!r})"
        )

    @property
    def http_client(self) -> httpx.AsyncClient | None:
        """The caller's client, or the one the adapter made for the running loop (None before any)."""
        return self._clients.current

    async def aclose(self) -> None:
        """Close the HTTP client the adapter made (a caller's client stays open). Idempotent."""
        await self._clients.aclose()

    def redact(self, text: str) -> str:
        """``text`` with the API key replaced by ``***``."""
        key = self._credential.peek()
        return redact(text, (key,)) if key is not None else text

    # -- what a wire supplies --

    @abstractmethod
    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body ``stream()`` sends for ``options`` (pure; for inspection and tests)."""

    @abstractmethod
    def wire_headers(self, key: str) -> dict[str, str]:
        """The wire's own headers, credential included (after ours, before the caller's extras)."""

    @abstractmethod
    def translator(self, secrets: tuple[str, ...]) -> Translator:
        """A fresh translator for one response; its messages redact ``secrets``."""

    def finished(self, translator: Translator) -> None:
        """Called after a complete response, before its final chunks are yielded."""

    # -- the stream --

    async def stream(self, options: GenerateOptions) -> AsyncIterator[AnyChunk]:
        """Stream one response as StreamChunks; raise ``LlmError`` on failure.

        Chunks produced before a failure are yielded before it is raised. A
        consumer that stops early should close the stream (``aclose()``, or
        ``contextlib.aclosing``) to release the connection at once; the abort
        signal and task cancellation release it by themselves.
        """
        label = self._label
        try:
            options = self.prepare(options)
        except LlmError as exc:  # an abort reason may quote anything, the key included
            key = self._credential.peek()
            if key is not None and exc.message != redact(exc.message, (key,)):
                raise LlmError(bounded(exc.message, (key,)), exc.code) from None
            raise
        key = self._credential.resolve(label)
        secrets = (key,)
        body = json.dumps(self.request_body(options), ensure_ascii=False).encode()
        client = self._clients.get()
        headers = merge_headers(
            client,
            {"Accept": "text/event-stream", "Accept-Encoding": "gzip, deflate", "Cache-Control": "no-store"},
            self._extra_headers,
            self.wire_headers(key),
        )
        request = client.build_request(
            "POST",
            self.url,
            content=body,
            headers={**headers, "Content-Type": "application/json"},
            timeout=_timeout(),
        )
        signal = options.signal
        guard = _Guard(
            signal=signal,
            idle_timeout=self.idle_timeout,
            total_timeout=self.total_timeout,
            label=label,
            secrets=secrets,
        )
        translator = self.translator(secrets)
        tail: list[AnyChunk] = []
        rid: str | None = None
        try:
            try:
                if signal is not None and signal.aborted:
                    guard.check()
                response = await guard.run(client.send(request, stream=True, follow_redirects=False))
                guard.response = response
                rid = request_id(response.headers, secrets)
                translator.request_id = rid
                await self._accept(guard, response, secrets)
                decoder = SseDecoder(self.max_event_bytes)
                encoding = response.headers.get("content-encoding", "").strip().lower()
                raw_reads: AsyncIterator[bytes]
                if response.is_stream_consumed:  # an in-memory response: its content is already decoded
                    encoding, raw_reads = "", _once(response.content)
                else:
                    raw_reads = response.aiter_raw().__aiter__()
                body_reader = _Body(encoding, self.max_body_bytes)
                feed = translator.feed
                done = False
                while True:
                    try:
                        raw = await guard.run(_next(raw_reads))
                    except _Stopped:
                        break  # the drain after a complete response ran out
                    except _TRANSPORT_ERRORS:
                        if done:
                            break  # the content was complete: only the connection's reuse is lost
                        raise
                    if raw is None:
                        break
                    if done:
                        continue  # read to the end so the connection can be reused
                    for piece in body_reader.pieces(raw):
                        for event in decoder.feed(piece):
                            chunks = feed(event)
                            if translator.done:
                                tail = chunks  # yielded after the connection is released
                                done = True
                                guard.drain()
                                break
                            for chunk in chunks:
                                yield chunk
                                # guard.check(), inlined: this runs once per chunk
                                if guard.cause is not None or (signal is not None and signal.aborted):
                                    guard.check()
                        if done:
                            break
                        if decoder.failure is not None:
                            raise decoder.failure
                if not done:
                    for event in decoder.end():
                        if _complete(event[1]):  # a last event without its blank line, whole
                            chunks = feed(event)
                            if translator.done:
                                tail = chunks
                                break
                            for chunk in chunks:
                                yield chunk
                                guard.check()
                    tail += translator.end()
                await guard.close()
            except LlmError as exc:
                salvage = translator.salvage()
                if salvage and exc is not guard.cause:
                    for chunk in salvage:
                        yield chunk
                raise _final(exc, secrets, rid) from exc.__cause__
            except ValueError as exc:  # a size limit, an undecodable body
                for chunk in translator.salvage():
                    yield chunk
                error = LlmError(bounded(f"{label}: {exc}", secrets), "MALFORMED_RESPONSE", request_id=rid)
                raise error from None
            except _TRANSPORT_ERRORS as exc:
                detach_credentials(exc, secrets)  # it stays the error's __context__: no key on it
                cause = guard.cause
                if cause is not None:
                    raise _final(cause, secrets, rid) from None
                raise _final(transport_error(exc, label=label, secrets=secrets), secrets, rid) from exc
        finally:
            await guard.close()
        self.finished(translator)
        for chunk in tail:
            yield chunk

    async def _accept(self, guard: _Guard, response: httpx.Response, secrets: tuple[str, ...]) -> None:
        """Raise the mapped ``LlmError`` unless ``response`` is a 2xx event stream."""
        status = response.status_code
        if status >= 300:
            body, truncated = await _error_body(guard, response)
            error = error_from_response(
                status, response.headers, body, label=self._label, secrets=secrets, truncated=truncated
            )
            if 300 <= status <= 399:
                location = response.headers.get("location")
                where = f" to {public_url(str(response.url.join(location)))}" if location else ""
                error = LlmError(
                    bounded(
                        f"{self._label} answered HTTP {status}, a redirect{where}; redirects are not "
                        "followed (the API key must not reach another address): "
                        "use the final URL as base_url",
                        secrets,
                    ),
                    error.code,
                    status=status,
                    request_id=error.request_id,
                )
            raise error
        content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type != "text/event-stream":
            raise LlmError(
                f"{self._label} answered HTTP {status} with {content_type or 'no content type'}, "
                "not an event stream",
                "MALFORMED_RESPONSE",
                status=status,
            )
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in _Body.SUPPORTED:
            raise LlmError(
                f"{self._label} sent a body in content-encoding {encoding!r}, which was not asked for",
                "MALFORMED_RESPONSE",
                status=status,
            )


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def _next(reads: AsyncIterator[bytes]) -> bytes | None:
    try:
        return await reads.__anext__()
    except StopAsyncIteration:
        return None


def _complete(data: str) -> bool:
    if data == "[DONE]":
        return True
    try:
        loads(data)
    except ValueError:
        return False
    return True


async def _error_body(guard: _Guard, response: httpx.Response) -> tuple[bytes, bool]:
    """Up to ``_ERROR_BODY_LIMIT`` decoded bytes of an error answer; (body, cut short)."""
    body = bytearray()
    reads = response.aiter_bytes().__aiter__()
    cut = False
    try:
        while True:
            part = await guard.run(_next(reads))
            if part is None:
                break
            body += part
            if len(body) >= _ERROR_BODY_LIMIT:
                del body[_ERROR_BODY_LIMIT:]
                cut = True
                break
    except (*_TRANSPORT_ERRORS, _Stopped):
        pass  # the status says what happened; the detail is whatever arrived
    return bytes(body), cut


def _final(error: LlmError, secrets: Iterable[str], rid: str | None) -> LlmError:
    """``error`` as it leaves the adapter: redacted, bounded, with the request id."""
    message = bounded(error.message, secrets)
    if message != error.message:
        error = LlmError(
            message,
            error.code,
            status=error.status,
            retry_after_ms=error.retry_after_ms,
            request_id=error.request_id,
            cause=error.__cause__,
        )
    if error.request_id is None:
        error.request_id = rid
    return error


def _timeout() -> httpx.Timeout:
    # Reads never time out in httpx: the guard enforces ``idle_timeout`` (None = wait forever).
    return httpx.Timeout(30.0, read=None)
