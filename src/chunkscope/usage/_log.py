"""``UsageLog``: the one place usage is gathered, one row per attempt, stored column by column.

``record`` turns a ``StreamResult`` into a handful of scalars appended to
typed arrays (``array.array``; categories as int codes), under a lock: O(1)
in the log's size (the gap columns sort the attempt's own gaps, outside the lock),
safe from many threads and tasks. ``to_frame`` builds each
column from its array in one vectorised step, so a million records become a
frame in well under a second and a half (``benchmarks/bench_usage.py``).
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
import uuid
from array import array
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from chunkscope.adapters import GenerateOptions, LlmAdapter, WrappingAdapter
from chunkscope.protocol import LlmError, StreamResult, Timings, TokenUsage, collect
from chunkscope.protocol.shared import current_marks
from chunkscope.sources import json_line

from ._gaps import NO_GAPS, GapStats, gap_stats
from ._prices import as_price_table
from ._schema import (
    COUNT_COLUMNS,
    FINISH_KINDS,
    FIRST_COLUMNS,
    PHASES,
    USAGE_SOURCES,
    categories,
    empty_frame,
)
from ._summary import OPTIONAL_COUNTS, RAW_TOTALS, finish_totals

if TYPE_CHECKING:
    from ._prices import PriceTable

__all__ = ["UsageLog", "LoggedAdapter"]

_MISSING = -(2**63)  # the int64 sentinel for "absent" (numpy's NaT too); never a real count
MAX_COUNT = 2**63 - 1
"""The largest token count a row holds (int64); a count above it, or below 0, makes the row's usage
``invalid`` (every count ``<NA>``)."""
# Start times a datetime64[us] column holds with room to spare (years 1677..2262 in nanoseconds
# would be narrower; microseconds reach far further): outside, the start time reads as unknown.
_MAX_STARTED_S = 9.2e12
_OK_FINISH = frozenset({"stop", "tool-calls", "max-tokens"})


class _Codes:
    """A categorical column being built: int32 codes, -1 for missing, and the values seen."""

    __slots__ = ("codes", "index", "values")

    def __init__(self, fixed: Sequence[str] = ()) -> None:
        self.codes = array("i")
        self.values: list[str] = list(fixed)
        self.index: dict[str, int] = {value: n for n, value in enumerate(self.values)}

    def code(self, value: str | None) -> int:
        if value is None:
            return -1
        found = self.index.get(value)
        if found is None:
            # First sight of this value: store it as text every writer can encode (the raw
            # value keeps a short cut to the same code).
            clean = escape_surrogates(value if isinstance(value, str) else str(value))
            found = self.index.get(clean)
            if found is None:
                found = self.index[clean] = len(self.values)
                self.values.append(clean)
            self.index[value] = found
        return found

    def categorical(self, start: int, stop: int) -> pd.Categorical:
        codes = np.frombuffer(self.codes, dtype=np.int32)[start:stop].copy()
        return pd.Categorical.from_codes(codes, categories=categories(self.values))


class UsageLog:
    """Gathers finished attempts and turns them into a usage frame (one row per attempt).

    Implements ``UsageSink``: ``collect(..., log=)``, ``show(..., log=)``,
    ``batch(..., log=)``, ``wrap(adapter)`` and a runtime given this log all
    call ``record``. ``prices`` (a ``PriceTable``, or ``"genai-prices"``) fills the ``cost`` column;
    ``path`` makes the log append every row to a Parquet dataset partitioned
    by date as it goes (see ``ParquetSink``; ``flush_rows`` / ``flush_seconds``
    bound what an abrupt kernel death can lose). Safe to call from several
    threads and tasks; ``record`` is O(1) in the log's size.
    """

    def __init__(
        self,
        *,
        prices: PriceTable | str | None = None,
        path: str | None = None,
        flush_rows: int = 20,
        flush_seconds: float = 1.0,
    ) -> None:
        self.prices = as_price_table(prices)
        self._lock = threading.RLock()
        self._n = 0
        self._call_id: list[str] = []
        self._attempt = array("q")
        self._final = array("b")
        self._provider = _Codes()
        self._model = _Codes()
        self._tags = _Codes()
        self._started = array("d")
        self._ttfc = array("d")
        self._firsts = {name: array("d") for name in FIRST_COLUMNS}
        self._gaps = (array("d"), array("q"), array("d"), array("d"))  # GAP_COLUMNS, in order
        self._duration = array("d")
        self._counts = {name: array("q") for name in _COUNT_NAMES}
        self._finish = _Codes(FINISH_KINDS)
        self._error = _Codes()
        self._phase = _Codes(PHASES)
        self._source = _Codes(USAGE_SOURCES)
        self._blocks = {name: array("q") for name in ("text", "reasoning", "tool-call")}
        self._chunks = array("q")
        self._violations = array("q")
        self._warnings = array("q")
        self._listeners: list[Callable[[UsageLog], object]] = []
        # Running totals for the live summary: kept in step with the rows, so a display
        # never rebuilds a frame while a batch runs.
        self._totals: dict[str, Any] = _zero_totals()
        self.progress: tuple[int, int] | None = None
        """``(done, total)`` of the batch running into this log, else None."""
        self._sink = None
        if path is not None:
            from ._parquet import ParquetSink

            self._sink = ParquetSink(self, path, flush_rows=flush_rows, flush_seconds=flush_seconds)

    # --- recording ---------------------------------------------------------------

    def record(
        self,
        result: StreamResult,
        *,
        provider: str,
        model: str,
        tags: Mapping[str, str] | None = None,
        call_id: str | None = None,
        attempt: int = 1,
        final: bool = True,
    ) -> str:
        """Append one attempt; return its call id (a fresh one when ``call_id`` is None).

        ``call_id`` groups the attempts of one call (retries share it);
        ``final`` is False for an attempt that was retried.
        """
        return self._record(
            result, provider=provider, model=model, tags=tags, call_id=call_id, attempt=attempt, final=final
        )

    def _record(
        self,
        result: StreamResult,
        *,
        provider: str,
        model: str,
        tags: Mapping[str, str] | None = None,
        call_id: str | None = None,
        attempt: int = 1,
        final: bool = True,
        completed: bool = False,
        blocks: Mapping[str, int | None] | None = None,
    ) -> str:
        """``record`` for an attempt read from a log that keeps no chunks (the ``llm`` tool's).

        ``completed``: the log holds only attempts that completed, so usage it lacks is
        ``missing``, not ``lost``, though it names no finish. ``blocks``: the count of each
        kind (``text``, ``reasoning``, ``tool-call``) the log holds, None for a kind it does
        not say (``<NA>``); without it, the blocks of ``result``.
        """
        call_id = _call_id_of(call_id)
        if type(attempt) is not int or not 1 <= attempt <= MAX_COUNT:
            attempt = _attempt_number(attempt)  # raises, naming it
        finish = result.finish.kind if result.finish is not None else None
        error_code = result.error_code
        phase = _phase(result, finish)
        usage, counts, source = _usage_counts(result, finish, completed)
        block_counts = _block_counts(result) if blocks is None else _given_blocks(blocks)
        errors = sum(1 for v in result.violations if v.severity == "error")
        timings = result.timings
        started, ttfc, duration = _timing_values(timings)
        firsts = _first_values(timings)
        # A windowed stream (the tap's endless call) kept only its latest times: its largest gap is
        # not known here (its recording has every one).
        gaps = NO_GAPS if result.chunks_dropped else gap_stats(timings.chunk_times, len(result.chunks))
        tag_text = _tags_json(tags)
        quote = self._quote(provider, model, usage, started)
        # Every value is converted above; below, each append takes a value its column holds, so a
        # row goes in whole. Should one still fail (memory), the columns are cut back to the rows
        # before it: never half a row, never the next record glued to one.
        with self._lock:
            n = self._n
            try:
                self._call_id.append(call_id)
                self._attempt.append(attempt)
                self._final.append(1 if final else 0)
                self._provider.codes.append(self._provider.code(provider))
                self._model.codes.append(self._model.code(model))
                self._tags.codes.append(self._tags.code(tag_text))
                self._started.append(started)
                self._ttfc.append(ttfc)
                self._duration.append(duration)
                self._append_series(firsts, gaps, counts, block_counts)
                self._finish.codes.append(self._finish.code(finish))
                self._error.codes.append(self._error.code(error_code))
                self._phase.codes.append(self._phase.code(phase))
                self._source.codes.append(self._source.code(source))
                self._chunks.append(result.chunk_count)  # a windowed stream's dropped ones too
                self._violations.append(errors)
                self._warnings.append(len(result.violations) - errors)
            except BaseException:
                self._truncate(n)
                raise
            self._n = n + 1
            _add_totals(self._totals, final, error_code, counts, quote, source == "invalid")
            listeners = list(self._listeners)
            sink = self._sink
        self._announce(sink, listeners)
        return call_id

    def _announce(self, sink: Any, listeners: list[Callable[[UsageLog], object]]) -> None:
        """A row went in: wake the sink that writes it, then each listener (outside the lock)."""
        if sink is not None:
            sink.notify()
        for listener in listeners:
            listener(self)

    def _quote(
        self, provider: str, model: str, usage: TokenUsage | None, started: float
    ) -> tuple[float, str] | None:
        if self.prices is None:
            return None
        return self.prices.quote(provider, model, usage, at=None if math.isnan(started) else started)

    def _append_series(
        self,
        firsts: Sequence[float],
        gaps: GapStats,
        counts: tuple[int | None, ...],
        blocks: Mapping[str, int],
    ) -> None:
        # The row's values of the column groups (first times, gaps, counts, blocks), inside record's lock.
        for name, seconds in zip(FIRST_COLUMNS, firsts, strict=True):
            self._firsts[name].append(seconds)
        largest, at, p50, p99 = gaps
        self._gaps[0].append(largest)
        self._gaps[1].append(_MISSING if at < 0 else at)
        self._gaps[2].append(p50)
        self._gaps[3].append(p99)
        for name, value in zip(_COUNT_NAMES, counts, strict=True):
            self._counts[name].append(_MISSING if value is None else value)
        for kind, count in blocks.items():
            self._blocks[kind].append(count)

    def _truncate(self, n: int) -> None:
        """Cut every column back to its first ``n`` rows (under the lock)."""
        columns: list[Any] = [
            self._call_id,
            self._attempt,
            self._final,
            self._started,
            self._ttfc,
            *self._firsts.values(),
            *self._gaps,
            self._duration,
            self._chunks,
            self._violations,
            self._warnings,
            *self._counts.values(),
            *self._blocks.values(),
            *(codes.codes for codes in (self._provider, self._model, self._tags, self._finish)),
            *(codes.codes for codes in (self._error, self._phase, self._source)),
        ]
        for column in columns:
            del column[n:]

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        t = self.totals()
        return f"UsageLog({t['attempts']} attempts, {t['calls']} calls, {t['errors']} errors)"

    # --- adapters ----------------------------------------------------------------

    def wrap(self, adapter: LlmAdapter, *, tags: Mapping[str, str] | None = None) -> LoggedAdapter:
        """An adapter that streams exactly like ``adapter`` and records every stream in this log."""
        return LoggedAdapter(adapter, self, tags=tags)

    # --- listeners (the live display) ----------------------------------------------

    def subscribe(self, listener: Callable[[UsageLog], object]) -> Callable[[], None]:
        """Call ``listener(log)`` after every record and progress change (from the recording thread).

        Returns a function that unsubscribes it.
        """
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def set_progress(self, done: int, total: int) -> None:
        """Report a running batch's progress (``batch`` calls it); listeners are told."""
        with self._lock:
            self.progress = (done, total)
            listeners = list(self._listeners)
        for listener in listeners:
            listener(self)

    def clear_progress(self) -> None:
        """No batch is running into this log any more (a cancelled ``batch`` calls it); listeners are told."""
        with self._lock:
            self.progress = None
            listeners = list(self._listeners)
        for listener in listeners:
            listener(self)

    def totals(self) -> dict[str, Any]:
        """The totals the live summary shows, without building a frame: what
        ``summary(log.to_frame(), by=[])`` has (but the percentiles), by the same derivation
        (``finish_totals``), with ``<NA>`` as None; plus ``errors_by_code``, ``currency`` and
        ``invalid_usage`` (the rows whose usage report was refused: ``usage_source`` ``invalid``).
        """
        with self._lock:
            raw = {name: self._totals[name] for name in RAW_TOTALS}
            by_code = dict(self._totals["errors_by_code"])
            currencies = sorted(self._totals["currencies"])
            invalid = self._totals["invalid_usage"]
        totals = {name: None if value is pd.NA else value for name, value in finish_totals(raw).items()}
        totals["errors_by_code"] = by_code
        # Costs in several currencies do not add up: the sum is then labelled with all of them.
        totals["currency"] = ", ".join(currencies) if currencies else None
        totals["invalid_usage"] = invalid
        return totals

    # --- the frame -------------------------------------------------------------------

    def to_frame(self, *, start: int = 0, stop: int | None = None) -> pd.DataFrame:
        """The usage frame: one row per attempt (rows ``start:stop``), columns and dtypes per ``COLUMNS``.

        Built column by column from the stored arrays; the log keeps recording meanwhile.
        """
        with self._lock:
            n = self._n
            stop = n if stop is None else min(stop, n)
            start = max(0, min(start, stop))
            # Snapshot under the lock: arrays are copied (bytes), lists sliced.
            snap = {
                "call_id": self._call_id[start:stop],
                "attempt": _ints(self._attempt, start, stop),
                "final": np.frombuffer(self._final, dtype=np.int8)[start:stop].astype(bool),
                "provider": self._provider.categorical(start, stop),
                "model": self._model.categorical(start, stop),
                "tags": self._tags.categorical(start, stop),
                "started": np.frombuffer(self._started, dtype=np.float64)[start:stop].copy(),
                "ttfc": np.frombuffer(self._ttfc, dtype=np.float64)[start:stop].copy(),
                "firsts": {
                    k: np.frombuffer(v, dtype=np.float64)[start:stop].copy() for k, v in self._firsts.items()
                },
                "gaps": [
                    np.frombuffer(v, dtype=np.float64 if v.typecode == "d" else np.int64)[start:stop].copy()
                    for v in self._gaps
                ],
                "duration": np.frombuffer(self._duration, dtype=np.float64)[start:stop].copy(),
                "counts": {k: _ints(v, start, stop) for k, v in self._counts.items()},
                "finish": self._finish.categorical(start, stop),
                "error_code": self._error.categorical(start, stop),
                "phase": self._phase.categorical(start, stop),
                "usage_source": self._source.categorical(start, stop),
                "blocks": {k: _ints(v, start, stop) for k, v in self._blocks.items()},
                "chunks": _ints(self._chunks, start, stop),
                "violations": _ints(self._violations, start, stop),
                "warnings": _ints(self._warnings, start, stop),
            }
        frame = empty_frame() if stop == start else _build(snap)
        if self.prices is not None:
            frame = self.prices.add_costs(frame)
        return frame

    # --- storage ---------------------------------------------------------------------

    def to_parquet(self, path: str) -> str:
        """Write ``to_frame()`` to one Parquet file (dtypes kept; ``read_parquet`` reads it back)."""
        from ._parquet import to_parquet

        return str(to_parquet(self.to_frame(), path))

    def flush(self) -> None:
        """Write the rows not yet written to the Parquet dataset (when the log has a ``path``)."""
        if self._sink is not None:
            self._sink.flush()

    def close(self) -> None:
        """Flush and stop the dataset writer's timer (when the log has a ``path``)."""
        if self._sink is not None:
            self._sink.close()


_COUNT_NAMES = COUNT_COLUMNS


def _zero_totals() -> dict[str, Any]:
    # RAW_TOTALS (the sums summary() aggregates) plus what only the live display needs.
    totals: dict[str, Any] = dict.fromkeys(RAW_TOTALS, 0)
    totals.update(cost=0.0, errors_by_code={}, invalid_usage=0, currencies=set())
    return totals


def _add_totals(
    totals: dict[str, Any],
    final: bool,
    error_code: str | None,
    counts: tuple[int | None, ...],
    quote: tuple[float, str] | None,
    invalid: bool,
) -> None:
    # One row's share of RAW_TOTALS, by the rules summary()'s indicator columns spell for a frame.
    totals["attempts"] += 1
    if invalid:
        totals["invalid_usage"] += 1
    if final:
        totals["calls"] += 1
    if error_code is not None:
        _add_error(totals, final, error_code)
    for name, value in zip(_COUNT_NAMES, counts, strict=True):
        if value is not None:
            totals[name] += value
            if name in _KNOWN:
                totals[_KNOWN[name]] += 1
    if counts[0] is not None:
        totals["billed_input_tokens"] += counts[0] + (counts[2] or 0) + (counts[3] or 0)
    _add_cost(totals, quote, counts[0] is not None)


def _add_error(totals: dict[str, Any], final: bool, error_code: str) -> None:
    totals["errors"] += 1
    if final:
        totals["failed_calls"] += 1
    by_code = totals["errors_by_code"]
    by_code[error_code] = by_code.get(error_code, 0) + 1


def _add_cost(totals: dict[str, Any], quote: tuple[float, str] | None, has_usage: bool) -> None:
    if quote is not None:
        totals["cost"] += quote[0]
        totals["_priced"] += 1
        totals["currencies"].add(quote[1])
    elif has_usage:
        totals["unpriced_attempts"] += 1


# An optional count -> its "rows that reported it" total.
_KNOWN = {name: f"_known_{name}" for name in OPTIONAL_COUNTS}

_NO_COUNTS: tuple[None, ...] = (None, None, None, None, None)


def escape_surrogates(text: str) -> str:
    """``text`` unchanged, or — when it holds a lone surrogate, which no writer can encode — JSON's
    ``\\u`` escape of it (the recording writer's ``json_line``), quotes and newline left off."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json_line(text).decode("ascii")[1:-2]
    return text


def _call_id_of(call_id: Any) -> str:
    """The call id a row holds: a fresh one for None, any other value as ASCII-safe text."""
    if call_id is None:
        return uuid.uuid4().hex[:16]
    if not isinstance(call_id, str) or not call_id.isascii():
        return escape_surrogates(str(call_id))
    return call_id


def _phase(result: StreamResult, finish: str | None) -> str | None:
    """Where the attempt failed: before its first chunk, mid-stream, at its finish; None if it did not."""
    if result.error is not None:
        return "mid-stream" if result.chunks else "before-first-chunk"
    return "at-finish" if finish in ("error", "aborted") else None


def _usage_counts(
    result: StreamResult, finish: str | None, completed: bool = False
) -> tuple[Any, tuple[int | None, ...], str]:
    """``(usage, counts, usage_source)``: the usage to price (None when refused or absent), its counts.

    ``completed``: the attempt is known to have completed although no finish says how.
    """
    usage = result.usage
    if usage is None:
        ended = finish in _OK_FINISH or (completed and finish is None)
        return None, _NO_COUNTS, "missing" if result.error is None and ended else "lost"
    counts = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.reasoning_tokens,
    )
    if not _counts_fit(counts):
        # Negative, past int64 or not an integer: no count of this usage can be trusted
        # (nor priced), and the row says so rather than holding half of it.
        return None, _NO_COUNTS, "invalid"
    return usage, counts, "reported"


def _block_counts(result: StreamResult) -> dict[str, int]:
    blocks = {"text": 0, "reasoning": 0, "tool-call": 0}
    for block in result.blocks:
        if block.type in blocks:
            blocks[block.type] += 1
    return blocks


def _given_blocks(blocks: Mapping[str, int | None]) -> dict[str, int]:
    """A log's block counts as the columns hold them (``_MISSING`` for a kind it does not say)."""
    given = {}
    for kind in ("text", "reasoning", "tool-call"):
        count = blocks.get(kind)
        given[kind] = _MISSING if count is None or not 0 <= count <= MAX_COUNT else int(count)
    return given


def _timing_values(timings: Timings) -> tuple[float, float, float]:
    """``(started, ttfc, duration)`` as the float columns hold them (NaN for unknown)."""
    started = math.nan if timings.started_at is None else float(timings.started_at)
    if not -_MAX_STARTED_S < started < _MAX_STARTED_S:
        started = math.nan  # inf, 1e300: no timestamp holds it (NaN stays NaN)
    ttfc = math.nan if timings.first_chunk_s is None else float(timings.first_chunk_s)
    return started, ttfc, float(timings.total_s)


def _first_values(timings: Timings) -> tuple[float, float, float, float]:
    """The four first-token points (``FIRST_COLUMNS`` order) as the float columns hold them."""

    def value(seconds: float | None) -> float:
        return math.nan if seconds is None or not math.isfinite(seconds) else float(seconds)

    return (
        value(timings.first_byte_s),
        value(timings.first_event_s),
        value(timings.first_content_s),
        value(timings.first_text_s),
    )


def _attempt_number(attempt: Any) -> int:
    if isinstance(attempt, bool) or not isinstance(attempt, int):
        raise TypeError(f"UsageLog.record: attempt must be an int, not {type(attempt).__name__}")
    if not 1 <= attempt <= MAX_COUNT:
        raise ValueError(f"UsageLog.record: attempt must be between 1 and 2**63 - 1, not {attempt}")
    return attempt


def _counts_fit(counts: tuple[int | None, ...]) -> bool:
    """Whether every count is absent or an int from 0 to ``MAX_COUNT`` (what an int64 row holds)."""
    for value in counts:
        if value is not None and (type(value) is not int or not 0 <= value <= MAX_COUNT):
            return False
    return True


def _tags_json(tags: Mapping[str, str] | None) -> str | None:
    if not tags:
        return None
    pairs = {escape_surrogates(str(k)): escape_surrogates(str(v)) for k, v in sorted(tags.items())}
    return json.dumps(pairs, ensure_ascii=False, separators=(",", ":"))


def _ints(values: array[int], start: int, stop: int) -> np.ndarray[Any, Any]:
    return np.frombuffer(values, dtype=np.int64)[start:stop].copy()


def _strings(values: list[str]) -> pd.arrays.ArrowStringArray:
    return pd.arrays.ArrowStringArray(pa.chunked_array([pa.array(values, pa.large_string())]))


def _nullable_int(values: np.ndarray[Any, Any]) -> pd.arrays.IntegerArray:
    # ``values`` is the snapshot's own copy: the sentinel is overwritten in place.
    mask = values == _MISSING
    values[mask] = 0
    return pd.arrays.IntegerArray(values, mask)


def _nullable_float(
    values: np.ndarray[Any, Any], mask: np.ndarray[Any, Any] | None = None
) -> pd.arrays.FloatingArray:
    if mask is None:
        mask = np.isnan(values)
    values = np.where(mask, 0.0, values)
    return pd.arrays.FloatingArray(values, mask)


def _gap_columns(gaps: list[np.ndarray[Any, Any]]) -> dict[str, Any]:
    """The gap columns (``GAP_COLUMNS``) from the snapshot's arrays (NaN / the sentinel: ``<NA>``)."""
    largest, at, p50, p99 = gaps
    return {
        "max_gap_s": _nullable_float(largest),
        "max_gap_at": _nullable_int(at),
        "p50_gap_s": _nullable_float(p50),
        "p99_gap_s": _nullable_float(p99),
    }


def _build(snap: dict[str, Any]) -> pd.DataFrame:
    # After this, each count array holds 0 where its mask is set (see _nullable_int).
    counts = {name: _nullable_int(values) for name, values in snap["counts"].items()}
    has_input = ~counts["input_tokens"]._mask
    read = counts["cache_read_tokens"]
    billed_values = counts["input_tokens"]._data + read._data + counts["cache_write_tokens"]._data
    billed = pd.arrays.IntegerArray(billed_values, ~has_input)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = read._data / billed_values
        rate_mask = ~has_input | read._mask | (billed_values <= 0)
        ttfc = snap["ttfc"]
        duration = snap["duration"]
        no_first = np.isnan(ttfc)
        generating = duration - np.where(no_first, 0.0, ttfc)
        output = counts["output_tokens"]
        speed = output._data / generating
        speed_mask = output._mask | no_first | ~(generating > 0)
    micros = snap["started"] * 1e6
    started_mask = np.isnan(micros)
    stamps = np.where(started_mask, _MISSING, np.round(np.where(started_mask, 0, micros))).astype(np.int64)
    started = pd.Series(stamps.view("datetime64[us]")).dt.tz_localize("UTC")
    final = snap["final"]
    columns: dict[str, Any] = {
        # Through pyarrow directly: pandas' own string validation would triple the cost.
        "call_id": _strings(snap["call_id"]),
        "attempt": snap["attempt"],
        "final": final,
        "retried": ~final,
        "provider": snap["provider"],
        "model": snap["model"],
        "tags": snap["tags"],
        "started_at": started.array,
        "ttfc_s": _nullable_float(ttfc),
        **{name: _nullable_float(values) for name, values in snap["firsts"].items()},
        **_gap_columns(snap["gaps"]),
        "duration_s": duration,
        **counts,
        "billed_input_tokens": billed,
        "cache_hit_rate": _nullable_float(rate, rate_mask),
        "output_tokens_per_s": _nullable_float(speed, speed_mask),
        "finish": snap["finish"],
        "error_code": snap["error_code"],
        "phase": snap["phase"],
        "usage_source": snap["usage_source"],
        "text_blocks": _nullable_int(snap["blocks"]["text"]),
        "reasoning_blocks": _nullable_int(snap["blocks"]["reasoning"]),
        "tool_call_blocks": _nullable_int(snap["blocks"]["tool-call"]),
        "chunks": snap["chunks"],
        "violations": snap["violations"],
        "warnings": snap["warnings"],
        "cost": pd.arrays.FloatingArray(np.zeros(len(final)), np.ones(len(final), dtype=bool)),
        "currency": pd.Categorical.from_codes(np.full(len(final), -1, dtype=np.int32), categories(())),
        "price_source": pd.Categorical.from_codes(np.full(len(final), -1, dtype=np.int32), categories(())),
        "price_effective": pd.Categorical.from_codes(np.full(len(final), -1, dtype=np.int32), categories(())),
    }
    return pd.DataFrame(columns, copy=False)


# --- wrapping an adapter ------------------------------------------------------------


class LoggedAdapter(WrappingAdapter):
    """``UsageLog.wrap(adapter)``: streams exactly what ``inner`` streams and records each stream.

    The record is made when the stream ends: normally, by raising (the error
    is re-raised unchanged), or when the consumer stops early or is
    cancelled (recorded as ``ABORTED``: the usage of an abandoned stream is
    lost). Provider and model come from the ``GenerateOptions``.
    """

    def __init__(self, inner: LlmAdapter, log: UsageLog, *, tags: Mapping[str, str] | None = None) -> None:
        super().__init__(inner)
        self.log = log
        self.tags = dict(tags) if tags else None

    async def stream(self, options: GenerateOptions) -> AsyncIterator[Any]:
        """The inner stream, passed through chunk by chunk, recorded when it ends."""
        chunks: list[Any] = []
        times: list[float] = []
        started_at = time.time()
        start = time.perf_counter()
        error: LlmError | None = None
        inner = self.inner.stream(options)
        try:
            async for chunk in inner:
                times.append(time.perf_counter() - start)
                chunks.append(chunk)
                yield chunk
        except LlmError as exc:
            error = exc
            raise
        except Exception as exc:
            error = LlmError(f"the stream raised {type(exc).__name__}: {exc}", "UNKNOWN", cause=exc)
            raise
        except BaseException:  # the consumer stopped early (GeneratorExit) or the task was cancelled
            error = LlmError("the consumer stopped reading the stream", "ABORTED")
            raise
        finally:
            total = time.perf_counter() - start
            aclose = getattr(inner, "aclose", None)
            if aclose is not None and error is not None:
                with contextlib.suppress(Exception):  # closing must not mask the stream's outcome
                    await aclose()
            result = await collect(_replay(chunks, error), profile="strict")
            # The first byte and event, when a timer (collect, show) around this stream marked them.
            result.timings = Timings.of_arrivals(
                times, total_s=total, started_at=started_at, chunks=result.chunks, marks=current_marks()
            )
            self.log.record(result, provider=options.provider, model=options.model, tags=self.tags)


async def _replay(chunks: list[Any], error: LlmError | None) -> AsyncIterator[Any]:
    for chunk in chunks:
        yield chunk
    if error is not None:
        raise error
