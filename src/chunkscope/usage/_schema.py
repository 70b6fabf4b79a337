"""The usage frame's columns, their dtypes and their meaning: one place, read by every builder.

One row per *attempt*. Counts follow the protocol's DISJOINT convention
(``input_tokens`` is uncached input only; cache reads and writes are apart;
``billed_input_tokens`` is their sum). ``reasoning_tokens`` is the part of
``output_tokens`` spent reasoning, as providers report it (DeepSeek's
``completion_tokens`` includes it), so it is never added to output again.
A count the stream did not report is ``<NA>``, never 0.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = [
    "COLUMNS",
    "COUNT_COLUMNS",
    "FINISH_KINDS",
    "PHASES",
    "USAGE_SOURCES",
    "categories",
    "coerce",
    "empty_frame",
]

FINISH_KINDS = ("stop", "tool-calls", "max-tokens", "error", "aborted")
PHASES = ("before-first-chunk", "mid-stream", "at-finish")
"""Where a failure happened: no chunk had arrived / the stream raised after some chunks /
the stream ended with an ``error`` or ``aborted`` finish."""
USAGE_SOURCES = ("reported", "missing", "lost", "invalid")
"""``reported``: a usage chunk arrived; ``missing``: the attempt succeeded without one;
``lost``: no usage because the attempt failed or was aborted; ``invalid``: a usage chunk arrived
with a count no row can hold (negative, or 2**63 and above), so every count of it is ``<NA>``."""

COUNT_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)

_STRING = pd.StringDtype("pyarrow")
_UTC = pd.DatetimeTZDtype("us", "UTC")


def categories(values: Any) -> pd.Index:
    """A category index of strings, with one dtype whatever the values (even none)."""
    return pd.Index([str(v) for v in values], dtype="str")


def _category(values: tuple[str, ...] | None = None) -> pd.CategoricalDtype:
    return pd.CategoricalDtype(categories(values) if values is not None else None, ordered=False)


COLUMNS: dict[str, Any] = {
    "call_id": _STRING,  # groups the attempts of one logical call
    "attempt": "int64",  # 1, 2, ... within a call
    "final": "bool",  # the attempt whose outcome the caller got
    "retried": "bool",  # == not final: another attempt followed
    "provider": _category(),
    "model": _category(),
    "tags": _category(),  # the tags as compact JSON with sorted keys; <NA> without tags
    "started_at": _UTC,  # wall-clock start of the attempt
    "ttfc_s": "Float64",  # seconds to the first chunk; <NA> when none arrived
    "duration_s": "float64",  # seconds from start to the end of the stream
    "input_tokens": "Int64",
    "output_tokens": "Int64",
    "cache_read_tokens": "Int64",
    "cache_write_tokens": "Int64",
    "reasoning_tokens": "Int64",
    "billed_input_tokens": "Int64",  # input + cache reads + cache writes (absent cache counts as none)
    "cache_hit_rate": "Float64",  # cache_read / billed_input; <NA> without usage or cache figures
    "output_tokens_per_s": "Float64",  # output tokens over the time after the first chunk
    "finish": _category(FINISH_KINDS),  # <NA> when no finish chunk arrived
    "error_code": _category(),  # the raised error's code, else the error/aborted finish's
    "phase": _category(PHASES),  # <NA> when the attempt did not fail
    "usage_source": _category(USAGE_SOURCES),
    "text_blocks": "int64",
    "reasoning_blocks": "int64",
    "tool_call_blocks": "int64",
    "chunks": "int64",
    "violations": "int64",  # error-severity rule violations
    "warnings": "int64",  # warning-severity rule violations (e.g. usage-missing)
    "cost": "Float64",  # from a PriceTable; <NA> when the model is not priced
    "currency": _category(),
}
"""Column name -> dtype of ``UsageLog.to_frame()``, in order."""


def empty_frame() -> pd.DataFrame:
    """A frame with every column and no row."""
    return pd.DataFrame(
        {
            name: pd.Series(
                pd.Categorical([], categories=categories([]))
                if isinstance(dtype, pd.CategoricalDtype) and dtype.categories is None
                else pd.Series([], dtype=dtype)
            )
            for name, dtype in COLUMNS.items()
        }
    )


def coerce(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the usage columns cast back to their dtypes (after Parquet, CSV or a concat).

    Categories keep the values present; the fixed vocabularies (finish, phase,
    usage_source) keep their full category list. Extra columns pass through.
    """
    out = frame.copy()
    for name, dtype in COLUMNS.items():
        if name not in out.columns:
            continue
        column = out[name]
        if isinstance(dtype, pd.CategoricalDtype) and dtype.categories is None:
            if not isinstance(column.dtype, pd.CategoricalDtype):
                column = column.astype(_STRING).astype("category")
            # Unify the categories' own dtype (Parquet may hand back object or large_string).
            out[name] = column.cat.set_categories(categories(column.cat.categories), rename=True)
            continue
        if isinstance(dtype, pd.DatetimeTZDtype):
            column = pd.to_datetime(column, utc=True)
        out[name] = column.astype(dtype)
    return out
