"""PriceTable.from_genai_prices(): the same cost as genai-prices' own calc_price, row by row and vectorised.

Over several providers and models, with cache reads and writes; dated prices (OpenAI's o3 price
cut of 2025-06-10), DeepSeek's daily time window and Gemini's input tiers honoured at each row's
start; unknown models unpriced with one warning; a private table overriding model by model;
exact Decimal sums over a million rows.
"""

from __future__ import annotations

import pickle
import sys
import warnings
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

genai_prices = pytest.importorskip("genai_prices")  # the "prices" extra (in "test")

import chunkscope as cs  # noqa: E402
from chunkscope.protocol import FinishReason, StreamResult, Timings, TokenUsage  # noqa: E402
from chunkscope.usage import Price, PriceTable, UnpricedModelWarning, UsageLog, summary  # noqa: E402

# (provider, model, start time, disjoint counts): dates either side of price changes, off-peak hours,
# a Gemini request above its 200k-token input tier
ROWS = [
    ("anthropic", "claude-sonnet-4-20250514", "2025-08-01T10:00:00", (1200, 300, 4000, 800)),
    ("anthropic", "claude-3-5-haiku-latest", "2025-03-01T10:00:00", (50, 20, 0, 7000)),
    ("openai", "gpt-4o", "2025-05-01T12:00:00", (900, 250, 12000, 0)),
    ("openai", "o3", "2025-05-01T12:00:00", (2000, 5000, 1000, 0)),  # before the 2025-06-10 cut
    ("openai", "o3", "2025-07-01T12:00:00", (2000, 5000, 1000, 0)),  # after it
    ("deepseek", "deepseek-chat", "2025-09-01T03:00:00", (3000, 400, 9000, 0)),  # standard hours
    ("deepseek", "deepseek-chat", "2025-09-01T20:00:00", (3000, 400, 9000, 0)),  # off-peak
    ("google", "gemini-2.5-pro", "2025-09-01T08:00:00", (1000, 100, 2000, 0)),
    ("google", "gemini-2.5-pro", "2025-09-01T08:00:00", (250_000, 100, 2000, 0)),  # above the tier
    ("mistral", "mistral-large-latest", "2025-09-01T08:00:00", (800, 120, 0, 0)),
]


