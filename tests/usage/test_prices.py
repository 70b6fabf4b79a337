"""PriceTable: costs by hand, a missing model (missing cost, one warning), TOML/JSON files."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

from chunkscope.protocol import FinishReason, StreamResult, TokenUsage
from chunkscope.usage import DEEPSEEK_EXAMPLE, Price, PriceTable, UnpricedModelWarning, UsageLog, summary

PRICES = (
    Price(
        "acme",
        "small",
        cache_miss_input=2.0,
        cache_hit_input=0.5,
        output=8.0,
        cache_write=3.0,
        currency="USD",
        effective="2026-01-01",
        source="test",
    ),
    Price("*", "any-provider", cache_miss_input=1.0, cache_hit_input=0.1, output=4.0, currency="EUR"),
)
TABLE = PriceTable(PRICES)  # read-only uses; a test that expects a warning builds its own (one per table)


def ok(**counts: int) -> StreamResult:
    return StreamResult(usage=TokenUsage(**counts), finish=FinishReason(kind="stop"))


def test_costs_by_hand_including_a_model_missing_from_the_table() -> None:
    log = UsageLog(prices=PriceTable(PRICES))
    # 1000 uncached * 2 + 4000 cache reads * 0.5 + 500 writes * 3 + 250 output * 8 = 7500 per million
    log.record(
        ok(input_tokens=1000, output_tokens=250, cache_read_tokens=4000, cache_write_tokens=500),
        provider="acme",
        model="small",
    )
    # no cache figures: 100 * 1 + 50 * 4 = 300 per million, in EUR, through the "*" provider
    log.record(ok(input_tokens=100, output_tokens=50), provider="other", model="any-provider")
    with pytest.warns(UnpricedModelWarning, match="'acme'.*'huge'") as caught:
        log.record(ok(input_tokens=10, output_tokens=10), provider="acme", model="huge")
        log.record(ok(input_tokens=10, output_tokens=10), provider="acme", model="huge")
        frame = log.to_frame()
    assert len([w for w in caught if issubclass(w.category, UnpricedModelWarning)]) == 1
    assert frame["cost"].dtype == "Float64"
    assert frame["cost"].iloc[0] == pytest.approx(7500 / 1e6)
    assert frame["cost"].iloc[1] == pytest.approx(300 / 1e6)
    assert frame["cost"].iloc[2] is pd.NA and frame["cost"].iloc[3] is pd.NA  # never a silent 0
    assert frame["currency"].astype(object).tolist()[:2] == ["USD", "EUR"]
    assert pd.isna(frame["currency"].iloc[2])
    totals = log.totals()
    assert totals["cost"] == pytest.approx(7800 / 1e6)
    assert totals["unpriced_attempts"] == 2


def test_an_attempt_without_usage_has_no_cost_and_warns_nothing() -> None:
    log = UsageLog(prices=PriceTable(PRICES))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log.record(StreamResult(), provider="acme", model="not-in-table")
        frame = log.to_frame()
    assert frame["cost"].iloc[0] is pd.NA


def test_cache_writes_cost_the_miss_price_when_the_table_has_no_write_price() -> None:
    price = Price("p", "m", cache_miss_input=2.0, cache_hit_input=1.0, output=0.0)
    assert price.cost(TokenUsage(input_tokens=0, output_tokens=0, cache_write_tokens=1_000_000)) == 2.0


def test_summary_cost_is_missing_for_a_group_with_no_priced_row() -> None:
    log = UsageLog(prices=PriceTable(PRICES))
    log.record(ok(input_tokens=1000, output_tokens=0), provider="acme", model="small")
    with pytest.warns(UnpricedModelWarning):
        log.record(ok(input_tokens=1000, output_tokens=0), provider="acme", model="huge")
        table = summary(log.to_frame())
    assert table.loc[("acme", "small"), "cost"] == pytest.approx(2000 / 1e6)
    assert table.loc[("acme", "huge"), "cost"] is pd.NA
    assert table.loc[("acme", "huge"), "unpriced_attempts"] == 1


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_table_saves_and_loads_with_its_currency_date_and_source(tmp_path: Path, suffix: str) -> None:
    path = TABLE.save(tmp_path / f"prices{suffix}")
    loaded = PriceTable.load(path)
    assert list(loaded) == list(TABLE)
    assert loaded.price("acme", "small") == TABLE.price("acme", "small")
    assert loaded.price("whoever", "any-provider").currency == "EUR"


def test_a_bad_price_file_names_itself(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("prices = 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.toml"):
        PriceTable.load(bad)
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.json"):
        PriceTable.load(broken)
    with pytest.raises(ValueError, match="must be a finite number"):
        Price("p", "m", cache_miss_input=-1.0, cache_hit_input=0.0, output=0.0)
    negative = tmp_path / "negative.toml"  # a well-formed file with one bad price: which file, which price
    rows = ['provider = "p"', 'model = "m"', "cache_miss_input = -1.0", "cache_hit_input = 0.1", "output = 2"]
    negative.write_text("[[prices]]\n" + "\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"negative\.toml: price cache_miss_input of p/m must be a finite"):
        PriceTable.load(negative)


def test_the_unpriced_model_warning_points_at_the_callers_line() -> None:
    """Wherever the package found the missing price (recording, costing a frame, a summary), the
    warning names the user's line, as ``warnings`` shows it, not chunkscope's own."""
    usage = StreamResult(usage=TokenUsage(input_tokens=1, output_tokens=1), finish=FinishReason(kind="stop"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnpricedModelWarning)
        log = UsageLog(prices=PriceTable([]))
        log.record(usage, provider="p", model="m")
        lines = [_line() - 1]
        frame = log.to_frame()
        PriceTable([]).add_costs(frame)
        lines.append(_line() - 1)
        summary(frame, prices=PriceTable([]))
        lines.append(_line() - 1)
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line) for line in lines]


def _line() -> int:
    """The caller's line number."""
    import sys

    return sys._getframe(1).f_lineno


def test_the_deepseek_example_is_dated_sourced_and_prices_a_cache_hit_call() -> None:
    table = PriceTable.deepseek_example()
    assert {p.model for p in DEEPSEEK_EXAMPLE} == {"deepseek-chat", "deepseek-reasoner"}
    for price in table:
        assert price.effective == "2025-02-08" and price.source.startswith("https://api-docs.deepseek.com/")
        assert price.currency == "USD"
    # the local provider's cache-hit scenario: 120 uncached, 7680 cached, 9 output
    cost = table.cost_of(
        "deepseek", "deepseek-chat", TokenUsage(input_tokens=120, output_tokens=9, cache_read_tokens=7680)
    )
    assert cost == pytest.approx((120 * 0.27 + 7680 * 0.07 + 9 * 1.10) / 1e6)
