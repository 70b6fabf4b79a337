"""``plot_usage``: tokens per call stacked by kind, and the cumulative cost over time.

Drawn through pandas' matplotlib plotting on a transparent figure, with text,
ticks and grid in a mid grey and bar colours of middle lightness, so the
same figure reads on JupyterLab's light and dark themes.

Readable for any mix of calls: when the calls' totals differ by more than
``_LOG_RATIO`` (a few cache hits of thousands of tokens among calls of tens),
the tokens axis is logarithmic, so no call's bar shrinks to nothing; the time
axis counts the time since the first start in a unit fitting the span, so its
tick labels differ at any span (clock labels repeat: a batch within one second,
noon on every day).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from chunkscope.protocol.shared import plural

__all__ = ["KIND_COLORS", "plot_cadence", "plot_usage", "tokens_per_call"]

KIND_COLORS = {
    "input (uncached)": "#4C8BF5",
    "cache read": "#2EAD7A",
    "cache write": "#9C6ADE",
    "output": "#F28C28",
    "reasoning": "#D9534F",
}
"""Colours per token kind: mid lightness, distinct on white and on near-black backgrounds."""

_INK = "#8a8a8a"  # readable on both themes
_MAX_BARS = 200
_LOG_RATIO = 20  # largest / smallest non-zero total past which a linear axis hides the small calls
# the cost panel's time unit: (name, seconds in one, used for spans below this many seconds)
_TIME_UNITS = (
    ("seconds", 1.0, 120.0),
    ("minutes", 60.0, 7_200.0),
    ("hours", 3_600.0, 259_200.0),
    ("days", 86_400.0, math.inf),
)


def tokens_per_call(frame: pd.DataFrame) -> pd.DataFrame:
    """Tokens of each call (all its attempts), by kind, in start order: the data ``plot_usage`` stacks.

    ``output`` is the output that is not reasoning; reasoning is its own kind (disjoint, so they stack).
    """
    counts = frame[["call_id", "started_at"]].copy()
    counts["input (uncached)"] = frame["input_tokens"].fillna(0)
    counts["cache read"] = frame["cache_read_tokens"].fillna(0)
    counts["cache write"] = frame["cache_write_tokens"].fillna(0)
    reasoning = frame["reasoning_tokens"].fillna(0)
    counts["output"] = frame["output_tokens"].fillna(0) - reasoning
    counts["reasoning"] = reasoning
    per_call = counts.groupby("call_id", sort=False, observed=True).agg(
        started_at=("started_at", "min"), **{kind: (kind, "sum") for kind in KIND_COLORS}
    )
    per_call = per_call.sort_values("started_at", kind="stable")
    return per_call[list(KIND_COLORS)].astype("int64")


def plot_usage(frame: pd.DataFrame, *, title: str | None = None) -> Any:
    """A two-panel figure: tokens per call stacked by kind (bars; an area past 200 calls), and the
    cumulative cost over the attempts' start times (a note instead when nothing is priced). An
    empty frame gives the same figure with a note in each panel.

    Returns the matplotlib ``Figure`` (closed for pyplot, so a notebook shows it once, as the
    cell's value).
    """
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), layout="constrained")
    fig.patch.set_alpha(0.0)
    _tokens_panel(top, tokens_per_call(frame), title)
    _cost_panel(bottom, frame)
    for ax in (top, bottom):
        _style(ax)
    plt.close(fig)
    return fig


def _tokens_panel(top: Any, per_call: pd.DataFrame, title: str | None) -> None:
    """Tokens per call stacked by kind: bars, an area past ``_MAX_BARS`` calls, a note for none."""
    kinds = [kind for kind in KIND_COLORS if per_call[kind].any()] or ["output"]
    colors = [KIND_COLORS[kind] for kind in kinds]
    data = per_call[kinds].reset_index(drop=True)
    data.index = data.index + 1
    top.set_ylabel("tokens")  # before _stack_tokens, which names a log scale
    _stack_tokens(top, data, colors)
    top.set_xlabel("call (in start order)")
    top.set_title(title or "Tokens per call, by kind")
    # Outside the axes, to the right: a legend inside would cover the tallest bars.
    if len(data):
        legend = top.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        for text in legend.get_texts():
            text.set_color(_INK)


def _stack_tokens(top: Any, data: pd.DataFrame, colors: list[str]) -> None:
    """The stacked tokens of ``data`` (one row a call): bars, an area past ``_MAX_BARS``, or a note."""
    if len(data) == 0:
        # Nothing to stack: a note in place of the bars (pandas cannot plot no rows).
        note = "no attempts to plot"
        top.text(0.5, 0.5, note, ha="center", va="center", transform=top.transAxes, color=_INK)
        top.set_xticks([])
        top.set_yticks([])
    elif len(data) <= _MAX_BARS:
        data.plot.bar(stacked=True, ax=top, color=colors, width=0.85, edgecolor="none")
        step = max(1, len(data) // 20)
        top.set_xticks(range(0, len(data), step), [str(i) for i in data.index[::step]], rotation=0)
        _scale_tokens(top, data.sum(axis=1))
    else:
        data.plot.area(stacked=True, ax=top, color=colors, linewidth=0)
        _scale_tokens(top, data.sum(axis=1))


def _scale_tokens(top: Any, totals: pd.Series) -> None:
    """A log axis when the non-zero totals span more than ``_LOG_RATIO``, from a third of the smallest.

    A third below the smallest total keeps its bar a visible height (log 3 of the axis's
    decades) however tall the tallest is; the segments stacked above a bar's first read
    on the same log axis as the totals.
    """
    nonzero = totals[totals > 0]
    if nonzero.empty or nonzero.max() <= _LOG_RATIO * nonzero.min():
        return
    top.set_yscale("log")
    top.set_ylim(float(nonzero.min()) / 3, float(nonzero.max()) * 1.3)
    top.set_ylabel("tokens (log scale)")


def _cost_panel(bottom: Any, frame: pd.DataFrame) -> None:
    """The cumulative cost over the attempts' start times, or a note when nothing is priced."""
    priced = frame[frame["cost"].notna()].sort_values("started_at", kind="stable")
    if not len(priced):
        _no_cost(bottom)
        return
    cumulative = priced["cost"].astype("float64").cumsum()
    times, span, label = _since_first_start(priced["started_at"])
    color = KIND_COLORS["output"]
    bottom.step(times, cumulative.to_numpy(), where="post", color=color, linewidth=2)
    bottom.set_xlim(0, span * 1.02 or 1.0)
    bottom.set_xlabel(label)
    # From 0 (an axis that starts above 0 exaggerates the growth), with headroom over the total.
    bottom.set_ylim(0, float(cumulative.max()) * 1.08 or 1.0)
    currencies = sorted(str(c) for c in priced["currency"].dropna().unique())
    bottom.set_ylabel(f"cost ({', '.join(currencies) or 'unknown currency'})")
    unpriced = int((frame["cost"].isna() & frame["input_tokens"].notna()).sum())
    note = f"cumulative cost ({plural(unpriced, 'attempt')} unpriced)" if unpriced else "cumulative cost"
    bottom.set_title(note)


def _since_first_start(started_at: pd.Series) -> tuple[Any, float, str]:
    """The start times as time since the first, in a unit fitting the span (plain numbers, no two
    ticks alike): (the times, their span, the axis label), both in that unit."""
    started = pd.to_datetime(started_at, utc=True)
    origin = started.min()
    seconds = (started - origin).dt.total_seconds().to_numpy(dtype="float64", na_value=float("nan"))
    span = float(pd.Series(seconds).max()) if pd.notna(origin) else 0.0
    unit, per = next((unit, per) for unit, per, below in _TIME_UNITS if span < below)
    since = f"{origin:%Y-%m-%d %H:%M:%S} UTC" if pd.notna(origin) else "an unknown time"
    return seconds / per, span / per, f"{unit} since the first priced start ({since})"


def _no_cost(bottom: Any) -> None:
    """The cost panel when no attempt is priced: a note where the line would be."""
    bottom.text(
        0.5,
        0.5,
        "no cost: no attempt is priced (UsageLog(prices=PriceTable(...)))",
        ha="center",
        va="center",
        transform=bottom.transAxes,
        color=_INK,
    )
    bottom.set_xticks([])
    bottom.set_yticks([])
    bottom.set_xlabel("start time")


_STALL_COLOR = "#D9534F"
_SPAN_COLOR = "#4C8BF5"
_TIMEOUT_COLOR = "#2EAD7A"
_FLOOR_S = 1e-4  # a gap of 0 (chunks of one read) sits here on the log axis


def plot_cadence(report: Any, *, title: str | None = None) -> Any:
    """``Cadence.plot()``: one row per model on a log time axis — the whole range of its gaps (thin),
    p50 to p99 (thick), the p99.9 (a diamond), each stall (a red x), the suggested timeout (a
    dashed green mark, labelled). Returns the matplotlib ``Figure`` (closed for pyplot)."""
    from chunkscope._extras import needs_extra

    with needs_extra("Cadence.plot"):
        import matplotlib.pyplot as plt

    models = report.models
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.6 * max(len(models), 1)), layout="constrained")
    fig.patch.set_alpha(0.0)
    if not len(report.gaps):
        ax.text(
            0.5, 0.5, "no timed gap to plot", ha="center", va="center", transform=ax.transAxes, color=_INK
        )
        ax.set_xticks([])
        ax.set_yticks([])
    else:
        _cadence_rows(ax, report)
    what = "gap between chunks" if report.basis == "every gap" else "each attempt's largest gap"
    ax.set_xlabel(f"{what}, seconds (log scale; 0 drawn at {_FLOOR_S:g} s)")
    ax.set_title(title or "Gaps between chunks, per model")
    _style(ax)
    ax.grid(axis="x", color=_INK, alpha=0.25, linewidth=0.6)
    plt.close(fig)
    return fig


