"""summary(frame, by=...): calls, attempts, errors by code, tokens, cache hit rate, cost, percentiles."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from chunkscope.protocol import FinishReason, LlmError, StreamResult, Timings, TokenUsage
from chunkscope.usage import SUMMARY_COLUMNS, Price, PriceTable, UsageLog, latency_percentiles, summary


def result(
    usage: TokenUsage | None = None, error: str | None = None, ttfc: float | None = 0.1, total: float = 1.0
) -> StreamResult:
    return StreamResult(
        usage=usage,
        finish=None if error else FinishReason(kind="stop"),
        error=LlmError("x", error) if error else None,
        timings=Timings(first_chunk_s=ttfc, total_s=total, started_at=1_780_000_000.0),
    )


def sample() -> UsageLog:
    log = UsageLog(
        prices=PriceTable([Price("a", "m1", cache_miss_input=1.0, cache_hit_input=0.5, output=2.0)])
    )
    u = TokenUsage
    # call 1 (a/m1): a rate-limited attempt, then a success with cache reads
    log.record(
        result(error="RATE_LIMIT", ttfc=None, total=0.2),
        provider="a",
        model="m1",
        call_id="1",
        attempt=1,
        final=False,
    )
    log.record(
        result(u(input_tokens=100, output_tokens=10, cache_read_tokens=300), ttfc=0.2, total=2.0),
        provider="a",
        model="m1",
        call_id="1",
        attempt=2,
    )
    # call 2 (a/m1): one success
    log.record(
        result(u(input_tokens=50, output_tokens=20, reasoning_tokens=5), ttfc=0.4, total=4.0),
        provider="a",
        model="m1",
        call_id="2",
    )
    # call 3 (b/m2): failed for good
    log.record(result(error="SERVER", ttfc=0.3, total=3.0), provider="b", model="m2", call_id="3")
    return log


def test_summary_by_provider_and_model_matches_the_rows_counted_by_hand() -> None:
    table = summary(sample().to_frame())  # b/m2 is unpriced but reported no usage: nothing to warn about
    assert list(table.columns[: len(SUMMARY_COLUMNS)]) == list(SUMMARY_COLUMNS)
    a = table.loc[("a", "m1")]
    assert (a["calls"], a["attempts"], a["retries"], a["failed_calls"], a["errors"]) == (2, 3, 1, 0, 1)
    assert a["errors_RATE_LIMIT"] == 1 and a["errors_SERVER"] == 0
    assert (a["input_tokens"], a["output_tokens"], a["cache_read_tokens"], a["reasoning_tokens"]) == (
        150,
        30,
        300,
        5,
    )
    assert a["billed_input_tokens"] == 450
    assert a["cache_hit_rate"] == pytest.approx(300 / 450)
    # (100 + 300 * 0.5 + 10 * 2) + (50 + 20 * 2) = 270 + 90 per million
    assert a["cost"] == pytest.approx(360 / 1e6)
    # ttfc of the attempts that had a first chunk: 0.2, 0.4 -> p50 0.3, p95 0.39
    assert a["ttfc_p50_s"] == pytest.approx(0.3) and a["ttfc_p95_s"] == pytest.approx(0.39)
    assert a["duration_p50_s"] == pytest.approx(2.0)
    b = table.loc[("b", "m2")]
    assert (b["calls"], b["attempts"], b["failed_calls"], b["errors_SERVER"]) == (1, 1, 1, 1)
    assert b["input_tokens"] == 0 and b["cost"] is pd.NA and b["cache_hit_rate"] is pd.NA
    assert table["calls"].dtype == "int64" and table["input_tokens"].dtype == "Int64"


def test_summary_over_everything_equals_the_logs_running_totals() -> None:
    log = sample()
    overall = summary(log.to_frame(), by=[])
    assert list(overall.index) == ["all"]
    row = overall.iloc[0]
    totals = log.totals()
    for name in (
        "calls",
        "attempts",
        "errors",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "billed_input_tokens",
    ):
        assert row[name] == totals[name], name
    assert row["cache_hit_rate"] == pytest.approx(totals["cache_hit_rate"])
    assert row["cost"] == pytest.approx(totals["cost"])
    assert {k: row[f"errors_{k}"] for k in totals["errors_by_code"]} == totals["errors_by_code"]


def _varied_log() -> UsageLog:
    # retries, a failed call, priced and unpriced models, usage missing, lost and refused (invalid),
    # a cache count some rows report and others do not, a reasoning count nobody reports
    price = Price("a", "m1", cache_miss_input=1.0, cache_hit_input=0.5, output=2.0)
    log = UsageLog(prices=PriceTable([price]))
    u = TokenUsage
    rows: list[tuple[StreamResult, str, str, bool]] = [
        (result(error="RATE_LIMIT", ttfc=None), "a", "m1", False),
        (result(u(input_tokens=100, output_tokens=10, cache_read_tokens=40)), "a", "m1", True),
        (result(u(input_tokens=7, output_tokens=3)), "a", "m1", True),
        (result(u(input_tokens=5, output_tokens=1, cache_write_tokens=9)), "b", "m2", True),
        (result(error="SERVER"), "b", "m2", False),
        (result(error="SERVER"), "b", "m2", True),
        (result(u(input_tokens=-1, output_tokens=2)), "b", "m2", True),
        (result(), "a", "m1", True),
    ]
    for n, (res, provider, model, final) in enumerate(rows):
        log.record(res, provider=provider, model=model, call_id=str(n // 2), attempt=1 + n % 2, final=final)
    return log


@pytest.mark.filterwarnings("ignore::chunkscope.usage.UnpricedModelWarning")
@pytest.mark.parametrize("make", [_varied_log, UsageLog], ids=["varied", "empty"])
def test_totals_and_summary_agree_on_every_figure_they_share(make: Any) -> None:
    log = make()
    totals = log.totals()
    overall = summary(log.to_frame(), by=[])
    shared = [name for name in SUMMARY_COLUMNS if name in totals]
    assert {"calls", "retries", "failed_calls", "cache_write_tokens", "cost", "unpriced_attempts"} <= set(
        shared
    )
    if len(overall) == 0:  # an empty frame has no group: the totals are each figure's zero or unknown
        assert (totals["calls"], totals["cost"], totals["cache_hit_rate"]) == (0, None, None)
        return
    row = overall.iloc[0]
    for name in shared:
        expected = None if row[name] is pd.NA else row[name]
        assert totals[name] == (pytest.approx(expected) if isinstance(expected, float) else expected), name
    codes = {column[len("errors_") :]: row[column] for column in overall if column.startswith("errors_")}
    assert totals["errors_by_code"] == codes == {"RATE_LIMIT": 1, "SERVER": 2}
    assert (totals["reasoning_tokens"], totals["invalid_usage"], totals["unpriced_attempts"]) == (None, 1, 1)


def test_summary_of_a_frame_without_failures_has_no_error_code_columns() -> None:
    log = UsageLog()
    log.record(result(TokenUsage(input_tokens=1, output_tokens=1)), provider="p", model="m")
    table = summary(log.to_frame(), by="model")
    assert [c for c in table.columns if c.startswith("errors_")] == []
    assert table.loc["m", "errors"] == 0


def test_percentiles_are_their_own_function_for_other_engines_to_adapt() -> None:
    frame = sample().to_frame()
    p = latency_percentiles(frame, ["provider"])
    assert list(p.columns) == ["ttfc_p50_s", "ttfc_p95_s", "duration_p50_s", "duration_p95_s"]
    assert p.loc["b", "ttfc_p50_s"] == pytest.approx(0.3)


def test_expand_tags_gives_a_column_per_key_to_group_by() -> None:
    from chunkscope.usage import expand_tags

    log = UsageLog()
    for tags in ({"exp": "a", "user": "x"}, {"exp": "b"}, None, {"exp": "a"}):
        log.record(result(TokenUsage(input_tokens=1, output_tokens=1)), provider="p", model="m", tags=tags)
    frame = expand_tags(log.to_frame())
    assert frame["tag.exp"].astype(object).where(frame["tag.exp"].notna(), None).tolist() == [
        "a",
        "b",
        None,
        "a",
    ]
    assert frame["tag.user"].astype(object).where(frame["tag.user"].notna(), None).tolist() == [
        "x",
        None,
        None,
        None,
    ]
    table = summary(frame, by=["tag.exp"])
    assert table.loc["a", "calls"] == 2 and table.loc["b", "calls"] == 1
