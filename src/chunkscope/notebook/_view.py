"""What a timeline shows, derived from its state (records, violations, error).

The static HTML renderer draws from this; ``static/timeline.js`` derives the
same picture incrementally in the browser. Both follow these rules:

- one segment per content block: a ``block-start`` opens it, a delta for an
  index without an open segment opens one implicitly, a ``block-start`` for an
  index whose segment was closed opens a new segment (the ``dsh`` profile allows
  reuse after ``block-end``), a repeated ``block-start`` of an open block is
  ignored;
- a segment's text is what its deltas carried; a segment that got no delta
  shows its ``block-end`` block's content instead;
- the error badge shows the error the stream raised, else the failure of an
  ``error`` / ``aborted`` finish.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chunkscope.protocol._errors import is_unmapped

from ._records import decode_record

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
    """The picture of ``state`` after its first ``upto`` chunks (all when ``None``)."""
    all_records: list[list[Any]] = list(state.get("records") or [])
    records = all_records if upto is None else all_records[: max(0, upto)]
    segments: list[Segment] = []
    open_by_index: dict[int, Segment] = {}
    last_by_index: dict[int, Segment] = {}
    usage: dict[str, Any] | None = None
    finish: dict[str, Any] | None = None
    deltas = 0
    max_gap = 0.0
    max_gap_at: int | None = None
    previous_t: float | None = None

    def open_segment(index: int, kind: str, n: int, t: float) -> Segment:
        seg = Segment(index=index, kind=kind, first=n, last=n, t_first=t, t_last=t)
        segments.append(seg)
        open_by_index[index] = seg
        last_by_index[index] = seg
        return seg

    for n, record in enumerate(records):
        t = float(record[0])
        if previous_t is not None and t - previous_t > max_gap:
            max_gap, max_gap_at = t - previous_t, n
        previous_t = t
        tag = record[1]
        if tag in _DELTA_KIND:
            deltas += 1
            index = record[2]
            seg = open_by_index.get(index) or last_by_index.get(index)
            if seg is None:
                seg = open_segment(index, _DELTA_KIND[tag], n, t)
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
            continue
        if tag == "a":  # an agent run's event: a new step or attempt starts its indexes at 0 again
            event = record[2] if isinstance(record[2], dict) else {}
            if event.get("type") in ("step-start", "retry"):
                open_by_index.clear()
                last_by_index.clear()
            continue
        if tag != "x":
            continue
        chunk = decode_record(record)
        kind = chunk.get("type")
        if kind == "block-start":
            index = chunk.get("index")
            if isinstance(index, int) and index not in open_by_index:
                seg = open_segment(index, str(chunk.get("blockType")), n, t)
                seg.started = True
                seg.chunk_numbers.append(n)
        elif kind == "block-end":
            index = chunk.get("index")
            block = chunk.get("block") if isinstance(chunk.get("block"), dict) else {}
            assert isinstance(block, dict)
            if not isinstance(index, int):
                continue
            seg = open_by_index.get(index) or last_by_index.get(index)
            if seg is None:
                seg = open_segment(index, str(block.get("type")), n, t)
            seg.last, seg.t_last = n, t
            seg.chunk_numbers.append(n)
            seg.closed = True
            open_by_index.pop(index, None)
            if seg.deltas == 0:
                _fill_from_block(seg, block)
        elif kind == "usage":
            value = chunk.get("usage")
            usage = value if isinstance(value, dict) else None
        elif kind == "finish":
            value = chunk.get("reason")
            finish = value if isinstance(value, dict) else None

    complete = upto is None or upto >= len(all_records)
    violations = [
        v
        for v in state.get("violations") or []
        if (v[0] is None and complete) or (v[0] is not None and v[0] < len(records))
    ]
    status = str(state.get("status") or "streaming") if complete else "streaming"
    total = state.get("totalMs") if complete else None
    last_t = float(records[-1][0]) if records else 0.0
    total_ms = max(float(total), last_t) if isinstance(total, (int, float)) else last_t
    return TimelineView(
        title=str(state.get("title") or ""),
        status=status,
        records=records,
        segments=segments,
        violations=violations,
        usage=usage,
        finish=finish,
        error=error_info(state.get("error") if complete else None, finish),
        deltas=deltas,
        total_ms=total_ms,
        first_ms=float(records[0][0]) if records else None,
        max_gap_ms=max_gap,
        max_gap_at=max_gap_at,
    )


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
    if finish is not None and finish.get("kind") in ("error", "aborted"):
        failure = finish.get("failure") if isinstance(finish.get("failure"), dict) else {}
        assert isinstance(failure, dict)
        return ErrorInfo(
            code=str(failure.get("code") or str(finish.get("kind")).upper()),
            message=str(failure.get("message") or ""),
            status=failure.get("status"),
            retry_after_ms=failure.get("providerRetryAfterMs"),
            request_id=failure.get("requestId"),
            source="finish",
        )
    return None
