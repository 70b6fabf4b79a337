"""Session logs as usage frames (one row per attempt), many logs at once, and Dask on a LocalCluster."""

from __future__ import annotations

import math
import pickle
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from chunkscope.usage import (
    COLUMNS,
    DshLogWriter,
    Price,
    PriceTable,
    read_dsh_session,
    read_dsh_sessions,
    read_parquet,
    summary,
    to_parquet,
)
from dsh_examples import EXAMPLE_5A, EXAMPLE_5B_AND_RETRY, write, write_session

PRICES = PriceTable(
    [
        Price(
            "deepseek-official",
            "deepseek-v4-flash",
            cache_miss_input=0.28,
            cache_hit_input=0.028,
            output=0.42,
        ),
        Price("deepseek-official", "deepseek-v4-pro", cache_miss_input=0.5, cache_hit_input=0.05, output=2.0),
    ]
)


def test_session_frame_has_one_row_per_attempt_with_values_and_dtypes(tmp_path: Path) -> None:
    session = read_dsh_session(write(tmp_path / "session.jsonl", EXAMPLE_5A + EXAMPLE_5B_AND_RETRY))
    frame = session.to_frame(prices=PRICES)

    assert list(frame.columns) == [*COLUMNS, "session_id", "turn", "step", "kind", "synthesized"]
    for name, dtype in COLUMNS.items():
        if not isinstance(dtype, pd.CategoricalDtype):
            assert frame[name].dtype == dtype, name
    assert frame["call_id"].tolist() == ["sess-123:1:1", "sess-123:2:1", "sess-123:2:1"]
    assert frame["attempt"].tolist() == [1, 1, 2]
    assert frame["final"].tolist() == [True, False, True]
    assert frame["retried"].tolist() == [False, True, False]
    assert frame["finish"].astype(str).tolist() == ["stop", "error", "stop"]
    assert frame["error_code"].tolist()[1] == "TRANSPORT" and frame["error_code"].isna().tolist() == [
        True,
        False,
        True,
    ]
    assert frame["phase"].astype(object).tolist()[1] == "at-finish"
    assert frame["usage_source"].astype(str).tolist() == ["reported", "lost", "reported"]
    assert frame["input_tokens"].tolist()[0] == 120 and frame["input_tokens"].isna().tolist() == [
        False,
        True,
        False,
    ]
    assert frame["cache_read_tokens"].tolist()[0] == 7680
    assert frame["reasoning_tokens"].tolist()[0] == 4
    assert frame["billed_input_tokens"].tolist()[0] == 7800
    assert frame["cache_hit_rate"].tolist()[0] == pytest.approx(7680 / 7800)
    assert frame["started_at"].tolist()[0] == pd.Timestamp(1784973850002, unit="ms", tz="UTC")
    assert frame["started_at"].tolist()[2] == pd.Timestamp(1784973855534, unit="ms", tz="UTC")
    assert frame["ttfc_s"].tolist()[0] == pytest.approx(0.198)
    assert frame["duration_s"].tolist()[0] == pytest.approx(0.328)
    assert frame["chunks"].tolist() == [11, 3, 7]
    assert frame["violations"].tolist() == [0, 0, 0]
    # cost by hand: 120 * 0.28 + 7680 * 0.028 + 9 * 0.42 per million; 30 * 0.28 + 3 * 0.42 per million
    assert frame["cost"].tolist()[0] == pytest.approx((120 * 0.28 + 7680 * 0.028 + 9 * 0.42) / 1e6)
    assert frame["cost"].isna().tolist() == [False, True, False]
    assert frame["cost"].tolist()[2] == pytest.approx((30 * 0.28 + 3 * 0.42) / 1e6)
    assert frame["session_id"].astype(str).tolist() == ["sess-123"] * 3
    assert frame["turn"].tolist() == [1, 2, 2] and frame["step"].tolist() == [1, 1, 1]
    assert frame["kind"].astype(str).tolist() == ["step"] * 3
    assert frame["synthesized"].tolist() == [False, False, False]


def test_untimed_log_gives_missing_times_not_zero(tmp_path: Path) -> None:
    frame = read_dsh_session(write_session(tmp_path / "s.jsonl", timed=False)).to_frame()
    assert frame["started_at"].isna().all()
    assert frame["ttfc_s"].isna().all()
    assert all(math.isnan(value) for value in frame["duration_s"])
    assert frame["output_tokens_per_s"].isna().all()


def _sessions(root: Path, count: int) -> list[Path]:
    paths = []
    for n in range(count):
        folder = root / "--home-dev-demo--" / f"session-{n}"
        folder.mkdir(parents=True)
        compress = n % 2 == 1
        path = folder / ("session.jsonl.zstd" if compress else "session.jsonl")
        with DshLogWriter(
            path, session_id=f"s{n}", compress=compress, start_ms=1_784_973_850_000 + n * 86_400_000
        ) as log:
            for turn in range(1, n + 2):
                log.turn_start(turn)
                failed = [_failed("RATE_LIMIT" if turn % 2 else "SERVER")] * (turn % 3)
                log.step(
                    turn,
                    1,
                    _answer(turn, n),
                    failed=failed,
                    model="deepseek-v4-pro" if turn % 2 else "deepseek-v4-flash",
                )
                log.turn_end(turn)
        paths.append(path)
    return paths


