"""OpenAIResponsesAdapter against the local provider (real HTTP on 127.0.0.1): every reply and
every fault of the scenario table, the dialects of its own wire, a tool round trip."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fault_matrix import FAULTS, IDLE_TIMEOUT, REPLIES, open_connections, pool_size, run_fault_case

from chunkscope.adapters._base import GenerateOptions, LlmAdapter
from chunkscope.adapters.openai_responses import OpenAIResponsesAdapter
from chunkscope.protocol import StreamResult, check, collect
from chunkscope.provider import SCENARIOS, LocalProvider, get_scenario

API_KEY = "sk-responses-local-SECRET-0123456789"
PROMPT = "Hi there, provider"
WIRE = "responses"

# On its own wire a dialect splits what the neutral table counts as one block: block texts per dialect.
OWN_DIALECT_BLOCKS: dict[str, list[tuple[str, str]]] = {
    "dialect-several-output-items": [
        ("reasoning", "Plan the answer."),
        ("text", "First item."),
        ("text", " Second item."),
    ],
    "dialect-summary-parts": [
        ("reasoning", "Part one."),
        ("reasoning", " Part two."),
        ("text", "Summed up."),
    ],
    "dialect-reasoning-text": [("reasoning", "Raw reasoning text."), ("text", "Answer given.")],
}


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as p:
        yield p


def factory(provider: LocalProvider, client: httpx.AsyncClient, idle_timeout: float) -> LlmAdapter:
    return OpenAIResponsesAdapter(provider.base_url, API_KEY, http_client=client, idle_timeout=idle_timeout)


def opts(model: str, messages: list[Any] | None = None) -> GenerateOptions:
    return GenerateOptions("openai", model, messages or [{"role": "user", "content": PROMPT}])


async def stream_scenario(provider: LocalProvider, name: str, **kwargs: Any) -> StreamResult:
    async with OpenAIResponsesAdapter(provider.base_url, API_KEY, idle_timeout=IDLE_TIMEOUT) as adapter:
        return await collect(adapter.stream(opts(name, **kwargs)))


def test_the_own_dialects_listed_here_are_the_wires_dialects() -> None:
    own = {name for name, s in SCENARIOS.items() if s.dialect is not None and WIRE in s.wires}
    assert own == set(OWN_DIALECT_BLOCKS)


@pytest.mark.parametrize("name", REPLIES)
async def test_every_reply_scenario_assembles_to_its_expected_reply_and_checks_clean(
    provider: LocalProvider, name: str
) -> None:
    result = await stream_scenario(provider, name)
    expected = get_scenario(name).expected_for(PROMPT, "responses")  # type: ignore[union-attr]
    assert result.error is None, result.error
    assert (result.text, result.reasoning) == (expected.text, expected.reasoning)
    assert [(t.name, t.arguments) for t in result.tool_calls] == expected.tool_calls
    if name in OWN_DIALECT_BLOCKS:
        blocks = [(b.type, getattr(b, "text", "")) for b in result.blocks]
        assert blocks == OWN_DIALECT_BLOCKS[name]
    else:
        assert [b.type for b in result.blocks] == expected.block_types
    assert result.usage is not None and result.usage.to_dict() == expected.usage
    assert result.finish is not None and result.finish.kind == expected.finish
    assert check(result.chunks, "strict") == []


@pytest.mark.parametrize("name", FAULTS)
async def test_fault_matrix_responses_wire(provider: LocalProvider, name: str) -> None:
    await run_fault_case(factory, provider, name, wire=WIRE, api_key=API_KEY)


async def test_a_tool_round_trip_reads_the_function_call_output_back(provider: LocalProvider) -> None:
    first = await stream_scenario(provider, "tool-roundtrip")
    (call,) = first.tool_calls
    messages: list[Any] = [
        {"role": "user", "content": PROMPT},
        {
            "role": "assistant",
            "content": [{"type": "tool-call", "id": call.id, "name": call.name, "arguments": call.arguments}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool-result", "toolCallId": call.id, "content": [{"type": "text", "text": "18 C"}]}
            ],
        },
    ]
    second = await stream_scenario(provider, "tool-roundtrip", messages=messages)
    assert second.text == "The tool said: 18 C" and second.finish is not None and second.finish.kind == "stop"


async def test_echo_reads_the_last_user_text_of_the_input_items(provider: LocalProvider) -> None:
    messages: list[Any] = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "say this  back"},
    ]
    assert (await stream_scenario(provider, "echo", messages=messages)).text == "say this  back"


async def test_reuses_the_pooled_connection_after_a_complete_stream(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        adapter = factory(provider, client, IDLE_TIMEOUT)
        for _ in range(3):
            assert (await collect(adapter.stream(opts("text")))).ok
        assert open_connections(client) == [] and pool_size(client) == 1


async def test_the_fault_429_keeps_retry_after_and_the_request_id(provider: LocalProvider) -> None:
    result = await run_fault_case(factory, provider, "fault-429", wire=WIRE, api_key=API_KEY)
    assert result.error is not None and result.error.retry_after_ms == 2000
    assert result.error.request_id == "req-429"
