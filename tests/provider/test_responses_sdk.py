"""The official ``openai`` SDK judges the provider's Responses wire, offline: it streams every reply
(``client.responses.create(stream=True)`` and the accumulating ``client.responses.stream``) and
agrees with OpenAIResponsesAdapter, reading the same scenario, on text, reasoning, tool calls
and usage."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from chunkscope.adapters._base import GenerateOptions
from chunkscope.adapters.openai_responses import OpenAIResponsesAdapter
from chunkscope.protocol import collect
from chunkscope.provider import SCENARIOS, LocalProvider

PAUSED = ("slow-tokens", "slow-first-byte", "stall-recovers")  # scenarios that wait: tested apart
REPLIES = [name for name, s in SCENARIOS.items() if not s.fault and name not in PAUSED]
COMPLETE_FAULTS = ["fault-content-filter", "fault-empty"]
PROMPT = "Hi there"


def client_of(provider: LocalProvider) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=provider.base_url, api_key="x", max_retries=0)


def disjoint(usage: Any) -> dict[str, int]:
    """The SDK's usage (input includes the cache hits) as the protocol's disjoint counts (a count sent
    as 0 stays 0)."""
    cached = usage.input_tokens_details.cached_tokens
    reasoning = usage.output_tokens_details.reasoning_tokens
    out = {"inputTokens": usage.input_tokens - (cached or 0), "outputTokens": usage.output_tokens}
    if cached is not None:
        out["cacheReadTokens"] = cached
    if reasoning is not None:
        out["reasoningTokens"] = reasoning
    return out


async def sdk_reply(provider: LocalProvider, model: str) -> dict[str, Any]:
    """What the SDK's raw event stream says: text, reasoning, tool calls, usage, terminal status."""
    text, reasoning, calls, usage, status = "", "", [], None, None
    async with client_of(provider) as client:
        stream = await client.responses.create(model=model, input=PROMPT, stream=True)
        async for event in stream:
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                reasoning += event.delta
            elif event.type == "response.output_item.done" and event.item.type == "function_call":
                calls.append((event.item.name, event.item.arguments or "{}"))
            elif event.type in ("response.completed", "response.incomplete"):
                usage, status = disjoint(event.response.usage), event.response.status
    return {"text": text, "reasoning": reasoning, "tool_calls": calls, "usage": usage, "status": status}


async def adapter_reply(provider: LocalProvider, model: str) -> dict[str, Any]:
    async with OpenAIResponsesAdapter(provider.base_url, "x") as adapter:
        result = await collect(
            adapter.stream(GenerateOptions("openai", model, [{"role": "user", "content": PROMPT}]))
        )
    return {
        "text": result.text,
        "reasoning": result.reasoning,
        "tool_calls": [(t.name, t.arguments) for t in result.tool_calls],
        "usage": result.usage.to_dict() if result.usage is not None else None,
        "finish": result.finish.kind if result.finish is not None else None,
    }


@pytest.mark.parametrize("model", REPLIES + COMPLETE_FAULTS)
async def test_the_sdk_streams_every_reply_as_the_table_says_and_as_the_adapter_reads_it(
    provider: LocalProvider, model: str
) -> None:
    expected = SCENARIOS[model].expected_for(PROMPT, "responses")
    sdk = await sdk_reply(provider, model)
    ours = await adapter_reply(provider, model)
    assert (sdk["text"], sdk["reasoning"], sdk["tool_calls"]) == (
        expected.text,
        expected.reasoning,
        expected.tool_calls,
    )
    assert sdk["usage"] == expected.usage
    assert {k: sdk[k] for k in ("text", "reasoning", "tool_calls", "usage")} == {
        k: ours[k] for k in ("text", "reasoning", "tool_calls", "usage")
    }
    status = {
        "max-tokens": "incomplete",
        "error": "incomplete" if model == "fault-content-filter" else "completed",
    }
    assert sdk["status"] == status.get(str(expected.finish), "completed")
    assert ours["finish"] == expected.finish


@pytest.mark.parametrize("model", ["text", "reasoning-text-tools", "dialect-summary-parts", "cache-hit"])
async def test_the_accumulating_stream_helper_rebuilds_the_final_response(
    provider: LocalProvider, model: str
) -> None:
    expected = SCENARIOS[model].expected_for(PROMPT, "responses")
    async with client_of(provider) as client, client.responses.stream(model=model, input=PROMPT) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_response()
    assert final.status == "completed" and final.output_text == expected.text
    calls = [(item.name, item.arguments) for item in final.output if item.type == "function_call"]
    assert calls == expected.tool_calls
    summaries = "".join(
        part.text for item in final.output if item.type == "reasoning" for part in item.summary
    )
    assert summaries == expected.reasoning
    assert disjoint(final.usage) == expected.usage


async def test_the_sdk_forgives_the_in_stream_error_the_adapter_reports(provider: LocalProvider) -> None:
    # The SDK hands the error event and response.failed over as events (it does not raise);
    # the adapter ends with the code the event's code names.
    async with client_of(provider) as client:
        stream = await client.responses.create(model="fault-in-stream-error", input=PROMPT, stream=True)
        kinds = [event.type async for event in stream]
    assert kinds[-2:] == ["error", "response.failed"]
    async with OpenAIResponsesAdapter(provider.base_url, "x") as adapter:
        options = GenerateOptions("openai", "fault-in-stream-error", [{"role": "user", "content": PROMPT}])
        result = await collect(adapter.stream(options))
    assert result.error is not None and result.error.code == "SERVER" and result.text == "Hello!"


@pytest.mark.parametrize(
    ("model", "error"),
    [
        ("fault-401", openai.AuthenticationError),
        ("fault-429", openai.RateLimitError),
        ("fault-500", openai.InternalServerError),
        ("fault-context", openai.BadRequestError),
    ],
)
async def test_the_sdk_reads_the_http_faults_as_its_own_errors(
    provider: LocalProvider, model: str, error: type[Exception]
) -> None:
    async with client_of(provider) as client:
        with pytest.raises(error):
            await client.responses.create(model=model, input=PROMPT, stream=True)


async def test_the_non_streaming_answer_is_the_response_object(provider: LocalProvider) -> None:
    async with client_of(provider) as client:
        response = await client.responses.create(
            model="tool-call", input=[{"role": "user", "content": PROMPT}]
        )
    assert response.status == "completed" and response.output_text == "Let me check."
    (call,) = [item for item in response.output if item.type == "function_call"]
    assert (call.call_id, call.name) == ("call_weather_1", "get_weather")
    assert call.arguments == '{"city": "Tokyo", "unit": "celsius"}'
    assert response.usage is not None and response.usage.output_tokens == 8


async def test_the_tap_reads_a_responses_call_the_sdk_makes_through_it(provider: LocalProvider) -> None:
    from chunkscope.tap import Tap

    with Tap(upstream=provider.url) as tap:
        async with openai.AsyncOpenAI(base_url=f"{tap.base_url}/v1", api_key="x", max_retries=0) as client:
            stream = await client.responses.create(model="reasoning-text-tools", input=PROMPT, stream=True)
            async for _ in stream:
                pass
        (call,) = tap.calls
        assert call.wait(5) and call.wire == "responses" and call.result is not None
    expected = SCENARIOS["reasoning-text-tools"].expected_for(PROMPT, "responses")
    assert (call.result.text, call.result.reasoning) == (expected.text, expected.reasoning)
    assert call.result.usage is not None and call.result.usage.to_dict() == expected.usage
    assert call.result.violations == []
