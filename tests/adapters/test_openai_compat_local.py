"""OpenAICompatAdapter against the local provider (real HTTP on 127.0.0.1), judged by the official SDK."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from fault_matrix import (
    FAULTS,
    IDLE_TIMEOUT,
    REPLIES,
    cancel_after_first_chunk,
    open_connections,
    pool_size,
    run_fault_case,
    sdk_readable,
)

from chunkscope.adapters._base import AbortController, GenerateOptions, LlmAdapter
from chunkscope.adapters.openai_compat import OpenAICompatAdapter
from chunkscope.protocol import LlmError, StreamResult, TokenUsage, check, collect
from chunkscope.provider import LocalProvider, get_scenario

API_KEY = "sk-local-test-SECRET-0123456789"
PROMPT = "Hi there, provider"


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as p:
        yield p


def factory(provider: LocalProvider, client: httpx.AsyncClient, idle_timeout: float) -> LlmAdapter:
    return OpenAICompatAdapter(provider.base_url, API_KEY, http_client=client, idle_timeout=idle_timeout)


def opts(model: str, **kwargs: Any) -> GenerateOptions:
    return GenerateOptions("deepseek", model, [{"role": "user", "content": PROMPT}], **kwargs)


async def stream_scenario(provider: LocalProvider, name: str) -> StreamResult:
    async with OpenAICompatAdapter(provider.base_url, API_KEY, idle_timeout=IDLE_TIMEOUT) as adapter:
        return await collect(adapter.stream(opts(name)))


def assert_matches_expected(result: StreamResult, name: str) -> None:
    expected = get_scenario(name).expected_for(PROMPT)
    assert result.error is None, result.error
    assert result.text == expected.text
    assert result.reasoning == expected.reasoning
    assert [(t.name, t.arguments) for t in result.tool_calls] == expected.tool_calls
    assert [b.type for b in result.blocks] == expected.block_types
    assert result.usage is not None and result.usage.to_dict() == expected.usage
    assert result.finish is not None and result.finish.kind == expected.finish


@pytest.mark.parametrize("name", REPLIES)
async def test_every_reply_scenario_assembles_to_its_expected_reply_and_checks_clean(
    provider: LocalProvider, name: str
) -> None:
    result = await stream_scenario(provider, name)
    assert_matches_expected(result, name)
    assert check(result.chunks, "strict") == []
    assert result.violations == []


@pytest.mark.parametrize("name", FAULTS)
async def test_fault_matrix_openai_wire(provider: LocalProvider, name: str) -> None:
    await run_fault_case(factory, provider, name, wire="openai", api_key=API_KEY)


async def test_fault_429_carries_retry_after_and_request_id(provider: LocalProvider) -> None:
    result = await run_fault_case(factory, provider, "fault-429", wire="openai", api_key=API_KEY)
    assert result.error is not None
    assert (result.error.status, result.error.retry_after_ms, result.error.request_id) == (
        429,
        2000.0,
        "req-429",
    )


async def test_an_unknown_model_is_http_404(provider: LocalProvider) -> None:
    result = await stream_scenario(provider, "no-such-scenario")
    assert result.error_code == "HTTP_404"


# --- the official SDK as a second opinion -----------------------------------------


async def sdk_reply(provider: LocalProvider, name: str) -> dict[str, Any]:
    """What the official ``openai`` package streams for scenario ``name``, assembled by hand."""
    client = openai.AsyncOpenAI(base_url=provider.base_url, api_key=API_KEY)
    text, reasoning = [], []
    calls: dict[int, dict[str, Any]] = {}
    usage: Any = None
    try:
        stream = await client.chat.completions.create(
            model=name,
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
            stream_options={"include_usage": True},
        )
        async for event in stream:
            if event.usage is not None:
                usage = event.usage
            for choice in event.choices:
                delta = choice.delta
                if delta.content:
                    text.append(delta.content)
                extra = (delta.model_extra or {}).get("reasoning_content")
                if extra:
                    reasoning.append(extra)
                for call in delta.tool_calls or []:
                    slot = calls.setdefault(call.index, {"id": None, "name": "", "arguments": ""})
                    if call.id:
                        slot["id"] = call.id
                    if call.function is not None:
                        slot["name"] += call.function.name or ""
                        slot["arguments"] += call.function.arguments or ""
    finally:
        await client.close()
    cached = 0
    if usage is not None and usage.prompt_tokens_details is not None:
        cached = usage.prompt_tokens_details.cached_tokens or 0
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "calls": [calls[i] for i in sorted(calls)],
        "usage": (usage.prompt_tokens - cached, usage.completion_tokens, cached or None),
    }


@pytest.mark.parametrize("name", sdk_readable(REPLIES, "openai"))
async def test_the_official_sdk_streams_the_same_text_reasoning_tool_calls_and_usage(
    provider: LocalProvider, name: str
) -> None:
    sdk = await sdk_reply(provider, name)
    ours = await stream_scenario(provider, name)
    assert ours.text == sdk["text"]
    assert ours.reasoning == sdk["reasoning"]
    assert [(t.name, t.arguments or "{}") for t in ours.tool_calls] == [
        (c["name"], c["arguments"] or "{}") for c in sdk["calls"]
    ]
    for block, call in zip(ours.tool_calls, sdk["calls"], strict=True):
        if call["id"]:
            assert block.id == call["id"]
    assert ours.usage is not None
    assert (ours.usage.input_tokens, ours.usage.output_tokens, ours.usage.cache_read_tokens) == sdk["usage"]


# --- concurrency, abort, cancellation, the pool -----------------------------------


async def test_100_concurrent_streams_against_one_provider_all_complete_correctly(
    provider: LocalProvider,
) -> None:
    names = ["long-40", "reasoning", "interleaved-tools", "tool-call", "cache-hit"] * 20
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
    async with httpx.AsyncClient(limits=limits) as client:
        adapter = OpenAICompatAdapter(provider.base_url, API_KEY, http_client=client, idle_timeout=30.0)
        results = await asyncio.gather(*(collect(adapter.stream(opts(n))) for n in names))
        for name, result in zip(names, results, strict=True):
            assert_matches_expected(result, name)
            assert result.violations == []
        assert open_connections(client) == []


async def test_reuses_the_pooled_connection_after_a_complete_stream(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        adapter = OpenAICompatAdapter(provider.base_url, API_KEY, http_client=client)
        for _ in range(3):
            result = await collect(adapter.stream(opts("text")))
            assert result.ok
        assert pool_size(client) == 1
        assert open_connections(client) == []


async def test_abort_within_100_ms_closes_the_connection(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        adapter = OpenAICompatAdapter(provider.base_url, API_KEY, http_client=client, idle_timeout=30.0)
        controller = AbortController()
        stream = adapter.stream(opts("slow-tokens", signal=controller.signal))
        seen = [await stream.__anext__(), await stream.__anext__()]  # block-start, first delta
        assert seen[1].type == "text-delta"
        fired: list[float] = []

        def abort() -> None:
            fired.append(time.perf_counter())
            controller.abort()

        threading.Timer(0.01, abort).start()  # mid-way through a 50 ms pause between events
        with pytest.raises(LlmError) as info:
            while True:
                await stream.__anext__()
        latency = time.perf_counter() - fired[0]
        assert info.value.code == "ABORTED"
        assert latency < 0.1, f"abort took {latency * 1000:.0f} ms"
        assert open_connections(client) == []


async def test_an_abort_while_the_consumer_holds_a_chunk_releases_the_connection_within_100_ms(
    provider: LocalProvider,
) -> None:
    async with httpx.AsyncClient() as client:
        adapter = OpenAICompatAdapter(provider.base_url, API_KEY, http_client=client, idle_timeout=30.0)
        controller = AbortController()
        stream = adapter.stream(opts("slow-tokens", signal=controller.signal))
        await stream.__anext__()
        await stream.__anext__()  # the consumer holds this chunk and does not ask for the next
        assert open_connections(client) != []
        controller.abort()
        fired = time.perf_counter()
        while open_connections(client) and time.perf_counter() - fired < 1.0:
            await asyncio.sleep(0.002)
        latency = time.perf_counter() - fired
        assert open_connections(client) == []
        assert latency < 0.1, f"the connection was released {latency * 1000:.0f} ms after the abort"
        with pytest.raises(LlmError) as info:
            await stream.__anext__()
        assert info.value.code == "ABORTED"


async def test_task_cancellation_closes_the_connection(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        adapter = OpenAICompatAdapter(provider.base_url, API_KEY, http_client=client, idle_timeout=30.0)
        await cancel_after_first_chunk(adapter.stream(opts("slow-tokens")))
        assert open_connections(client) == []


async def test_usage_of_the_cache_hit_scenario_is_disjoint(provider: LocalProvider) -> None:
    result = await stream_scenario(provider, "cache-hit")
    assert result.usage == TokenUsage(
        input_tokens=120, output_tokens=9, cache_read_tokens=7680, reasoning_tokens=4
    )


async def test_an_owned_client_is_made_on_first_use_and_closed_by_aclose(provider: LocalProvider) -> None:
    adapter = OpenAICompatAdapter(provider.base_url, API_KEY)
    assert adapter.http_client is None
    async with adapter:
        assert (await collect(adapter.stream(opts("text")))).ok
        client = adapter.http_client
        assert client is not None and not client.is_closed
    assert client.is_closed


def test_one_adapter_serves_streams_on_successive_event_loops(provider: LocalProvider) -> None:
    adapter = OpenAICompatAdapter(provider.base_url, API_KEY)
    for _ in range(2):  # e.g. two notebook conveniences, each running its own loop
        result = asyncio.run(collect(adapter.stream(opts("text"))))
        assert result.ok, result.error


async def test_closing_a_stream_early_releases_its_connection(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        adapter = OpenAICompatAdapter(provider.base_url, API_KEY, http_client=client)
        stream = adapter.stream(opts("long-200"))
        for _ in range(5):
            await stream.__anext__()
        await stream.aclose()  # type: ignore[attr-defined]
        assert open_connections(client) == []


@pytest.mark.parametrize("delay_ms", [0, 1, 3, 10, 30, 60])
async def test_an_abort_at_any_moment_ends_in_aborted_or_a_clean_finish_and_frees_the_connection(
    delay_ms: int,
) -> None:
    with LocalProvider(token_delay=0.002) as slow:
        async with httpx.AsyncClient() as client:
            adapter = OpenAICompatAdapter(
                slow.base_url, API_KEY, http_client=client, idle_timeout=IDLE_TIMEOUT
            )
            controller = AbortController()
            threading.Timer(delay_ms / 1000, controller.abort).start()
            result = await collect(adapter.stream(opts("long-20", signal=controller.signal)))
            assert result.error_code in (None, "ABORTED"), result.error
            if result.error is None:
                assert result.ok
            else:
                assert [v for v in result.violations if v.position is not None] == []
            assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
            assert open_connections(client) == []
