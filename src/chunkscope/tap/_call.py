"""``TapCall``: everything one call through the tap showed, filled in live; and its parser.

The forwarding path appends each read (already forwarded) to the call; its
``Parser`` (on the event loop's thread for a short read, else on the tap's
parser thread) hands it to the adapters' one wire reader, checks and
assembles the chunks, and stamps the timing points with the time the read
*arrived*, so a slow parse never shifts a measurement.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from chunkscope.protocol import (
    LlmError,
    ReasoningDelta,
    StreamInspector,
    StreamResult,
    TextDelta,
    Timings,
    ToolCallDelta,
    Violation,
)

from ._redact import ByteMask, mask_text
from ._wires import Wire, WireReader, unparsed_reader

__all__ = ["TapCall", "TapTimings"]

_END = object()  # a follower's end-of-call marker
_CHUNK_BYTES = 640
"""What one kept chunk costs in memory besides its text (measured: a parsed delta's model, its
field dict and its arrival time, ~570 bytes on CPython 3.11)."""
_PIECE: dict[type[Any], str] = {TextDelta: "text", ReasoningDelta: "text", ToolCallDelta: "arguments_delta"}


def chunk_bytes(chunk: Any) -> int:
    """The memory one kept chunk is counted at against its call's share: overhead and text."""
    name = _PIECE.get(type(chunk))
    return _CHUNK_BYTES + (len(getattr(chunk, name)) if name is not None else 0)


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
    reads: list[tuple[float, bytes | bytearray]] = field(default_factory=list)
    timings: TapTimings = field(default_factory=TapTimings)
    streaming: bool = False
    result: StreamResult | None = None
    recording: str | None = None
    """The recording file's path, once written (``Tap(record=DIR)``)."""
    recording_error: str | None = None
    """Why the call could not be recorded (a failed write); the call's result stands."""
    reads_dropped: int = 0
    """Response bytes not kept in ``reads`` (past the call's share of ``Tap(keep_bytes=)``, recorded;
    or a compressed body, not recorded: ``withheld_encoding``)."""
    withheld_encoding: str | None = None
    """The content encoding of a body the upstream compressed though the tap asked for identity:
    its reads are neither kept nor recorded (a key inside could not be masked without inflating
    them); it is parsed as usual, its chunks and result kept and recorded."""
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
    key_fingerprint: str | None = None
    """A short hash naming the request's key (``key-…``), never the key; None: the request carried none."""
    profile: str = "strict"
    """The rule profile the call's chunks are checked under (``Tap(profile=...)``)."""
    _inspector: StreamInspector = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._inspector = StreamInspector(self.profile)

    @property
    def chunks(self) -> list[Any]:
        """The chunks parsed so far (live): the latest only once the call outgrew its share."""
        return self._inspector.chunks

    @property
    def chunks_dropped(self) -> int:
        """The oldest chunks no longer in ``chunks`` (past the call's share of ``Tap(keep_bytes=)``):
        checked, assembled, counted and recorded, not kept in memory (0 when all are kept)."""
        return self._inspector.dropped

    @property
    def chunk_count(self) -> int:
        """Every chunk parsed so far, those dropped included."""
        return self._inspector.position

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
            "chunks": self.chunk_count,
            "input_tokens": usage.input_tokens if usage is not None else None,
            "output_tokens": usage.output_tokens if usage is not None else None,
            "violations": sum(1 for v in self.violations if v.severity == "error"),
            "code": self.error_code,
            "done": self.done,
        }

    def follow(self) -> AsyncIterator[tuple[float, Any]]:
        """``(t, chunk)`` for each chunk, those so far then each as it is parsed, until the call ends.

        Iterate it in an event loop (a notebook's): the tap hands each
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
        """The parse side: one chunk parsed (checked and kept), handed to every follower."""
        with self._lock:
            self._inspector.add(chunk)
            self.chunk_times.append(t)
            if self._followers:
                item = (t, self._inspector.chunks[-1])
                for hand_over in self._followers:
                    hand_over(item)

    def _trim(self, count: int) -> tuple[list[float], list[Any]]:
        """The parse side: drop the oldest ``count`` chunks (and their times); returns them."""
        with self._lock:
            times = self.chunk_times[:count]
            chunks = self._inspector.chunks[:count]
            self._inspector.trim(count)
            del self.chunk_times[:count]
        return times, chunks

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
        dropped = self.chunks_dropped
        kept = f" ({dropped} not kept)" if dropped else ""
        return (
            f"<TapCall #{self.id} {self.method} {self.path} wire={self.wire} model={self.model!r} "
            f"status={self.status} chunks={self.chunk_count}{kept} {state}>"
        )


class Parser:
    """The parse side of one call: timing marks and masking around the adapters' one wire reader.

    Runs after the bytes it parses reached the client, never before: a short read on the event
    loop's thread, everything else (and a call's items while some wait there) on the tap's parser
    thread, one item at a time in the call's order. Every read goes to the
    call's ``WireReader`` (built from the wire table's row, as an adapter builds it), so the tap
    finds the chunks, usage, finish and error code an adapter finds in the same bytes.
    """

    def __init__(
        self,
        call: TapCall,
        wire: Wire | None,
        label: str,
        secrets: tuple[str, ...],
        mask: ByteMask,
        *,
        expect_stream: bool = False,
        share: int = 1 << 62,
        dropped: Callable[[TapCall, list[float], list[Any]], None] | None = None,
    ) -> None:
        self.call = call
        self.wire = wire
        self.label = label
        self.secrets = secrets
        self.mask = mask
        self.chunk_times = call.chunk_times  # the call's own list: followers read it
        self.expect_stream = expect_stream
        self.failure: LlmError | None = None  # the parse side's own failure: parsing stops, forwarding not
        self.reader: WireReader | None = None
        self._t = 0.0  # the arrival time of the read being parsed (the first event's mark)
        self._final = False  # the terminator's chunks were added
        # The chunks kept on the call cost at most ``share`` bytes (chunk_bytes): past it the oldest
        # go, handed to ``dropped`` (the recording's spill) first.
        self.share = share
        self.dropped = dropped
        self._kept_bytes = 0
        self._first_chunk_s: float | None = None
        # Items handed to the parser thread and done there (one writer each): while they differ,
        # the call's next read goes there too, so its reads are parsed in order and one at a time.
        self.handed = 0
        self.parsed = 0

    def fits(self, size: int) -> bool:
        """A read of ``size`` bytes parses without dropping kept chunks (nor writing them to a file):
        a chunk is counted at its overhead and text, and takes more than a byte of the read."""
        return self._kept_bytes + size * (_CHUNK_BYTES + 1) <= self.share

    @property
    def kind(self) -> str:
        """How the body is read: ``"stream"``, ``"whole"``, ``"error"`` or ``"none"``."""
        return self.reader.kind if self.reader is not None else "none"

    def head(self) -> None:
        """The response head arrived: the call's reader takes it."""
        call = self.call
        headers = {name.lower(): value for name, value in call.response_headers}
        if self.wire is None:
            reader = unparsed_reader(self.label, self.secrets)
        else:
            mask = (lambda event: _masked(event, self.secrets)) if self.secrets else None
            reader = self.wire.reader(
                self.label,
                self.secrets,
                expect_stream=self.expect_stream,
                mask=mask,
                on_event=self._first_event,
            )
        reader.head(call.status or 0, headers)
        call.streaming = reader.kind == "stream"
        self.reader = reader

    def _first_event(self) -> None:
        timings = self.call.timings
        if timings.first_event_s is None:
            timings.first_event_s = self._t

    def read(self, t: float, data: bytes) -> None:
        """One read (already forwarded and stored on the call)."""
        timings = self.call.timings
        if timings.first_byte_s is None and data:
            timings.first_byte_s = t
        reader = self.reader
        if self.failure is not None or reader is None:
            return
        self._t = t
        try:
            self._add(t, reader.feed(data))
        except Exception as exc:  # a translator defect: recorded, never in the client's way
            self.failure = self._defect(exc)
            return
        if reader.done and not self._final:
            self._final = True
            self._add(t, reader.final)

    def _defect(self, exc: Exception, where: str = "") -> LlmError:
        name = self.wire.name if self.wire else ""
        return LlmError(
            f"{self.label}: the {name} translator failed{where}: {type(exc).__name__}: {exc}",
            "UNKNOWN",
            cause=exc,
        )

    def _add(self, t: float, chunks: list[Any]) -> None:
        if not chunks:
            return
        timings = self.call.timings
        add = self.call._chunk
        if self._first_chunk_s is None:
            self._first_chunk_s = t
        size = 0
        for chunk in chunks:
            if timings.first_text_s is None and Timings.is_token(chunk):  # an empty delta is no token
                if timings.first_content_s is None:
                    timings.first_content_s = t
                if isinstance(chunk, TextDelta):
                    timings.first_text_s = t
            add(t, chunk)
            size += chunk_bytes(chunk)
        self._kept_bytes += size
        if self._kept_bytes > self.share:
            self._trim()

    def _trim(self) -> None:
        """The kept chunks outgrew the call's share: the oldest go until half of it is left."""
        kept = self.call.chunks
        over = self._kept_bytes - self.share // 2
        count = 0
        while over > 0 and count < len(kept):
            size = chunk_bytes(kept[count])
            over -= size
            self._kept_bytes -= size
            count += 1
        times, chunks = self.call._trim(count)
        if self.reader is not None:
            self.reader.compact()  # the translator's copy of the text, as the inspector's
        if self.dropped is not None:
            self.dropped(self.call, times, chunks)

    def finish(self, t: float, outcome: LlmError | None) -> StreamResult:
        """The call ended (``outcome``: the forwarding side's failure, e.g. a drop or an abort)."""
        call = self.call
        call.timings.total_s = t
        call.forward_failure = outcome  # a replay of the recorded reads ends the same way
        reader = self.reader
        kind = self.kind
        error = self.failure
        if error is None and reader is not None:
            self._t = t
            try:
                chunks, error = reader.close(outcome)
            except Exception as exc:
                error = self._defect(exc, " at the end")
            else:
                self._add(t, chunks)
        elif outcome is not None:
            error = outcome  # what happened on the wire explains the rest
        # A stream, or a whole answer read as the chunks its stream would have been (so its
        # recording reads back as it is seen here), is checked; an error answer has no chunks.
        result = call._inspector.result(error) if kind in ("stream", "whole") else StreamResult(error=error)
        timings = Timings.of_arrivals(self.chunk_times, total_s=t, started_at=call.started_at)
        seen = call.timings  # the tap saw the wire itself: its points are the call's
        timings.first_byte_s, timings.first_event_s = seen.first_byte_s, seen.first_event_s
        timings.first_content_s, timings.first_text_s = seen.first_content_s, seen.first_text_s
        timings.first_chunk_s = self._first_chunk_s  # the first arrival, though a window dropped it
        result.timings = timings
        return result


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
