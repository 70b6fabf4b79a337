"""Parquet round trips, the date-partitioned dataset (survives a killed process), DuckDB, recordings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from usage_helpers import text_chunks

from chunkscope.adapters import GenerateOptions, RecordingAdapter, ScriptedAdapter
from chunkscope.protocol import FinishReason, LlmError, StreamResult, Timings, TokenUsage, collect
from chunkscope.usage import COLUMNS, Price, PriceTable, UsageLog, read_parquet, read_recordings, to_parquet
from chunkscope.usage import summary as cs_summary

SRC = Path(__file__).resolve().parents[2] / "src"
DAY1 = 1_780_000_000.0  # 2026-05-28 UTC
DAY2 = DAY1 + 86_400


def varied_log(**kwargs: object) -> UsageLog:
    log = UsageLog(
        prices=PriceTable([Price("p", "m", cache_miss_input=1, cache_hit_input=0.1, output=2)]), **kwargs
    )  # type: ignore[arg-type]
    for i in range(6):
        usage = (
            TokenUsage(input_tokens=10 * i, output_tokens=i, cache_read_tokens=i or None) if i % 3 else None
        )
        log.record(
            StreamResult(
                usage=usage,
                finish=FinishReason(kind="stop") if i % 2 else None,
                error=None if i % 2 else LlmError("x", "SERVER"),
                timings=Timings(
                    first_chunk_s=0.1 * i or None, total_s=float(i), started_at=DAY1 if i < 4 else DAY2
                ),
            ),
            provider="p",
            model="m",
            tags={"i": str(i % 2)} if i % 2 else None,
            call_id=f"c{i // 2}",
            attempt=i % 2 + 1,
            final=bool(i % 2),
        )
    return log


def test_to_parquet_and_read_parquet_round_trip_values_and_dtypes(tmp_path: Path) -> None:
    frame = varied_log().to_frame()
    back = read_parquet(to_parquet(frame, tmp_path / "usage.parquet"))
    pd.testing.assert_frame_equal(back, frame)
    assert dict(back.dtypes) == dict(frame.dtypes)


def test_the_log_appends_to_a_dataset_partitioned_by_date(tmp_path: Path) -> None:
    log = varied_log(path=str(tmp_path / "ds"), flush_rows=4, flush_seconds=0)
    # 4 rows were flushed by count; 2 wait until flush()
    assert len(read_parquet(tmp_path / "ds")) == 4
    log.flush()
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == ["date=2026-05-28", "date=2026-05-29"]
    back = read_parquet(tmp_path / "ds").sort_values("started_at", kind="stable").reset_index(drop=True)
    frame = log.to_frame()
    assert list(back.columns) == list(COLUMNS)
    pd.testing.assert_frame_equal(back, frame, check_categorical=False)
    assert dict(back.dtypes).keys() == dict(frame.dtypes).keys()
    assert all(str(back[c].dtype) == str(frame[c].dtype) for c in COLUMNS if c not in ("tags", "currency"))


def test_duckdb_queries_the_dataset_as_it_is(tmp_path: Path) -> None:
    log = varied_log(path=str(tmp_path / "ds"), flush_rows=1)
    glob = str(tmp_path / "ds" / "**" / "*.parquet")
    rows = duckdb.sql(
        f"SELECT date, count(*) AS attempts, sum(output_tokens) AS output, count(input_tokens) AS reported "
        f"FROM read_parquet('{glob}', hive_partitioning = true) GROUP BY date ORDER BY date"
    ).fetchall()
    frame = log.to_frame()
    day = frame["started_at"].dt.strftime("%Y-%m-%d")
    expected = [
        (
            str(d),
            len(g),
            int(g["output_tokens"].sum()) if g["output_tokens"].notna().any() else None,
            int(g["input_tokens"].notna().sum()),
        )
        for d, g in frame.groupby(day)
    ]
    assert [(str(r[0]), r[1], r[2], r[3]) for r in rows] == expected


CHILD = """
import os, sys
sys.path.insert(0, {src!r})
from chunkscope.protocol import FinishReason, StreamResult, Timings, TokenUsage
from chunkscope.usage import UsageLog
log = UsageLog(path={path!r}, flush_rows={rows}, flush_seconds={seconds})
for i in range({n}):
    usage = TokenUsage(input_tokens=i, output_tokens=1)
    timings = Timings(started_at=1780000000.0)
    result = StreamResult(usage=usage, finish=FinishReason(kind="stop"), timings=timings)
    log.record(result, provider="p", model="m", call_id=str(i))
if {wait_timer}:
    log._sink._timer.join()  # the timer's flush has run