_STRIP_POINTS = 2000  # gaps drawn as dots per model, at most (a fixed-seed sample past it)


def _cadence_rows(ax: Any, report: Any) -> None:
    models = report.models
    gaps = report.gaps
    labels = []
    first = True  # the legend names each mark once, from the first model that has gaps
    for y, row in enumerate(models.itertuples(index=False)):
        labels.append(f"{row.provider} / {row.model}")
        if row.gaps == 0:
            continue
        mine = gaps["gap_s"][(gaps["provider"] == row.provider) & (gaps["model"] == row.model)].to_numpy()
        _strip(ax, mine, y, first)
        _marks(ax, row, y, first)
        first = False
    stalls = report.stalls
    if len(stalls):
        rows = {label: y for y, label in enumerate(labels)}
        ys = [rows[f"{p} / {m}"] for p, m in zip(stalls["provider"], stalls["model"], strict=True)]
        ax.plot(
            stalls["gap_s"].to_numpy(dtype=float),
            ys,
            "x",
            color=_STALL_COLOR,
            markersize=9,
            markeredgewidth=2,
            label="stall",
            linestyle="none",
        )
    ax.set_xscale("log")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(-0.7, len(labels) - 0.3)
    legend = ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    for text in legend.get_texts():
        text.set_color(_INK)


