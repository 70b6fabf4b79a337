"""UsageLog → to_frame(): one row per attempt, the documented dtypes, values and usage_source."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pandas as pd
import pytest
from usage_helpers import StepClock, text_chunks

import chunkscope as cs
from chunkscope.adapters import AbortController, GenerateOptions, OpenAICompatAdapter, ScriptedAdapter
from chunkscope.protocol import LlmError, StreamResult, collect
from chunkscope.protocol._sink import UsageSink
from chunkscope.provider import LocalProvider
from chunkscope.usage import COLUMNS, UsageLog, empty_frame

API_KEY = "sk-usage-test-SECRET-000"
# No pause of a healthy local stream comes near it, however loaded the machine.
IDLE = 20.0


def opts(model: str, **kwargs: Any) -> GenerateOptions:
    return GenerateOptions("deepseek", model, [{"role": "user", "content": "hello"}], **kwargs)


async def run_local(provider: LocalProvider, log: UsageLog, model: str, **kwargs: Any) -> StreamResult:
    async with OpenAICompatAdapter(provider.base_url, API_KEY, idle_timeout=IDLE) as adapter:
        return await collect(adapter.stream(opts(model, **kwargs)), log=log, provider="deepseek", model=model)


def row(frame: pd.DataFrame, **where: Any) -> pd.Series:
    mask = pd.Series(True, index=frame.index)
    for column, value in where.items():
        mask &= frame[column].astype(object) == value
    rows = frame[mask]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def assert_dtypes(frame: pd.DataFrame) -> None:
    assert list(frame.columns) == list(COLUMNS)
    for name, dtype in COLUMNS.items():
        if isinstance(dtype, pd.CategoricalDtype):
            assert isinstance(frame[name].dtype, pd.CategoricalDtype), name
            if dtype.categories is not None:
                assert list(frame[name].cat.categories) == list(dtype.categories), name
        else:
            assert frame[name].dtype == dtype, (name, frame[name].dtype)


def test_usage_log_is_the_usage_sink_the_protocol_names() -> None:
    assert isinstance(UsageLog(), UsageSink)


def test_an_empty_log_gives_every_column_with_its_dtype() -> None:
    frame = UsageLog().to_frame()
    assert len(frame) == 0
    assert_dtypes(frame)
    assert_dtypes(empty_frame())


async def test_scripted_success_row_has_counts_timings_and_derived_columns() -> None:
    log = UsageLog()
    usage = {"inputTokens": 120, "outputTokens": 30, "cacheReadTokens": 880, "reasoningTokens": 10}
    result = await collect(
        text_chunks("hello", usage), clock=StepClock(0.5), log=log, provider="p", model="m", tags={"run": "a"}
    )
    assert result.timings.started_at is not None
    frame = log.to_frame()
    assert_dtypes(frame)
    r = frame.iloc[0]
    assert r["attempt"] == 1 and r["final"] and not r["retried"]
    assert (r["provider"], r["model"], r["tags"]) == ("p", "m", '{"run":"a"}')
    # StepClock: start 0, chunks at 0.5 .. 2.5, end 3.0
    assert r["ttfc_s"] == 0.5 and r["duration_s"] == 3.0
    assert (r["input_tokens"], r["output_tokens"], r["cache_read_tokens"]) == (120, 30, 880)
    assert r["cache_write_tokens"] is pd.NA  # not reported: missing, not 0
    assert r["reasoning_tokens"] == 10
    assert r["billed_input_tokens"] == 1000
    assert r["cache_hit_rate"] == pytest.approx(0.88)
    assert r["output_tokens_per_s"] == pytest.approx(30 / 2.5)
    assert (r["finish"], r["usage_source"]) == ("stop", "reported")
    assert r["error_code"] is pd.NA or pd.isna(r["error_code"])
    assert pd.isna(r["phase"])
    assert (r["text_blocks"], r["reasoning_blocks"], r["tool_call_blocks"]) == (1, 0, 0)
    assert (r["chunks"], r["violations"], r["warnings"]) == (5, 0, 0)
    assert r["started_at"].tzinfo is not None and str(r["started_at"].tz) == "UTC"
    assert r["started_at"].timestamp() == pytest.approx(result.timings.started_at, abs=1e-5)
    assert pd.isna(r["cost"])


async def test_success_without_usage_is_missing_and_counts_stay_na() -> None:
    log = UsageLog()
    await collect(text_chunks("x"), log=log, provider="p", model="m")
    r = log.to_frame().iloc[0]
    assert r["usage_source"] == "missing"
    assert r["warnings"] == 1  # usage-missing
    for column in ("input_tokens", "output_tokens", "cache_read_tokens", "billed_input_tokens"):
        assert r[column] is pd.NA
    assert r["cache_hit_rate"] is pd.NA and r["output_tokens_per_s"] is pd.NA


async def test_failure_phases_before_first_chunk_mid_stream_and_at_finish() -> None:
    log = UsageLog()
    before = ScriptedAdapter([], error=LlmError("nope", "AUTH", status=401))
    mid = ScriptedAdapter(text_chunks("ab")[:2], error=LlmError("gone", "TRANSPORT"))
    failure = {"kind": "error", "failure": {"message": "filtered", "code": "CONTENT_FILTER"}}
    at_finish = ScriptedAdapter(text_chunks("no", {"inputTokens": 5, "outputTokens": 2}, failure))
    for name, adapter in (("before", before), ("mid", mid), ("finish", at_finish)):
        await collect(log.wrap(adapter).stream(opts(name)))
    frame = log.to_frame()
    r = row(frame, model="before")
    assert (r["error_code"], r["phase"], r["usage_source"], r["chunks"]) == (
        "AUTH",
        "before-first-chunk",
        "lost",
        0,
    )
    assert pd.isna(r["ttfc_s"]) and pd.isna(r["finish"])
    r = row(frame, model="mid")
    assert (r["error_code"], r["phase"], r["usage_source"], r["chunks"]) == (
        "TRANSPORT",
        "mid-stream",
        "lost",
        2,
    )
    assert r["text_blocks"] == 1  # the partial block is counted
    r = row(frame, model="finish")
    assert (r["error_code"], r["phase"], r["usage_source"], r["finish"]) == (
        "CONTENT_FILTER",
        "at-finish",
        "reported",
        "error",
    )
    assert r["input_tokens"] == 5
    assert frame["provider"].astype(str).tolist() == ["scripted"] * 0 + ["deepseek"] * 3


async def test_local_provider_rows_for_replies_and_every_kind_of_fault(provider: LocalProvider) -> None:
    log = UsageLog()
    models = [
        "text",
        "reasoning",
        "cache-hit",
        "tool-call",
        "fault-429",
        "fault-500",
        "fault-context",
        "fault-malformed",
        "fault-drop",
        "fault-truncated",
        "fault-in-stream-error",
        "fault-content-filter",
        "fault-empty",
    ]
    for model in models:
        await run_local(provider, log, model)
    frame = log.to_frame()
    assert_dtypes(frame)
    assert frame["model"].astype(str).tolist() == models

    text = row(frame, model="text")
    assert (text["input_tokens"], text["output_tokens"], text["usage_source"]) == (12, 8, "reported")
    assert text["cache_read_tokens"] is pd.NA and text["reasoning_tokens"] is pd.NA

    reasoning = row(frame, model="reasoning")
    assert (reasoning["reasoning_blocks"], reasoning["text_blocks"], reasoning["output_tokens"]) == (1, 1, 11)

    cached = row(frame, model="cache-hit")
    assert (cached["input_tokens"], cached["cache_read_tokens"], cached["reasoning_tokens"]) == (120, 7680, 4)
    assert cached["billed_input_tokens"] == 7800
    assert cached["cache_hit_rate"] == pytest.approx(7680 / 7800)

    tool = row(frame, model="tool-call")
    assert (tool["finish"], tool["tool_call_blocks"]) == ("tool-calls", 1)

    expected = {
        "fault-429": ("RATE_LIMIT", "before-first-chunk", "lost"),
        "fault-500": ("SERVER", "before-first-chunk", "lost"),
        "fault-context": ("CONTEXT_WINDOW_EXCEEDED", "before-first-chunk", "lost"),
        "fault-malformed": ("MALFORMED_RESPONSE", "mid-stream", "lost"),
        "fault-drop": ("TRANSPORT", "mid-stream", "lost"),
        "fault-truncated": ("STREAM_CLOSED", "mid-stream", "lost"),
        "fault-in-stream-error": ("SERVER", "mid-stream", "lost"),
        "fault-content-filter": ("CONTENT_FILTER", "at-finish", "reported"),
        "fault-empty": ("EMPTY_RESPONSE", "at-finish", "reported"),
    }
    for model, (code, phase, source) in expected.items():
        r = row(frame, model=model)
        assert (r["error_code"], r["phase"], r["usage_source"]) == (code, phase, source), model
        if source == "lost":
            assert r["input_tokens"] is pd.NA and r["output_tokens"] is pd.NA, model
    assert row(frame, model="fault-empty")["output_tokens"] == 0  # reported 0 stays 0


async def test_an_aborted_call_is_a_row_with_its_usage_lost(provider: LocalProvider) -> None:
    log = UsageLog()
    controller = AbortController()
    async with OpenAICompatAdapter(provider.base_url, API_KEY, idle_timeout=IDLE) as adapter:
        stream = adapter.stream(opts("slow-tokens", signal=controller.signal))

        async def abort_after_first() -> Any:
            async for chunk in stream:
                controller.abort("user pressed stop")
                yield chunk

        await collect(abort_after_first(), log=log, provider="deepseek", model="slow-tokens")
    r = log.to_frame().iloc[0]
    assert (r["error_code"], r["phase"], r["usage_source"]) == ("ABORTED", "mid-stream", "lost")
    assert r["chunks"] >= 1


async def test_a_cancelled_collect_is_recorded_as_aborted_before_the_cancellation_propagates() -> None:
    log = UsageLog()
    gate = asyncio.Event()

    async def hangs() -> Any:
        for chunk in text_chunks("x")[:2]:
            yield chunk
        await gate.wait()

    task = asyncio.ensure_future(collect(hangs(), log=log, provider="p", model="m"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    r = log.to_frame().iloc[0]
    assert (r["error_code"], r["phase"], r["usage_source"], r["chunks"]) == (
        "ABORTED",
        "mid-stream",
        "lost",
        2,
    )


def test_a_retried_call_is_two_rows_sharing_a_call_id_with_the_wasted_attempt_visible() -> None:
    log = UsageLog()
    failed = StreamResult(error=LlmError("slow down", "RATE_LIMIT", status=429))
    partial = StreamResult(
        chunks=[cs.TextDelta(index=0, text="x")],
        usage=None,
        error=LlmError("dropped", "TRANSPORT"),
    )
    ok = StreamResult(
        usage=cs.TokenUsage(input_tokens=10, output_tokens=4), finish=cs.FinishReason(kind="stop")
    )
    for attempt, result in enumerate((failed, partial, ok), start=1):
        log.record(result, provider="p", model="m", call_id="call-1", attempt=attempt, final=attempt == 3)
    frame = log.to_frame()
    assert frame["call_id"].tolist() == ["call-1"] * 3
    assert frame["attempt"].tolist() == [1, 2, 3]
    assert frame["final"].tolist() == [False, False, True]
    assert frame["retried"].tolist() == [True, True, False]
    assert frame["error_code"].astype(object).where(frame["error_code"].notna(), None).tolist() == [
        "RATE_LIMIT",
        "TRANSPORT",
        None,
    ]
    assert frame["phase"].astype(object).tolist()[:2] == ["before-first-chunk", "mid-stream"]
    assert frame["usage_source"].tolist() == ["lost", "lost", "reported"]
    assert frame["call_id"].dtype == "string"


def test_record_without_call_id_gives_each_attempt_a_fresh_one() -> None:
    log = UsageLog()
    a = log.record(StreamResult(), provider="p", model="m")
    b = log.record(StreamResult(), provider="p", model="m")
    assert a != b and log.to_frame()["call_id"].tolist() == [a, b]


def test_records_from_many_threads_all_arrive_and_the_frame_can_be_built_meanwhile() -> None:
    log = UsageLog()
    result = StreamResult(
        usage=cs.TokenUsage(input_tokens=1, output_tokens=2), finish=cs.FinishReason(kind="stop")
    )
    frames: list[int] = []

    def work(n: int) -> None:
        for i in range(500):
            log.record(result, provider=f"p{n}", model="m", call_id=f"{n}-{i}")
            if i % 100 == 0:
                frames.append(len(log.to_frame()))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    frame = log.to_frame()
    assert len(frame) == 2000 and frame["call_id"].nunique() == 2000
    assert frame["output_tokens"].sum() == 4000
    assert frame.groupby("provider", observed=True).size().to_dict() == {f"p{n}": 500 for n in range(4)}
    assert all(0 < n <= 2000 for n in frames)


async def test_wrap_records_every_stream_and_passes_chunks_and_errors_through_unchanged() -> None:
    log = UsageLog()
    chunks = text_chunks("hey", {"inputTokens": 3, "outputTokens": 1})
    wrapped = log.wrap(ScriptedAdapter(chunks), tags={"who": "test"})
    seen = [chunk async for chunk in wrapped.stream(opts("m1"))]
    assert [c.type for c in seen] == [c["type"] for c in chunks]
    failing = log.wrap(ScriptedAdapter(chunks[:2], error=LlmError("x", "SERVER")))
    with pytest.raises(LlmError) as caught:
        async for _ in failing.stream(opts("m2")):
            pass
    assert caught.value.code == "SERVER"
    early = log.wrap(ScriptedAdapter(chunks)).stream(opts("m3"))
    async for _ in early:
        break
    await early.aclose()
    frame = log.to_frame()
    assert frame["model"].astype(str).tolist() == ["m1", "m2", "m3"]
    assert frame["tags"].astype(object).tolist()[0] == '{"who":"test"}'
    assert frame["usage_source"].tolist() == ["reported", "lost", "lost"]
    assert frame["error_code"].astype(object).tolist()[1:] == ["SERVER", "ABORTED"]


async def test_show_records_the_attempt_in_the_log() -> None:
    from chunkscope.notebook import Timeline

    log = UsageLog()
    timeline = Timeline(clock=StepClock(0.25))
    result = await timeline.consume(
        text_chunks("hi", {"inputTokens": 2, "outputTokens": 1}), log=log, provider="p", model="shown"
    )
    assert result.timings.started_at is not None
    r = log.to_frame().iloc[0]
    assert (r["model"], r["input_tokens"], r["usage_source"], r["ttfc_s"]) == ("shown", 2, "reported", 0.25)
