"""AnthropicAdapter against the local provider (real HTTP on 127.0.0.1), judged by the official SDK.

Every reply scenario assembles to what ``SCENARIOS`` expects and checks clean;
the official ``anthropic`` package streaming the same scenario agrees with
what the adapter assembles; every fault scenario ends with the documented
Anthropic-wire code, in bounded time, keeping its partial output and leaving
no connection open; a complete response leaves its connection pooled for reuse.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import httpx
import pytest
from _anthropic_events import abort_once_live
from fault_matrix import STALL_IDLE_TIMEOUT, TIME_BOUND, idle_timeout_for, sdk_readable

from chunkscope.adapters._base import GenerateOptions
from chunkscope.adapters.anthropic import AnthropicAdapter
from chunkscope.protocol import (
    LlmError,
    ReasoningBlock,
    StreamResult,
    TextBlock,
    ToolCallBlock,
    check,
    collect,
)
from chunkscope.provider import SCENARIOS, LocalProvider

PROMPT = "Hi there, provider"
REPLIES = [name for name, s in SCENARIOS.items() if not s.fault]
FAULTS = [name for name, s in SCENARIOS.items() if s.fault]


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as p:
        yield p


class _CountedBody(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, owner: CountingTransport) -> None:
        self._inner = inner
        self._owner = owner
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._inner:
            yield part

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._owner.open -= 1
        await self._inner.aclose()


class CountingTransport(httpx.AsyncBaseTransport):
    """A real HTTP transport that counts responses not yet closed."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.open = 0
        self.sent = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        self.open += 1
        self.sent += 1
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _CountedBody(response.stream, self)
        return response

    def busy_connections(self) -> int:
        """Pooled connections still carrying a request (none once every stream ended)."""
        pool: Any = self.inner._pool
        return sum(1 for c in pool.connections if not c.is_idle() and not c.is_closed())

    def idle_connections(self) -> int:
        """Pooled connections kept open for the next request."""
        pool: Any = self.inner._pool
        return sum(1 for c in pool.connections if c.is_idle() and not c.is_closed())

    def connections(self) -> int:
        """Every connection the pool holds."""
        pool: Any = self.inner._pool
        return len(pool.connections)

    async def aclose(self) -> None:
        await self.inner.aclose()


def options(model: str, **extra: Any) -> GenerateOptions:
    return GenerateOptions("anthropic", model, [{"role": "user", "content": PROMPT}], **extra)


async def stream_scenario(
    provider: LocalProvider, model: str, **extra: Any
) -> tuple[StreamResult, CountingTransport, float]:
    transport = CountingTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        # Short only for fault-stall: a loaded machine must not turn a slow event into a TIMEOUT.
        idle_timeout = idle_timeout_for(model)
        adapter = AnthropicAdapter(provider.url, "test-key", http_client=client, idle_timeout=idle_timeout)
        started = time.perf_counter()
        result = await collect(adapter.stream(options(model, **extra)))
        elapsed = time.perf_counter() - started
        # Checked while the client is still open: the adapter itself released the connection.
        assert transport.open == 0
        assert transport.busy_connections() == 0
        if result.error is None or result.error.status is not None:
            # a complete stream or an error answer: the body was read to its end, the connection kept
            assert transport.idle_connections() == 1, f"{model} dropped a reusable connection"
    return result, transport, elapsed


def block_types(result: StreamResult) -> list[str]:
    return [b.type for b in result.blocks]


@pytest.mark.parametrize("model", REPLIES)
async def test_every_reply_scenario_assembles_to_its_expected_result(
    provider: LocalProvider, model: str
) -> None:
    expected = SCENARIOS[model].expected_for(PROMPT)
    result, _, _ = await stream_scenario(provider, model)
    assert result.error is None, result.error
    assert check(result.chunks, "strict") == []
    assert result.text == expected.text
    assert result.reasoning == expected.reasoning
    assert [(t.name, t.arguments) for t in result.tool_calls] == expected.tool_calls
    assert block_types(result) == expected.block_types
    assert result.usage is not None and result.usage.to_dict() == expected.usage
    assert result.finish is not None and result.finish.kind == expected.finish


async def test_tool_call_ids_come_from_the_wire_or_are_made_up_unique(provider: LocalProvider) -> None:
    result, _, _ = await stream_scenario(provider, "parallel-tools")
    assert [t.id for t in result.tool_calls] == ["call_1", "call_2"]
    result, _, _ = await stream_scenario(provider, "late-id")
    assert [t.id for t in result.tool_calls] == ["call_late"]
    # Anthropic's tool_use always carries an id: the provider makes one up for no-id (docs/scenarios.md).
    result, _, _ = await stream_scenario(provider, "no-id")
    assert [t.id for t in result.tool_calls] == ["toolu_chunkscope_0"]


async def _official(provider: LocalProvider, model: str) -> Any:
    client = anthropic.AsyncAnthropic(base_url=provider.url, api_key="x", max_retries=0)
    try:
        async with client.messages.stream(
            model=model, max_tokens=1024, messages=[{"role": "user", "content": PROMPT}]
        ) as stream:
            return await stream.get_final_message()
    finally:
        await client.close()