print("ready", flush=True)
sys.stdin.read()  # blocks until killed
"""


@pytest.mark.parametrize(
    ("rows", "seconds", "n", "wait_timer", "kept"),
    [(5, 0, 10, False, 10), (5, 0, 12, False, 10), (100, 0.05, 3, True, 3)],
    ids=["two-full-batches", "a-partial-batch-is-at-risk", "the-timer-flushes-a-quiet-log"],
)
def test_rows_flushed_before_the_process_is_killed_are_kept(
    tmp_path: Path, rows: int, seconds: float, n: int, wait_timer: bool, kept: int
) -> None:
    path = tmp_path / "ds"
    code = CHILD.format(src=str(SRC), path=str(path), rows=rows, seconds=seconds, n=n, wait_timer=wait_timer)
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        os.kill(child.pid, signal.SIGKILL)  # no atexit, no finally: the kernel just dies
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    frame = read_parquet(path)
    assert sorted(frame["call_id"].astype(int)) == list(range(kept))
    assert not list(path.rglob("*.tmp"))  # no half-written file is left visible


async def test_a_folder_of_recordings_loads_into_one_frame(tmp_path: Path) -> None:
    folder = tmp_path / "recordings"
    folder.mkdir()
    ok = ScriptedAdapter(text_chunks("yes", {"inputTokens": 7, "outputTokens": 2}))
    failing = ScriptedAdapter(text_chunks("no")[:2], error=LlmError("dropped", "TRANSPORT", status=None))
    for name, adapter, model in (("a-ok", ok, "m1"), ("b-fail", failing, "m2")):
        recorder = RecordingAdapter(adapter, folder / f"{name}.jsonl")
        await collect(recorder.stream(GenerateOptions("deepseek", model, [{"role": "user", "content": "x"}])))
    (folder / "notes.txt").write_text("not a recording", encoding="utf-8")
    frame = read_recordings(folder)
    assert frame["call_id"].tolist() == ["a-ok", "b-fail"]
    assert frame["model"].astype(str).tolist() == ["m1", "m2"]
    assert frame["provider"].astype(str).tolist() == ["deepseek", "deepseek"]
    assert frame["input_tokens"].tolist()[0] == 7 and frame["input_tokens"].isna().tolist()[1]
    assert frame["usage_source"].tolist() == ["reported", "lost"]
    assert frame["error_code"].astype(object).tolist()[1] == "TRANSPORT"
    assert frame["phase"].astype(object).tolist()[1] == "mid-stream"
    assert frame["started_at"].notna().all()
    assert list(frame.columns) == list(COLUMNS)


def test_the_documented_duckdb_query_runs_on_a_logs_dataset(tmp_path: Path) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "usage.md").read_text(encoding="utf-8")
    query = docs.split('duckdb.sql("""', 1)[1].split('""")', 1)[0]
    log = varied_log(path=str(tmp_path / "usage"), flush_rows=1)
    cwd = os.getcwd()
    os.chdir(tmp_path)  # the documented query names the folder relatively
    try:
        rows = duckdb.sql(query).fetchall()
    finally:
        os.chdir(cwd)
    frame = log.to_frame()
    assert sum(r[2] for r in rows) == len(frame)
    assert [str(r[0]) for r in rows] == ["2026-05-28", "2026-05-29"]
    assert sum(r[4] or 0 for r in rows) == pytest.approx(float(frame["cost"].sum()))


def decimal_log(**kwargs: object) -> UsageLog:
    """Priced in exact Decimals: rows of model m on two days (one cost needs 7 places, one 9
    digits before them), and an unpriced model x."""
    from decimal import Decimal

    rates = {"cache_miss_input": Decimal("1.1"), "cache_hit_input": Decimal("0.1"), "output": Decimal("2.2")}
    prices = PriceTable([Price("p", "m", **rates)], cost_type=Decimal)
    log = UsageLog(prices=prices, **kwargs)  # type: ignore[arg-type]
    for model, tokens, day in (("m", 1000, DAY1), ("m", 123_456_789, DAY2), ("x", 50, DAY2)):
        log.record(
            StreamResult(
                usage=TokenUsage(input_tokens=tokens, output_tokens=7),
                finish=FinishReason(kind="stop"),
                timings=Timings(total_s=1.0, started_at=day),
            ),
            provider="p",
            model=model,
        )
    return log


@pytest.mark.filterwarnings("ignore::chunkscope.usage.UnpricedModelWarning")
def test_decimal_costs_come_back_from_parquet_as_decimals_and_sum_exactly(tmp_path: Path) -> None:
    from decimal import Decimal

    frame = decimal_log().to_frame()
    exact = [Decimal("0.0011154"), Decimal("135.8024833"), None]
    assert [None if pd.isna(c) else c for c in frame["cost"]] == exact
    dataset = tmp_path / "usage"  # written by a log's own sink, a file per row (two days)
    with_sink = decimal_log(path=str(dataset), flush_rows=1)
    with_sink.close()
    for back in (read_parquet(to_parquet(frame, tmp_path / "one.parquet")), read_parquet(dataset)):
        costs = [None if pd.isna(c) else c for c in back["cost"]]
        assert costs == exact and all(type(c) is Decimal for c in costs if c is not None)
        total = cs_summary(back, by=[])["cost"].iloc[0]
        assert type(total) is Decimal and total == Decimal("135.8035987")
        by_model = cs_summary(back, by=["model"])["cost"]
        assert by_model["m"] == Decimal("135.8035987") and pd.isna(by_model["x"])  # unpriced: <NA>, not 0
    sql = f"SELECT sum(cost) FROM read_parquet('{dataset}/**/*.parquet', hive_partitioning = true)"
    assert duckdb.sql(sql).fetchall() == [(Decimal("135.8035987"),)]
