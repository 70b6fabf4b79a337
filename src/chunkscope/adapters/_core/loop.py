"""The adapter loop: ``SseAdapter``, the one streaming core under every SSE wire adapter.

A wire supplies a request builder and a pure ``Translator``; ``SseAdapter`` sends the request,
checks the answer, reads the body through the guard and the framing, feeds the translator,
drains the rest of the body for the connection's reuse, and maps every failure to ``LlmError``.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import httpx

from chunkscope.protocol import AnyChunk, LlmError
from chunkscope.protocol._clock import current_marks

from .._base import AbortSignal, GenerateOptions, LlmAdapter
from .._failures import (
    bounded,
    detach_credentials,
    error_from_response,
    loads,
    redact,
    request_id,
    transport_error,
)
from .._http import ClientSlot, endpoint_url, merge_headers, public_url
from .credential import Credential
from .framing import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_EVENT_BYTES, SseDecoder, _Body
from .guard import _Guard, _Stopped

__all__ = ["Decoder", "SseAdapter", "Translator"]

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

    def feed(self, event: Any) -> list[AnyChunk]: ...  # an SseEvent on every SSE wire

    def end(self) -> list[AnyChunk]: ...

    def salvage(self) -> list[AnyChunk]: ...


class Decoder(Protocol):
    """A wire's framing: body bytes in, events out (``SseDecoder`` for every SSE wire).

    ``feed(data)`` returns the events ``data`` completes; a framing failure (an event past its
    size limit, a frame whose checksum fails) sets ``failure`` (a ``ValueError``) and ends the
    events. ``end()`` returns what the body's end completes (an unterminated last event).
    """

    failure: ValueError | None

    def feed(self, data: bytes) -> list[Any]: ...

    def end(self) -> list[Any]: ...


_TRANSPORT_ERRORS = (httpx.HTTPError, httpx.StreamError, OSError)
_ERROR_BODY_LIMIT = 1 << 20


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
    default_api_key_env: ClassVar[str | tuple[str, ...] | None] = None
    content_type: ClassVar[str] = "text/event-stream"
    """The media type of the streamed answer (sent as Accept, required of the response)."""
    framing: ClassVar[Callable[[int], Decoder]] = SseDecoder
    """The wire's framing decoder, built with the largest event it takes (the tap reads it too)."""

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
        self.url = endpoint_url(self.base_url, self.path)
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
        """The URL one call posts to (``base_url`` + ``path``; a wire that names the model in
        the path, as Gemini and Bedrock do, builds it from ``options``)."""
        return self.url

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
        guard, translator, secrets, signal = call.guard, call.translator, call.secrets, call.signal
        client = call.client
        tail: list[AnyChunk] = []
        rid: str | None = None
        try:
            try:
                if signal is not None and signal.aborted:
                    guard.check()
                response = await guard.run(client.send(call.request, stream=True, follow_redirects=False))
                guard.response = response
                rid = request_id(response.headers, secrets)
                translator.request_id = rid
                await self._accept(guard, response, secrets)
                decoder = self.decoder()
                encoding, raw_reads = _body_reads(response)
                body_reader = _Body(encoding, self.max_body_bytes)
                feed = translator.feed
                done = False
                unmarked = current_marks()  # the timer's marks, until the first event is marked
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
                    if unmarked is not None:
                        unmarked.byte()
                    for piece in body_reader.pieces(raw):
                        for event in decoder.feed(piece):
                            if unmarked is not None:
                                unmarked.event()
                                unmarked = None  # one local test per event from here on
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
                    async for chunk in _body_end(decoder, translator, guard, tail):
                        yield chunk
                await guard.close()
            except (LlmError, ValueError, *_TRANSPORT_ERRORS) as exc:
                salvage, error, cause = _failure(exc, guard, translator, self._label, secrets, rid)
                for chunk in salvage:
                    yield chunk
                raise error from cause
        finally:
            await guard.close()
        self.finished(translator)
        for chunk in tail:
            yield chunk

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
        return _Call(client, request, guard, self.translator(secrets), secrets, signal)

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
        if content_type != self.content_type:
            raise LlmError(
                f"{self._label} answered HTTP {status} with {content_type or 'no content type'}, "
                f"not an event stream ({self.content_type})",
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


@dataclass
class _Call:
    """One call's parts, built before any I/O by ``SseAdapter._start``."""

    client: httpx.AsyncClient
    request: httpx.Request
    guard: _Guard
    translator: Translator
    secrets: tuple[str, ...]
    signal: AbortSignal | None


def _body_reads(response: httpx.Response) -> tuple[str, AsyncIterator[bytes]]:
    """The body's content encoding and its raw reads (an in-memory response is already decoded)."""
    if response.is_stream_consumed:
        return "", _once(response.content)
    return response.headers.get("content-encoding", "").strip().lower(), response.aiter_raw().__aiter__()


async def _body_end(
    decoder: Decoder, translator: Translator, guard: _Guard, tail: list[AnyChunk]
) -> AsyncIterator[AnyChunk]:
    """The body ended before the translator's terminator: a last event without its blank line,
    whole, still counts; then the translator's own end (its chunks, or STREAM_CLOSED) into ``tail``."""
    for event in decoder.end():
        if _complete(event[1]):
            chunks = translator.feed(event)
            if translator.done:
                tail[:] = chunks
                return
            for chunk in chunks:
                yield chunk
                guard.check()
    tail += translator.end()


def _failure(
    exc: BaseException,
    guard: _Guard,
    translator: Translator,
    label: str,
    secrets: tuple[str, ...],
    rid: str | None,
) -> tuple[list[AnyChunk], LlmError, BaseException | None]:
    """What a failed stream yields last and raises: (salvaged chunks, the error, its cause).

    An ``LlmError`` keeps its code; a ``ValueError`` (a size limit, an undecodable body) is
    ``MALFORMED_RESPONSE``; a transport error is the guard's own cause when it ended the call
    (idle, deadline, abort), else the mapped transport failure. Everything is redacted.
    """
    if isinstance(exc, LlmError):
        salvage = translator.salvage() if exc is not guard.cause else []
        return salvage, _final(exc, secrets, rid), exc.__cause__
    if isinstance(exc, ValueError):
        error = LlmError(bounded(f"{label}: {exc}", secrets), "MALFORMED_RESPONSE", request_id=rid)
        return translator.salvage(), error, None
    detach_credentials(exc, secrets)  # it stays the error's __context__: no key on it
    cause = guard.cause
    if cause is not None:
        return [], _final(cause, secrets, rid), None
    return [], _final(transport_error(exc, label=label, secrets=secrets), secrets, rid), exc


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