def _answer(turn: int, n: int) -> list[dict[str, Any]]:
    words = [f"w{k}" for k in range(turn + 3)]
    return [
        {"type": "block-start", "index": 0, "blockType": "text"},
        *({"type": "text-delta", "index": 0, "text": word} for word in words),
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "".join(words)}},
        {
            "type": "usage",
            "usage": {"inputTokens": 100 * turn + n, "outputTokens": turn + 3, "cacheReadTokens": 64 * n},
        },
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


def _failed(code: str) -> list[dict[str, Any]]:
    return [
        {"type": "finish", "reason": {"kind": "error", "failure": {"message": code.lower(), "code": code}}}
    ]


def test_read_dsh_sessions_concatenates_every_log_under_a_folder_or_glob(tmp_path: Path) -> None:
    paths = _sessions(tmp_path, 3)
    frame = read_dsh_sessions(tmp_path)
    expected = pd.concat([read_dsh_session(p).to_frame() for p in sorted(map(str, paths))], ignore_index=True)
    assert frame["call_id"].tolist() == expected["call_id"].tolist()
    assert frame["session_id"].astype(str).tolist() == expected["session_id"].astype(str).tolist()
    assert frame["input_tokens"].tolist() == expected["input_tokens"].tolist()
    assert len(frame) == sum(1 + (t % 3) for n in range(3) for t in range(1, n + 2))
    assert frame["provider"].dtype == "category" and frame["session_id"].dtype == "category"
    glob_frame = read_dsh_sessions(str(tmp_path / "**" / "session.jsonl*"))
    assert glob_frame["call_id"].tolist() == frame["call_id"].tolist()
    with pytest.raises(FileNotFoundError):
        read_dsh_sessions(tmp_path / "nothing-*.jsonl")


# --- Dask on a LocalCluster -------------------------------------------------------------------------


def by_value(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` sorted by its index values as text: a categorical index sorts by category order,
    which differs between a pandas concat and Dask's union of partition categories."""
    out = table.copy()
    if isinstance(out.index, pd.MultiIndex):
        out.index = pd.MultiIndex.from_arrays(
            [out.index.get_level_values(n).astype(str) for n in range(out.index.nlevels)],
            names=out.index.names,
        )
    else:
        out.index = pd.Index(out.index.astype(str), name=out.index.name)
    return out.sort_index()


@pytest.fixture(scope="module")
def dask_client() -> Iterator[Any]:
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=2,
            processes=False,  # in-process workers (inproc:// comms); the two HTTP servers on loopback
            dashboard_address="127.0.0.1:0",
            worker_dashboard_address="127.0.0.1:0",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_dask_summary_of_session_logs_equals_the_pandas_summary(tmp_path: Path, dask_client: Any) -> None:
    paths = _sessions(tmp_path, 4)
    pandas_frame = read_dsh_sessions(tmp_path, prices=PRICES)
    dask_frame = read_dsh_sessions(tmp_path, prices=PRICES, dask=True)

    assert dask_frame.npartitions == len(paths)  # one partition per file
    for by in (["provider", "model"], ["session_id"], []):
        expected = summary(pandas_frame, by=by)
        got = summary(dask_frame, by=by)
        pd.testing.assert_frame_equal(by_value(got), by_value(expected))
    overall = summary(dask_frame, by=[])
    assert overall.loc["all", "calls"] == sum(range(1, 5)) and overall.loc["all", "errors"] > 0
    assert overall.loc["all", "cost"] > 0


def test_cost_function_runs_unchanged_on_dask_partitions(tmp_path: Path, dask_client: Any) -> None:
    _sessions(tmp_path, 3)
    table = PriceTable([PRICES.price("deepseek-official", "deepseek-v4-pro")])  # flash is unpriced
    pandas_frame = read_dsh_sessions(tmp_path)
    dask_frame = read_dsh_sessions(tmp_path, dask=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = table.add_costs(pandas_frame)
        lazy = table.add_costs(dask_frame)  # the same call, on a Dask frame: one task per partition
        assert lazy.npartitions == dask_frame.npartitions
        got = lazy.compute()
    pd.testing.assert_series_equal(got["cost"].reset_index(drop=True), expected["cost"], check_names=True)
    assert expected["cost"].isna().any() and expected["cost"].notna().any()
    pd.testing.assert_frame_equal(by_value(summary(got)), by_value(summary(expected)))
    shipped = pickle.loads(pickle.dumps(table))  # what a process worker receives
    assert shipped.price("deepseek-official", "deepseek-v4-pro") == table.price(
        "deepseek-official", "deepseek-v4-pro"
    )


def test_read_parquet_dask_mode_reads_one_partition_per_file_with_the_pandas_summary(
    tmp_path: Path, dask_client: Any
) -> None:
    paths = _sessions(tmp_path / "logs", 3)
    store = tmp_path / "usage"
    store.mkdir()
    for n, path in enumerate(paths):
        to_parquet(read_dsh_session(path).to_frame(prices=PRICES), store / f"part-{n}.parquet")

    pandas_frame = read_parquet(store)
    dask_frame = read_parquet(store, dask=True)

    assert dask_frame.npartitions == 3
    pd.testing.assert_frame_equal(by_value(summary(dask_frame)), by_value(summary(pandas_frame)))
    assert len(dask_frame.compute()) == len(pandas_frame)
