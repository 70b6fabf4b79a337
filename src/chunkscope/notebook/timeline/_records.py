"""Compact chunk records: the timeline's wire form, in messages and in saved state.

A record is a short JSON list, one per chunk, ``[t_ms, tag, ...]``:

=========  ===============================================  ==========================
tag        record                                           chunk
=========  ===============================================  ==========================
``"t"``    ``[t, "t", index, text]``                        ``text-delta``
``"r"``    ``[t, "r", index, text]``                        ``reasoning-delta``
``"c"``    ``[t, "c", index, id, argumentsDelta(, name)]``  ``tool-call-delta``
``"x"``    ``[t, "x", chunk_json]``                         any other chunk
``"?"``    ``[t, "?", raw]``                                an input that is no chunk
``"a"``    ``[t, "a", {"type": ..., ...}]``                 an agent run's own event
=========  ===============================================  ==========================

``"a"`` records appear only in an agent run's timeline (``Timeline.consume_run``):
``step-start`` (``step``), ``retry`` (``step``, ``attempt``, ``retry``, ``delayMs``,
``code``, ``message``, ``status``), ``discarded`` (``attempt``, ``chunks``),
``tool-call`` (``id``, ``name``, ``arguments``), ``tool-result`` (``id``,
``isError``, ``content``, ``durationMs``), ``step-end`` (``finish``, ``code``),
``loop-end`` (``outcome``, ``code``, ``steps``). Block indexes start again at 0
after a ``step-start`` or a ``retry``.

``t`` is the arrival time in milliseconds since the stream started. Deltas are
sent as deltas (never the accumulated text), so the bytes sent grow linearly
with the stream.

On the wire to the page (batch messages; a long stream's saved state too) a run of two
or more consecutive ``"t"`` / ``"r"`` records of one block is coalesced into
one record ``[t, "T" | "R", index, text, [length, ...], [step_us, ...]]``
(``coalesce``): the deltas' text joined, each delta's length in UTF-16 code
units (a JavaScript string's), and its arrival as microseconds after the
previous one (0 for the first, at ``t``). The page gets one record per block
per frame, still with every delta's exact text and arrival time, so a chunk
number and the replay slider keep their meaning. ``expand`` undoes it (what
``timeline.js`` reads back).

On the wire to the page a block-end whose block got deltas may also come shortened
(``page_block_end``): ``[t, "x", chunk_json, cut]``, each string of its block longer than
``BLOCK_END_CHARS`` cut to its first ones and ``cut`` the characters left out. The page
draws such a block from its deltas, never from the block-end (whose text, at a million
deltas, is megabytes the page would receive and parse in one long task); its JSON panel
shows the cut. ``Timeline.state()`` and ``to_html`` keep the whole record.

A violation travels as ``[position, rule, severity, message]`` (``position``
null = end of stream).

The front end (``timeline.js``) decodes the same shapes.
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from chunkscope.protocol import AnyChunk, ReasoningDelta, TextDelta, ToolCallDelta

__all__ = [
    "Record",
    "coalesce",
    "page_block_end",
    "BLOCK_END_CHARS",
    "expand",
    "encode_chunk",
    "encode_raw",
    "decode_record",
    "encode_violation",
    "json_safe",
]

Record = list[Any]
"""One chunk in the timeline's compact form (see the module docstring)."""


def encode_chunk(chunk: AnyChunk, t_ms: float) -> Record:
    """The compact record of a parsed chunk that arrived ``t_ms`` after the start."""
    kind = type(chunk)
    # Exact type checks and __dict__ reads: this runs once per delta.
    if kind is TextDelta:
        d = chunk.__dict__
        return [t_ms, "t", d["index"], d["text"]]
    if kind is ReasoningDelta:
        d = chunk.__dict__
        return [t_ms, "r", d["index"], d["text"]]
    if kind is ToolCallDelta:
        d = chunk.__dict__
        name = d["name"]
        if name is None:
            return [t_ms, "c", d["index"], d["id"], d["arguments_delta"]]
        return [t_ms, "c", d["index"], d["id"], d["arguments_delta"], name]
    return [t_ms, "x", chunk.to_dict()]


_RUN_TAG = {"t": "T", "r": "R"}
_DELTA_TAGS = frozenset(("t", "r", "c"))
_DELTA_TAG = {"T": "t", "R": "r"}
_ASTRAL = "\U00010000"  # from here a character is two UTF-16 code units (a JavaScript string's)


