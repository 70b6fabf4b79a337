"""HTTP plumbing every wire adapter shares: credentials, headers, error mapping, stream guarding.

Failures become ``LlmError`` with a stable code (PROTOCOL.md §3):

==================================  ===========================================================
what happened                       code
==================================  ===========================================================
non-2xx, quota/balance wording      QUOTA (any status; a bare 402 too)
401 / 403                           AUTH
429                                 RATE_LIMIT
400 + context-window wording        CONTEXT_WINDOW_EXCEEDED
other 400, 413                      INVALID_REQUEST
5xx                                 SERVER
any other non-2xx                   HTTP_<status>
no bytes for ``idle_timeout``       TIMEOUT
refused / reset / cut body / TLS    TRANSPORT
the caller's ``AbortSignal``        ABORTED
a body that is not an event stream  MALFORMED_RESPONSE
==================================  ===========================================================

``StreamGuard`` wraps one streaming request: it sends it, maps every failure
above, enforces the idle timeout, turns an abort into ``ABORTED`` within a
loop iteration, and always closes the response (so the connection goes back
to the pool or is dropped, never leaked) — at once on an abort, even while
the consumer holds a chunk. Every ``LlmError`` leaving it carries the
provider's request id. Secrets are redacted from every message it builds.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import json
import math
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from datetime import datetime, timezone
from types import TracebackType
from typing import Any

import httpx
from httpx_sse import SSEError

from chunkscope.protocol._errors import LlmError, http_status_code

from ._base import AbortSignal, attribution_headers

__all__ = [
    "ClientSlot",
    "ProviderErrorBody",
    "StreamGuard",
    "classify_error_detail",
    "error_detail",
    "error_from_response",
    "http_error_code",
    "is_context_window_exceeded",
    "is_quota_exceeded",
    "merge_headers",
    "endpoint_url",
    "public_url",
    "redact",
    "request_id",
    "resolve_api_key",
    "retry_after_ms",
    "transport_error",
]

# --- credentials --------------------------------------------------------------

_HEADER_SAFE_KEY = re.compile(r"[\x21-\x7e]+")


def resolve_api_key(api_key: str | None, env_var: str | None, *, label: str) -> str:
    """The API key to send: ``api_key``, else ``os.environ[env_var]``, trimmed.

    Raises ``LlmError`` ``MISSING_CREDENTIAL`` when neither gives a non-blank
    key, ``INVALID_CREDENTIAL`` when the key holds characters an HTTP header
    cannot carry verbatim (non-ASCII, control characters, CR/LF, inner
    spaces). The key itself never appears in the message.
    """
    raw = api_key
    source = "the api_key argument"
    if raw is None and env_var is not None:
        raw = os.environ.get(env_var)
        source = f"the {env_var} environment variable"
    if raw is None or not raw.strip():
        where = f"pass api_key=... or set {env_var}" if env_var else "pass api_key=..."
        raise LlmError(f"no API key for {label}: {where}", "MISSING_CREDENTIAL")
    key = raw.strip()
    if _HEADER_SAFE_KEY.fullmatch(key) is None:
        raise LlmError(
            f"the API key from {source} for {label} contains characters an HTTP header cannot carry "
            "(non-ASCII, spaces or control characters such as a line break); check how it was copied",
            "INVALID_CREDENTIAL",
        )
    return key


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each (non-trivial) secret replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, "***")
    return text


def public_url(url: str) -> str:
    """``url`` as it may appear in a repr or a message: without user info, query or fragment.

    Those are where a credential hides in a URL (``https://user:key@host``, ``?api-key=…``).
    """
    try:
        return str(httpx.URL(url).copy_with(username=None, password=None, query=None, fragment=None))
    except (httpx.InvalidURL, TypeError, ValueError):
        return "<unparsable URL>"


def endpoint_url(base_url: str, path: str) -> str:
    """``path`` appended to ``base_url``'s path; a query in ``base_url`` (``?api-version=…``) is kept."""
    url = httpx.URL(base_url)
    return str(url.copy_with(path=url.path.rstrip("/") + path))


# --- the client ---------------------------------------------------------------


class ClientSlot:
    """The ``httpx.AsyncClient`` an adapter streams with.

    A caller's client is used as given and never closed. Otherwise the slot
    makes one on first use (with ``timeout()``) and a new one whenever the
    running event loop changes (another ``asyncio.run``, another notebook
    helper), since a pool's connections belong to the loop that opened them;
    ``aclose()`` closes the one it made.
    """

    __slots__ = ("_given", "_loop", "_own", "_timeout")

    def __init__(self, given: httpx.AsyncClient | None, timeout: Callable[[], httpx.Timeout]) -> None:
        self._given = given
        self._timeout = timeout
        self._own: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def current(self) -> httpx.AsyncClient | None:
        """The caller's client, or the one made for the latest loop (None before any)."""
        return self._given if self._given is not None else self._own

    def get(self) -> httpx.AsyncClient:
        """The client to send with on the running loop (call from inside it)."""
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        if self._own is None or self._loop is not loop or self._own.is_closed:
            self._own = httpx.AsyncClient(timeout=self._timeout())
            self._loop = loop
        return self._own

    async def aclose(self) -> None:
        """Close the client the slot made (a caller's stays open). Idempotent."""
        client, self._own = self._own, None
        # A client made on another (perhaps closed) loop cannot be closed from this one: it is dropped.
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()


# --- headers ------------------------------------------------------------------

_HTTPX_DEFAULT_UA = "python-httpx/"


def merge_headers(client: httpx.AsyncClient | None, *layers: Mapping[str, str] | None) -> dict[str, str]:
    """Request headers: attribution first, then ``layers`` in order (later wins, case-insensitive).

    A ``User-Agent`` may be replaced (by a layer, or by the caller's own
    client default) but never suppressed: an empty value keeps the previous one.
    """
    merged: dict[str, str] = {}
    names: dict[str, str] = {}

    def put(name: str, value: str) -> None:
        low = name.lower()
        if low == "user-agent" and not value.strip():
            return
        old = names.pop(low, None)
        if old is not None:
            del merged[old]
        names[low] = name
        merged[name] = value

    for name, value in attribution_headers().items():
        put(name, value)
    if client is not None:
        # A client built with its own User-Agent is the caller replacing ours.
        client_ua = client.headers.get("user-agent")
        if client_ua and not client_ua.startswith(_HTTPX_DEFAULT_UA):
            put("User-Agent", client_ua)
    for layer in layers:
        if layer:
            for name, value in layer.items():
                put(name, value)
    return merged


# --- error classification -----------------------------------------------------

_QUOTA = re.compile(
    r"insufficient[\s_-]*(?:quota|balance|credits?|funds)"
    r"|(?:quota|usage[\s_-]*limit)[\s_-]*(?:exceeded|exhausted|reached)"
    r"|exceeded[\s_-]+(?:your[\s_-]+|the[\s_-]+)?(?:current[\s_-]+)?quota"
    r"|(?:balance|credits?)[\s_-]+(?:is[\s_-]+)?(?:exhausted|depleted|too[\s_-]+low)"
    r"|out[\s_-]+of[\s_-]+(?:credits?|budget|quota)"
    r"|billing[\s_-]*(?:hard[\s_-]*)?limit",
    re.IGNORECASE,
)

_CONTEXT = re.compile(
    r"context[\s_-]*(?:length|window)[\s_-]*(?:exceeded|exceeds|overflow)"
    r"|(?:maximum|max)[\s_-]+(?:allowed[\s_-]+|supported[\s_-]+)?context[\s_-]+(?:length|window)"
    r"|(?:prompt|input|request|messages?)[\s_-]+(?:is[\s_-]+|are[\s_-]+)?too[\s_-]+(?:long|large)"
    r"[\s_-]+for[\s_-]+(?:the[\s_-]+|this[\s_-]+)?(?:model|context)"
    r"|(?:prompt|input|request|messages?)\b.{0,60}\b(?:exceeds?|exceeded|overflows?|larger[\s_-]+than)\b"
    r".{0,40}\bcontext\b",
    re.IGNORECASE,
)


def is_quota_exceeded(detail: str) -> bool:
    """True for wording that says the account's quota, balance or credits are exhausted."""
    return _QUOTA.search(detail) is not None


def is_context_window_exceeded(detail: str) -> bool:
    """True for wording that says the request does not fit the model's context window."""
    return _CONTEXT.search(detail) is not None


def http_error_code(status: int, detail: str = "") -> str:
    """The code for a non-2xx ``status`` whose body says ``detail`` (see the module table).

    The body's wording refines the status-only mapping (``http_status_code``):
    quota wording wins at any status, context-window wording turns a 400 into
    ``CONTEXT_WINDOW_EXCEEDED``.
    """
    if status == 402 or is_quota_exceeded(detail):
        return "QUOTA"
    if status == 400 and is_context_window_exceeded(detail):
        return "CONTEXT_WINDOW_EXCEEDED"
    return http_status_code(status)


_TYPE_CODES: tuple[tuple[str, str], ...] = (
    ("rate_limit", "RATE_LIMIT"),
    ("authentication", "AUTH"),
    ("permission", "AUTH"),
    ("invalid_request", "INVALID_REQUEST"),
    ("not_found", "HTTP_404"),
    ("overloaded", "SERVER"),
    ("server_error", "SERVER"),
    ("api_error", "SERVER"),
    ("internal", "SERVER"),
    ("timeout", "SERVER"),
)


def classify_error_detail(error: Mapping[str, Any] | None, detail: str) -> str:
    """The code for an error object delivered inside a 200 stream (no HTTP status to go by).

    Uses a numeric ``status``/``code`` in the object when present, else the
    wording (quota, context window), else the error type; an unrecognised
    in-stream error is the provider failing: ``SERVER``.
    """
    if error is not None:
        for key in ("status", "code", "status_code"):
            value = error.get(key)
            if isinstance(value, int) and 100 <= value <= 599 and not isinstance(value, bool):
                return http_error_code(value, detail)
    if is_quota_exceeded(detail):
        return "QUOTA"
    if is_context_window_exceeded(detail):
        return "CONTEXT_WINDOW_EXCEEDED"
    low = detail.lower()
    for needle, code in _TYPE_CODES:
        if needle in low:
            return code
    return "SERVER"


def error_detail(body: bytes | str | Any) -> tuple[str | None, str, Mapping[str, Any] | None]:
    """``(message, detail, error_object)`` from an error body of any common shape.

    Understands OpenAI/DeepSeek ``{"error": {"message", "type", "code"}}``,
    Anthropic ``{"type": "error", "error": {"type", "message"}}``, a bare
    ``{"message": ...}`` or ``{"detail": ...}``, and plain text. ``detail``
    joins code, type and message for the wording classifiers.
    """
    parsed: Any = body
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            parsed = json.loads(body)
        except ValueError:
            text = body.strip()
            return (text[:500] or None), text[:2000], None
    error: Any = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, str):
        return error, error, None
    if not isinstance(error, dict):
        error = parsed if isinstance(parsed, dict) else None
    if error is None:
        return None, "", None
    message = error.get("message")
    if not isinstance(message, str):
        detail_field = error.get("detail")
        message = detail_field if isinstance(detail_field, str) else None
    parts = [str(error[k]) for k in ("code", "type") if isinstance(error.get(k), (str, int))]
    if message:
        parts.append(message)
    return message, " ".join(parts), error


