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

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ._schema import COUNT_COLUMNS

__all__ = ["SUMMARY_COLUMNS", "latency_percentiles", "summary"]

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


def _materialize(obj: Any) -> Any:
    # A Dask collection computes here; a pandas object is returned as it is.
    compute = getattr(obj, "compute", None)
    return compute() if callable(compute) and not isinstance(obj, (pd.DataFrame, pd.Series)) else obj


def _keys(frame: Any, by: Sequence[str] | str | None) -> tuple[Any, list[str]]:
    if isinstance(by, str):
        by = [by]
    keys = list(by or [])
    if not keys:
        frame = frame.assign(**{_ALL: "all"})
        keys = [_ALL]
    return frame, keys


def summary(frame: Any, by: Sequence[str] | str | None = ("provider", "model")) -> pd.DataFrame:
    """One row per group of ``by`` (columns of a usage frame; ``[]`` for one overall row).

    - ``calls``: final attempts; ``attempts``: rows; ``retries``: attempts - calls;
    - ``failed_calls``: calls whose final attempt failed; ``errors``: failed attempts;
      ``errors_<CODE>``: failed attempts per error code (0 where none);
    - token columns: sums of the reported (disjoint) counts — rows with usage
      lost or missing add nothing; ``cache_hit_rate`` = cache reads / billed input;
    - ``cost``: the sum of the priced rows, ``<NA>`` when no row of the group
      is priced; ``unpriced_attempts``: rows with usage but no cost;
    - p50 / p95 of time to first chunk and of duration, in seconds.

    Works on a pandas or a Dask DataFrame; returns a pandas DataFrame indexed by ``by``.
    """
    work, keys = _keys(frame, by)
    failed = work["error_code"].notnull()
    work = work.assign(
        _failed=failed.astype("int64"),
        _failed_call=(failed & work["final"]).astype("int64"),
        _final=work["final"].astype("int64"),
        _unpriced=(work["input_tokens"].notnull() & work["cost"].isna()).astype("int64"),
        _priced=work["cost"].notnull().astype("int64"),
    )
    named: dict[str, tuple[str, str]] = {
        "calls": ("_final", "sum"),
        "attempts": ("attempt", "count"),
        "failed_calls": ("_failed_call", "sum"),
        "errors": ("_failed", "sum"),
        **{name: (name, "sum") for name in (*COUNT_COLUMNS, "billed_input_tokens")},
        "cost": ("cost", "sum"),
        "unpriced_attempts": ("_unpriced", "sum"),
        "_priced": ("_priced", "sum"),
    }
    grouped = work.groupby(keys, observed=True, dropna=False)
    out = _materialize(grouped.agg(**named))
    out["retries"] = out["attempts"] - out["calls"]
    for name in (*COUNT_COLUMNS, "billed_input_tokens"):
        out[name] = out[name].astype("Int64")
    billed = out["billed_input_tokens"].astype("Float64")
    out["cache_hit_rate"] = (out["cache_read_tokens"].astype("Float64") / billed).where(billed > 0)
    out["cost"] = out["cost"].astype("Float64").where(out["_priced"] > 0)
    out = out.drop(columns="_priced")
    out = out.join(latency_percentiles(frame if keys != [_ALL] else work, keys))
    out = out[list(SUMMARY_COLUMNS)]
    codes_table = errors_by_code(work, keys)
    if len(codes_table.columns):
        out = out.join(codes_table)
    codes = [c for c in out.columns if c.startswith("errors_")]
    out[codes] = out[codes].fillna(0).astype("int64")
    if keys == [_ALL]:
        out.index = pd.Index(["all"], name=None)[: len(out)]
    return out


def errors_by_code(frame: Any, by: Sequence[str]) -> pd.DataFrame:
    """Failed attempts per group and error code, one ``errors_<CODE>`` column per code."""
    keys = list(by)
    failed = frame[frame["error_code"].notnull()]
    counts = _materialize(failed.groupby([*keys, "error_code"], observed=True).size())
    if len(counts) == 0:
        return pd.DataFrame()  # no column: nothing failed
    table = counts.unstack("error_code", fill_value=0)
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
    data = _materialize(frame[[*keys, *columns]])
    data = data.astype({name: "float64" for name in columns})  # <NA> -> NaN, skipped by quantile
    grouped = data.groupby(keys, observed=True, dropna=False)
    parts = {}
    for column, stem in columns.items():
        for level in q:
            parts[f"{stem}_p{round(level * 100)}_s"] = grouped[column].quantile(level)
    out = pd.DataFrame(parts)
    return out.astype("Float64")  # NaN (a group with no first chunk) reads <NA>
