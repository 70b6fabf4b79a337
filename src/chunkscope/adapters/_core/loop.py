"""The adapter loop: ``EventStreamAdapter``, the one streaming core under every wire adapter.

A wire supplies a request builder, its framing and a pure ``Translator``; ``EventStreamAdapter``
sends the request and hands the answer's head and raw reads to the one ``WireReader``
(``reader.py``: inflate, framing, translation, end-of-body rules, error mapping). What is left
here is I/O: the guard around every await (idle, deadline, abort), yielding, the drain after a
complete response for the connection's reuse, and the failures of the transport.
(``SseAdapter`` is its former name: it also carries Bedrock's binary event stream.)
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypedDict
from urllib.parse import quote

import httpx

from chunkscope._wires import WireFacts
from chunkscope.protocol import AnyChunk, LlmError
from chunkscope.protocol.shared import current_marks

from .._base import AbortSignal, GenerateOptions, LlmAdapter
from .._failures import (
    bounded,
    detach_credentials,
    redact,
    request_id,
    transport_error,
)
from .._http import ClientSlot, endpoint_url, merge_headers, public_url
from .credential import Credential
from .framing import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_EVENT_BYTES, SseDecoder
from .guard import _Guard, _Stopped
from .reader import Decoder, Translator, WireReader

__all__ = ["Decoder", "EventStreamAdapter", "SseAdapter", "StreamOptions", "Translator"]

_TRANSPORT_ERRORS = (httpx.HTTPError, httpx.StreamError, OSError)


# --- the adapter ---------------------------------------------------------------------------------


def _check_base_url(base_url: object) -> None:
    """``ValueError`` unless ``base_url`` is an http(s) URL (shown without its credentials)."""
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        shown = public_url(base_url) if isinstance(base_url, str) else repr(base_url)
        example = "'https://api.example.com'"
        raise ValueError(f"base_url must be an http(s) URL such as {example}, not {shown}")


def _check_limits(
    idle_timeout: float | None, total_timeout: float | None, max_event_bytes: int, max_body_bytes: int
) -> None:
    """``ValueError`` unless the timeouts are positive (or None) and the byte limits positive."""
    for name, value in (("idle_timeout", idle_timeout), ("total_timeout", total_timeout)):
        if value is not None and not value > 0:
            raise ValueError(f"{name} must be > 0 seconds, or None for no limit")
    if max_event_bytes <= 0 or max_body_bytes <= 0:
        raise ValueError("max_event_bytes and max_body_bytes must be positive")


class StreamOptions(TypedDict, total=False):
    """The constructor options every ``EventStreamAdapter`` takes (after ``base_url``, ``api_key``);
    a wire's adapter adds its own and passes these on (``**options: Unpack[StreamOptions]``)."""

    http_client: httpx.AsyncClient | None
    idle_timeout: float | None
    total_timeout: float | None
    headers: Mapping[str, str] | None
    api_key_env: str | None
    max_event_bytes: int
    max_body_bytes: int