def started(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def record_rows(log: UsageLog, rows: list[tuple[str, str, str, tuple[int, int, int, int]]]) -> None:
    for provider, model, start, (uncached, output, cache_read, cache_write) in rows:
        usage = TokenUsage(
            input_tokens=uncached,
            output_tokens=output,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
        )
        result = StreamResult(
            usage=usage,
            finish=FinishReason(kind="stop"),
            timings=Timings(started_at=started(start), total_s=1.0),
        )
        log.record(result, provider=provider, model=model)


def their_price(provider: str, model: str, start: str, counts: tuple[int, int, int, int]) -> Decimal:
    """genai-prices' own calculation, its usage written in its (inclusive) convention by hand."""
    uncached, output, cache_read, cache_write = counts
    usage = genai_prices.Usage(
        input_tokens=uncached + cache_read + cache_write,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        output_tokens=output,
    )
    moment = datetime.fromisoformat(start).replace(tzinfo=UTC)
    calc = genai_prices.calc_price(usage, model, provider_id=provider, genai_request_timestamp=moment)
    return Decimal(calc.total_price)


def test_costs_equal_genai_prices_own_calculation_float_and_decimal() -> None:
    log = UsageLog(prices="genai-prices")
    record_rows(log, ROWS)
    frame = log.to_frame()
    expected = [their_price(p, m, s, c) for p, m, s, c in ROWS]
    assert len(set(expected)) >= 8  # the rows really are priced differently
    assert frame["cost"].dtype == "Float64"
    for got, want in zip(frame["cost"].tolist(), expected, strict=True):
        assert got == pytest.approx(float(want), rel=1e-12)
    exact = PriceTable.from_genai_prices(cost_type=Decimal).add_costs(frame)["cost"].tolist()
    assert exact == expected  # Decimal: to the last digit
    # the running totals of the log (priced per attempt) agree with the frame
    assert log.totals()["cost"] == pytest.approx(float(sum(expected)), rel=1e-12)
    assert set(frame["currency"].astype(str)) == {"USD"}


def test_price_source_and_date_follow_the_price_in_effect_at_each_row_start() -> None:
    log = UsageLog(prices="genai-prices")
    record_rows(log, ROWS)
    frame = log.to_frame()
    version = genai_prices.__version__
    o3 = frame[frame["model"] == "o3"]
    assert o3["cost"].iloc[0] > o3["cost"].iloc[1]  # the price cut mid-dataset is honoured
    assert o3["price_effective"].astype(str).tolist() == ["", "2025-06-10"]
    assert set(o3["price_source"].astype(str)) == {f"genai-prices {version} openai/o3"}
    deepseek = frame[frame["model"] == "deepseek-chat"]
    assert deepseek["cost"].iloc[0] == pytest.approx(2 * deepseek["cost"].iloc[1])  # off-peak: half
    assert "UTC" in str(deepseek["price_source"].iloc[0])  # the daily window is named
    gemini = frame[frame["model"] == "gemini-2.5-pro"]
    per_token = gemini["cost"] / (gemini["billed_input_tokens"])
    assert per_token.iloc[1] > per_token.iloc[0]  # the tier above 200k input tokens


def test_an_unknown_model_has_no_cost_and_one_warning_naming_it() -> None:
    table = PriceTable.from_genai_prices()
    log = UsageLog(prices=table)
    rows = [("acme", "no-such-model-xyz", "2025-09-01T08:00:00", (10, 5, 0, 0))] * 3 + ROWS[:1]
    with pytest.warns(UnpricedModelWarning, match="no-such-model-xyz") as caught:
        record_rows(log, rows)
        frame = log.to_frame()
    assert len([w for w in caught if issubclass(w.category, UnpricedModelWarning)]) == 1
    assert frame["cost"].isna().tolist() == [True, True, True, False]
    assert frame["price_source"].isna().tolist() == [True, True, True, False]


def test_a_private_table_overrides_genai_prices_model_by_model() -> None:
    mine = PriceTable(
        [Price("openai", "gpt-4o", cache_miss_input=1.0, cache_hit_input=0.5, output=2.0, source="ours")]
    )
    for table in (PriceTable.from_genai_prices(overrides=mine), mine | PriceTable.from_genai_prices()):
        log = UsageLog(prices=table)
        record_rows(log, ROWS)
        frame = log.to_frame().set_index("model")
        # 900 * 1 + 12000 * 0.5 + 250 * 2 = 7400 per million
        assert frame.loc["gpt-4o", "cost"] == pytest.approx(7400 / 1e6)
        assert frame.loc["gpt-4o", "price_source"] == "ours"
        want = their_price(*ROWS[0])
        assert frame.loc["claude-sonnet-4-20250514", "cost"] == pytest.approx(float(want), rel=1e-12)


def test_decimal_costs_do_not_drift_over_a_million_rows_and_float_stays_in_its_bound() -> None:
    log = UsageLog()
    record_rows(log, [ROWS[0]])
    one = log.to_frame()
    n = 1_000_000
    many = one.loc[one.index.repeat(n)].reset_index(drop=True)
    exact = PriceTable.from_genai_prices(cost_type=Decimal).add_costs(many)["cost"]
    cost = exact.iloc[0]
    assert isinstance(cost, Decimal)
    assert sum(exact) == n * cost  # not one digit lost
    floats = PriceTable.from_genai_prices().add_costs(many)["cost"].sum()
    # the documented bound (docs/usage.md): relative error at most (n + 4) * 2**-53
    assert abs(Decimal(floats) - n * cost) <= (n + 4) * Decimal(2) ** -53 * n * cost


def test_decimal_prices_in_and_the_table_pickles() -> None:
    table = PriceTable(
        [
            Price(
                "*",
                "m",
                cache_miss_input=Decimal("0.1"),
                cache_hit_input=Decimal("0.01"),
                output=Decimal("0.3"),
            )
        ],
        cost_type=Decimal,
    )
    usage = TokenUsage(input_tokens=3, output_tokens=7, cache_read_tokens=11)
    assert table.cost_of("p", "m", usage) == Decimal("2.51") / 1_000_000
    genai = pickle.loads(pickle.dumps(PriceTable.from_genai_prices(overrides=table, cost_type=Decimal)))
    assert genai.cost_type is Decimal and len(genai) == 1
    assert genai.cost_of("openai", "gpt-4o", usage, at=started("2025-05-01T00:00:00")) == their_price(
        "openai", "gpt-4o", "2025-05-01T00:00:00", (3, 7, 11, 0)
    )
    with pytest.raises(ValueError, match="finite number"):
        Price("*", "m", cache_miss_input=Decimal("NaN"), cache_hit_input=0, output=0)
    with pytest.raises(ValueError, match="cost_type"):
        PriceTable(cost_type=int)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="genai-prices"):
        UsageLog(prices="genai")  # a typo is an error, not an unpriced log


def test_summary_takes_prices_by_name() -> None:
    log = UsageLog()
    record_rows(log, ROWS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every model of ROWS is known: no warning
        table = summary(log.to_frame(), by="provider", prices="genai-prices")
    expected = pd.Series([float(their_price(*row)) for row in ROWS], index=[row[0] for row in ROWS])
    for provider, cost in expected.groupby(level=0).sum().items():
        assert table.loc[provider, "cost"] == pytest.approx(cost, rel=1e-12)


def test_the_docs_example_runs() -> None:
    from usage_helpers import doc_examples

    [example] = doc_examples("Prices from genai-prices")
    usage = TokenUsage(input_tokens=100, output_tokens=20, cache_read_tokens=900)
    result = StreamResult(
        usage=usage,
        finish=FinishReason(kind="stop"),
        timings=Timings(started_at=started("2025-05-01"), total_s=1),
    )
    namespace = {"cs": cs, "result": result}
    exec(compile(example, "docs/usage.md", "exec"), namespace)
    assert namespace["frame"]["cost"].iloc[0] == pytest.approx(
        float(their_price("openai", "gpt-4o", "2025-05-01T00:00:00", (100, 20, 900, 0))), rel=1e-12
    )
    assert namespace["table"].loc["gpt-4o", "calls"] == 1


def test_a_frame_stored_before_the_price_columns_still_reads(tmp_path: Path) -> None:
    log = UsageLog(prices="genai-prices")
    record_rows(log, ROWS[:2])
    old = log.to_frame().drop(columns=["price_source", "price_effective"])  # as stored before issue 18
    old.to_parquet(tmp_path / "old.parquet")
    frame = cs.read_parquet(str(tmp_path / "old.parquet"))
    assert list(frame.columns) == list(cs.usage.COLUMNS)
    assert frame["price_source"].isna().all() and frame["cost"].notna().all()


def test_without_the_prices_extra_one_line_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from chunkscope._extras import MissingExtraError

    monkeypatch.setitem(sys.modules, "genai_prices", None)  # as if not installed
    with pytest.raises(MissingExtraError, match=r'the "prices" extra .*chunkscope\[prices\]'):
        PriceTable.from_genai_prices()
