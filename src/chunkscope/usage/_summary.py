"""``summary(frame, by=...)``: calls, attempts, errors by code, tokens, cache hit rate, cost, latency.

Written with operations a Dask DataFrame has too (``assign``, comparisons,
``groupby(...).agg`` with named aggregations, ``size``), so the same call
runs on a Dask frame: the grouped aggregates are small and are computed
(``.compute()``) before the pandas-only finishing steps (unstacking the
error codes, ratios). Percentiles live apart in ``latency_percentiles``:
an exact grouped quantile is the one step Dask does not offer, so that
function is where a Dask path chooses its own strategy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ._prices import as_price_table
from ._schema import COUNT_COLUMNS, is_decimal

__all__ = ["RAW_TOTALS", "SUMMARY_COLUMNS", "finish_totals", "latency_percentiles", "summary"]

OPTIONAL_COUNTS = ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
"""Counts a usage report may leave out: a group where no row has one shows ``<NA>``, not 0."""

SUMMARY_COLUMNS = (
    "calls",
    "attempts",
    "retries",
    "failed_calls",
    "errors",
    *COUNT_COLUMNS,
    "billed_input_tokens",
    "cache_hit_rate",
    "cost",
    "unpriced_attempts",
    "ttfc_p50_s",
    "ttfc_p95_s",
    "duration_p50_s",
    "duration_p95_s",
)
"""The fixed columns of ``summary``, in order; ``errors_<CODE>`` columns follow, one per code seen."""

_ALL = "_scope"

RAW_TOTALS = (
    "calls",
    "attempts",
    "failed_calls",
    "errors",
    *COUNT_COLUMNS,
    "billed_input_tokens",
    *(f"_known_{name}" for name in OPTIONAL_COUNTS),
    "cost",
    "unpriced_attempts",
    "_priced",
)
"""The plain sums over a group's rows that every total derives from (``finish_totals``): what
``summary`` aggregates per group and what ``UsageLog`` keeps running, one definition for both."""


_SUMS: dict[str, tuple[str, str]] = {
    "calls": ("_final", "sum"),
    "attempts": ("attempt", "count"),
    "failed_calls": ("_failed_call", "sum"),
    "errors": ("_failed", "sum"),
    **{name: (name, "sum") for name in (*COUNT_COLUMNS, "billed_input_tokens")},
    **{f"_known_{name}": (name, "count") for name in OPTIONAL_COUNTS},
    "cost": ("cost", "sum"),
    "unpriced_attempts": ("_unpriced", "sum"),
    "_priced": ("_priced", "sum"),
}
"""How ``summary`` gets each of ``RAW_TOTALS`` from a frame's rows (after ``_with_indicators``)."""


def _with_indicators(work: Any) -> Any:
    # 0/1 columns whose sums are the raw totals: a failed attempt, a failed call, a call (the final
    # attempt), an attempt with usage but no cost, a priced attempt.
    failed = work["error_code"].notnull()
    return work.assign(
        _failed=failed.astype("int64"),
        _failed_call=(failed & work["final"]).astype("int64"),
        _final=work["final"].astype("int64"),
        _unpriced=(work["input_tokens"].notnull() & work["cost"].isna()).astype("int64"),
        _priced=work["cost"].notnull().astype("int64"),
    )


