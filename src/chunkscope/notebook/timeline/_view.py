"""What a timeline shows, derived from its state (records, violations, error).

The static HTML renderer draws from this; ``timeline.js`` derives the same
picture incrementally in the browser (its ``Picture`` folds records as
``_Fold`` does here; its exported ``derive`` is this module's ``derive``). The
shared vectors under ``tests/fixtures/timeline/`` (state → picture) are run by
both, so the two cannot drift. Both follow these rules:

- one segment per content block: a ``block-start`` opens it, a delta for an
  index without an open segment opens one implicitly, a ``block-start`` for an
  index whose segment was closed opens a new segment (the ``dsh`` profile allows
  reuse after ``block-end``), a repeated ``block-start`` of an open block is
  ignored; an agent run's ``step-start`` or ``retry`` starts the indexes afresh;
- a segment's text is what its deltas carried; a segment that got no delta
  shows its ``block-end`` block's content instead;
- the error badge shows the error the stream raised, else the failure of an
  ``error`` / ``aborted`` finish;
- a frame of the first ``upto`` records shows the violations at those chunks,
  and the end-of-stream ones (position ``None``) only once complete.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chunkscope.protocol.shared import is_unmapped

from ._records import decode_record, expand

__all__ = ["Segment", "ErrorInfo", "TimelineView", "derive", "error_info", "STATE_VERSION"]

STATE_VERSION = 1
"""Version of the state dict's shape (``state["v"]``)."""

_DELTA_KIND = {"t": "text", "r": "reasoning", "c": "tool-call"}


