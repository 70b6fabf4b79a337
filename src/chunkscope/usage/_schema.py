"""The usage frame's columns, their dtypes and their meaning: one place, read by every builder.

One row per *attempt*. Counts follow the protocol's DISJOINT convention
(``input_tokens`` is uncached input only; cache reads and writes are apart;
``billed_input_tokens`` is their sum). ``reasoning_tokens`` is the part of
``output_tokens`` spent reasoning, as providers report it (DeepSeek's
``completion_tokens`` includes it), so it is never added to output again.
A count the stream did not report is ``<NA>``, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "COLUMNS",
    "COUNT_COLUMNS",
    "FINISH_KINDS",
    "GAP_COLUMNS",
    "PHASES",
    "USAGE_SOURCES",
    "UsageSchemaError",
    "categories",
    "check_columns",
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
    "first_byte_s": "Float64",  # seconds to the body's first byte (adapters, tap); <NA>: not seen
    "first_event_s": "Float64",  # seconds to the wire's first whole event, chunk or not
    "first_content_s": "Float64",  # seconds to the first delta of any kind
    "first_text_s": "Float64",  # seconds to the first text delta
    "max_gap_s": "Float64",  # the largest gap between two chunks; <NA>: timing unknown or under 2 chunks
    "max_gap_at": "Int64",  # the chunk that largest gap ended (the timeline's "max gap before chunk n")
    "p50_gap_s": "Float64",  # the median gap between chunks
    "p99_gap_s": "Float64",  # the 99th percentile gap between chunks
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
    "text_blocks": "Int64",  # <NA> where the source does not say (a log that keeps no chunks)
    "reasoning_blocks": "Int64",
    "tool_call_blocks": "Int64",
    "chunks": "int64",
    "violations": "int64",  # error-severity rule violations
    "warnings": "int64",  # warning-severity rule violations (e.g. usage-missing)
    "cost": "Float64",  # from a PriceTable; <NA> when the model is not priced
    "currency": _category(),
    "price_source": _category(),  # where the price comes from (a URL, "genai-prices 0.2.3 openai/gpt-4o")
    "price_effective": _category(),  # the date that price applies from ("" when undated)
}
"""Column name -> dtype of ``UsageLog.to_frame()``, in order."""

FIRST_COLUMNS = ("first_byte_s", "first_event_s", "first_content_s", "first_text_s")
"""The four points of time to first token (``Timings``; ``docs/usage.md``), in column order."""

GAP_COLUMNS = ("max_gap_s", "max_gap_at", "p50_gap_s", "p99_gap_s")
"""The gaps between an attempt's chunks (``_gaps.gap_stats``), in column order."""

ADDED_COLUMNS = ("price_source", "price_effective", *FIRST_COLUMNS, *GAP_COLUMNS)
"""Columns added after frames were first stored (issues 18, 19 and 27): a stored frame without them
is still a usage frame, and ``coerce`` adds them (all ``<NA>``) in their place."""


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


def _missing(dtype: Any, rows: int) -> Any:
    """A column of ``rows`` missing values of ``dtype`` (a category, or a nullable float)."""
    if isinstance(dtype, pd.CategoricalDtype):
        return pd.Categorical.from_codes(np.full(rows, -1, dtype=np.int32), categories(()))
    return pd.array([None] * rows, dtype=dtype)


def coerce(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the usage columns cast back to their dtypes (after Parquet, CSV or a concat).

    Categories keep the values present; the fixed vocabularies (finish, phase,
    usage_source) keep their full category list. Extra columns pass through.
    """
    out = frame.copy()
    order = list(COLUMNS)
    for name in ADDED_COLUMNS:
        before = order[order.index(name) - 1]
        if name not in out.columns and before in out.columns:
            out.insert(int(out.columns.get_loc(before)) + 1, name, _missing(COLUMNS[name], len(out)))
    for name, dtype in COLUMNS.items():
        if name in out.columns:
            out[name] = _coerced(name, out[name], dtype)
    return out


def _coerced(name: str, column: pd.Series, dtype: Any) -> Any:
    """One usage column cast back to its dtype."""
    if isinstance(dtype, pd.CategoricalDtype) and dtype.categories is None:
        if not isinstance(column.dtype, pd.CategoricalDtype):
            column = column.astype(_STRING).astype("category")
        # Unify the categories' own dtype (Parquet may hand back object or large_string).
        return column.cat.set_categories(categories(column.cat.categories), rename=True)
    if isinstance(dtype, pd.DatetimeTZDtype):
        column = pd.to_datetime(column, utc=True)
    if name in MONEY_COLUMNS and is_decimal(column):  # Decimal money stays Decimal; absent: <NA>
        return column.where(column.notna(), pd.NA)
    return column.astype(dtype)


DSH_COLUMNS: dict[str, str] = {
    "session_id": "category",
    "turn": "int64",
    "step": "int64",
    "kind": "category",
    "synthesized": "bool",
}
"""The columns ``DshSession.to_frame`` adds after the usage columns (session logs' frames)."""


class UsageSchemaError(ValueError):
    """A file read as a usage frame whose columns are not a usage frame's; ``column`` names the first.

    ``str()`` is one sentence naming the source, the column, what it should hold and what it holds.
    """

    def __init__(self, message: str, column: str) -> None:
        super().__init__(message)
        self.column = column

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.column))