@pytest.mark.parametrize("model", [*sdk_readable(REPLIES, "anthropic"), "fault-content-filter"])
async def test_the_official_sdk_assembles_what_the_adapter_assembles(
    provider: LocalProvider, model: str
) -> None:
    message = await _official(provider, model)
    result, _, _ = await stream_scenario(provider, model)
    ours: list[Any] = []
    for block in result.blocks:
        if isinstance(block, TextBlock):
            ours.append(("text", block.text))
        elif isinstance(block, ReasoningBlock):
            ours.append(("thinking", block.text))
        elif isinstance(block, ToolCallBlock):
            ours.append(("tool_use", block.id, block.name, json.loads(block.arguments)))
    theirs: list[Any] = []
    for block in message.content:
        if block.type == "text":
            theirs.append(("text", block.text))
        elif block.type == "thinking":
            theirs.append(("thinking", block.thinking))
        elif block.type == "tool_use":
            theirs.append(("tool_use", block.id, block.name, block.input))
    assert ours == theirs
    usage = result.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens) == (
        message.usage.input_tokens,
        message.usage.output_tokens,
    )
    assert usage.cache_read_tokens == message.usage.cache_read_input_tokens
    assert usage.cache_write_tokens == message.usage.cache_creation_input_tokens
    kinds = {
        "end_turn": "stop",
        "stop_sequence": "stop",
        "tool_use": "tool-calls",
        "max_tokens": "max-tokens",
    }
    assert result.finish is not None
    assert result.finish.kind == kinds.get(message.stop_reason or "", "error")


@pytest.mark.parametrize("model", FAULTS)
async def test_every_fault_scenario_ends_with_its_anthropic_code_keeping_the_partial_output(
    provider: LocalProvider, model: str
) -> None:
    scenario = SCENARIOS[model]
    assert scenario.expected_codes is not None
    result, transport, elapsed = await stream_scenario(provider, model)
    assert result.error_code == scenario.expected_codes["anthropic"]
    assert elapsed < TIME_BOUND  # bounded: a stall ends at the idle timeout, not at 30 s
    if result.error_code == "TIMEOUT":
        assert elapsed >= STALL_IDLE_TIMEOUT, f"{model} timed out after {elapsed:.2f} s, too early"
    expected = scenario.expected
    assert result.text == expected.text  # the deltas sent before the fault were delivered
    assert result.violations == []
    if expected.finish is not None:  # an in-band stop: an error finish, not a raise
        assert result.error is None
        assert result.finish is not None and result.finish.kind == expected.finish
        assert check(result.chunks, "strict") == []
    else:
        assert isinstance(result.error, LlmError)
    assert transport.sent == 1


async def test_http_faults_carry_status_retry_after_and_request_id(provider: LocalProvider) -> None:
    result, _, _ = await stream_scenario(provider, "fault-429")
    error = result.error
    assert error is not None
    assert (error.code, error.status, error.retry_after_ms, error.request_id) == (
        "RATE_LIMIT",
        429,
        2000,
        "req-429",
    )


async def test_an_unknown_model_is_http_404(provider: LocalProvider) -> None:
    result, _, _ = await stream_scenario(provider, "no-such-model")
    assert result.error_code == "HTTP_404"


@pytest.mark.parametrize("model", ["slow-tokens", "fault-stall"])
async def test_an_abort_mid_stream_is_aborted_within_100_ms_and_releases_the_connection(
    provider: LocalProvider, model: str
) -> None:
    transport = CountingTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        adapter = AnthropicAdapter(provider.url, "test-key", http_client=client, idle_timeout=None)
        # live: block-start and two deltas arrived
        error, seconds = await abort_once_live(lambda signal: adapter.stream(options(model, signal=signal)))
        assert seconds < 0.1
        assert error.code == "ABORTED"
        assert transport.open == 0
        assert transport.busy_connections() == 0


async def test_successive_streams_reuse_one_pooled_connection(provider: LocalProvider) -> None:
    transport = CountingTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        adapter = AnthropicAdapter(provider.url, "test-key", http_client=client)
        for model in ("text", "reasoning", "tool-call"):
            assert (await collect(adapter.stream(options(model)))).ok
        assert transport.sent == 3
        assert transport.connections() == 1
        assert transport.idle_connections() == 1


async def test_a_caller_s_client_read_timeout_does_not_cut_a_pause_the_idle_timeout_allows(
    provider: LocalProvider,
) -> None:
    # slow-tokens pauses 50 ms between events: five times the client's own read timeout.
    async with httpx.AsyncClient(timeout=httpx.Timeout(5.0, read=0.01)) as client:
        adapter = AnthropicAdapter(provider.url, "test-key", http_client=client, idle_timeout=20.0)
        result = await collect(adapter.stream(options("slow-tokens")))
    assert result.error is None, result.error
    assert result.text == SCENARIOS["slow-tokens"].expected.text


async def test_an_adapter_with_its_own_client_streams_and_closes_it(provider: LocalProvider) -> None:
    async with AnthropicAdapter(provider.url, "test-key") as adapter:
        first = await collect(adapter.stream(options("text")))
        second = await collect(adapter.stream(options("echo")))
    assert first.text == SCENARIOS["text"].expected.text
    assert second.text == PROMPT


async def test_a_consumer_that_stops_early_releases_the_connection(provider: LocalProvider) -> None:
    transport = CountingTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        adapter = AnthropicAdapter(provider.url, "test-key", http_client=client)
        stream = adapter.stream(options("long"))
        assert isinstance(stream, AsyncIterator)
        await stream.__anext__()
        await stream.__anext__()
        await stream.aclose()  # type: ignore[attr-defined]
        assert transport.open == 0
        assert transport.busy_connections() == 0