@dataclass
class Segment:
    """One content block as drawn: where it starts and ends and what it carried."""

    index: int
    kind: str
    first: int
    last: int
    t_first: float
    t_last: float
    deltas: int = 0
    started: bool = False
    closed: bool = False
    parts: list[str] = field(default_factory=list)
    name: str | None = None
    call_id: str | None = None
    chunk_numbers: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The text (or, for a tool call, the raw arguments) the block carried."""
        return "".join(self.parts)


@dataclass(frozen=True)
class ErrorInfo:
    """What the error badge shows."""

    code: str
    message: str
    status: int | None = None
    retry_after_ms: float | None = None
    request_id: str | None = None
    chain: str | None = None
    causes: tuple[str, ...] = ()
    retryable: bool | None = None
    source: str = "raised"  # "raised" (the stream raised) or "finish" (an error/aborted finish)

    @property
    def unmapped(self) -> bool:
        """True when the code is no registered code (e.g. a finish reason the package does not map)."""
        return is_unmapped(self.code)


@dataclass
class TimelineView:
    """Everything one frame of the timeline shows."""

    title: str
    status: str
    records: list[list[Any]]
    segments: list[Segment]
    violations: list[list[Any]]
    usage: dict[str, Any] | None
    finish: dict[str, Any] | None
    error: ErrorInfo | None
    deltas: int
    total_ms: float
    first_ms: float | None
    max_gap_ms: float
    max_gap_at: int | None

    @property
    def chunks(self) -> int:
        """How many chunks this frame shows."""
        return len(self.records)

    @property
    def chunk_count(self) -> int:
        """How many of the shown records are chunks (an agent run's step/tool/retry records are not)."""
        return sum(1 for record in self.records if record[1] != "a")

    def time_of(self, position: int | None) -> float:
        """Arrival time (ms) of chunk ``position``; the end of the stream for ``None``."""
        if position is None or position >= len(self.records) or position < 0:
            return self.total_ms
        return float(self.records[position][0])


def derive(state: dict[str, Any], upto: int | None = None) -> TimelineView:
    """The picture of ``state`` after its first ``upto`` chunks (all when ``None``); its records
    may hold coalesced runs (``_records.coalesce``), as batches carry them."""
    all_records: list[list[Any]] = expand(list(state.get("records") or []))
    records = all_records if upto is None else all_records[: max(0, upto)]
    fold = _Fold()
    for n, record in enumerate(records):
        fold.add(n, record)
    complete = upto is None or upto >= len(all_records)
    return _view(state, records, fold, complete)


class _Fold:
    """The picture built record by record (``timeline.js``'s ``Picture`` folds the same way)."""

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.open_by_index: dict[int, Segment] = {}
        self.last_by_index: dict[int, Segment] = {}
        self.usage: dict[str, Any] | None = None
        self.finish: dict[str, Any] | None = None
        self.deltas = 0
        self.max_gap = 0.0
        self.max_gap_at: int | None = None
        self.previous_t: float | None = None

    def add(self, n: int, record: list[Any]) -> None:
        """Fold record ``n`` into the picture."""
        t = float(record[0])
        if self.previous_t is not None and t - self.previous_t > self.max_gap:
            self.max_gap, self.max_gap_at = t - self.previous_t, n
        self.previous_t = t
        tag = record[1]
        if tag in _DELTA_KIND:
            self._delta(n, t, record)
        elif tag == "a":
            self._agent(record)
        elif tag == "x":
            self._chunk(n, t, decode_record(record))

    def _open(self, index: int, kind: str, n: int, t: float) -> Segment:
        seg = Segment(index=index, kind=kind, first=n, last=n, t_first=t, t_last=t)
        self.segments.append(seg)
        self.open_by_index[index] = seg
        self.last_by_index[index] = seg
        return seg

    def _segment_of(self, index: int) -> Segment | None:
        # a delta or block-end after the block's end goes to the segment that index last had
        return self.open_by_index.get(index) or self.last_by_index.get(index)

    def _delta(self, n: int, t: float, record: list[Any]) -> None:
        tag, index = record[1], record[2]
        self.deltas += 1
        seg = self._segment_of(index) or self._open(index, _DELTA_KIND[tag], n, t)
        seg.deltas += 1
        seg.last, seg.t_last = n, t
        seg.chunk_numbers.append(n)
        if tag == "c":
            seg.call_id = record[3]
            if len(record) > 5 and record[5]:
                seg.name = record[5]
            seg.parts.append(record[4])
        else:
            seg.parts.append(record[3])

    def _agent(self, record: list[Any]) -> None:
        # an agent run's event: a new step or attempt starts its block indexes at 0 again
        event = record[2] if isinstance(record[2], dict) else {}
        if event.get("type") in ("step-start", "retry"):
            self.open_by_index.clear()
            self.last_by_index.clear()

    def _chunk(self, n: int, t: float, chunk: dict[str, Any]) -> None:
        kind = chunk.get("type")
        if kind == "block-start":
            self._block_start(n, t, chunk)
        elif kind == "block-end":
            self._block_end(n, t, chunk)
        elif kind == "usage":
            value = chunk.get("usage")
            self.usage = value if isinstance(value, dict) else None
        elif kind == "finish":
            value = chunk.get("reason")
            self.finish = value if isinstance(value, dict) else None

    def _block_start(self, n: int, t: float, chunk: dict[str, Any]) -> None:
        index = chunk.get("index")
        if isinstance(index, int) and index not in self.open_by_index:  # a repeated start is ignored
            seg = self._open(index, str(chunk.get("blockType")), n, t)
            seg.started = True
            seg.chunk_numbers.append(n)

    def _block_end(self, n: int, t: float, chunk: dict[str, Any]) -> None:
        index = chunk.get("index")
        if not isinstance(index, int):
            return
        block = chunk.get("block")
        block = block if isinstance(block, dict) else {}
        seg = self._segment_of(index) or self._open(index, str(block.get("type")), n, t)
        seg.last, seg.t_last = n, t
        seg.chunk_numbers.append(n)
        seg.closed = True
        self.open_by_index.pop(index, None)
        if seg.deltas == 0:
            _fill_from_block(seg, block)


def _view(state: dict[str, Any], records: list[list[Any]], fold: _Fold, complete: bool) -> TimelineView:
    """The frame: the fold's picture plus what only a complete state shows (status, error, the end)."""
    return TimelineView(
        title=str(state.get("title") or ""),
        status=str(state.get("status") or "streaming") if complete else "streaming",
        records=records,
        segments=fold.segments,
        violations=shown_violations(state.get("violations") or [], len(records), complete),
        usage=fold.usage,
        finish=fold.finish,
        error=error_info(state.get("error") if complete else None, fold.finish),
        deltas=fold.deltas,
        total_ms=_total_ms(state.get("totalMs") if complete else None, records),
        first_ms=float(records[0][0]) if records else None,
        max_gap_ms=fold.max_gap,
        max_gap_at=fold.max_gap_at,
    )


def shown_violations(violations: list[list[Any]], shown: int, complete: bool) -> list[list[Any]]:
    """The violations a frame of ``shown`` records marks: those at its chunks, the end's once complete."""
    return [v for v in violations if (v[0] < shown if v[0] is not None else complete)]


def _total_ms(total: Any, records: list[list[Any]]) -> float:
    # the stream's own end time when known, never before its last chunk
    last_t = float(records[-1][0]) if records else 0.0
    return max(float(total), last_t) if isinstance(total, (int, float)) else last_t


def _fill_from_block(seg: Segment, block: dict[str, Any]) -> None:
    if block.get("type") == "tool-call":
        seg.name = seg.name or _str_or_none(block.get("name"))
        seg.call_id = seg.call_id or _str_or_none(block.get("id"))
        seg.parts = [str(block.get("arguments") or "")]
    elif isinstance(block.get("text"), str):
        seg.parts = [block["text"]]


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def error_info(error: Any, finish: dict[str, Any] | None = None) -> ErrorInfo | None:
    """The badge of a state's ``error`` dict, else of an ``error`` / ``aborted`` ``finish``; else None."""
    if isinstance(error, dict):
        return _raised_info(error)
    if finish is not None and finish.get("kind") in ("error", "aborted"):
        return _finish_info(finish)
    return None


def _raised_info(error: dict[str, Any]) -> ErrorInfo:
    return ErrorInfo(
        code=str(error.get("code")),
        message=str(error.get("message") or ""),
        status=error.get("status"),
        retry_after_ms=error.get("retryAfterMs"),
        request_id=error.get("requestId"),
        chain=error.get("chain"),
        causes=tuple(str(c) for c in error.get("causes") or ()),
        retryable=error.get("retryable"),
        source="raised",
    )


def _finish_info(finish: dict[str, Any]) -> ErrorInfo:
    failure = finish.get("failure")
    failure = failure if isinstance(failure, dict) else {}
    return ErrorInfo(
        code=str(failure.get("code") or str(finish.get("kind")).upper()),
        message=str(failure.get("message") or ""),
        status=failure.get("status"),
        retry_after_ms=failure.get("providerRetryAfterMs"),
        request_id=failure.get("requestId"),
        source="finish",
    )