_FIXED = {"finish": FINISH_KINDS, "phase": PHASES, "usage_source": USAGE_SOURCES}


def _kind(dtype: Any) -> str:
    """The kind of value a usage column holds, as ``check_columns`` compares it."""
    if isinstance(dtype, pd.CategoricalDtype) or dtype is _STRING:
        return "text"
    if isinstance(dtype, pd.DatetimeTZDtype):
        return "a time stamp"
    if str(dtype) == "bool":
        return "true/false"
    if str(dtype) in ("int64", "Int64"):
        return "whole numbers"
    return "numbers"


_TEXT = ("string", "empty")  # what pandas infers for a column of str (or of nothing)


def _holds(column: pd.Series, kind: str) -> bool:
    types = pd.api.types
    dtype = column.dtype
    if kind == "text":
        if isinstance(dtype, pd.CategoricalDtype):
            return types.infer_dtype(dtype.categories, skipna=True) in _TEXT
        return bool(types.is_string_dtype(dtype)) and types.infer_dtype(column, skipna=True) in _TEXT
    if kind == "a time stamp":
        return bool(types.is_datetime64_any_dtype(dtype))
    if kind == "true/false":
        return bool(types.is_bool_dtype(dtype))
    if types.is_bool_dtype(dtype):
        return False
    if kind == "whole numbers":
        return bool(types.is_integer_dtype(dtype))
    return bool(types.is_integer_dtype(dtype) or types.is_float_dtype(dtype))


MONEY_COLUMNS = ("cost",)
"""Columns that may hold exact ``Decimal`` numbers (``PriceTable(cost_type=Decimal)``) instead of Float64."""


def is_decimal(column: pd.Series) -> bool:
    """Whether ``column`` holds exact ``Decimal`` numbers (``cost_type=Decimal``; Parquet's decimal128)."""
    return bool(column.dtype == object and pd.api.types.infer_dtype(column, skipna=True) == "decimal")


def _describe(column: pd.Series) -> str:
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return f"categories of {pd.api.types.infer_dtype(dtype.categories, skipna=True)}"
    inferred = pd.api.types.infer_dtype(column, skipna=True)
    return f"{dtype} ({inferred})" if str(dtype) == "object" else str(dtype)


def check_columns(frame: pd.DataFrame, source: str) -> None:
    """Raise ``UsageSchemaError`` unless ``frame`` (read from ``source``) has every usage column,
    each holding its kind of value (text, whole numbers, numbers, true/false, a time stamp) and
    the fixed vocabularies (finish, phase, usage_source) holding only their own values.

    So a file of another schema is refused, naming the column, instead of being cast into a
    wrong frame (an integer ``started_at`` read as 1970, ``"yes"`` read as True).
    """
    for name, dtype in COLUMNS.items():
        if name not in frame.columns and name in ADDED_COLUMNS:
            continue
        if name not in frame.columns:
            raise UsageSchemaError(f"{source}: not a usage frame: it has no column {name!r}", name)
        column = frame[name]
        kind = _kind(dtype)
        if not _holds(column, kind) and not (name in MONEY_COLUMNS and is_decimal(column)):
            raise UsageSchemaError(
                f"{source}: not a usage frame: column {name!r} should hold {kind}, "
                f"it holds {_describe(column)}",
                name,
            )
        fixed = _FIXED.get(name)
        if fixed is not None:
            _check_vocabulary(column, name, fixed, source)


def _check_vocabulary(column: pd.Series, name: str, fixed: Sequence[str], source: str) -> None:
    """Raise ``UsageSchemaError`` if ``column`` holds a value outside its fixed vocabulary."""
    values = column.cat.categories if isinstance(column.dtype, pd.CategoricalDtype) else column
    unknown = sorted({str(v) for v in pd.unique(values) if not pd.isna(v)} - set(fixed))
    if unknown:
        raise UsageSchemaError(
            f"{source}: not a usage frame: column {name!r} holds {unknown[0]!r}, "
            f"not one of {', '.join(fixed)}",
            name,
        )
