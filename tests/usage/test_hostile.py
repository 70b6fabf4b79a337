"""Hostile input in the usage layer (issue 15 §3): whole rows, escaped text, dated prices, clear errors."""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

import chunkscope as cs
from chunkscope.protocol import FinishReason, LlmError, StreamResult, TextBlock, Timings, TokenUsage
from chunkscope.usage import MAX_PRICE, Price, PriceTable, UsageLog, read_parquet, summary

STOP = FinishReason(kind="stop")


def at(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


def result(
    usage: TokenUsage | None = None, *, started: float | None = 1.7e9, **fields: object
) -> StreamResult:
    return StreamResult(
        blocks=[TextBlock(text="x")],
        usage=usage,
        finish=STOP,
        timings=Timings(total_s=1.0, started_at=started),
        **fields,  # type: ignore[arg-type]
    )


def usage(**counts: int) -> TokenUsage:
    return TokenUsage(**{"input_tokens": 10, "output_tokens": 5, **counts})


# --- counts: whole rows, one rule for every out-of-range count -------------------------------


@pytest.mark.parametrize(
    "counts",
    [
        {"input_tokens": 2**63},
        {"output_tokens": 2**64 + 5},
        {"cache_read_tokens": 2**63},
        {"reasoning_tokens": -1},
        {"input_tokens": -(2**63)},  # the frame's own "absent" sentinel
        {"cache_write_tokens": -5},
    ],
)
def test_an_out_of_range_count_is_a_whole_row_marked_invalid_and_the_next_row_is_its_own(
    counts: dict[str, int],
) -> None:
    prices = PriceTable([Price("*", "m", cache_miss_input=1.0, cache_hit_input=1.0, output=1.0)])
    log = UsageLog(prices=prices)
    log.record(result(usage(**counts)), provider="bad", model="m", call_id="c-bad")
    log.record(result(usage()), provider="good", model="m", call_id="c-good")
    frame = log.to_frame()
    assert len(log) == 2 and len(frame) == 2
    bad, good = frame.iloc[0], frame.iloc[1]
    assert (bad["call_id"], bad["provider"], bad["usage_source"]) == ("c-bad", "bad", "invalid")
    for name in cs.usage.COLUMNS:
        if name.endswith("_tokens"):
            assert bad[name] is pd.NA, name  # no count of an invalid report is trusted
    assert bad["cost"] is pd.NA  # never a negative or overflowed cost
    assert (good["call_id"], good["provider"], good["usage_source"]) == ("c-good", "good", "reported")
    assert (good["input_tokens"], good["output_tokens"]) == (10, 5)
    assert good["cost"] == pytest.approx(15 / 1e6)
    # The running totals hold the good row only.
    totals = log.totals()
    assert (totals["attempts"], totals["input_tokens"], totals["cost"]) == (2, 10, pytest.approx(15 / 1e6))


def test_the_largest_int64_count_is_kept_and_priced_finitely() -> None:
    prices = PriceTable([Price("*", "m", cache_miss_input=MAX_PRICE, cache_hit_input=0.0, output=0.0)])
    log = UsageLog(prices=prices)
    log.record(result(usage(input_tokens=2**63 - 1)), provider="p", model="m")
    row = log.to_frame().iloc[0]
    assert row["input_tokens"] == 2**63 - 1 and row["usage_source"] == "reported"
    assert 0 < row["cost"] < float("inf")


@pytest.mark.parametrize(
    ("attempt", "error", "text"),
    [(2**63, ValueError, "attempt"), (0, ValueError, "attempt"), ("2", TypeError, "attempt")],
)
def test_a_bad_attempt_number_is_refused_before_any_column_is_touched(
    attempt: object, error: type[Exception], text: str
) -> None:
    log = UsageLog()
    with pytest.raises(error, match=text):
        log.record(result(usage()), provider="p", model="m", attempt=attempt)  # type: ignore[arg-type]
    log.record(result(usage()), provider="q", model="n", call_id="next")
    frame = log.to_frame()
    assert len(frame) == 1 and frame.iloc[0]["call_id"] == "next" and frame.iloc[0]["provider"] == "q"


def test_a_failing_append_cuts_every_column_back(monkeypatch: pytest.MonkeyPatch) -> None:
    log = UsageLog()
    log.record(result(usage()), provider="p", model="m", call_id="first")

    class Boom(list[str]):
        def append(self, value: str) -> None:
            raise MemoryError

    # The warnings column is appended last: every other column has taken the row by then.
    real = log._warnings
    monkeypatch.setattr(log, "_warnings", Boom())
    with pytest.raises(MemoryError):
        log.record(result(usage()), provider="p", model="m", call_id="second")
    monkeypatch.setattr(log, "_warnings", real)
    log.record(result(usage(input_tokens=3)), provider="p", model="m", call_id="third")
    frame = log.to_frame()
    assert list(frame["call_id"]) == ["first", "third"]
    assert list(frame["input_tokens"]) == [10, 3]


def test_an_unreal_start_time_reads_as_unknown() -> None:
    log = UsageLog()
    log.record(result(usage(), started=1e300), provider="p", model="m")
    log.record(result(usage(), started=float("inf")), provider="p", model="m")
    assert log.to_frame()["started_at"].isna().all()


# --- lone surrogates ------------------------------------------------------------------------


def surrogate_rows(log: UsageLog) -> None:
    log.record(result(usage()), provider="prov\ud800", model="m", call_id="c1")
    log.record(result(usage()), provider="p", model="mod\udfff", call_id="c2")
    log.record(result(usage()), provider="p", model="m", tags={"k\ud801": "v\ud802"}, call_id="c3")
    log.record(result(error=LlmError("x", "CODE\udc80")), provider="p", model="m", call_id="c4\ud83d")


def test_lone_surrogates_are_escaped_on_the_way_in_and_every_frame_still_builds(tmp_path: Path) -> None:
    log = UsageLog()
    surrogate_rows(log)
    for _ in range(8):
        log.record(result(usage()), provider="p", model="m")
    frame = log.to_frame()
    assert len(frame) == 12
    assert list(frame["provider"][:2]) == ["prov\\ud800", "p"]
    assert frame["model"][1] == "mod\\udfff"
    assert json.loads(frame["tags"][2]) == {"k\\ud801": "v\\ud802"}
    assert frame["error_code"][3] == "CODE\\udc80" and frame["call_id"][3] == "c4\\ud83d"
    # The escape is JSON's: reading it as a JSON string gives back the original text.
    assert json.loads(f'"{frame["provider"][0]}"') == "prov\ud800"
    back = read_parquet(log.to_parquet(str(tmp_path / "u.parquet")))
    assert list(back["provider"].astype(str)) == list(frame["provider"].astype(str))


def test_the_parquet_sink_writes_every_row_past_a_lone_surrogate(tmp_path: Path) -> None:
    log = UsageLog(path=str(tmp_path / "ds"), flush_rows=1, flush_seconds=0)
    surrogate_rows(log)
    for _ in range(8):
        log.record(result(usage()), provider="p", model="m")
    log.close()
    assert len(read_parquet(tmp_path / "ds")) == 12


# --- dated prices -----------------------------------------------------------------------------


def dated_table() -> PriceTable:
    return PriceTable(
        [
            Price("*", "m", cache_miss_input=1.0, cache_hit_input=0.0, output=0.0, effective="2024-01-01"),
            Price("*", "m", cache_miss_input=2.0, cache_hit_input=0.0, output=0.0, effective="2025-01-01"),
            Price("*", "m", cache_miss_input=3.0, cache_hit_input=0.0, output=0.0, effective="2025-07-01"),
        ]
    )


def test_each_row_is_costed_at_the_price_in_effect_when_it_started() -> None:
    table = dated_table()
    assert len(table) == 3  # no price is dropped
    log = UsageLog(prices=table)
    starts = [at("2023-06-01"), at("2024-06-01"), at("2025-01-01"), at("2025-03-01"), at("2026-01-01"), None]
    for started in starts:
        million = TokenUsage(input_tokens=1_000_000, output_tokens=0)
        log.record(result(million, started=started), provider="p", model="m")
    frame = log.to_frame()
    # before the oldest date: the oldest; from each date on: that price; unknown start: the newest
    assert list(frame["cost"]) == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    assert log.totals()["cost"] == pytest.approx(12.0)  # the live totals use the same rule
    assert list(table.add_costs(frame.assign(cost=pd.NA))["cost"]) == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]


