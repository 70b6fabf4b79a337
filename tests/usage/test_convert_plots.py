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


def mixed_frame(spread_s: float, hits: int = 4, small: int = 24) -> pd.DataFrame:
    """Notebook 03's mix: ``hits`` cache hits of 7,800 tokens among ``small`` calls of 13 to 20,
    their starts spread evenly over ``spread_s`` seconds."""
    log = UsageLog(prices=PriceTable([Price("p", "m", cache_miss_input=1, cache_hit_input=0.1, output=2)]))
    calls = hits + small
    big = set(range(1, calls, calls // hits)) if hits else set()
    for i in range(calls):
        if i in big:
            usage = TokenUsage(input_tokens=120, output_tokens=9, cache_read_tokens=7680)
        else:
            usage = TokenUsage(input_tokens=12, output_tokens=1 + i % 8)
        timings = Timings(total_s=1.0, started_at=1_780_000_000.0 + spread_s * i / (calls - 1))
        log.record(
            StreamResult(usage=usage, finish=FinishReason(kind="stop"), timings=timings),
            provider="p",
            model="m",
            call_id=str(i),
        )
    return log.to_frame()


def drawn_heights(ax: object) -> dict[float, float]:
    """Each bar's drawn height as a fraction of the axes (its stack's top: bars rise from the axes' floor)."""
    import matplotlib.axes

    assert isinstance(ax, matplotlib.axes.Axes)
    tops: dict[float, float] = {}
    for patch in ax.patches:
        x = round(patch.get_x() + patch.get_width() / 2, 6)
        if patch.get_height() > 0:
            tops[x] = max(tops.get(x, 0.0), patch.get_y() + patch.get_height())
    to_axes = ax.transAxes.inverted()
    return {x: float(to_axes.transform(ax.transData.transform((x, top)))[1]) for x, top in tops.items()}


@pytest.mark.parametrize(("hits", "small"), [(4, 24), (1, 40), (10, 10)])
def test_every_call_of_a_mix_of_cache_hits_and_small_calls_gets_a_visible_bar(hits: int, small: int) -> None:
    fig = plot_usage(mixed_frame(1.0, hits, small))
    top = fig.axes[0]
    fig.canvas.draw()
    heights = drawn_heights(top)
    assert len(heights) == hits + small
    assert min(heights.values()) >= 0.1, sorted(heights.values())[:3]
    assert max(heights.values()) <= 1.0  # the tallest is not cut off


def test_calls_of_one_size_keep_a_linear_token_axis() -> None:
    fig = plot_usage(mixed_frame(1.0, hits=0, small=10))
    assert fig.axes[0].get_yscale() == "linear"
    fig.canvas.draw()
    assert min(drawn_heights(fig.axes[0]).values()) >= 0.1


@pytest.mark.parametrize("spread_s", [0.0, 0.07, 0.9, 50.0, 3_600.0, 3 * 86_400.0])
def test_the_cost_axis_labels_its_ticks_differently_at_any_time_span(spread_s: float) -> None:
    fig = plot_usage(mixed_frame(spread_s))
    bottom = fig.axes[1]
    fig.canvas.draw()
    lo, hi = bottom.get_xlim()
    labels = [
        tick.get_text()
        for tick, at in zip(bottom.get_xticklabels(), bottom.get_xticks(), strict=True)
        if lo <= at <= hi and tick.get_text()
    ]
    assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