def _strip(ax: Any, values: Any, y: int, label: bool) -> None:
    """The model's gaps as faint dots, spread a little up and down so dense runs show as bands."""
    import numpy as np

    rng = np.random.default_rng(27)
    if len(values) > _STRIP_POINTS:
        values = rng.choice(values, _STRIP_POINTS, replace=False)
    spread = rng.uniform(-0.22, 0.22, len(values))
    ax.plot(
        np.maximum(values, _FLOOR_S),
        y + spread,
        ".",
        color=_INK,
        alpha=0.35,
        markersize=4,
        label="a gap" if label else None,
        linestyle="none",
    )


def _marks(ax: Any, row: Any, y: int, label: bool) -> None:
    """p50 to p99 (a bar), the p99.9 (a diamond) and the suggested timeout (dashed, labelled)."""
    span = [max(row.p50_gap_s, _FLOOR_S), max(row.p99_gap_s, _FLOOR_S)]
    ax.plot(
        span,
        [y, y],
        color=_SPAN_COLOR,
        linewidth=5,
        solid_capstyle="round",
        label="p50 to p99" if label else None,
    )
    ax.plot([max(row.p999_gap_s, _FLOOR_S)], [y], "D", color=_SPAN_COLOR, label="p99.9" if label else None)
    timeout = row.suggested_timeout_s
    ax.plot(
        [timeout] * 2,
        [y - 0.3, y + 0.3],
        "--",
        color=_TIMEOUT_COLOR,
        linewidth=2,
        label="suggested timeout" if label else None,
    )
    ax.annotate(
        f"{timeout:g} s", (timeout, y + 0.3), color=_TIMEOUT_COLOR, fontsize=8, ha="left", va="bottom"
    )


def _style(ax: Any) -> None:
    ax.set_facecolor("none")
    ax.title.set_color(_INK)
    ax.xaxis.label.set_color(_INK)
    ax.yaxis.label.set_color(_INK)
    ax.tick_params(colors=_INK)
    ax.grid(axis="y", color=_INK, alpha=0.25, linewidth=0.6)
    for spine in ax.spines.values():
        spine.set_color(_INK)
        spine.set_alpha(0.5)
