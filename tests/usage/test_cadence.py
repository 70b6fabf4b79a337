"""Stream cadence: the usage frame's gap columns and ``cs.cadence`` (issue 27).

The gaps are checked against scripted timings: the local provider's ``slow-tokens`` (50 ms
between events) and ``stall-recovers-<MS>`` (one pause mid-stream, at the chunk carrying
`` the``), a hand-made ``Timings``, and a DeepSeek Harness session log whose ``dt`` says a gap.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest

import chunkscope as cs
from chunkscope.adapters import GenerateOptions, OpenAICompatAdapter
from chunkscope.notebook.timeline._state import state_from_result
from chunkscope.notebook.timeline._static_html import format_ms, render_fragment
from chunkscope.protocol import StreamResult, Timings, collect
from chunkscope.sources.dsh import DshLogWriter
from chunkscope.tap import Tap
from chunkscope.usage import CADENCE_COLUMNS, GAP_COLUMNS, STALL_COLUMNS, UsageLog, UsageSchemaError

API_KEY = "sk-cadence-test-SECRET-27"
PAUSE_MS = 300  # short, to stay fast; far past slow-tokens' 50 ms and the 0.1 s stall floor
SLACK = 0.025  # seconds: a read stamped late on a loaded 2-core machine shortens the gap after it
STALLING = f"stall-recovers-{PAUSE_MS}"
GAPS = ["max_gap_s", "max_gap_at", "p50_gap_s", "p99_gap_s"]


def chunks(n: int) -> list[dict[str, Any]]:
    return [{"type": "block-start", "index": 0, "blockType": "text"}] + [
        {"type": "text-delta", "index": 0, "text": f"t{k}"} for k in range(n - 1)
    ]


def timed(times: list[float]) -> StreamResult:
    return StreamResult(chunks=chunks(len(times)), timings=Timings.of_arrivals(times, total_s=times[-1]))


def first_text(result: Any, text: str) -> int:
    """The index of the first chunk that is a text delta carrying ``text``."""
    return next(
        n
        for n, chunk in enumerate(result.chunks)
        if getattr(chunk, "type", None) == "text-delta" and chunk.text == text
    )


# --- the gap columns -------------------------------------------------------------------


def test_the_gap_columns_sit_beside_the_first_chunk_columns() -> None:
    columns = list(UsageLog().to_frame().columns)
    assert tuple(GAP_COLUMNS) == tuple(GAPS)
    assert columns[columns.index("first_text_s") + 1 : columns.index("duration_s")] == GAPS
    dtypes = [str(UsageLog().to_frame()[name].dtype) for name in GAPS]
    assert dtypes == ["Float64", "Int64", "Float64", "Float64"]


def test_the_gap_columns_of_scripted_times() -> None:
    times = [0.5, 0.51, 0.53, 1.73, 1.74, 1.76]  # gaps .01 .02 1.2 .01 .02: the largest before chunk 3
    log = UsageLog()
    log.record(timed(times), provider="p", model="m")
    row = log.to_frame().iloc[0]
    gaps = np.diff(times)
    assert row["ttfc_s"] == 0.5  # the wait for the first chunk is not a gap
    assert row["max_gap_s"] == pytest.approx(1.2)
    assert row["max_gap_at"] == 3
    assert row["p50_gap_s"] == pytest.approx(float(np.quantile(gaps, 0.5)))
    assert row["p99_gap_s"] == pytest.approx(float(np.quantile(gaps, 0.99)))


def test_unknown_timing_is_na_never_zero() -> None:
    log = UsageLog()
    log.record(StreamResult(chunks=chunks(5)), provider="p", model="untimed")  # no arrival times kept
    log.record(timed([0.25]), provider="p", model="one chunk")  # no gap between chunks
    log.record(StreamResult(), provider="p", model="nothing")
    times = timed([0.1, 0.2, 0.3])
    times.timings.chunk_times = [0.1, float("nan"), 0.3]
    log.record(times, provider="p", model="a time lost")
    frame = log.to_frame()
    for name in GAPS:
        assert frame[name].isna().all(), frame[name]
    report = cs.cadence(frame)
    assert report.models["gaps"].tolist() == [0, 0, 0, 0]
    assert report.models["suggested_timeout_s"].isna().all()
    assert report.suggested_timeout_s is None and len(report.stalls) == 0


def test_a_windowed_stream_keeps_its_gaps_at_their_chunk_numbers_and_its_row_says_unknown() -> None:
    # the tap's endless call keeps its latest chunks only: 1,000 dropped, then a stall in the kept
    kept = timed([10.0, 10.01, 10.02, 12.02, 12.03])
    kept.chunks_dropped = 1_000
    log = UsageLog()
    log.record(kept, provider="p", model="m", call_id="endless")
    row = log.to_frame().iloc[0]
    assert row["chunks"] == 1_005
    for name in GAPS:  # a larger gap may have been among the dropped: not known, never the window's
        assert pd.isna(row[name]), (name, row[name])
    call = SimpleNamespace(id=7, wire="openai", model="m", result=kept, chunk_times=kept.timings.chunk_times)
    report = cs.cadence([call])  # a TapCall's shape
    assert report.gaps["chunk"].tolist() == [1_001, 1_002, 1_003, 1_004]
    [stall] = report.stalls.itertuples(index=False)
    assert stall.chunk == 1_003 and stall.gap_s == pytest.approx(2.0)


def test_a_frame_stored_before_the_gap_columns_reads_them_na(tmp_path: Path) -> None:
    log = UsageLog()
    log.record(timed([0.1, 0.2, 0.4]), provider="p", model="m")
    old = log.to_frame().drop(columns=GAPS)
    old.to_parquet(tmp_path / "old.parquet")
    frame = cs.read_parquet(tmp_path / "old.parquet")
    assert list(frame.columns) == list(UsageLog().to_frame().columns)
    assert frame[GAPS].isna().all().all()
    with pytest.raises(UsageSchemaError, match="max_gap_s") as caught:
        cs.cadence(old)
    assert caught.value.column == "max_gap_s"


async def stream_local(provider: cs.LocalProvider, log: UsageLog, model: str) -> StreamResult:
    options = GenerateOptions("deepseek", model, [{"role": "user", "content": "hi"}])
    async with OpenAICompatAdapter(provider.base_url, API_KEY, idle_timeout=20.0) as adapter:
        return await collect(adapter.stream(options), log=log, provider="deepseek", model=model)


async def test_the_gap_columns_agree_with_the_timeline(provider: cs.LocalProvider) -> None:
    log = UsageLog()
    results = [await stream_local(provider, log, model) for model in ("slow-tokens", STALLING)]
    frame = log.to_frame()
    for n, result in enumerate(results):
        shown = render_fragment(state_from_result(result))
        match = re.search(r"max gap <b>([^<]+)</b> before chunk (\d+)", shown)
        assert match is not None, shown
        row = frame.iloc[n]
        assert row["max_gap_at"] == int(match.group(2))
        assert format_ms(row["max_gap_s"] * 1000) == match.group(1)
    stalled = frame.iloc[1]
    assert stalled["max_gap_at"] == first_text(results[1], " the")  # where the script pauses
    assert PAUSE_MS / 1000 - SLACK <= stalled["max_gap_s"] < PAUSE_MS / 1000 + 0.25
    slow = frame.iloc[0]
    assert 0.04 <= slow["p99_gap_s"] < 0.3  # 50 ms between events


# --- cadence ---------------------------------------------------------------------------


def tap_batch(tap: Tap) -> None:
    """Three slow-tokens calls and two stalling calls through the tap, every one waited for."""
    for model in ["slow-tokens", STALLING, "slow-tokens", STALLING, "slow-tokens"]:
        body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        auth = {"authorization": f"Bearer {API_KEY}"}
        httpx.post(f"{tap.base_url}/v1/chat/completions", json=body, headers=auth)
    for call in tap.calls:
        assert call.wait(10) and call.result is not None and call.result.ok


def check_stalls(report: cs.usage.Cadence, calls: list[Any], call_ids: list[str]) -> None:
    """Exactly the stalling calls stall, each once, at the chunk carrying `` the``."""
    stalls = report.stalls
    assert list(stalls.columns) == list(STALL_COLUMNS)
    assert set(stalls["model"]) == {STALLING}
    expected = {
        (call_id, first_text(call.result, " the"))
        for call, call_id in zip(calls, call_ids, strict=True)
        if call.model == STALLING
    }
    assert set(zip(stalls["call_id"], stalls["chunk"], strict=True)) == expected
    assert (stalls["gap_s"] >= PAUSE_MS / 1000 - SLACK).all()
    models = report.models.set_index("model")
    assert models.loc[STALLING, "stalls"] == 2 and models.loc["slow-tokens", "stalls"] == 0
    # never below the longest gap seen, in whole seconds
    for model in ("slow-tokens", STALLING):
        timeout = models.loc[model, "suggested_timeout_s"]
        assert timeout > models.loc[model, "max_gap_s"] and timeout == int(timeout)
        assert timeout >= 3 * models.loc[model, "p999_gap_s"]


def test_cadence_of_a_taps_calls_and_of_its_recordings(provider: cs.LocalProvider, tmp_path: Path) -> None:
    with Tap(upstream=provider.url, record=tmp_path / "rec") as tap:
        tap_batch(tap)
        calls = list(tap.calls)
        from_tap = cs.cadence(tap)
        assert cs.cadence(calls).stalls.equals(from_tap.stalls)
    assert from_tap.basis == "every gap"
    assert list(from_tap.models.columns) == list(CADENCE_COLUMNS)
    slow = from_tap.models.set_index("model").loc["slow-tokens"]
    assert slow["gaps"] == sum(len(c.result.chunks) - 1 for c in calls if c.model == "slow-tokens")
    assert 0.04 <= slow["p90_gap_s"] < 0.3
    check_stalls(from_tap, calls, [str(call.id) for call in calls])
    # the recordings, by their recorded times: the same stalls, named by file
    recordings = sorted((tmp_path / "rec").glob("*.jsonl"))
    assert len(recordings) == 5
    from_files = cs.cadence(tmp_path / "rec")
    check_stalls(from_files, calls, [path.stem for path in recordings])
    one = cs.cadence(recordings[1])
    assert one.models["attempts"].tolist() == [1]
    # their usage frame: each attempt's largest gap, the stalls at the same chunks
    from_frame = cs.cadence(cs.read_recordings(tmp_path / "rec"))
    assert from_frame.basis == "each attempt's largest gap"
    check_stalls(from_frame, calls, [path.stem for path in recordings])


def test_cadence_of_a_session_log_keeping_dt(tmp_path: Path) -> None:
    stream = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        *({"type": "text-delta", "index": 0, "text": t} for t in "abcdef"),
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "abcdef"}},
        {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 6}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    path = tmp_path / "session.jsonl"
    with DshLogWriter(path) as log:
        for step in (1, 2, 3):
            log.turn_start(step)
            log.step(step, 1, stream)
            log.turn_end(step)
    text = path.read_text(encoding="utf-8")
    packed = re.compile(r'"dt":\s?\[13,\s?13,\s?13,\s?13,\s?13\]')
    assert len(packed.findall(text)) == 3
    path.write_text(packed.sub('"dt":[13,13,2000,13,13]', text, count=1), encoding="utf-8")  # "d" waits 2 s
    report = cs.cadence(path)
    assert report.models["attempts"].tolist() == [3]
    [stall] = report.stalls.to_dict("records")
    session = cs.read_dsh_session(path)
    assert stall["call_id"] == session.attempts[0].call_id
    assert session.attempts[0].result.chunks[stall["chunk"]].text == "d"
    assert stall["gap_s"] == pytest.approx(2.0)
    assert cs.cadence(session).stalls.equals(report.stalls)
    # the session's frame has the same largest gap at the same chunk
    row = session.to_frame().iloc[0]
    assert (row["max_gap_s"], row["max_gap_at"]) == (pytest.approx(2.0), stall["chunk"])


def test_a_session_log_without_times_is_untimed(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    with DshLogWriter(path, timed=False) as log:
        log.turn_start(1)
        log.step(1, 1, [{"type": "block-start", "index": 0, "blockType": "text"}, *chunks(4)[1:]])
        log.turn_end(1)
    report = cs.cadence(path)
    assert report.models[["attempts", "timed", "gaps"]].values.tolist() == [[1, 0, 0]]
    assert "nothing to suggest" in str(report)


def make_report(stall_at: int = 12, **settings: float) -> cs.usage.Cadence:
    log = UsageLog()
    for n in range(40):
        times = [0.2 + 0.02 * k for k in range(30)]
        if n == 7:
            times = [t + (1.5 if k >= stall_at else 0.0) for k, t in enumerate(times)]
        log.record(timed(times), provider="acme", model="<b>fast</b>" if n % 2 else "slow", call_id=f"c{n}")
    return cs.cadence(log, **settings)


def test_the_reasoning_is_shown_in_text_and_html_and_names_are_escaped() -> None:
    report = make_report()
    text = str(report)
    # 20 attempts' largest gaps, one of them 1.52 s: the p99.9 lies near it
    assert "p99.9 of 20 attempts' largest gaps = 1.492 s; x 3 = 4.475 s. Rounded up" in text
    assert "Rounded up to the next whole second: 5 s." in text
    assert "Under 1,000 attempts' largest gaps" in text
    assert "1.520 s gap (call c7 attempt 1, before chunk 12)" in text
    tight = str(make_report(timeout_factor=1.0))
    assert "x 1 = 1.492 s. The longest gap seen, 1.520 s (call c7, before chunk 12), is longer" in tight
    assert "Rounded up to the next whole second: 2 s." in tight
    assert "stall is a gap longer than max(20 x the model's usual gap, 0.1 s)" in text
    html = report._repr_html_()
    assert "<b>fast</b>" not in html and "&lt;b&gt;fast&lt;/b&gt;" in html
    assert "Suggested idle timeout" in html and "c7" in html
    assert report.suggested_timeout_s == 5.0
    assert "1 stall(s)" in repr(report)


def test_the_thresholds_are_settings() -> None:
    log = UsageLog()
    log.record(timed([0.0, 0.01, 0.02, 0.12, 0.13]), provider="p", model="m", call_id="x")
    assert len(cs.cadence(log).stalls) == 0  # 0.1 s is not past the 0.1 s floor
    report = cs.cadence(log, stall_factor=5, stall_floor_s=0.05, timeout_factor=100)
    assert report.stalls[["call_id", "chunk"]].values.tolist() == [["x", 3]]
    # max(5 x the 0.01 s usual gap, 0.05 s)
    assert report.stalls["threshold_s"].tolist() == [pytest.approx(0.05)]
    # a frame keeps one largest gap (0.1 s, a hair over in floating point): x 100, the next second above
    assert report.models["suggested_timeout_s"].tolist() == [11.0]
    for bad in ({"stall_factor": -1}, {"timeout_factor": float("inf")}, {"stall_floor_s": "1"}):
        with pytest.raises(ValueError, match="cadence: "):
            cs.cadence(log, **bad)
    with pytest.raises(TypeError, match="cadence: give a usage frame"):
        cs.cadence(42)


def test_a_hand_made_frame_with_values_no_stream_gives() -> None:
    log = UsageLog()
    log.record(timed([0.0, 0.01, 0.02]), provider="p", model="m", call_id="x")
    frame = log.to_frame()
    frame = pd.concat([frame, frame], ignore_index=True)
    frame["max_gap_s"] = pd.array([float("inf"), -0.5], dtype="Float64")
    report = cs.cadence(frame)
    assert report.models[["attempts", "timed", "gaps"]].values.tolist() == [[2, 1, 1]]
    assert report.models["suggested_timeout_s"].tolist() == [1.0]  # never below 1 s


def test_the_plot_has_one_row_per_model() -> None:
    pytest.importorskip("matplotlib")
    figure = make_report().plot()
    [axes] = figure.axes
    assert [label.get_text() for label in axes.get_yticklabels()] == ["acme / <b>fast</b>", "acme / slow"]
    assert axes.get_xscale() == "log"
    assert "stall" in [text.get_text() for text in axes.get_legend().get_texts()]


def test_cadence_over_no_attempt_at_all() -> None:
    report = cs.cadence(UsageLog())
    assert len(report.models) == 0 and len(report.stalls) == 0
    assert report.suggested_timeout_s is None
    assert isinstance(report.models, pd.DataFrame)


def test_the_example_in_docs_usage_md_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from usage_helpers import doc_examples, run_doc_example

    [example] = doc_examples("Stream cadence")
    run_doc_example(example)
    shown = capsys.readouterr().out
    assert (
        "max_gap_at" in shown
        and "stall-recovers-300" in shown
        and "one idle timeout for every model" in shown
    )