class EventStreamAdapter(LlmAdapter):
    """An adapter for a wire that answers a JSON POST with a stream of events (SSE, or
    Bedrock's binary event stream: the wire's ``framing`` decides).

    Subclasses set ``wire`` (their row of the wire table: the provider name, the key
    variables, the media type, the request path and its query come from it; an adapter with
    no row sets ``provider``, ``default_api_key_env`` and ``path`` itself),
    ``api_name`` (errors say "<api_name> at <host>") and implement ``request_body(options)``,
    ``wire_headers(key)`` and ``translator(secrets)``; everything else is
    here. Constructor arguments shared by every wire: ``base_url``,
    ``api_key`` (else the ``api_key_env`` variable, read per stream),
    ``http_client`` (used as given, never closed; redirects are never
    followed even if it would), ``idle_timeout`` (longest silence, seconds;
    None = none), ``total_timeout`` (the whole call, seconds; None = none),
    ``headers`` (extra request headers; the ``User-Agent`` may be replaced,
    never removed), ``max_event_bytes`` and ``max_body_bytes``.
    """

    wire: ClassVar[WireFacts | None] = None
    """The adapter's row of the wire table (``chunkscope._wires.WIRE_FACTS``)."""
    path: ClassVar[str] = ""
    """The request path after ``base_url``: the row's prefix and request path (``{model}``,
    ``{api_version}``: filled per call by ``path_fields``)."""
    query: ClassVar[str] = ""
    """The query a call adds after the base URL's own (the row's ``stream_query``)."""
    api_name: ClassVar[str] = "API"
    default_api_key_env: ClassVar[str | tuple[str, ...] | None] = None
    content_type: ClassVar[str] = "text/event-stream"
    """The media type of the streamed answer (sent as Accept, required of the response)."""
    framing: ClassVar[Callable[[int], Decoder]] = SseDecoder
    """The wire's framing decoder, built with the largest event it takes (the tap reads it too)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        facts = cls.__dict__.get("wire")
        if facts is None:
            return
        # One home for each fact: the row says them, the adapter reads them.
        cls.provider = facts.provider
        cls.default_api_key_env = facts.key_variables
        cls.content_type = facts.media_type
        cls.path = facts.request_prefix + facts.request_path
        cls.query = facts.stream_query

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
        _check_base_url(base_url)
        _check_limits(idle_timeout, total_timeout, max_event_bytes, max_body_bytes)
        self.base_url = base_url.rstrip("/")
        # A path with no field is the same URL for every call: built once.
        self._url = None if "{" in self.path else endpoint_url(self.base_url, self.path, self.query)
        self.idle_timeout = idle_timeout
        self.total_timeout = total_timeout
        self.max_event_bytes = max_event_bytes
        self.max_body_bytes = max_body_bytes
        env: str | tuple[str, ...] | None = (
            api_key_env if api_key_env is not None else self.default_api_key_env
        )
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

    def request_url(self, options: GenerateOptions) -> str:
        """The URL one call posts to: ``base_url`` + ``path`` + ``query``, the path's fields
        (the model, where a wire names it in the path) filled from ``options``."""
        if self._url is not None:
            return self._url
        path = self.path.format_map(self.path_fields(options))
        return endpoint_url(self.base_url, path, self.query)

    def path_fields(self, options: GenerateOptions) -> dict[str, str]:
        """The values of the request path's ``{…}`` fields: ``model``, percent-encoded whole
        (``/`` and ``:`` included)."""
        return {"model": quote(options.model, safe="")}

    def decoder(self) -> Decoder:
        """A fresh framing decoder for one response body (SSE; Bedrock reads its binary frames)."""
        return type(self).framing(self.max_event_bytes)

    def authorize(self, request: httpx.Request, key: str) -> httpx.Request:
        """The request as sent; a wire that signs requests (SigV4) signs it here (after every
        header is set, over the final body)."""
        return request

    # -- the stream --

    async def stream(self, options: GenerateOptions) -> AsyncIterator[AnyChunk]:
        """Stream one response as StreamChunks; raise ``LlmError`` on failure.

        Chunks produced before a failure are yielded before it is raised. A
        consumer that stops early should close the stream (``aclose()``, or
        ``contextlib.aclosing``) to release the connection at once; the abort
        signal and task cancellation release it by themselves.
        """
        call = self._start(options)
        guard, secrets, signal = call.guard, call.secrets, call.signal
        reader = call.reader
        try:
            try:
                raw_reads = await self._open(call)
                each = reader.each
                marks = current_marks()  # the timer's marks, until the first event is marked
                while True:
                    try:
                        raw = await guard.run(_next(raw_reads))
                    except _Stopped:
                        break  # the drain after a complete response ran out
                    except _TRANSPORT_ERRORS:
                        if reader.done:
                            break  # the content was complete: only the connection's reuse is lost
                        raise
                    if raw is None:
                        break
                    if reader.done:
                        continue  # read to the end so the connection can be reused
                    if marks is not None:
                        marks.byte()
                        if reader.started:
                            marks = None  # one local test per read from here on
                    for chunks in each(raw):
                        for chunk in chunks:
                            yield chunk
                            # guard.check(), inlined: this runs once per chunk
                            if guard.cause is not None or (signal is not None and signal.aborted):
                                guard.check()
                    _raise_failure(reader)
                    if reader.done:
                        guard.drain()  # the final chunks wait in reader.final for the release
                if not reader.done:
                    for chunk in reader.end():
                        yield chunk
                        guard.check()
                    _raise_failure(reader)
                await guard.close()
            except (LlmError, ValueError, *_TRANSPORT_ERRORS) as exc:
                salvage, error, cause = _failure(exc, guard, reader, self._label, secrets, call.rid)
                for chunk in salvage:
                    yield chunk
                raise error from cause
        finally:
            await guard.close()
        self.finished(reader.translator)
        for chunk in reader.final:
            yield chunk

    async def _open(self, call: _Call) -> AsyncIterator[bytes]:
        """Send ``call``'s request; the body's raw reads once the answer is a 2xx stream of the
        wire (else the mapped ``LlmError``). The answer's request id goes on ``call``."""
        guard = call.guard
        if call.signal is not None and call.signal.aborted:
            guard.check()
        sent = call.client.send(call.request, stream=True, follow_redirects=False)
        response = await guard.run(sent)
        guard.response = response
        call.rid = call.reader.translator.request_id = request_id(response.headers, call.secrets)
        return await self._accept(guard, response, call.reader)

    def _start(self, options: GenerateOptions) -> _Call:
        """Everything a call needs before I/O: checked options, the key, the request, its guard."""
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
            {"Accept": self.content_type, "Accept-Encoding": "gzip, deflate", "Cache-Control": "no-store"},
            self._extra_headers,
            self.wire_headers(key),
        )
        request = client.build_request(
            "POST",
            self.request_url(options),
            content=body,
            headers={**headers, "Content-Type": "application/json"},
            timeout=_timeout(),
        )
        request = self.authorize(request, key)
        signal = options.signal
        guard = _Guard(
            signal=signal,
            idle_timeout=self.idle_timeout,
            total_timeout=self.total_timeout,
            label=label,
            secrets=secrets,
        )
        return _Call(client, request, guard, self.reader(self.translator(secrets), secrets), secrets, signal)

    def reader(self, translator: Translator, secrets: tuple[str, ...]) -> WireReader:
        """The one wire reader for one response, with this adapter's framing and limits."""
        marks = current_marks()  # a timer's first-event mark, when one times this stream
        return WireReader(
            translator,
            self.decoder(),
            label=self._label,
            secrets=secrets,
            media_type=self.content_type,
            max_body_bytes=self.max_body_bytes,
            on_event=marks.event if marks is not None else None,
        )

    async def _accept(
        self, guard: _Guard, response: httpx.Response, reader: WireReader
    ) -> AsyncIterator[bytes]:
        """The body's raw reads once ``response`` is a 2xx stream of the wire; else the mapped
        ``LlmError`` (an error answer read as far as its code needs; a redirect never followed)."""
        headers: Mapping[str, str] = response.headers
        if response.is_stream_consumed:  # an in-memory response: its content is already decoded
            headers = {k: v for k, v in response.headers.items() if k != "content-encoding"}
            raw_reads: AsyncIterator[bytes] = _once(response.content)
        else:
            raw_reads = response.aiter_raw().__aiter__()
        status = response.status_code
        reader.head(status, headers)
        if reader.kind == "error":
            await _read_error_body(guard, raw_reads, reader)
            reader.end()
            error = reader.error
            assert error is not None
            if 300 <= status <= 399:
                raise self._redirect(response, error, reader.secrets)
            raise error
        if reader.error is not None:
            raise reader.error
        return raw_reads

    def _redirect(self, response: httpx.Response, error: LlmError, secrets: tuple[str, ...]) -> LlmError:
        """A 3xx answer's error: redirects are never followed (the key must not travel)."""
        status = response.status_code
        location = response.headers.get("location")
        where = f" to {public_url(str(response.url.join(location)))}" if location else ""
        return LlmError(
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


@dataclass
class _Call:
    """One call's parts, built before any I/O by ``EventStreamAdapter._start``."""

    client: httpx.AsyncClient
    request: httpx.Request
    guard: _Guard
    reader: WireReader
    secrets: tuple[str, ...]
    signal: AbortSignal | None
    rid: str | None = None  # the answer's request id, once its head arrived


def _raise_failure(reader: WireReader) -> None:
    """Raise the reader's error, if the stream failed (after its salvage was yielded)."""
    if reader.error is not None:
        raise reader.error


def _failure(
    exc: BaseException,
    guard: _Guard,
    reader: WireReader,
    label: str,
    secrets: tuple[str, ...],
    rid: str | None,
) -> tuple[list[AnyChunk], LlmError, BaseException | None]:
    """What a failed stream yields last and raises: (salvaged chunks, the error, its cause).

    An ``LlmError`` keeps its code; a ``ValueError`` (a size limit, an undecodable body) is
    ``MALFORMED_RESPONSE``; a transport error is the guard's own cause when it ended the call
    (idle, deadline, abort), else the mapped transport failure. Everything is redacted. The
    reader's own failures come with their salvage already yielded.
    """
    if isinstance(exc, LlmError):
        salvage = reader.salvage() if exc is not guard.cause and exc is not reader.error else []
        return salvage, _final(exc, secrets, rid), exc.__cause__
    if isinstance(exc, ValueError):
        error = LlmError(bounded(f"{label}: {exc}", secrets), "MALFORMED_RESPONSE", request_id=rid)
        return reader.salvage(), error, None
    detach_credentials(exc, secrets)  # it stays the error's __context__: no key on it
    cause = guard.cause
    if cause is not None:
        return [], _final(cause, secrets, rid), None
    error = transport_error(exc, label=label, secrets=secrets)
    return reader.salvage(), _final(error, secrets, rid), exc  # a drop: as the reader's close() ends it


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def _next(reads: AsyncIterator[bytes]) -> bytes | None:
    try:
        return await reads.__anext__()
    except StopAsyncIteration:
        return None


async def _read_error_body(guard: _Guard, reads: AsyncIterator[bytes], reader: WireReader) -> None:
    """An error answer's reads into ``reader``, as far as its code and message need."""
    try:
        while not reader.full:
            part = await guard.run(_next(reads))
            if part is None:
                break
            reader.feed(part)
    except (*_TRANSPORT_ERRORS, _Stopped):
        pass  # the status says what happened; the detail is whatever arrived


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


SseAdapter = EventStreamAdapter
"""The former name of ``EventStreamAdapter`` (kept: wires outside chunkscope subclass it)."""