def retry_after_ms(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The provider-requested delay in ms from ``retry-after-ms`` or ``Retry-After``.

    ``Retry-After`` may be seconds (``2``, ``1.5``) or an HTTP date; ``now``
    (epoch seconds) is injectable for tests. None when absent, unparsable or
    not in the future.
    """
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value > 0:
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        current = now if now is not None else datetime.now(timezone.utc).timestamp()
        seconds = when.timestamp() - current
    if not math.isfinite(seconds) or seconds <= 0:
        return None
    return seconds * 1000.0


_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-deepseek-request-id", "anthropic-request-id")


def request_id(headers: Mapping[str, str]) -> str | None:
    """The provider's request id (``x-request-id``, ``request-id``, …), if any."""
    for name in _REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            return value
    return None


class ProviderErrorBody(Exception):
    """The raw (redacted, truncated) body of a provider's error answer; the ``cause`` of its ``LlmError``."""


def error_from_response(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    label: str,
    secrets: Iterable[str] = (),
) -> LlmError:
    """The ``LlmError`` for a non-2xx answer: code, status, retry delay, request id, a readable message."""
    secrets = tuple(secrets)
    message, detail, _ = error_detail(body)
    code = http_error_code(status, detail)
    reason = httpx.codes.get_reason_phrase(status)
    text = f"{label} answered HTTP {status}" + (f" {reason}" if reason else "")
    if message:
        text += f": {message}"
    raw = body.decode("utf-8", "replace")[:2000] or f"HTTP {status}"
    return LlmError(
        redact(text, secrets),
        code,
        status=status,
        retry_after_ms=retry_after_ms(headers),
        request_id=request_id(headers),
        cause=ProviderErrorBody(redact(raw, secrets)),
    )


def transport_error(exc: BaseException, *, label: str, secrets: Iterable[str] = ()) -> LlmError:
    """The ``LlmError`` for an httpx (or socket) failure: TIMEOUT, TRANSPORT or MALFORMED_RESPONSE."""
    if isinstance(exc, httpx.TimeoutException):
        code, what = "TIMEOUT", "timed out"
    elif isinstance(exc, httpx.DecodingError):
        code, what = "MALFORMED_RESPONSE", "sent a body that cannot be decoded"
    elif isinstance(exc, httpx.RemoteProtocolError):
        code, what = "TRANSPORT", "broke the connection mid-response"
    elif isinstance(exc, httpx.ConnectError):
        code, what = "TRANSPORT", "could not be reached"
    else:
        code, what = "TRANSPORT", "failed"
    detail = str(exc) or type(exc).__name__
    return LlmError(redact(f"{label} {what}: {detail}", tuple(secrets)), code, cause=exc)


# --- the stream guard ---------------------------------------------------------

_monotonic = time.monotonic


def _task_lookup() -> Callable[[asyncio.AbstractEventLoop], asyncio.Task[Any] | None]:
    # ``asyncio.current_task`` is pure Python before 3.12 (~0.5 µs, too slow for
    # every chunk); the registry it reads is a plain dict keyed by loop.
    if sys.version_info < (3, 12):
        registry = getattr(asyncio.tasks, "_current_tasks", None)
        if isinstance(registry, dict):
            return registry.get
    return asyncio.current_task


_task_of = _task_lookup()
_ERROR_BODY_LIMIT = 1 << 20
_TRANSPORT_ERRORS = (httpx.HTTPError, httpx.StreamError, OSError)


class _Activity(httpx.AsyncByteStream):
    """Passes a response body through, marking each network read as the guard's to bound.

    While a read is pending, ``guard.reader`` is the task awaiting it (what an
    abort or the idle timeout cancels) and the idle clock runs from the read's
    start, so neither the consumer's time nor the adapter's own work counts
    as the provider's silence. Done per read rather than per event, this
    costs a streaming adapter nothing per chunk.
    """

    def __init__(self, inner: httpx.AsyncByteStream, guard: StreamGuard) -> None:
        self._inner = inner
        self._guard = guard

    async def __aiter__(self) -> AsyncIterator[bytes]:
        guard = self._guard
        reads = self._inner.__aiter__()
        while True:
            guard.reader = guard.current_task()
            guard.last_activity = _monotonic()
            try:
                chunk = await reads.__anext__()
            except StopAsyncIteration:
                # The reader stays set: httpx closes the response next, an await the guard may cancel.
                return
            guard.reader = None  # the bytes are ours: until the next read, nothing is cancelled
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class StreamGuard:
    """Abort, idle timeout, error mapping and connection release for one streaming request.

    Use inside an adapter's async generator::

        guard = StreamGuard(signal=options.signal, idle_timeout=60.0, label="DeepSeek API", secrets=[key])
        async with guard:
            response = await guard.send(client, request)      # non-2xx -> LlmError
            async for event in EventSource(response).aiter_sse():
                for chunk in translate(event):
                    guard.reader = None    # before every yield to the consumer
                    yield chunk
                    guard.resume()         # after it: raises ABORTED if the signal fired meanwhile
            await guard.close()            # return the connection before the final chunks
        yield finish_chunk

    While the adapter awaits the network, ``guard.reader`` is the task doing
    so; an abort or an idle timeout cancels exactly that await and the guard
    turns the cancellation into ``LlmError`` ``ABORTED`` / ``TIMEOUT`` on exit.
    Outside it (the consumer holds a chunk) nothing is cancelled: an abort
    closes the response at once (the connection is released) and is raised at
    ``resume()``; the consumer's time does not count as the provider's
    silence. The response ``send`` returns marks each network read by itself
    (``reader`` set while it is pending, the idle clock started with it), so
    an adapter that awaits nothing but the body may call just ``check()``
    after each yield instead of ``resume()``. Every httpx failure leaving the block becomes an ``LlmError``,
    and every ``LlmError`` leaving it carries the response's request id; the
    response is always closed. Task cancellation from outside passes through
    unchanged (after closing the response).
    """

    __slots__ = (
        "_cancelled",
        "_closing",
        "_drain_until",
        "_handle",
        "_loop",
        "_remove_callback",
        "_response",
        "cause",
        "current_task",
        "idle_timeout",
        "label",
        "last_activity",
        "reader",
        "request_id",
        "secrets",
        "signal",
    )

    def __init__(
        self,
        *,
        signal: AbortSignal | None,
        idle_timeout: float | None,
        label: str,
        secrets: Iterable[str] = (),
    ) -> None:
        self.signal = signal
        self.idle_timeout = idle_timeout if idle_timeout is not None and idle_timeout > 0 else None
        self.label = label
        self.secrets = tuple(s for s in secrets if s)
        self.reader: asyncio.Task[Any] | None = None
        self.last_activity = 0.0
        self.cause: LlmError | None = None
        """The abort or idle timeout that is ending the stream (set on the loop thread)."""
        self.request_id: str | None = None
        """The provider's request id from the 2xx response's headers, once ``send`` returned."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._remove_callback: Callable[[], None] | None = None
        self._response: httpx.Response | None = None
        self._closing: asyncio.Task[None] | None = None
        self._cancelled: asyncio.Task[Any] | None = None  # the task whose read the guard cancelled
        self._drain_until: float | None = None  # the end of the drain after [DONE], on the monotonic clock
        self.current_task: Callable[[], asyncio.Task[Any] | None] = _no_task

    # -- lifecycle --

    async def __aenter__(self) -> StreamGuard:
        self._loop = asyncio.get_running_loop()
        # A fast ``asyncio.current_task`` for this loop (adapters that inline ``resume`` use it).
        self.current_task = functools.partial(_task_of, self._loop)
        self.reader = self.current_task()
        self.last_activity = _monotonic()
        if self.signal is not None:
            self.signal.throw_if_aborted()
            self._remove_callback = self.signal.add_callback(self._on_abort)
        if self.idle_timeout is not None:
            self._handle = self._loop.call_later(self.idle_timeout, self._tick)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        self.reader = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._remove_callback is not None:
            self._remove_callback()
            self._remove_callback = None
        try:
            await self.close()
        except BaseException:  # a failing close must not mask the stream's own outcome
            if exc is None:
                raise
        if exc is None:
            return None
        cause = self.cause
        cancelled = isinstance(exc, asyncio.CancelledError)
        if self._cancelled is not None:
            # Take back the cancellation the guard requested; one left over came from outside, and wins.
            uncancel = getattr(self._cancelled, "uncancel", None)  # Python 3.11+
            if uncancel is not None and uncancel() > 0 and cancelled:
                return None
        elif cancelled:
            return None  # cancelled from outside: let it propagate
        if (
            self._drain_until is not None
            and (cause is None or cause.code == "TIMEOUT")
            and (cancelled or isinstance(exc, _TRANSPORT_ERRORS))
        ):
            return True  # the content was complete ([DONE]); only the connection's reuse is lost
        error = self._mapped(exc, cause)
        if error is None:
            return None  # not a failure of the request (a defect of the adapter): let it show as is
        if error.request_id is None:
            error.request_id = self.request_id
        if error is exc:
            return None
        raise error from (None if cancelled else exc)

    def _mapped(self, exc: BaseException, cause: LlmError | None) -> LlmError | None:
        """The ``LlmError`` that ``exc`` leaving the block stands for (None: not ours to map)."""
        if isinstance(exc, LlmError):
            return exc
        if cause is not None and isinstance(exc, (asyncio.CancelledError, *_TRANSPORT_ERRORS)):
            return cause  # the abort / timeout, whatever the cancelled read raised on its way out
        if isinstance(exc, SSEError):  # before httpx errors: SSEError is an httpx.TransportError
            return LlmError(
                f"{self.label} did not answer with an event stream: {exc}", "MALFORMED_RESPONSE", cause=exc
            )
        if isinstance(exc, _TRANSPORT_ERRORS):
            return transport_error(exc, label=self.label, secrets=self.secrets)
        return None

    async def send(self, client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
        """Send ``request`` streaming; return a 2xx response or raise the mapped ``LlmError``."""
        response = await client.send(request, stream=True)
        self._response = response
        self.last_activity = _monotonic()
        if response.status_code >= 300:
            body = await _error_body(response)
            await self.close()
            raise error_from_response(
                response.status_code, response.headers, body, label=self.label, secrets=self.secrets
            )
        self.request_id = request_id(response.headers)
        response.stream = _Activity(response.stream, self)  # type: ignore[arg-type]
        return response

    async def close(self) -> None:
        """Close the response now (idempotent): the connection returns to the pool or is dropped."""
        response, self._response = self._response, None
        closing, self._closing = self._closing, None
        if response is not None:
            await response.aclose()
        if closing is not None:
            await closing

    def drain(self, seconds: float = 0.25) -> None:
        """Mark the content complete (``[DONE]``, ``message_stop``): the rest is read only for reuse.

        The rest gets ``seconds`` in all; then, or at a transport failure, the
        ``async with`` block ends quietly (the connection is dropped instead of
        pooled), so a server that keeps the body open, or trickles on, cannot
        turn a complete response into a failure or hold it up. An abort still
        raises ``ABORTED``.
        """
        self._drain_until = _monotonic() + seconds
        if self._handle is not None:
            self._handle.cancel()
        if self._loop is not None:
            self._handle = self._loop.call_later(seconds, self._tick)

    # -- between yields --

    def resume(self) -> None:
        """Call after each yield: raise the pending ABORTED, then mark this task as reading again.

        The idle clock restarts here: the time the consumer held the chunk is
        not the provider's silence.
        """
        self.check()
        self.last_activity = _monotonic()
        self.reader = self.current_task()

    def check(self) -> None:
        """Raise the abort or timeout ending the stream, if any.

        Reads the signal's flag too, which is set at once by an abort from any
        thread (the guard's own callback reaches the loop a step later).
        """
        if self.cause is None:
            signal = self.signal
            if signal is None or not signal.aborted:
                return
            self.cause = self._aborted(signal.reason)
        raise self.cause

    # -- callbacks (event-loop thread) --

    def _on_abort(self, reason: Any) -> None:
        loop = self._loop
        if loop is None:
            return
        # A closed loop raises RuntimeError: the stream is long gone.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._abort_now, reason)

    def _aborted(self, reason: Any) -> LlmError:
        text = f"{self.label} request aborted by the caller"
        if reason is not None:
            text += f" ({reason})"
        return LlmError(redact(text, self.secrets), "ABORTED", request_id=self.request_id)

    def _abort_now(self, reason: Any) -> None:
        if self.cause is None:  # else already ending (a timeout, or this abort seen by check()): once only
            self._end(self._aborted(reason))

    def _end(self, cause: LlmError) -> None:
        """End the stream with ``cause``: cancel the pending read, or release the connection now."""
        self.cause = cause
        reader = self.reader
        if reader is not None:
            self._cancelled = reader
            reader.cancel()
            return
        response, self._response = self._response, None
        if response is not None and self._loop is not None:
            # The consumer holds a chunk; the abort is raised at its next step, the connection freed now.
            self._closing = self._loop.create_task(response.aclose())

    def _tick(self) -> None:
        self._handle = None
        loop = self._loop
        if loop is None or self.cause is not None:
            return
        if self._drain_until is not None:
            left = self._drain_until - _monotonic()
            if left > 0:
                self._handle = loop.call_later(left, self._tick)
            else:  # the drain is over: __aexit__ ends the block quietly
                self._end(LlmError(f"{self.label} kept the body open after [DONE]", "TIMEOUT"))
            return
        timeout = self.idle_timeout
        if timeout is None:
            return
        wait = timeout
        if self.reader is not None:  # else no read is pending: the next read (or resume()) restarts the clock
            idle = _monotonic() - self.last_activity
            if idle >= timeout:
                self._end(
                    LlmError(
                        f"{self.label} sent no bytes for {timeout:g} s (idle timeout)",
                        "TIMEOUT",
                        request_id=self.request_id,
                    )
                )
                return
            wait = timeout - idle
        self._handle = loop.call_later(wait, self._tick)


async def _error_body(response: httpx.Response) -> bytes:
    """Up to ``_ERROR_BODY_LIMIT`` bytes of an error answer's body; a cut body only shortens it."""
    body = bytearray()
    try:
        async for part in response.aiter_bytes():
            body += part
            if len(body) >= _ERROR_BODY_LIMIT:
                break
    except (httpx.HTTPError, httpx.StreamError):
        pass  # the status says what happened; the detail is whatever arrived
    return bytes(body)


def _no_task() -> None:
    return None