def test_a_dated_history_survives_save_and_load(tmp_path: Path) -> None:
    for suffix in (".toml", ".json"):
        loaded = PriceTable.load(dated_table().save(tmp_path / f"prices{suffix}"))
        assert [p.effective for p in loaded] == ["2024-01-01", "2025-01-01", "2025-07-01"]
        assert loaded.price("p", "m", at=at("2025-02-01")).cache_miss_input == 2.0  # type: ignore[union-attr]


def test_the_same_date_twice_replaces_and_a_bad_date_is_refused() -> None:
    table = dated_table()
    table.add(Price("*", "m", cache_miss_input=9.0, cache_hit_input=0.0, output=0.0, effective="2025-01-01"))
    assert [p.cache_miss_input for p in table] == [1.0, 9.0, 3.0]
    with pytest.raises(ValueError, match=r"effective .* ISO date"):
        Price("*", "m", cache_miss_input=1.0, cache_hit_input=0.0, output=0.0, effective="last tuesday")


# --- price files ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1e308", "1e10", "-1", "NaN", "1" + "0" * 400])
def test_a_price_no_cost_can_be_computed_from_is_refused_at_load(tmp_path: Path, value: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(
        '{"prices": [{"provider": "*", "model": "m", "cache_miss_input": ' + value + ","
        ' "cache_hit_input": 0, "output": 0}]}',
        encoding="utf-8",
    )
    # NaN is no JSON value: the strict reader refuses it before the price check sees it
    in_range = r"cache_miss_input .* finite number from 0 to 1e\+09"
    expected = "NaN is not a JSON value" if value == "NaN" else in_range
    with pytest.raises(ValueError, match=expected):
        PriceTable.load(path)


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_a_price_file_nested_100k_deep_is_a_clear_error(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"deep{suffix}"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text(deep if suffix == ".json" else f"prices = {deep}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"deep.*not a price table.*nested too deeply"):
        PriceTable.load(path)


# --- summary(by=...) --------------------------------------------------------------------------


def small_frame() -> pd.DataFrame:
    log = UsageLog()
    log.record(result(usage(cache_read_tokens=30)), provider="p", model="a")
    log.record(result(usage()), provider="p", model="b")
    log.record(result(error=LlmError("x", "SERVER")), provider="p", model="b")
    return log.to_frame()


def test_summary_groups_by_a_timing_column_too() -> None:
    frame = small_frame()
    table = summary(frame, by=["ttfc_s"])
    assert table["attempts"].sum() == 3
    table = summary(frame, by="duration_s")
    assert list(table["attempts"]) == [3] and table["duration_p50_s"].iloc[0] == 1.0


@pytest.mark.parametrize(
    ("by", "error", "text"),
    [
        (["model", "model"], ValueError, "twice: 'model'"),
        (["nope"], ValueError, "no column of the frame: 'nope'"),
        ([3], TypeError, "by holds 3"),
        (5, TypeError, "by must be a column name"),
    ],
)
def test_summary_names_a_bad_by(by: object, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        summary(small_frame(), by=by)  # type: ignore[arg-type]


def test_an_unknown_cache_count_is_na_in_the_summary_not_zero() -> None:
    table = summary(small_frame(), by=["model"])
    assert table.loc["a", "cache_read_tokens"] == 30
    assert table.loc["a", "cache_hit_rate"] == pytest.approx(30 / 40)
    assert table.loc["b", "cache_read_tokens"] is pd.NA and table.loc["b", "cache_hit_rate"] is pd.NA
    assert table.loc["b", "input_tokens"] == 10  # the counts every report has still add up
    log = UsageLog()
    log.record(result(usage()), provider="p", model="b")
    assert log.totals()["cache_hit_rate"] is None  # the live summary: unknown too


def test_plot_usage_of_an_empty_frame_is_an_empty_figure() -> None:
    pytest.importorskip("matplotlib")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure = cs.plot_usage(UsageLog().to_frame())
    texts = [t.get_text() for ax in figure.axes for t in ax.texts]
    assert any("no attempt" in text for text in texts)


# --- read_parquet of another schema ------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "column", "text"),
    [
        (lambda f: f.assign(started_at=[1_700_000_000] * len(f)), "started_at", "should hold a time stamp"),
        (lambda f: f.assign(final=["yes"] * len(f)), "final", "should hold true/false, it holds str"),
        (lambda f: f.assign(input_tokens=["12"] * len(f)), "input_tokens", "should hold whole numbers"),
        (lambda f: f.assign(input_tokens=[1.5] * len(f)), "input_tokens", "should hold whole numbers"),
        (lambda f: f.assign(model=[3] * len(f)), "model", "should hold text"),
        (lambda f: f.assign(usage_source=["maybe"] * len(f)), "usage_source", "holds 'maybe', not one of"),
        (lambda f: f.drop(columns="cost"), "cost", "has no column 'cost'"),
    ],
)
def test_read_parquet_refuses_a_file_of_another_schema_naming_the_column(
    tmp_path: Path, change: object, column: str, text: str
) -> None:
    frame = small_frame()
    path = tmp_path / "other.parquet"
    change(frame).to_parquet(path, index=False)  # type: ignore[operator]
    with pytest.raises(cs.usage.UsageSchemaError, match=text) as caught:
        read_parquet(path)
    assert caught.value.column == column and "other.parquet: not a usage frame" in str(caught.value)
    if column != "cost":
        pytest.importorskip("dask")
        with pytest.raises(cs.usage.UsageSchemaError, match=text):
            read_parquet(path, dask=True).compute()


def test_read_parquet_still_reads_its_own_files_and_extra_columns(tmp_path: Path) -> None:
    own = small_frame()
    back = read_parquet(cs.to_parquet(own.assign(note="extra"), tmp_path / "own.parquet"))
    pd.testing.assert_frame_equal(back.drop(columns="note"), own, check_categorical=False)
    assert list(back["note"]) == ["extra"] * 3
