"""Token-count conventions: chunkscope's disjoint counts ↔ the inclusive counts of OpenTelemetry GenAI.

chunkscope (like its protocol) counts input DISJOINTLY: ``input_tokens`` is
the uncached input only, cache reads and writes are apart. OpenTelemetry's
GenAI semantic conventions, and most providers' dashboards (DeepSeek's
``prompt_tokens``, OpenAI's ``input_tokens``), count input INCLUSIVELY:
``gen_ai.usage.input_tokens`` includes the cached tokens, which are then
also reported on their own. Output is the same in both: output tokens
include the reasoning tokens.

    inclusive input = input_tokens + cache_read_tokens + cache_write_tokens
                    = billed_input_tokens

genai-prices (the price data ``PriceTable.from_genai_prices()`` reads) counts
the same way: its ``Usage.input_tokens`` is the whole input, of which
``cache_read_tokens`` and ``cache_write_tokens`` are parts (it charges the
uncached rest at the input price). ``to_genai_usage`` is the one place that
converts chunkscope's disjoint counts to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from chunkscope.protocol import TokenUsage

__all__ = [
    "OTEL_ATTRIBUTES",
    "inclusive_input",
    "to_disjoint",
    "to_genai_usage",
    "to_inclusive",
    "to_otel_attributes",
    "to_otel_columns",
]

OTEL_ATTRIBUTES: dict[str, str] = {
    "billed_input_tokens": "gen_ai.usage.input_tokens",  # inclusive: the OTel input count
    "output_tokens": "gen_ai.usage.output_tokens",
    "cache_read_tokens": "gen_ai.usage.cache_read.input_tokens",
    "cache_write_tokens": "gen_ai.usage.cache_creation.input_tokens",
    # Not (yet) in the OTel registry; named after the cache attributes' pattern.
    "reasoning_tokens": "gen_ai.usage.reasoning.output_tokens",
    "provider": "gen_ai.provider.name",
    "model": "gen_ai.request.model",
    "finish": "gen_ai.response.finish_reasons",
    "error_code": "error.type",
}
"""Usage-frame column -> OpenTelemetry GenAI attribute. Note that the OTel input count
is the frame's ``billed_input_tokens`` (inclusive), not its disjoint ``input_tokens``."""

_CONVENTION = "token_convention"


def inclusive_input(input_tokens: int | None, cache_read: int | None, cache_write: int | None) -> int | None:
    """One attempt's inclusive input count (the OTel / dashboard convention) from its disjoint counts.

    The scalar form of ``to_inclusive``: absent cache counts add nothing; absent input stays None.
    """
    if input_tokens is None:
        return None
    return input_tokens + (cache_read or 0) + (cache_write or 0)


def to_inclusive(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose ``input_tokens`` includes cache reads and writes (``frame.attrs['token_convention']``
    becomes ``"inclusive"``). Absent cache counts add nothing; absent input stays ``<NA>``."""
    if frame.attrs.get(_CONVENTION) == "inclusive":
        raise ValueError("this frame's input_tokens are already inclusive")
    out = frame.copy()
    extra = out["cache_read_tokens"].fillna(0) + out["cache_write_tokens"].fillna(0)
    out["input_tokens"] = (out["input_tokens"] + extra).astype("Int64")
    out.attrs[_CONVENTION] = "inclusive"
    return out


def to_genai_usage(
    *, input_tokens: int = 0, cache_read_tokens: int = 0, cache_write_tokens: int = 0, output_tokens: int = 0
) -> dict[str, int]:
    """genai-prices ``Usage`` keyword arguments for disjoint counts: its input includes cache reads and
    writes. Reasoning tokens are inside ``output_tokens`` in both conventions and are not passed apart."""
    return {
        "input_tokens": input_tokens + cache_read_tokens + cache_write_tokens,
        "cache_read_tokens": cache_read_tokens,
        "cache_write_tokens": cache_write_tokens,
        "output_tokens": output_tokens,
    }


def to_disjoint(frame: pd.DataFrame) -> pd.DataFrame:
    """The inverse of ``to_inclusive``: ``input_tokens`` minus cache reads and writes.

    For a frame from elsewhere (a dashboard export) whose ``input_tokens`` is
    inclusive and that has no ``token_convention`` mark, the counts are taken
    as inclusive; a frame marked disjoint raises ``ValueError``.
    """
    if frame.attrs.get(_CONVENTION) == "disjoint":
        raise ValueError("this frame's input_tokens are already disjoint")
    out = frame.copy()
    extra = out["cache_read_tokens"].fillna(0) + out["cache_write_tokens"].fillna(0)
    out["input_tokens"] = (out["input_tokens"] - extra).astype("Int64")
    out.attrs[_CONVENTION] = "disjoint"
    return out


def to_otel_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame's columns under their OpenTelemetry GenAI names (inclusive input), the rest dropped.

    (``to_otel`` replays a frame as OpenTelemetry spans: ``chunkscope.usage._otel``.)
    """
    present = {column: name for column, name in OTEL_ATTRIBUTES.items() if column in frame.columns}
    return frame[list(present)].rename(columns=present)


def to_otel_attributes(usage: TokenUsage | Mapping[str, Any]) -> dict[str, int]:
    """OTel GenAI usage attributes for one ``TokenUsage`` or one frame row (disjoint counts in).

    Counts that are absent are left out, never written as 0.
    """
    if isinstance(usage, TokenUsage):
        row: Mapping[str, Any] = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "reasoning_tokens": usage.reasoning_tokens,
        }
    else:
        row = usage

    def get(name: str) -> int | None:
        value = row.get(name)
        return None if value is None or value is pd.NA or pd.isna(value) else int(value)

    out: dict[str, int] = {}
    inclusive = inclusive_input(get("input_tokens"), get("cache_read_tokens"), get("cache_write_tokens"))
    if inclusive is not None:
        out["gen_ai.usage.input_tokens"] = inclusive
    for column in ("output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
        value = get(column)
        if value is not None:
            out[OTEL_ATTRIBUTES[column]] = value
    return out
