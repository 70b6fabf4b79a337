"""End to end: the agent loop against the local provider over real loopback HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import chunkscope as cs
from chunkscope.adapters import GenerateOptions, LlmAdapter, WrappingAdapter
from chunkscope.protocol import AnyChunk, check
from chunkscope.runtime import ChunkEvent, RetryScheduled

from ._fakes import FakeSleep


@cs.tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: the city's name.
    """
    return f"sunny, 21 C in {city}"


@pytest.fixture(scope="module")
def provider() -> Iterator[Any]:
    with cs.LocalProvider() as p:
        yield p


class FirstAttemptVia(WrappingAdapter):
    """Sends the first request to ``first_model`` (a fault scenario), every later one as asked."""

    def __init__(self, inner: LlmAdapter, first_model: str) -> None:
        super().__init__(inner)
        self.first_model = first_model
        self.requests = 0

    def stream(self, options: GenerateOptions) -> AsyncIterator[AnyChunk]:
        self.requests += 1
        if self.requests == 1:
            options = options.replace(model=self.first_model)
        return self.inner.stream(options)


class Sink:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def record(self, result: Any, **kw: Any) -> None:
        self.rows.append({"result": result, **kw})


async def test_a_tool_round_trip_checks_clean_chunk_by_chunk_with_the_usage_of_both_steps(
    provider: Any,
) -> None:
    sink = Sink()
    async with cs.OpenAICompatAdapter(provider.base_url, "test-key") as adapter:
        loop = cs.AgentLoop(adapter, tools=[get_weather], log=sink)
        run = loop.run("What is the weather in Tokyo?", model="tool-roundtrip")
        events = [e async for e in run]
    result = run.result
    assert result is not None and result.ok, result
    assert result.text == "The tool said: sunny, 21 C in Tokyo"
    assert [o.content for o in result.tool_outcomes] == ["sunny, 21 C in Tokyo"]
    for step in result.steps:
        assert check(step.result.chunks, profile="strict") == []
        assert step.result.violations == []
    chunk_events = [e for e in events if isinstance(e, ChunkEvent)]
    assert [e.chunk for e in chunk_events] == [c for s in result.steps for c in s.result.chunks]
    assert [(r["attempt"], r["final"]) for r in sink.rows] == [(1, True), (1, True)]
    assert all(r["result"].usage is not None for r in sink.rows)
    assert [u.usage.output_tokens for u in result.usage if u.usage] == [5, 4]


async def test_a_429_on_the_first_attempt_is_retried_after_its_retry_after(provider: Any) -> None:
    sleep = FakeSleep()
    async with cs.OpenAICompatAdapter(provider.base_url, "test-key") as real:
        adapter = FirstAttemptVia(real, "fault-429")
        loop = cs.AgentLoop(adapter, tools=[get_weather], retry=cs.RetryPolicy(sleep=sleep, seed=3))
        run = loop.run("What is the weather in Tokyo?", model="tool-roundtrip")
        events = [e async for e in run]
    result = run.result
    assert result is not None and result.ok and result.text == "The tool said: sunny, 21 C in Tokyo"
    assert sleep.waits == [2.0]  # the provider's Retry-After: 2
    (retry,) = result.retries
    assert (retry.step, retry.error.code, retry.error.status, retry.delay_ms) == (1, "RATE_LIMIT", 429, 2000)
    assert retry.error.request_id == "req-429"
    assert [e for e in events if isinstance(e, RetryScheduled)] == [retry]
    assert len(result.steps[0].attempts) == 2 and result.steps[0].attempts[0].error is retry.error
    assert [(u.step, u.attempt, u.final) for u in result.usage] == [(1, 1, False), (1, 2, True), (2, 1, True)]


async def test_an_abort_mid_stream_over_http_ends_the_run_and_the_adapter_stays_usable(provider: Any) -> None:
    from chunkscope.adapters import AbortController

    async with cs.OpenAICompatAdapter(provider.base_url, "test-key") as adapter:
        controller = AbortController()
        run = cs.AgentLoop(adapter).run("hi", model="slow-tokens", signal=controller.signal)
        seen = 0
        async for event in run:
            if isinstance(event, ChunkEvent):
                seen += 1
                if seen == 3:
                    controller.abort("stop")
        assert run.result is not None and run.result.aborted and seen == 3
        assert run.result.error is not None and run.result.error.code == "ABORTED"
        partial = run.result.steps[0].result
        assert 3 <= len(partial.chunks) < 10 and partial.finish is None  # the partial output stays available
        # the connection was released: the same adapter serves the next run at once
        again = await cs.AgentLoop(adapter, tools=[get_weather]).run("hi", model="tool-roundtrip")
        assert again.ok
