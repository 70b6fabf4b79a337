"""``cache_report``: why a prompt cache missed, from the requests and usage chunkscope already keeps.

For each call, in order: the tokens its provider reported read from cache, and the longest
prefix its request shares with any earlier request of the same provider, model and key, read
in the wire's cache order (``chunkscope._wires.prompt_parts``: Anthropic and Bedrock tools,
system, messages; OpenAI and DeepSeek tools then messages; Responses tools, instructions,
input; Gemini cached content, tools, system instruction, contents). The prefix is measured in
characters of the serialized request and turned into tokens with the call's own ratio of
reported prompt tokens to characters, so no tokenizer and no network are needed; the
whole prompt is exact by construction, a prefix is off by how much denser or sparser its text
is than the rest (``estimate_tolerance``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd

from chunkscope._wires import WIRE_FACTS, prompt_parts
from chunkscope.adapters.recording import recording_result, recording_started
from chunkscope.protocol import TokenUsage
from chunkscope.sources.recording import Recording

from ._price import as_decimal
from ._prices import PriceTable, as_price_table

__all__ = [
    "CACHE_GRANULARITY",
    "CACHE_REPORT_COLUMNS",
    "ESTIMATE_RELATIVE_ERROR",
    "VERDICTS",
    "cache_report",
]

VERDICTS = ("hit", "miss-explained", "miss-unexplained")
"""``hit``: the cache read what the shared prefix predicts (or all of the prompt);
``miss-explained``: less, and the request changed (the change is named) or is the first of its
provider, model and key; ``miss-unexplained``: the provider read less than the prefix it had
seen predicts (the provider's rules in ``rules`` could apply)."""

CACHE_GRANULARITY = 128
"""Tokens a provider's cache may round a hit down by (OpenAI's 128-token increments; DeepSeek's 64)."""

ESTIMATE_RELATIVE_ERROR = 0.05
"""How far a prefix's token estimate may be off, as a share of it (text denser or sparser than
the rest of the prompt); the local provider's tests hold it (see docs/usage.md)."""


_STRING = pd.StringDtype()
CACHE_REPORT_COLUMNS: dict[str, Any] = {
    "call_id": _STRING,  # the recording's file name, or the call's number
    "provider": _STRING,
    "wire": _STRING,
    "model": _STRING,
    "key": _STRING,  # a short hash naming the key (key-…), never the key; <NA>: not known
    "prompt_tokens": "Int64",  # reported input, cached tokens included
    "cached_tokens": "Int64",  # reported read from cache (<NA>: the wire did not say)
    "shared_prefix_tokens": "Int64",  # estimated: the longest prefix an earlier request shares
    "new_tokens": "Int64",  # prompt_tokens - shared_prefix_tokens
    "estimate_tolerance": "Int64",  # +- tokens the shared prefix estimate may be off
    "verdict": _STRING,  # VERDICTS
    "change_section": _STRING,  # tools / system / message N / cached content; (first call)
    "change_field": _STRING,  # where inside the section: content, [1].name, order
    "before": _STRING,  # a short excerpt of the earlier request at the change
    "after": _STRING,  # the same place in this request
    "missed_tokens": "Int64",  # tokens an earlier request had that this one did not read from cache
    "miss_cost": "Float64",  # missed_tokens x (input - cache-read price); object Decimals for Decimal tables
    "currency": _STRING,
    "rules": _STRING,  # miss-unexplained: the provider rules that could apply (its WireFacts.cache_rules)
}
"""The cache report's columns, their dtypes and meaning (one row per call, in call order)."""

_EXCERPT = 60  # characters of an excerpt
_CONTEXT = 20  # of them before the change
_MAX_DEPTH = 64  # a field path is searched this deep


@dataclass
class _Call:
    """One call as the report reads it: who, what was asked, what was reported."""

    call_id: str
    provider: str | None
    wire: str | None
    model: str | None
    key: str | None
    body: Any
    usage: TokenUsage | None
    started: float | None


@dataclass
class _Seen:
    """An earlier request: its parts (section, value, text) and its reported prompt tokens."""

    parts: list[tuple[str, Any, str]]
    prompt_tokens: int | None


def cache_report(calls: Any, *, prices: PriceTable | str | None = None) -> pd.DataFrame:
    """One row per call: what the prompt cache read, what the request shared with earlier ones, why.

    ``calls``: a ``Tap`` or ``TapReplay`` (its ``calls``), a recordings folder or file (the
    tap's recordings keep each request), or an iterable of calls — ``TapCall``s or mappings with
    ``wire``, ``model``, ``body`` (the request, a dict or JSON bytes), ``usage`` (a
    ``TokenUsage``) and optionally ``key`` (a fingerprint, never a key), ``provider``,
    ``call_id``, ``started`` — in the order they were made. ``prices``: a ``PriceTable`` or
    ``"genai-prices"`` for ``miss_cost``; None takes the ``Tap``'s or ``TapReplay``'s own
    usage log's, else the cost is ``<NA>``. Columns: ``CACHE_REPORT_COLUMNS``; verdicts:
    ``VERDICTS``. A call whose request or usage is not at hand has ``<NA>`` where they are needed.
    """
    table = as_price_table(prices) if prices is not None else _own_prices(calls)
    seen: dict[tuple[str, str, str], _Groups] = {}
    rows = [_row(call, seen, table) for call in _calls(calls)]
    return _frame(rows, table)


def _own_prices(calls: Any) -> PriceTable | None:
    found = getattr(getattr(calls, "usage", None), "prices", None)
    return found if isinstance(found, PriceTable) else None


# --- reading the calls ------------------------------------------------------------------


def _calls(calls: Any) -> Iterator[_Call]:
    if isinstance(calls, (str, os.PathLike)):
        yield from _recorded(Path(calls))
        return
    if hasattr(calls, "calls") and not isinstance(calls, Mapping):
        calls = list(calls.calls)
    for number, call in enumerate(calls, 1):
        yield _from_mapping(call, number) if isinstance(call, Mapping) else _from_tap_call(call)


def _from_tap_call(call: Any) -> _Call:
    result = getattr(call, "result", None)
    recording = getattr(call, "recording", None)
    return _Call(
        call_id=Path(recording).stem if recording else str(getattr(call, "id", "")),
        provider=call.wire,
        wire=call.wire,
        model=call.model,
        key=getattr(call, "key_fingerprint", None),
        body=_json(call.request_body),
        usage=result.usage if result is not None else None,
        started=getattr(call, "started_at", None),
    )


def _from_mapping(call: Mapping[str, Any], number: int) -> _Call:
    body = call.get("body")
    return _Call(
        call_id=str(call.get("call_id", number)),
        provider=call.get("provider") or call.get("wire"),
        wire=call.get("wire"),
        model=call.get("model"),
        key=call.get("key"),
        body=_json(body) if isinstance(body, (bytes, bytearray, str)) else body,
        usage=call.get("usage"),
        started=call.get("started"),
    )


def _recorded(source: Path) -> Iterator[_Call]:
    paths = sorted(source.glob("*.jsonl")) if source.is_dir() else [source]
    read = [(path, Recording.read(path)) for path in paths]  # a bad file raises before any row
    read.sort(key=lambda item: (recording_started(item[1].header) or 0.0, item[0].name))
    for path, recording in read:
        header = recording.header
        recorded = header.get("tap")
        tap: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        wire = header.get("provider") if header.get("provider") in WIRE_FACTS else None
        fingerprint = tap.get("key_fingerprint")
        yield _Call(
            call_id=path.stem,
            provider=str(header.get("provider") or "unknown"),
            wire=wire,
            model=str(header.get("model") or "unknown"),
            key=fingerprint if isinstance(fingerprint, str) else None,
            body=_recorded_body(tap),
            usage=recording_result(recording, label=f"the recording {path.name}").usage,
            started=recording_started(header),
        )


def _recorded_body(tap: Mapping[str, Any]) -> Any:
    text = tap.get("request_body")
    if isinstance(text, str):
        return _json(text)
    encoded = tap.get("request_body_base64")
    if isinstance(encoded, str):
        try:
            return _json(base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError):
            return None
    return None


def _json(raw: Any) -> Any:
    try:
        return json.loads(raw) if raw else None
    except (ValueError, RecursionError):  # not JSON, or nested past the parser: no request to compare
        return None


# --- one row ------------------------------------------------------------------------


class _Groups:
    """The earlier requests of one provider, model and key, found by the hash of each part prefix."""

    def __init__(self) -> None:
        self.by_prefix: dict[bytes, _Seen] = {}  # hash of parts[:j] -> the latest request with it

    def longest(self, digests: list[bytes]) -> tuple[int, _Seen | None]:
        """How many leading parts the best earlier request shares, and that request."""
        best, found = 0, self.by_prefix.get(b"")
        for j, digest in enumerate(digests, 1):
            seen = self.by_prefix.get(digest)
            if seen is None:
                break
            best, found = j, seen
        return best, found

    def add(self, digests: list[bytes], seen: _Seen) -> None:
        self.by_prefix[b""] = seen
        for digest in digests:
            self.by_prefix[digest] = seen


def _digests(parts: list[tuple[str, Any, str]]) -> list[bytes]:
    running = hashlib.blake2b(digest_size=16)
    out = []
    for _, _, text in parts:
        running.update(len(text).to_bytes(8, "little"))
        running.update(text.encode("utf-8", "surrogatepass"))
        out.append(running.digest())
    return out


def _row(call: _Call, seen: dict[tuple[str, str, str], _Groups], table: PriceTable | None) -> dict[str, Any]:
    usage = call.usage
    row: dict[str, Any] = {
        "call_id": call.call_id,
        "provider": call.provider,
        "wire": call.wire,
        "model": call.model,
        "key": call.key,
        "prompt_tokens": _prompt_tokens(usage),
        "cached_tokens": usage.cache_read_tokens if usage is not None else None,
    }
    facts = WIRE_FACTS.get(call.wire or "")
    if facts is None or not isinstance(call.body, dict):
        return row
    parts = prompt_parts(facts, call.body)
    digests = _digests(parts)
    group = seen.setdefault((str(call.provider), str(call.model), str(call.key)), _Groups())
    shared_parts, earlier = group.longest(digests)
    group.add(digests, _Seen(parts, row["prompt_tokens"]))
    if row["prompt_tokens"] is not None and any(text for _, _, text in parts):
        row.update(_prefix(parts, shared_parts, earlier, row["prompt_tokens"]))
        if row["cached_tokens"] is not None:
            row.update(_judged(row, earlier, facts.cache_rules))
            row.update(_miss_cost(call, row["missed_tokens"], table))
    return row


def _prefix(
    parts: list[tuple[str, Any, str]], shared_parts: int, earlier: _Seen | None, prompt: int
) -> dict[str, Any]:
    """The shared prefix in tokens (calibrated on this call's own prompt tokens) and the first change."""
    out: dict[str, Any] = {}
    per_char = prompt / sum(len(text) for _, _, text in parts)
    shared_chars = sum(len(text) for _, _, text in parts[:shared_parts])
    if earlier is None:
        out["change_section"] = "(first call)"
    elif shared_parts < min(len(parts), len(earlier.parts)):
        mine, theirs = parts[shared_parts], earlier.parts[shared_parts]
        at = _common_prefix(mine[2], theirs[2])
        shared_chars += at
        out.update(_change(mine, theirs, at))
    shared = round(shared_chars * per_char) if earlier is not None else 0
    out["shared_prefix_tokens"] = shared
    out["new_tokens"] = prompt - shared
    out["estimate_tolerance"] = math.ceil(shared * ESTIMATE_RELATIVE_ERROR)
    out["_per_char"] = per_char
    return out


def _judged(row: dict[str, Any], earlier: _Seen | None, rules: str) -> dict[str, Any]:
    """The verdict, the tokens missed (an earlier request had them, this one's cache read did not)."""
    prompt, cached = row["prompt_tokens"], row["cached_tokens"]
    verdict = _verdict(
        prompt,
        cached,
        row["shared_prefix_tokens"],
        row["estimate_tolerance"],
        changed="change_section" in row,
    )
    missed = (
        0 if verdict == "hit" else max(0, min(_earlier_tokens(earlier, row["_per_char"]), prompt) - cached)
    )
    out: dict[str, Any] = {"verdict": verdict, "missed_tokens": missed}
    if verdict == "miss-unexplained":
        out["rules"] = rules or None
    return out


def _prompt_tokens(usage: TokenUsage | None) -> int | None:
    if usage is None:
        return None
    return usage.input_tokens + (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)


def _earlier_tokens(earlier: _Seen | None, per_char: float) -> int:
    if earlier is None:
        return 0
    if earlier.prompt_tokens is not None:
        return earlier.prompt_tokens
    return round(sum(len(text) for _, _, text in earlier.parts) * per_char)


def _verdict(prompt: int, cached: int, shared: int, tolerance: int, *, changed: bool) -> str:
    slack = tolerance + CACHE_GRANULARITY
    if cached >= prompt - slack and shared > 0:
        return "hit"  # all of the prompt (but the provider's rounding) was read
    if cached + slack < shared:
        return "miss-unexplained"
    return "miss-explained" if changed else "hit"


def _miss_cost(call: _Call, missed: int, table: PriceTable | None) -> dict[str, Any]:
    if table is None or call.usage is None:
        return {}
    found = table._lookup(str(call.provider), str(call.model), call.usage, call.started)
    if found is None:
        return {}
    if table.cost_type is Decimal:
        saved = as_decimal(found.cache_miss_input) - as_decimal(found.cache_hit_input)
        return {"miss_cost": missed * saved / 1_000_000, "currency": found.currency}
    cost = missed * (float(found.cache_miss_input) - float(found.cache_hit_input)) / 1_000_000
    return {"miss_cost": cost, "currency": found.currency}


# --- where the prefix changed ------------------------------------------------------------


def _common_prefix(a: str, b: str) -> int:
    """Characters ``a`` and ``b`` share from the start (a binary search over slices: fast in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _change(mine: tuple[str, Any, str], theirs: tuple[str, Any, str], at: int) -> dict[str, Any]:
    section = mine[0] if mine[0] == theirs[0] else f"{theirs[0]} → {mine[0]}"
    return {
        "change_section": section,
        "change_field": _field(theirs[1], mine[1], section) or "(value)",
        "before": _excerpt(theirs[2], at),
        "after": _excerpt(mine[2], at),
    }


def _excerpt(text: str, at: int) -> str:
    start = max(0, at - _CONTEXT)
    piece = text[start : start + _EXCERPT]
    return ("…" if start else "") + piece + ("…" if start + _EXCERPT < len(text) else "")


def _field(before: Any, after: Any, section: str) -> str:
    """Where inside a section the two values first differ: ``content``, ``[1].name``; ``order``
    when a list holds the same items reordered (tools moved)."""
    reordered = (
        isinstance(before, list) and isinstance(after, list) and section == "tools" and before != after
    )
    if reordered and sorted(map(_sort_key, before)) == sorted(map(_sort_key, after)):
        return "order (the same tools, reordered)"
    return _path(before, after, 0)


def _sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _path(before: Any, after: Any, depth: int) -> str:
    if depth >= _MAX_DEPTH or type(before) is not type(after):
        return ""
    if isinstance(before, dict):
        for (k1, v1), (k2, v2) in zip(before.items(), after.items(), strict=False):
            if k1 != k2:
                return _join(str(k1), "")
            if v1 != v2:
                return _join(str(k1), _path(v1, v2, depth + 1))
        return ""
    if isinstance(before, list):
        for index, (v1, v2) in enumerate(zip(before, after, strict=False)):
            if v1 != v2:
                return _join(f"[{index}]", _path(v1, v2, depth + 1))
        return f"[{min(len(before), len(after))}]"
    return ""


def _join(head: str, tail: str) -> str:
    if not tail:
        return head
    return head + tail if tail.startswith("[") else f"{head}.{tail}"


# --- the frame -----------------------------------------------------------------------------


def _frame(rows: list[dict[str, Any]], table: PriceTable | None) -> pd.DataFrame:
    columns: dict[str, Any] = {}
    for name, dtype in CACHE_REPORT_COLUMNS.items():
        values = [row.get(name) for row in rows]
        if name == "miss_cost" and table is not None and table.cost_type is Decimal:
            columns[name] = pd.array([pd.NA if v is None else v for v in values], dtype=object)
        else:
            columns[name] = pd.array(values, dtype=dtype)
    return pd.DataFrame(columns)
