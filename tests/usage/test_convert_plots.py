"""Conventions (disjoint ↔ inclusive, OpenTelemetry names) and plot_usage."""

from __future__ import annotations

import pandas as pd
import pytest

from chunkscope.protocol import FinishReason, StreamResult, Timings, TokenUsage
from chunkscope.usage import (
    OTEL_ATTRIBUTES,
    Price,
    PriceTable,
    UsageLog,
    plot_usage,
    to_disjoint,
    to_inclusive,
    to_otel_attributes,
    to_otel_columns,
    tokens_per_call,
)


def frame() -> pd.DataFrame:
    log = UsageLog(prices=PriceTable([Price("p", "m", cache_miss_input=1, cache_hit_input=0.1, output=2)]))
    usages = [
        TokenUsage(input_tokens=120, output_tokens=9, cache_read_tokens=7680, reasoning_tokens=4),
        TokenUsage(input_tokens=12, output_tokens=8),
        None,
    ]
    for i, usage in enumerate(usages):
        log.record(
            StreamResult(
                usage=usage,
                finish=FinishReason(kind="stop"),
                timings=Timings(total_s=1.0, started_at=1_780_000_000.0 + i),
            ),
            provider="p",
            model="m",
            call_id=str(i),
        )
    return log.to_frame()


def test_inclusive_input_adds_the_cache_and_disjoint_takes_it_back_out() -> None:
    f = frame()
    inclusive = to_inclusive(f)
    assert inclusive["input_tokens"].tolist()[:2] == [7800, 12]
    assert inclusive["input_tokens"].isna().tolist()[2]
    assert inclusive.attrs["token_convention"] == "inclusive"
    back = to_disjoint(inclusive)
    pd.testing.assert_series_equal(back["input_tokens"], f["input_tokens"])
    with pytest.raises(ValueError, match="already inclusive"):
        to_inclusive(inclusive)


def test_otel_names_use_the_inclusive_input_count() -> None:
    f = frame()
    otel = to_otel_columns(f)
    assert otel["gen_ai.usage.input_tokens"].tolist()[:2] == [7800, 12]
    assert otel["gen_ai.usage.cache_read.input_tokens"].tolist()[0] == 7680
    assert OTEL_ATTRIBUTES["output_tokens"] == "gen_ai.usage.output_tokens"
    attrs = to_otel_attributes(TokenUsage(input_tokens=120, output_tokens=9, cache_read_tokens=7680))
    assert attrs == {
        "gen_ai.usage.input_tokens": 7800,
        "gen_ai.usage.output_tokens": 9,
        "gen_ai.usage.cache_read.input_tokens": 7680,
    }  # absent counts are left out, not 0
    assert to_otel_attributes(f.iloc[2].to_dict()) == {}


def test_tokens_per_call_stack_disjoint_kinds_that_add_up_to_billed_input_plus_output() -> None:
    per_call = tokens_per_call(frame())
    first = per_call.iloc[0]
    assert first["input (uncached)"] + first["cache read"] + first["cache write"] == 7800
    assert first["output"] + first["reasoning"] == 9 and first["reasoning"] == 4
    assert per_call.iloc[2].sum() == 0


def test_plot_usage_returns_a_two_panel_figure_with_a_transparent_background() -> None:
    fig = plot_usage(frame())
    top, bottom = fig.axes[:2]
    assert fig.patch.get_alpha() == 0.0
    labels = [t.get_text() for t in top.get_legend().get_texts()]
    assert labels == ["input (uncached)", "cache read", "output", "reasoning"]
    assert len(bottom.get_lines()) == 1
    cost = bottom.get_lines()[0].get_ydata()
    assert cost[-1] == pytest.approx((120 + 768 + 5 * 2 + 4 * 2 + 12 + 16) / 1e6 + 0 * 1)