def coalesce(records: list[Record]) -> list[Record]:
    """``records`` with each run of consecutive text / reasoning deltas of one block as one run record."""
    out: list[Record] = []
    run: list[Record] = []

    def close_run() -> None:
        out.append(_run_record(run) if len(run) > 1 else run[0])
        run.clear()

    for record in records:
        tag = record[1]
        if run and (tag != run[0][1] or record[2] != run[0][2]):
            close_run()
        if tag in _RUN_TAG:
            run.append(record)
        else:
            out.append(record)
    if run:
        close_run()
    return out


def _run_record(run: list[Record]) -> Record:
    texts = [record[3] for record in run]
    text = "".join(texts)
    if text and max(text) >= _ASTRAL:
        lengths = [len(t) + sum(1 for ch in t if ch >= _ASTRAL) for t in texts]
    else:
        lengths = [len(t) for t in texts]
    micros = [round(float(record[0]) * 1000) for record in run]
    steps = [0] + [b - a for a, b in pairwise(micros)]
    first = run[0]
    return [first[0], _RUN_TAG[first[1]], first[2], text, lengths, steps]


BLOCK_END_CHARS = 2_000
"""Characters of each string of a block-end's block the page gets when the block got deltas."""
_LOOK_BACK = 64  # records a block-end looks back for a delta of its block (a bounded, O(1) look)


def page_block_end(records: list[Record]) -> Record | None:
    """The page's shortened form of ``records[-1]``, a block-end just added, or None to send it whole.

    Only a block-end whose segment certainly got deltas (one of the last ``_LOOK_BACK`` records is
    a delta of its index, with no block-start of that index or agent record after it) is cut: the
    page draws that segment from the deltas (``_view``'s rule), so the picture stays the same.
    """
    record = records[-1]
    chunk = record[2]
    if record[1] != "x" or not isinstance(chunk, dict) or chunk.get("type") != "block-end":
        return None
    block = chunk.get("block")
    if not isinstance(block, dict) or not any(_too_long(v) for v in block.values()):
        return None
    if not _got_deltas(records[-_LOOK_BACK - 1 : -1], chunk.get("index")):
        return None
    cut = sum(len(v) - BLOCK_END_CHARS for v in block.values() if _too_long(v))
    short = {key: v[:BLOCK_END_CHARS] if _too_long(v) else v for key, v in block.items()}
    return [record[0], "x", {**chunk, "block": short}, cut]


def _too_long(value: Any) -> bool:
    return isinstance(value, str) and len(value) > BLOCK_END_CHARS


def _got_deltas(earlier: list[Record], index: Any) -> bool:
    """True when the latest of ``earlier`` that is a delta of block ``index``, a block-start of it or
    an agent record (block indexes start afresh) is the delta."""
    for record in reversed(earlier):
        tag = record[1]
        if tag in _DELTA_TAGS and record[2] == index:
            return True
        if tag == "a" or (
            tag == "x" and record[2].get("type") == "block-start" and record[2].get("index") == index
        ):
            return False
    return False


def expand(records: list[Record]) -> list[Record]:
    """The per-chunk records of a coalesced list (``coalesce`` undone)."""
    out: list[Record] = []
    for record in records:
        tag = _DELTA_TAG.get(record[1])
        if tag is None:
            out.append(record)
            continue
        t0, _, index, text, lengths, steps = record
        units = text.encode("utf-16-le", "surrogatepass")
        micros = round(float(t0) * 1000)
        at = 0
        for length, step in zip(lengths, steps, strict=True):
            micros += step
            piece = units[2 * at : 2 * (at + length)].decode("utf-16-le", "surrogatepass")
            out.append([micros / 1000, tag, index, piece])
            at += length
    return out


def encode_raw(raw: Any, t_ms: float) -> Record:
    """The record of an input that did not parse as a chunk (kept as JSON-safe data)."""
    return [t_ms, "?", json_safe(raw)]


def decode_record(record: Record) -> dict[str, Any]:
    """The chunk's JSON form (camelCase dict) from its record; ``"?"`` records return the raw input."""
    tag = record[1]
    if tag == "t":
        return {"type": "text-delta", "index": record[2], "text": record[3]}
    if tag == "r":
        return {"type": "reasoning-delta", "index": record[2], "text": record[3]}
    if tag == "c":
        out: dict[str, Any] = {
            "type": "tool-call-delta",
            "index": record[2],
            "id": record[3],
            "argumentsDelta": record[4],
        }
        if len(record) > 5:
            out["name"] = record[5]
        return out
    value = record[2]
    if isinstance(value, dict):
        return value
    return {"value": value}


def encode_violation(position: int | None, rule: str, severity: str, message: str) -> list[Any]:
    """A violation's wire form: ``[position, rule, severity, message]``."""
    return [position, rule, severity, message]


def json_safe(value: Any) -> Any:
    """``value`` if it survives a JSON round trip unchanged in kind, else its ``repr``."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)
    return value
