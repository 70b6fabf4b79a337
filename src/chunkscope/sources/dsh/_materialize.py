"""Chunk synthesis: an attempt's logged items (events and packed rows) → typed chunks and times.

Packed rows expand to one delta per member with the unvalidated constructor
the adapters use on the hot path (their members were type-checked when the
line was read); logged chunk events are parsed, a non-chunk kept as it came
for the checker to report. Times are kept non-decreasing and gaps clamped.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

from pydantic import ValidationError

from chunkscope.protocol import ReasoningDelta, TextDelta, TokenUsage, ToolCallDelta, Usage, parse_chunk
from chunkscope.protocol.shared import (
    parse_chunk_ignoring_unknown_keys,  # the dsh profile's reading: keys the reference ignores, ignored
    trusted,  # the hot path's unvalidated constructor, as the adapters use it
)

__all__ = ["MAX_GAP_MS", "materialize", "message_usage"]

MAX_GAP_MS = 60_000
"""A packed row's ``dt`` gap is clamped to 0…this many milliseconds."""


def message_usage(data: dict[str, Any]) -> TokenUsage | None:
    usage = data.get("usage")
    if type(usage) is not dict:
        return None
    try:
        parsed = parse_chunk({"type": "usage", "usage": usage})
    except ValidationError:
        return None
    return parsed.usage if isinstance(parsed, Usage) else None


_NO_TIME = float("-inf")

_MODEL_OF_TYPE: dict[str, type[Any]] = {"text-delta": TextDelta, "reasoning-delta": ReasoningDelta}

_DELTA_OF_ROW: dict[str, tuple[type[Any], str]] = {
    "text-chunks": (TextDelta, "text-delta"),
    "reasoning-chunks": (ReasoningDelta, "reasoning-delta"),
}


def materialize(items: list[tuple[Any, ...]]) -> tuple[list[Any], list[float | None], bool, bool]:
    """An attempt's logged ``items`` as chunks (typed models; a non-chunk item as it came), their
    times in ms, whether any item is not a chunk, and whether a time had to be adjusted."""
    chunks: list[Any] = []
    times: list[float | None] = []
    add = chunks.append
    mark = times.append
    adjusted = False
    foreign = False
    last = _NO_TIME
    for item in items:
        if len(item) != 3:
            t, chunk, is_chunk = _single(item)
            add(chunk)
            foreign = foreign or not is_chunk
            t, moved = _in_order(t, last)
            if t is not None:
                last = t
            adjusted = adjusted or moved
            mark(t)
            continue
        t0, kind, data = item
        chunks.extend(_row_chunks(kind, data))
        gaps = data["dt"]
        if t0 is None:
            times.extend([None] * (len(gaps) + 1))
            continue
        last, row_adjusted = _row_times(times, float(t0), gaps, last)
        adjusted = adjusted or row_adjusted
    return chunks, times, foreign, adjusted


def _single(item: tuple[Any, ...]) -> tuple[float | None, Any, bool]:
    """One logged item that is not a packed row: its time, its chunk, and whether it is one."""
    if len(item) == 2:
        t, obj = item
        try:
            return t, parse_chunk_ignoring_unknown_keys(obj), True  # as the harness's own validator reads it
        except ValidationError:
            return t, obj, False
    t, chunk_type, index, text = item  # a plain delta the reader kept, its fields type-checked
    return t, trusted(_MODEL_OF_TYPE[chunk_type], {"type": chunk_type, "index": index, "text": text}), True


def _in_order(t: float | None, last: float) -> tuple[float | None, bool]:
    """``t`` kept in log order after ``last``, and whether it had to move."""
    if t is None:
        # a synthesized finish with no time of its own: when the log last spoke
        return (None if last == _NO_TIME else last), False
    if t < last:
        return last, True
    return t, False


def _row_chunks(kind: str, data: dict[str, Any]) -> list[Any]:
    """The delta models of one packed row (its members were type-checked by the reader)."""
    index = data["index"]
    if kind == "tool-call-chunks":
        call_id = data["id"]
        name = data.get("name")
        return [
            trusted(
                ToolCallDelta,
                {
                    "type": "tool-call-delta",
                    "index": index,
                    "id": call_id,
                    "name": name,
                    "arguments_delta": text,
                },
            )
            for text in data["args"]
        ]
    cls, chunk_type = _DELTA_OF_ROW[kind]
    return [trusted(cls, {"type": chunk_type, "index": index, "text": text}) for text in data["texts"]]


def _row_times(times: list[float | None], t: float, gaps: list[float], last: float) -> tuple[float, bool]:
    """Append a packed row's member times from its start ``t`` and ``gaps`` (clamped to 0…MAX_GAP_MS,
    kept at or after ``last``); the row's last time, and whether a time had to be adjusted."""
    adjusted = False
    if t < last:
        t = last
        adjusted = True
    if not gaps or (min(gaps) >= 0 and max(gaps) <= MAX_GAP_MS):  # the usual case, at C speed
        times.extend(accumulate(gaps, initial=t))
        return times[-1], adjusted  # type: ignore[return-value]
    times.append(t)
    for gap in gaps:
        if gap < 0 or gap > MAX_GAP_MS:
            gap = 0 if gap < 0 else MAX_GAP_MS
            adjusted = True
        t += gap
        times.append(t)
    return t, adjusted
