"""``Timeline``: the live block timeline of a stream, as an anywidget.

``consume(stream)`` draws one stream; ``consume_run(loop.run(...))`` (what
``cs.show`` does with an agent run) draws a whole agent run in the same widget:
its chunks as usual, and its steps, retry waits, tool spans and outcome as
``"a"`` records (see ``_records``).

Python → browser messages (``widget.send``), batched to at most one per
``interval`` (1/60 s, a display frame) plus the start and end of each run; the
end of a run is flushed at once. Within a batch the deltas of a block travel
coalesced, one record per block (``_records.coalesce``), so what reaches the
page follows what changes on screen, not the number of deltas. While the
kernel's IOPub thread still has messages to send (a kernel busy with a burst
of deltas) the next batch waits and grows instead; a batch holds at most
``_BATCH_RECORDS`` records (a larger backlog goes out as several)::

    {"type": "batch", "run": r, "seq": n, "c0": c, "v0": v, "v": [violations],
     "start": true?, "end": {...}?}   + buffers[0]: the records, as UTF-8 JSON

The records travel as one binary buffer, not in the JSON content: ipykernel
walks every element of a comm message's content in Python before sending
(``json_clean``, ~5 µs a record), while a buffer goes out as bytes; the front
end parses it with one ``JSON.parse``.

``seq`` counts the batches of run ``r`` from 0 without holes; ``c0`` / ``v0``
are the stream positions of the batch's first record / violation, so a front
end applies exactly what it lacks and drops what it has. ``end`` (on the last
batch) carries ``status`` ("done" | "error"), ``totalMs`` and ``error``.

Browser → Python: ``{"type": "axis", "axis": "time" | "chunk"}`` from the axis switch
(sets ``axis``), and ``{"type": "resync", "from": n, "run": r}`` when the front
end sees ``seq`` jump past ``n``. The answer is one message
``{"type": "resync", "run", "seq" (the last batch sent), "c0", "v0", "v", "end"?}`` (records in its buffer)
holding everything sent from batch ``n`` on (the widget keeps every batch
until the next run).

When a run ends, the whole picture is also stored in the synced ``_state``
trait (the state dict of ``_view`` as JSON text: ipywidgets walks every list
and dict of a synced value looking for binary buffers, a string it does not),
so a saved or nbclient-executed notebook renders it with no message at all,
and the displayed output's ``text/html`` is updated to the static rendering.
A long stream (``_LONG_STREAM`` records or more) keeps its records, deltas
coalesced (the same picture, about a third of the bytes), in the binary
``_state_records`` trait instead (``_state`` then says ``"recordsInBuffer":
true``): the page's message decoding parses JSON text but leaves a buffer
alone. Those records (tens of MB at a million deltas) reach the page first as
``{"type": "records", "run", "part", "parts", "at", "size"}`` messages of at most 1 MiB
each (buffers[0]: the bytes from ``at`` of ``size``), which the page copies into its own
``_state_records`` (what a saved notebook keeps); the trait's sync, one message the page
would receive in one long task, is left out (a page asking for the whole state still gets
it). A page that saw the run's end live parses neither again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

import traitlets

from chunkscope.protocol import (
    CHUNK_TYPES,
    ERROR_CODES,
    ChunkLike,
    LlmError,
    StreamInspector,
    StreamResult,
    Timings,
    UsageSink,
    Violation,
)
from chunkscope.protocol.shared import FINISH_REASON_FAMILY, HTTP_STATUS_FAMILY, marking
from chunkscope.runtime import (
    AgentResult,
    AgentRun,
    ChunkEvent,
    LoopEnd,
    OutputDiscarded,
    RetryScheduled,
    StepEnd,
    ToolCallEvent,
    ToolResultEvent,
)

from .._base import StaticCopyWidget
from .._files import replayed_streams
from ._records import Record, coalesce, encode_chunk, encode_raw, encode_violation, page_block_end
from ._state import error_state
from ._static_html import TEXT_WINDOW, render_fragment, render_page
from ._view import STATE_VERSION, derive

__all__ = ["Timeline", "show", "FRAME_INTERVAL"]

FRAME_INTERVAL = 1 / 60
"""Default minimum time between two batch messages (seconds): at most one a display frame."""

_HERE = Path(__file__).parent
_LONG_STREAM = 10_000  # records: from here the end batch goes out before the final state is built
_BATCH_RECORDS = 16_384  # records in one batch message at most (a few hundred kB of JSON)
# bytes of a long stream's final records in one "records" message: the page receives and decodes
# a message in one task (about 8 ms a MB on a shared core), so tens of MB go out as many
_RECORDS_PIECE = 1 << 20
_CHUNK_MODELS = frozenset(CHUNK_TYPES.values())


_REGISTERED_CODES = [code for code in ERROR_CODES if code not in (HTTP_STATUS_FAMILY, FINISH_REASON_FAMILY)]


class Timeline(StaticCopyWidget):
    """A live, colored block timeline of one stream.

    ``display(tl)`` then ``result = await tl.consume(stream)``; or
    ``await cs.show(stream)``. ``consume`` accepts an async or sync iterable of
    chunk models or camelCase dicts, checks the protocol rules as chunks
    arrive, and returns the ``StreamResult``. The stream's own errors end up in
    ``result.error`` and on the error badge; they are not re-raised. Task
    cancellation is re-raised after the timeline is finalised.

    ``clock`` (seconds, monotonic) and ``interval`` exist for tests and
    benchmarks; the defaults are ``time.perf_counter`` and 1/60 s.
    """

    _esm = _HERE / "timeline.js"
    _css = _HERE / "timeline.css"

    title = traitlets.Unicode("").tag(sync=True)
    """The header's title (e.g. the model or scenario)."""

    axis = traitlets.Enum(("time", "chunk"), default_value="time").tag(sync=True)
    """The x axis: arrival ``time`` or ``chunk`` number; the front end's switch sets it."""

    _state = traitlets.Unicode("").tag(sync=True)
    # a long stream's final records (UTF-8 JSON, coalesced) when ``_state`` says ``recordsInBuffer``
    _state_records = traitlets.Bytes(b"").tag(sync=True)
    _records_in_pieces = False  # its value reached the page as "records" messages (not synced again)

    # The registry's codes, so the front end marks a code outside it (an unmapped finish reason) as
    # the static copy does (``ErrorInfo.unmapped``); ``HTTP_<status>`` codes are a registered family.
    _codes = traitlets.List(traitlets.Unicode(), default_value=_REGISTERED_CODES).tag(sync=True)

    def __init__(
        self,
        title: str = "",
        *,
        axis: str = "time",
        profile: str = "strict",
        clock: Callable[[], float] | None = None,
        interval: float = FRAME_INTERVAL,
        **kwargs: Any,
    ) -> None:
        super().__init__(title=title, axis=axis, **kwargs)
        self.profile = profile
        self._clock: Callable[[], float] = clock or time.perf_counter
        self._interval = interval
        self._run = 0
        self._records: list[Record] = []
        self._short_block_ends: dict[int, Record] = {}  # position -> the page's form (page_block_end)
        self._violations: list[list[Any]] = []
        self._batches: list[tuple[int, int]] = []  # (c0, v0) of every batch sent, by seq
        self._sent_records = 0
        self._sent_violations = 0
        self._last_flush = 0.0
        self._start = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._end: dict[str, Any] | None = None
        self._final: dict[str, Any] | None = None
        self._running = False
        self.result: StreamResult | None = None
        """The ``StreamResult`` of the last finished run."""
        self.agent_result: AgentResult | None = None
        """The ``AgentResult`` of the last agent run shown (``consume_run``)."""
        self.on_msg(self._on_front_end_msg)

    # --- consuming a stream -----------------------------------------------------

    async def consume(
        self,
        stream: AsyncIterable[ChunkLike] | Iterable[ChunkLike],
        *,
        profile: str | None = None,
        log: UsageSink | None = None,
        provider: str = "unknown",
        model: str = "unknown",
        tags: Mapping[str, str] | None = None,
    ) -> StreamResult:
        """Show ``stream`` live and return its ``StreamResult`` (partial output kept on error).

        The result is what ``collect(stream, profile=...)`` returns for the same
        chunks: the same engine (checker and assembler) does the work. ``log``
        records the result (a cancelled run too, as ``ABORTED``) under
        ``provider`` / ``model`` / ``tags``, as ``collect(..., log=)`` does.
        """
        if self._running:
            raise RuntimeError("this Timeline is already consuming a stream; use one Timeline per stream")
        self._running = True
        try:
            sink = None if log is None else (log, provider, model, tags)
            return await self._consume(stream, profile or self.profile, sink)
        finally:
            self._running = False

    async def _consume(
        self,
        stream: AsyncIterable[ChunkLike] | Iterable[ChunkLike],
        profile: str,
        sink: tuple[UsageSink, str, str, Mapping[str, str] | None] | None = None,
    ) -> StreamResult:
        inspector = StreamInspector(profile)
        add = inspector.add
        kept = inspector.chunks
        violations = inspector.violations
        times: list[float] = []
        error: LlmError | None = None
        clock = self._clock
        started_at = time.time()
        start = self._begin()
        iterator = _aiter(stream)
        completed = False
        with marking(clock, start) as marks:  # the adapter marks the first byte and event
            try:
                while True:
                    try:
                        raw = await iterator.__anext__()
                    except StopAsyncIteration:
                        completed = True
                        break
                    now = clock()
                    t = now - start
                    times.append(t)
                    seen = len(violations)
                    add(raw)
                    # the parsed chunk, or the input as it came if it is no chunk
                    record = _encode(kept[-1], _ms(t))
                    self._add(record, violations[seen:] if len(violations) > seen else (), now)
            except LlmError as exc:  # the stream's failure is a result, not a crash
                error = exc
            except Exception as exc:
                error = LlmError(f"the stream raised {type(exc).__name__}: {exc}", "UNKNOWN", cause=exc)
            except BaseException:
                # Cancellation (or KeyboardInterrupt): show what arrived, then let it propagate.
                cancelled = LlmError("the task consuming the stream was cancelled", "ABORTED")
                self._finish(clock() - start, cancelled, None)
                if sink is not None:
                    partial = inspector.result(cancelled)
                    partial.timings = Timings.of_arrivals(
                        times, total_s=clock() - start, started_at=started_at, chunks=kept, marks=marks
                    )
                    _record_into(sink, partial)
                raise
            finally:
                if not completed:
                    await _close(iterator)
        seen = len(violations)
        result = inspector.result(error)  # adds the end-of-stream violations
        self._add_violations(result.violations[seen:])
        result.timings = Timings.of_arrivals(
            times, total_s=clock() - start, started_at=started_at, chunks=result.chunks, marks=marks
        )
        self._end_run(result.timings.total_s, error)
        await self._let_the_end_out()
        self._store_final(result)
        if sink is not None:
            _record_into(sink, result)
        return result

    async def consume_run(self, run: AgentRun) -> AgentResult:
        """Show an agent run (``loop.run(...)``) live in this one timeline; return its ``AgentResult``.

        Chunks are drawn as for a stream; steps, retry waits (code and delay),
        tool spans (duration, result or error) and the outcome are records of
        their own (tag ``"a"``). Each step is checked on its own (its
        violations are placed at their chunks); a failed run shows its
        ``LlmError`` on the error badge.
        """
        if self._running:
            raise RuntimeError("this Timeline is already consuming a stream; use one Timeline per stream")
        self._running = True
        try:
            return await self._consume_run(run)
        finally:
            self._running = False

    async def _consume_run(self, run: AgentRun) -> AgentResult:
        if not self.title:
            self.title = run.title
        clock = self._clock
        start = self._begin()
        starts: dict[tuple[int, int], int] = {}
        outcome: AgentResult | None = None
        try:
            async for event in run:
                now = clock()
                ms = _ms(now - start)
                found: list[Violation] = []
                if isinstance(event, ChunkEvent):
                    starts.setdefault((event.step, event.attempt), len(self._records))
                    record = _encode(event.chunk, ms)
                else:
                    record = [ms, "a", _agent_record(event)]
                    if isinstance(event, StepEnd):
                        found = _step_violations(event, starts, len(self._records))
                    if isinstance(event, LoopEnd):
                        outcome = event.result
                self._add(record, found, now)
        except BaseException:
            cancelled = LlmError("the task consuming the agent run was cancelled", "ABORTED")
            self._finish(clock() - start, cancelled, None)
            raise
        assert outcome is not None
        error = outcome.error if outcome.outcome in ("error", "aborted") else None
        self._end_run(clock() - start, error)
        await self._let_the_end_out()
        self._store_final(None)
        self.agent_result = outcome
        return outcome

    def _begin(self) -> float:
        self._cancel_timer()
        self._run += 1
        self._records = []
        self._short_block_ends = {}
        self._violations = []
        self._batches = []
        self._sent_records = self._sent_violations = 0
        self._end = None
        self.result = None
        self._final = None
        self._records_in_pieces = False
        with self.hold_sync():
            self._state = ""
            self._state_records = b""
        self._start = self._last_flush = self._clock()
        self._flush(self._start, start=True)
        return self._start

    def _add(self, record: Record, found: Sequence[Violation], now: float) -> None:
        self._records.append(record)
        if record[1] == "x":
            short = page_block_end(self._records)
            if short is not None:
                self._short_block_ends[len(self._records) - 1] = short
        if found:
            self._add_violations(found)
        if now - self._last_flush >= self._interval and not self._kernel_still_sending():
            self._flush(now)
        elif self._timer is None:
            self._schedule(self._interval - (now - self._last_flush))

    def _add_violations(self, found: Iterable[Violation]) -> None:
        for v in found:
            self._violations.append(encode_violation(v.position, v.rule, v.severity, v.message))

    def _schedule(self, delay: float) -> None:
        # Without it, records that arrive just before a pause would wait for the next chunk.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(max(delay, 0.001), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._end is not None or self._sent_records == len(self._records):
            return
        now = self._clock()
        due = self._interval - (now - self._last_flush)
        if due <= 0 and not self._kernel_still_sending():
            self._flush(now)
        elif due <= 0:
            self._schedule(self._interval / 4)
        else:
            self._schedule(due)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _flush(self, now: float, *, start: bool = False, end: dict[str, Any] | None = None) -> None:
        # A backlog (a kernel too busy to send) goes out in pieces the page parses in one short task each.
        while len(self._records) - self._sent_records > _BATCH_RECORDS:
            self._flush_some(now, self._sent_records + _BATCH_RECORDS, start=start)
            start = False
        self._flush_some(now, len(self._records), start=start, end=end)

    def _flush_some(
        self, now: float, upto: int, *, start: bool = False, end: dict[str, Any] | None = None
    ) -> None:
        c0, v0 = self._sent_records, self._sent_violations
        violations = self._violations[v0:] if upto == len(self._records) else []
        msg: dict[str, Any] = {
            "type": "batch",
            "run": self._run,
            "seq": len(self._batches),
            "c0": c0,
            "v0": v0,
            "v": violations,
        }
        if start:
            msg["start"] = True
        if end is not None:
            msg["end"] = end
        self._batches.append((c0, v0))
        self._sent_records = upto
        self._sent_violations += len(violations)
        self._last_flush = now
        self._send_records(msg, c0, upto)

    def _finish(self, total_s: float, error: LlmError | None, result: StreamResult | None) -> None:
        self._end_run(total_s, error)
        self._store_final(result)

    def _end_run(self, total_s: float, error: LlmError | None) -> None:
        """Send the end batch (the end marker), at once."""
        self._cancel_timer()
        finish_kind = None
        for record in reversed(self._records):
            if record[1] == "x" and record[2].get("type") == "finish":
                finish_kind = record[2].get("reason", {}).get("kind")
                break
        failed = error is not None or finish_kind in ("error", "aborted")
        self._end = {
            "status": "error" if failed else "done",
            "totalMs": _ms(total_s),
            "error": error_state(error) if error is not None else None,
        }
        self._flush(self._clock(), end=self._end)

    async def _let_the_end_out(self) -> None:
        # ipykernel sends from its IOPub thread, which needs the GIL: the final state's JSON and
        # static copy (~1 µs a chunk) would hold the end batch in the kernel behind them. A
        # short idle wait, for long streams only, lets it out first.
        if len(self._records) >= _LONG_STREAM:
            await asyncio.sleep(min(0.05, len(self._records) * 3e-7))

    def _store_final(self, result: StreamResult | None) -> None:
        """The finished picture into ``_state`` and the display's static copy."""
        self.result = result
        self._final = self._snapshot()
        saved = self._final
        records = b""
        if len(self._records) >= _LONG_STREAM:
            # The deltas coalesced, as batches carry them (the same picture, a third of the bytes), in
            # a binary buffer: the page's message decoding leaves a buffer alone, where it would parse
            # tens of megabytes of JSON text in one task (a page frozen for half a second).
            records = _records_buffer(coalesce(self._page_records(0, len(self._records))))
            saved = {**saved, "records": [], "recordsInBuffer": True}
            self._send_in_pieces(records)
        with self.hold_sync():
            self._state = json.dumps(saved, ensure_ascii=False, allow_nan=False)
            self._state_records = records
        self._update_display()

    def _send_in_pieces(self, records: bytes) -> None:
        """``records`` to the page as "records" messages of at most ``_RECORDS_PIECE`` bytes, before
        ``_state`` says they exist; the page joins them into its ``_state_records`` (which a saved
        notebook keeps), so the trait's own sync, one message of tens of MB, is left out."""
        view = memoryview(records)
        parts = max(1, -(-len(records) // _RECORDS_PIECE))
        for part in range(parts):
            at = part * _RECORDS_PIECE
            piece = view[at : at + _RECORDS_PIECE]
            msg = {
                "type": "records",
                "run": self._run,
                "part": part,
                "parts": parts,
                "at": at,
                "size": len(records),
            }
            self.send(msg, buffers=[piece])
        self._records_in_pieces = True

    def send_state(self, key: str | Iterable[str] | None = None) -> None:
        """ipywidgets' state sync, without ``_state_records`` when its value went out in pieces
        (a page asking for the whole state, ``key`` None, still gets it)."""
        if key is not None and self._records_in_pieces:
            keys = [key] if isinstance(key, str) else [k for k in key if k != "_state_records"]
            if keys == ["_state_records"] or not keys:
                return
            key = keys
        super().send_state(key)

    def _snapshot(self) -> dict[str, Any]:
        """The picture so far, as stored in ``_state`` (see ``_view``)."""
        end = self._end or {}
        return {
            "v": STATE_VERSION,
            "run": self._run,
            "title": self.title,
            "status": end.get("status", "streaming"),
            "records": list(self._records),
            "violations": list(self._violations),
            "error": end.get("error"),
            "totalMs": end.get("totalMs"),
        }

    # --- the front end asking for what it missed ----------------------------------

    def _on_front_end_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("type") == "resync":
            self._resync(content.get("from"), content.get("run"))
        elif content.get("type") == "axis" and content.get("axis") in ("time", "chunk"):
            self.axis = content["axis"]  # the page's switch (a message: see timeline.js)

    def _resync(self, start: Any, run: Any) -> None:
        seq = start if isinstance(start, int) and run == self._run else 0
        seq = max(0, min(seq, len(self._batches)))
        if seq < len(self._batches):
            c0, v0 = self._batches[seq]
        else:
            c0, v0 = self._sent_records, self._sent_violations
        msg: dict[str, Any] = {
            "type": "resync",
            "run": self._run,
            "seq": len(self._batches) - 1,
            "c0": c0,
            "v0": v0,
            "v": self._violations[v0 : self._sent_violations],
        }
        if self._end is not None:
            msg["end"] = self._end
        self._send_records(msg, c0, self._sent_records)

    def _kernel_still_sending(self) -> bool:
        """True while the kernel's IOPub thread still holds messages to send (a busy kernel).

        ipykernel sends from a thread of its own, which a kernel busy in Python (a burst of
        deltas) leaves little time: batches sent faster than it sends them queue up, and the
        end marker waits behind the queue. Holding the next batch until the queue is empty
        keeps it at most one batch long (its records go out with the next one). ipykernel
        has no public view of that queue; without one nothing is held.
        """
        if os.environ.get("CS_NOHOLD"):
            return False
        try:
            events = self.comm.kernel.iopub_socket.io_thread._events
            return len(events) > 0
        except AttributeError:
            return False

    def _send_records(self, msg: dict[str, Any], c0: int, c1: int) -> None:
        self.send(msg, buffers=[_records_buffer(coalesce(self._page_records(c0, c1)))])

    def _page_records(self, c0: int, c1: int) -> list[Record]:
        """Records ``c0`` to ``c1`` as the page gets them: long block-ends it draws from deltas cut."""
        records = self._records[c0:c1]
        for at, short in self._short_block_ends.items():
            if c0 <= at < c1:
                records[at - c0] = short
        return records

    # --- static renderings --------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The timeline's picture as plain JSON data: the final state, or the live one so far."""
        return self._final if self._final is not None else self._snapshot()

    def static_html(self) -> str:
        """The timeline as an escaped, self-contained HTML fragment (no script); a segment's text
        is its last ``TEXT_WINDOW`` characters, as on the page (``to_html`` writes it all)."""
        return render_fragment(self.state(), axis=self.axis, text_window=TEXT_WINDOW)

    def to_html(self, path: str | Path) -> Path:
        """Write the timeline as a self-contained HTML page (inline CSS, no script, no network)."""
        target = Path(path)
        target.write_text(render_page(self.state(), axis=self.axis), encoding="utf-8")
        return target

    def _plain(self) -> str:
        view = derive(self.state())
        kinds: dict[str, int] = {}
        for seg in view.segments:
            kinds[seg.kind] = kinds.get(seg.kind, 0) + 1
        blocks = ", ".join(f"{n} {kind}" for kind, n in kinds.items()) or "no blocks"
        parts = [f"{view.status}", f"{view.chunks} chunks", blocks]
        if view.finish is not None:
            parts.append(f"finish {view.finish.get('kind')}")
        if view.error is not None:
            parts.append(f"error {view.error.code}")
        parts.append(f"{len(view.violations)} violations")
        title = f"{self.title!r}: " if self.title else ""
        return f"Timeline({title}{'; '.join(parts)})"


@overload
async def show(
    stream: AgentRun, *, title: str = "", profile: str = "strict", **kwargs: Any
) -> AgentResult: ...
@overload
async def show(
    stream: str | os.PathLike[str], *, title: str = "", profile: str = "strict", **kwargs: Any
) -> list[StreamResult]: ...
@overload
async def show(
    stream: AsyncIterable[ChunkLike] | Iterable[ChunkLike],
    *,
    title: str = "",
    profile: str = "strict",
    log: UsageSink | None = None,
    provider: str = "unknown",
    model: str = "unknown",
    tags: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> StreamResult: ...
async def show(
    stream: AsyncIterable[ChunkLike] | Iterable[ChunkLike] | AgentRun | str | os.PathLike[str],
    *,
    title: str = "",
    profile: str = "strict",
    log: UsageSink | None = None,
    provider: str = "unknown",
    model: str = "unknown",
    tags: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> StreamResult | AgentResult | list[StreamResult]:
    """Display a ``Timeline`` of ``stream`` and return its ``StreamResult``.

    The stream's own error is in ``result.error`` (not raised); keyword
    arguments go to ``Timeline``. ``log`` records the attempt under
    ``provider`` / ``model`` / ``tags`` (see ``collect``). Given an agent run
    (``loop.run(...)``), the whole run is drawn in the one timeline and its
    ``AgentResult`` returned (the loop records its own attempts: give it the log).
    Given a path (a chunk log, a recording or a session log, read by
    ``load_streams``), one timeline per stream it holds, and their results.
    """
    from IPython.display import display

    if isinstance(stream, (str, os.PathLike)):
        results = []
        for name, items in replayed_streams(stream):
            shown = Timeline(title=title or name, profile=profile, **kwargs)
            display(shown)  # type: ignore[no-untyped-call]
            results.append(await shown.consume(items))
        return results

    timeline = Timeline(title=title, profile=profile, **kwargs)
    display(timeline)  # type: ignore[no-untyped-call]
    if isinstance(stream, AgentRun):
        return await timeline.consume_run(stream)
    return await timeline.consume(stream, log=log, provider=provider, model=model, tags=tags)


def _encode(chunk: Any, ms: float) -> Record:
    """A chunk's record (a chunk model), or the record of an input that is no chunk, as it came."""
    return encode_chunk(chunk, ms) if type(chunk) in _CHUNK_MODELS else encode_raw(chunk, ms)


def _record_into(sink: tuple[UsageSink, str, str, Mapping[str, str] | None], result: StreamResult) -> None:
    log, provider, model, tags = sink
    log.record(result, provider=provider, model=model, tags=tags)


def _step_violations(event: StepEnd, starts: Mapping[tuple[int, int], int], end_at: int) -> list[Violation]:
    """A finished step's violations, placed at their chunks' records (an attempt's chunks begin
    at its first record; an end-of-stream violation sits at the step's end)."""
    found = []
    for n, attempt in enumerate(event.attempts, 1):
        offset = starts.get((event.step, n), end_at)
        for v in attempt.violations:
            at = end_at if v.position is None else offset + v.position
            found.append(Violation(v.rule, v.severity, at, v.chunk, v.message))
    return found


def _agent_record(event: Any) -> dict[str, Any]:
    """The JSON form of an agent event for an ``"a"`` record (model text stays text)."""
    kind = event.type
    out: dict[str, Any] = {"type": kind}
    if hasattr(event, "step"):
        out["step"] = event.step
    if isinstance(event, RetryScheduled):
        out.update(
            attempt=event.attempt,
            retry=event.retry,
            delayMs=_ms(event.delay_ms / 1000.0),
            code=event.error.code,
            message=event.error.message,
            status=event.error.status,
        )
    elif isinstance(event, OutputDiscarded):
        out.update(attempt=event.attempt, chunks=event.chunks)
    elif isinstance(event, ToolCallEvent):
        out.update(id=event.call.id, name=event.call.name, arguments=event.call.arguments)
    elif isinstance(event, ToolResultEvent):
        o = event.outcome
        out.update(id=o.call.id, isError=o.is_error, content=o.content, durationMs=_ms(o.duration_s))
    elif isinstance(event, StepEnd):
        finish = event.result.finish
        out.update(finish=finish.kind if finish is not None else None, code=event.result.error_code)
    elif isinstance(event, LoopEnd):
        r = event.result
        out.update(outcome=r.outcome, code=r.error.code if r.error else None, steps=len(r.steps))
    return out


def _records_buffer(records: list[Record]) -> bytes:
    """``records`` as compact UTF-8 JSON (lone surrogates in model text escaped, never an error)."""
    try:
        return json.dumps(records, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(records, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def _ms(seconds: float) -> float:
    ms = seconds * 1000.0
    return round(ms, 3) if math.isfinite(ms) else 0.0


async def _from_sync(items: Iterable[ChunkLike]) -> AsyncIterator[ChunkLike]:
    for item in items:
        yield item


def _aiter(stream: AsyncIterable[ChunkLike] | Iterable[ChunkLike]) -> AsyncIterator[ChunkLike]:
    if isinstance(stream, AsyncIterable):
        return aiter(stream)
    return _from_sync(stream)


async def _close(iterator: AsyncIterator[ChunkLike]) -> None:
    # An async generator left suspended (error, cancellation) is closed now, not at GC.
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(Exception):  # closing must not mask the run's outcome
            await aclose()