def finish_totals(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The totals of ``summary`` (but percentiles and error codes) from ``RAW_TOTALS``.

    The one place the derived figures are defined, for ``summary`` (``raw`` holds one Series per
    total, a value per group) and ``UsageLog.totals`` (one plain number per total) alike:
    ``retries``; a cache or reasoning count no row reported is ``<NA>`` (unknown, not 0), and so is
    a hit rate built on it; ``cache_hit_rate`` = cache reads / billed input; ``cost`` is ``<NA>``
    when no row is priced.
    """
    out = {name: value for name, value in raw.items() if not name.startswith("_")}
    out["retries"] = raw["attempts"] - raw["calls"]
    for name in OPTIONAL_COUNTS:
        out[name] = _known_if(raw[name], raw[f"_known_{name}"] > 0)
    billed = raw["billed_input_tokens"]
    reads = out["cache_read_tokens"]
    out["cache_hit_rate"] = _known_if(_ratio(reads, billed), billed > 0)
    out["cost"] = _known_if(raw["cost"], raw["_priced"] > 0)
    return out


def _known_if(value: Any, known: Any) -> Any:
    # a Series keeps its values where `known` holds (<NA> elsewhere); a number is kept or is <NA>
    if isinstance(value, pd.Series):
        return value.where(known, pd.NA)
    return value if known else pd.NA


def _ratio(part: Any, whole: Any) -> Any:
    if isinstance(part, pd.Series):
        return part.astype("Float64") / whole.astype("Float64")
    return pd.NA if part is pd.NA or not whole else part / whole


def _materialize(obj: Any) -> Any:
    # A Dask collection computes here; a pandas object is returned as it is.
    compute = getattr(obj, "compute", None)
    return compute() if callable(compute) and not isinstance(obj, (pd.DataFrame, pd.Series)) else obj


def check_by(by: Sequence[str] | str | None, columns: Any) -> list[str]:
    """``by`` as a list of column names, or a ``ValueError`` / ``TypeError`` naming what is wrong.

    Every name must be a column of ``columns`` (a frame's columns), and none twice.
    """
    keys = _as_keys(by)
    known = set(columns)
    unknown = [key for key in keys if key not in known]
    if unknown:
        raise ValueError(f"summary: by names no column of the frame: {', '.join(map(repr, unknown))}")
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"summary: by names a column twice: {', '.join(map(repr, twice))}")
    return keys


def _as_keys(by: Sequence[str] | str | None) -> list[str]:
    """``by`` as a list of strings (None: none; a str: that one), or a ``TypeError``."""
    if by is None:
        return []
    if isinstance(by, str):
        return [by]
    try:
        keys = list(by)
    except TypeError:
        kind = type(by).__name__
        raise TypeError(f"summary: by must be a column name or a list of them, not {kind}") from None
    wrong = [key for key in keys if not isinstance(key, str)]
    if wrong:
        raise TypeError(f"summary: by holds {wrong[0]!r}, not a column name (a str)")
    return keys


def _keys(frame: Any, by: Sequence[str] | str | None) -> tuple[Any, list[str]]:
    keys = check_by(by, frame.columns)
    if not keys:
        frame = frame.assign(**{_ALL: "all"})
        keys = [_ALL]
    return frame, keys


def summary(
    frame: Any, by: Sequence[str] | str | None = ("provider", "model"), *, prices: Any = None
) -> pd.DataFrame:
    """One row per group of ``by`` (columns of a usage frame; ``[]`` for one overall row).

    - ``calls``: final attempts; ``attempts``: rows; ``retries``: attempts - calls;
    - ``failed_calls``: calls whose final attempt failed; ``errors``: failed attempts;
      ``errors_<CODE>``: failed attempts per error code (0 where none);
    - token columns: sums of the reported (disjoint) counts — rows with usage
      lost or missing add nothing; a cache or reasoning count that no row of
      the group reported is ``<NA>`` (unknown, not 0); ``cache_hit_rate`` =
      cache reads / billed input, ``<NA>`` when the cache reads are unknown;
    - ``cost``: the sum of the priced rows, ``<NA>`` when no row of the group
      is priced; ``unpriced_attempts``: rows with usage but no cost;
    - p50 / p95 of time to first chunk and of duration, in seconds.

    Works on a pandas or a Dask DataFrame; returns a pandas DataFrame indexed by ``by``.
    ``prices`` (a ``PriceTable`` or ``"genai-prices"``) re-prices the frame first.
    """
    if prices is not None:
        table = as_price_table(prices)
        assert table is not None
        frame = table.add_costs(frame)
    work, keys = _keys(frame, by)
    work = _with_indicators(work)
    grouped = work.groupby(keys, observed=True, dropna=False)
    raw = _materialize(grouped.agg(**_SUMS))
    for name in (*COUNT_COLUMNS, "billed_input_tokens"):
        raw[name] = raw[name].astype("Int64")
    if not (isinstance(frame, pd.DataFrame) and is_decimal(frame["cost"])):
        raw["cost"] = raw["cost"].astype("Float64")  # Decimal costs (cost_type=Decimal) stay exact
    out = pd.DataFrame(finish_totals({name: raw[name] for name in raw.columns}), index=raw.index)
    out = out.join(latency_percentiles(frame if keys != [_ALL] else work, keys))
    out = _with_error_codes(out[list(SUMMARY_COLUMNS)], work, keys)
    if keys == [_ALL]:
        out.index = pd.Index(["all"], name=None)[: len(out)]
    return out


def _with_error_codes(out: pd.DataFrame, work: Any, keys: list[str]) -> pd.DataFrame:
    """``out`` with an ``errors_<CODE>`` column per error code (0 in a group without it)."""
    codes_table = errors_by_code(work, keys)
    if len(codes_table.columns):
        out = out.join(codes_table)
    codes = [c for c in out.columns if c.startswith("errors_")]
    out[codes] = out[codes].fillna(0).astype("int64")
    return out


def errors_by_code(frame: Any, by: Sequence[str]) -> pd.DataFrame:
    """Failed attempts per group and error code, one ``errors_<CODE>`` column per code."""
    keys = list(by)
    failed = frame[frame["error_code"].notnull()]
    code = "error_code"
    if code in keys:  # grouped by code already: count under a second name, one index level each
        code = "_error_code"
        failed = failed.assign(**{code: failed["error_code"]})
    counts = _materialize(failed.groupby([*keys, code], observed=True).size())
    if len(counts) == 0:
        return pd.DataFrame()  # no column: nothing failed
    table = counts.unstack(code, fill_value=0)
    table.columns = [f"errors_{code}" for code in table.columns.astype(str)]
    return table.sort_index(axis=1)


def latency_percentiles(frame: Any, by: Sequence[str], q: Sequence[float] = (0.5, 0.95)) -> pd.DataFrame:
    """``ttfc_p50_s`` … ``duration_p95_s`` per group: exact quantiles with linear interpolation.

    On a Dask frame the two timing columns (and the keys) are computed into
    pandas first — small next to the token columns; swap in an approximate
    method here when that is too much.
    """
    keys = list(by)
    columns = {"ttfc_s": "ttfc", "duration_s": "duration"}
    data = _materialize(frame[list(dict.fromkeys([*keys, *columns]))])  # a key may be a timing too
    # Measured under their own names, so grouping by a timing column (ttfc_s) still works;
    # <NA> -> NaN, which quantile skips.
    data = data.assign(**{f"_{stem}": data[column].astype("float64") for column, stem in columns.items()})
    grouped = data.groupby(keys, observed=True, dropna=False)
    parts = {}
    for stem in columns.values():
        for level in q:
            parts[f"{stem}_p{round(level * 100)}_s"] = grouped[f"_{stem}"].quantile(level)
    out = pd.DataFrame(parts)
    return out.astype("Float64")  # NaN (a group with no first chunk) reads <NA>
