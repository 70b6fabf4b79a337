"""``TapCall``: everything one call through the tap showed, filled in live; and its parser.

The forwarding path only appends each read (already forwarded) to the call
and puts it on the tap's queue; the parser thread (``Parser``) decodes the
SSE, translates, checks and assembles it, and stamps the timing points with
the time the read *arrived*, so a slow parse never shifts a measurement.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from chunkscope.protocol import (
    LlmError,
    StreamInspector,
    StreamResult,
    TextDelta,
    Timings,
    Violation,
)

from ._redact import ByteMask, mask_text
from ._wires import Decoder, Translator, Wire, error_from_response

__all__ = ["TapCall", "TapTimings"]

_END = object()  # a follower's end-of-call marker

_ERROR_BODY_LIMIT = 64 << 10  # bytes of an error answer read for its code and message
_WHOLE_BODY_LIMIT = 32 << 20  # bytes of a non-streaming JSON answer parsed for its usage


@dataclass
class TapTimings:
    """The timing points of one call, in seconds from the moment the tap received the request.

    ``headers_s``: the upstream's response head arrived; ``first_byte_s``: the
    first body byte; ``first_event_s``: the first complete SSE event (any,
    pings included); ``first_content_s``: the first content delta of any kind
    (text, reasoning, tool call); ``first_text_s``: the first text delta;
    ``total_s``: the last byte forwarded (or the failure). None: not reached.
    """

    headers_s: float | None = None
    first_byte_s: float | None = None
    first_event_s: float | None = None
    first_content_s: float | None = None
    first_text_s: float | None = None
    total_s: float | None = None


@dataclass(eq=False)
class TapCall:
    """One call through the tap: request (credentials redacted), raw response reads, parsed stream.

    ``reads`` holds ``(t, bytes)`` per upstream read (``t`` from the
    request's start), exactly as forwarded except that a credential the
    request carried is masked with ``*`` where it reappears (same length).
    ``chunks`` and ``violations`` grow while the call streams; ``result``
    (a ``StreamResult``) is set when it ends, and ``wait()`` blocks until
    then. ``error`` is the call's ``LlmError`` (the upstream's status, a
    drop, a client abort, a translator failure), None when it went well.
    """

    id: int
    method: str
    path: str
    wire: str | None
    model: str | None
    request_headers: list[tuple[str, str]]
    request_body: bytes
    started_at: float
    status: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    reads: list[tuple[float, bytes]] = field(default_factory=list)
    timings: TapTimings = field(default_factory=TapTimings)
    streaming: bool = False
    result: StreamResult | None = None
    recording: str | None = None
    """The recording file's path, once written (``Tap(record=DIR)``)."""
    recording_error: str | None = None
    """Why the call could not be recorded (a failed write); the call's result stands."""
    reads_dropped: int = 0
    """Response bytes not kept in ``reads`` (past the call's share of ``Tap(keep_bytes=)``); recorded."""
    clock_start: float = 0.0
    """The request's start on the tap's clock (``now()``), so a follower can tell live time."""
    forward_failure: LlmError | None = None
    """What went wrong on the forwarding side (an upstream drop, a client abort), as it ended."""
    chunk_times: list[float] = field(default_factory=list, repr=False)
    """The arrival time of the read that gave each chunk, from the request's start (live)."""
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    # Guards chunks, chunk_times, the end and the followers, so a follower misses and repeats nothing.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _followers: list[Callable[[Any], None]] = field(default_factory=list, repr=False)
    _inspector: StreamInspector = field(default_factory=StreamInspector, repr=False)

    @property
    def chunks(self) -> list[Any]:
        """The chunks parsed so far (live)."""
        return self._inspector.chunks

    @property
    def violations(self) -> list[Violation]:
        """The rule violations found so far (live)."""
        return self._inspector.violations

    @property
    def raw(self) -> bytes:
        """The response body as forwarded (credentials masked), all reads joined."""
        return b"".join(data for _, data in self.reads)

    @property
    def done(self) -> bool:
        """True once the call ended and its result is set."""
        return self._done.is_set()

    @property
    def error(self) -> LlmError | None:
        """The call's failure, None while it runs or when it went well."""
        return self.result.error if self.result is not None else None

    @property
    def error_code(self) -> str | None:
        """The failure's stable code (also an error finish's), else None."""
        return self.result.error_code if self.result is not None else None

    def row(self) -> dict[str, Any]:
        """The call as one row of a live table (the terminal's and the notebook's): plain values only."""
        result = self.result
        usage = result.usage if result is not None else None
        t = self.timings
        first = t.first_text_s if t.first_text_s is not None else t.first_content_s
        return {
            "id": self.id,
            "wire": self.wire,
            "model": self.model,
            "status": self.status,
            "ttft_ms": None if first is None else round(first * 1000, 1),
            "duration_ms": None if t.total_s is None or not self.done else round(t.total_s * 1000, 1),
            "chunks": len(self.chunks),
            "input_tokens": usage.input_tokens if usage is not None else None,
            "output_tokens": usage.output_tokens if usage is not None else None,
            "violations": sum(1 for v in self.violations if v.severity == "error"),
            "code": self.error_code,
            "done": self.done,
        }

    def follow(self) -> AsyncIterator[tuple[float, Any]]:
        """``(t, chunk)`` for each chunk, those so far then each as it is parsed, until the call ends.

        Iterate it in an event loop (a notebook's): the parser thread hands each
        chunk over with ``loop.call_soon_threadsafe``, so the loop never blocks
        on the tap and the tap never waits for the loop. A failed call raises
        its ``LlmError`` at the end, after its chunks.
        """
        return self._follow()

    async def _follow(self) -> AsyncIterator[tuple[float, Any]]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()

        def hand_over(item: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody follows any more
                loop.call_soon_threadsafe(queue.put_nowait, item)

        with self._lock:
            backlog = list(zip(self.chunk_times, self.chunks, strict=False))
            ended = self.done
            if not ended:
                self._followers.append(hand_over)
        try:
            for item in backlog:
                yield item
            while not ended:
                item = await queue.get()
                if item is _END:
                    break
                yield item
        finally:
            with self._lock:
                if hand_over in self._followers:
                    self._followers.remove(hand_over)
        if self.error is not None:
            raise self.error

    def _chunk(self, t: float, chunk: Any) -> None:
        """The parser thread: one chunk parsed (checked and kept), handed to every follower."""
        with self._lock:
            self._inspector.add(chunk)
            self.chunk_times.append(t)
            if self._followers:
                item = (t, self._inspector.chunks[-1])
                for hand_over in self._followers:
                    hand_over(item)

    def _ended(self, result: StreamResult) -> None:
        """The call ended with ``result``: wake ``wait()`` and end every follower."""
        with self._lock:
            self.result = result
            self._done.set()
            followers, self._followers = self._followers, []
        for hand_over in followers:
            hand_over(_END)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the call ended (True) or ``timeout`` seconds passed (False)."""
        return self._done.wait(timeout)

    def __repr__(self) -> str:
        state = "running" if not self.done else (self.error_code or "ok")
        return (
            f"<TapCall #{self.id} {self.method} {self.path} wire={self.wire} model={self.model!r} "
            f"status={self.status} chunks={len(self.chunks)} {state}>"
        )


class _Inflate:
    """Raw body bytes → decoded bytes for the parser (gzip/deflate); the client still gets the raw bytes."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._z: Any = None
        if encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif encoding == "deflate":
            self._z = zlib.decompressobj()
        elif encoding not in ("", "identity"):
            raise ValueError(f"the tap cannot read content-encoding {encoding!r} (it is forwarded untouched)")

    def __call__(self, data: bytes) -> bytes:
        if self._z is None:
            return data
        try:
            return bytes(self._z.decompress(data))
        except zlib.error:
            if self.encoding == "deflate":  # raw deflate, as servers often send for "deflate"
                self.encoding = "deflate-raw"
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                return self(data)
            raise ValueError(f"the {self.encoding} body cannot be decompressed") from None


class Parser:
    """The parse side of one call: runs only in the tap's parser thread, never on the forwarding path."""

    def __init__(
        self, call: TapCall, wire: Wire | None, label: str, secrets: tuple[str, ...], mask: ByteMask
    ) -> None:
        self.call = call
        self.wire = wire
        self.label = label
        self.secrets = secrets
        self.mask = mask
        self.chunk_times = call.chunk_times  # the call's own list: followers read it
        self.translator: Translator | None = None
        self.decoder: Decoder | None = None
        self.inflate: _Inflate | None = None
        self.failure: LlmError | None = None  # the parse side's own failure: parsing stops, forwarding not
        self.body = bytearray()  # a non-streaming or error answer, decoded, bounded
        self.kind = "none"  # "sse" | "whole" | "error" | "none"

    def head(self) -> None:
        """The response head arrived: decide how the body is read."""
        call = self.call
        headers = {name.lower(): value for name, value in call.response_headers}
        status = call.status or 0
        try:
            self.inflate = _Inflate(headers.get("content-encoding", "").strip().lower())
        except ValueError as exc:
            self.failure = LlmError(f"{self.label}: {exc}", "MALFORMED_RESPONSE", status=status)
            return
        content_type = headers.get("content-type", "").partition(";")[0].strip().lower()
        if status >= 300:
            self.kind = "error"
        elif self.wire is None:
            self.kind = "none"
        elif content_type == self.wire.media_type:
            self.kind = "sse"  # a stream of the wire's events (SSE, or Bedrock's binary frames)
            call.streaming = True
            self.decoder = self.wire.decoder()
            self.translator = self.wire.translator(self.label, self.secrets)
        else:
            self.kind = "whole"

    def read(self, t: float, data: bytes) -> None:
        """One read (already forwarded and stored on the call)."""
        call = self.call
        timings = call.timings
        if timings.first_byte_s is None and data:
            timings.first_byte_s = t
        if self.failure is not None or self.inflate is None or self.kind == "none":
            return
        try:
            decoded = self.inflate(data)
        except ValueError as exc:
            self.failure = LlmError(f"{self.label}: {exc}", "MALFORMED_RESPONSE", status=call.status)
            return
        if self.kind == "sse":
            self._events(t, decoded)
        else:
            limit = _ERROR_BODY_LIMIT if self.kind == "error" else _WHOLE_BODY_LIMIT
            self.body += decoded[: max(limit - len(self.body), 0)]

    def _events(self, t: float, decoded: bytes) -> None:
        decoder, translator = self.decoder, self.translator
        assert decoder is not None and translator is not None
        try:
            events = decoder.feed(decoded)
        except ValueError as exc:
            self.failure = LlmError(f"{self.label}: {exc}", "MALFORMED_RESPONSE", status=self.call.status)
            return
        for event in events:
            if self._event(t, event):
                return
        if decoder.failure is not None:
            self.failure = LlmError(f"{self.label}: {decoder.failure}", "MALFORMED_RESPONSE")

    def _event(self, t: float, event: Any) -> bool:
        """Translate one event; True when parsing must stop (a failure was recorded)."""
        translator = self.translator
        assert translator is not None
        timings = self.call.timings
        if timings.first_event_s is None:
            timings.first_event_s = t
        if translator.done:
            return False  # after the end marker: nothing more to translate
        if self.secrets:
            event = _masked(event, self.secrets)
        try:
            chunks = translator.feed(event)
        except LlmError as exc:
            self._add(t, translator.salvage())
            self.failure = exc
            return True
        except Exception as exc:  # a translator defect: recorded, never in the client's way
            self.failure = LlmError(
                f"{self.label}: the {self.wire.name if self.wire else ''} translator failed: "
                f"{type(exc).__name__}: {exc}",
                "UNKNOWN",
                cause=exc,
            )
            return True
        self._add(t, chunks)
        return False

    def _add(self, t: float, chunks: list[Any]) -> None:
        timings = self.call.timings
        add = self.call._chunk
        for chunk in chunks:
            if timings.first_text_s is None and Timings.is_token(chunk):  # an empty delta is no token
                if timings.first_content_s is None:
                    timings.first_content_s = t
                if isinstance(chunk, TextDelta):
                    timings.first_text_s = t
            add(t, chunk)

    def finish(self, t: float, outcome: LlmError | None) -> StreamResult:
        """The call ended (``outcome``: the forwarding side's failure, e.g. a drop or an abort)."""
        call = self.call
        call.timings.total_s = t
        call.forward_failure = outcome  # a replay of the recorded reads ends the same way
        error = self.failure
        if error is None and self.kind == "sse" and (outcome is None or outcome.code == "ABORTED"):
            ended = self._end(t)
            if outcome is None:
                error = ended
            elif ended is None:
                # The SDKs close as soon as they have read the wire's last event ([DONE],
                # message_stop): a stream whose forwarded bytes already end it is whole.
                outcome = None
        elif error is None and self.kind == "error":
            error = error_from_response(
                call.status or 0,
                dict(call.response_headers),
                bytes(self.body),
                label=self.label,
                secrets=self.secrets,
                truncated=len(self.body) >= _ERROR_BODY_LIMIT,
            )
        if outcome is not None:
            salvage = self.kind == "sse" and error is None and outcome.code != "ABORTED"
            if salvage and self.translator is not None:  # an ABORTED end salvaged in _end
                self._add(t, self.translator.salvage())
            error = outcome  # what happened on the wire explains the rest
        # Only a stream has a grammar to check; a whole or error answer has no chunks to judge.
        result = call._inspector.result(error) if self.kind == "sse" else StreamResult(error=error)
        if self.kind == "whole" and error is None and self.wire is not None:
            self._whole(result)
        timings = Timings.of_arrivals(self.chunk_times, total_s=t, started_at=call.started_at)
        seen = call.timings  # the tap saw the wire itself: its points are the call's
        timings.first_byte_s, timings.first_event_s = seen.first_byte_s, seen.first_event_s
        timings.first_content_s, timings.first_text_s = seen.first_content_s, seen.first_text_s
        result.timings = timings
        return result

    def _end(self, t: float) -> LlmError | None:
        decoder, translator = self.decoder, self.translator
        assert decoder is not None and translator is not None
        try:
            for event in decoder.end():
                if self._event(t, event):
                    return self.failure
            self._add(t, translator.end())
        except LlmError as exc:
            self._add(t, translator.salvage())
            return exc
        except Exception as exc:
            return LlmError(f"{self.label}: the translator failed at the end: {exc}", "UNKNOWN", cause=exc)
        return None

    def _whole(self, result: StreamResult) -> None:
        assert self.wire is not None
        try:
            body = json.loads(bytes(self.body))
        except ValueError:
            result.error = LlmError(f"{self.label}: the JSON answer cannot be parsed", "MALFORMED_RESPONSE")
            return
        if isinstance(body, dict):
            try:
                result.usage, result.finish = self.wire.whole(body)
            except Exception as exc:  # an odd body: recorded, never raised
                result.error = LlmError(
                    f"{self.label}: the JSON answer is not the wire's shape: {exc}", "MALFORMED_RESPONSE"
                )


def _masked(event: Any, secrets: tuple[str, ...]) -> Any:
    """``event`` with a credential it quotes masked, so no chunk carries it: an SSE event's data
    text, or a binary frame's payload (Bedrock's, masked after its checksums were checked)."""
    if isinstance(event, tuple):
        name, data = event
        return name, mask_text(data, secrets)
    payload = getattr(event, "payload", None)
    if isinstance(payload, bytes) and any(s and s.encode() in payload for s in secrets):
        event.payload = mask_text(payload.decode("utf-8", "replace"), secrets).encode()
    return event


def now() -> float:
    """The tap's clock (seconds, monotonic)."""
    return time.perf_counter()
