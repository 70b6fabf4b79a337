"""The official OpenAI and Anthropic SDKs are the judges of the wire format: they stream every reply."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest

from chunkscope.provider import SCENARIOS, LocalProvider

PAUSED = ("slow-tokens", "slow-first-byte", "stall-recovers")  # scenarios that wait: tested apart
REPLIES = [name for name, s in SCENARIOS.items() if not s.fault and name not in PAUSED]
# A dialect scenario says its reply in its own wire's dialect (test_wire_dialects.py reads those);
# on the other wire it is a plain reply like the rest.
OPENAI_REPLIES = [
    name for name in REPLIES if "openai" not in SCENARIOS[name].wires or SCENARIOS[name].dialect is None
]
ANTHROPIC_REPLIES = [
    name for name in REPLIES if "anthropic" not in SCENARIOS[name].wires or SCENARIOS[name].dialect is None
]
COMPLETE_FAULTS = ["fault-content-filter", "fault-empty"]
PROMPT = "Hi there"


def openai_client(provider: LocalProvider) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=provider.base_url, api_key="x", max_retries=0)


def anthropic_client(provider: LocalProvider) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=provider.url, api_key="x", max_retries=0)


@pytest.mark.parametrize("model", OPENAI_REPLIES + COMPLETE_FAULTS)
async def test_openai_sdk_streams_the_scenario(provider: LocalProvider, model: str) -> None:
    expected = SCENARIOS[model].expected_for(PROMPT)
    text, reasoning, usage = "", "", None
    tools: dict[int, dict[str, str]] = {}
    finish = None
    async with openai_client(provider) as client:
        stream = await client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in stream:
            assert chunk.object == "chat.completion.chunk"
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                delta = choice.delta
                text += delta.content or ""
                reasoning += getattr(delta, "reasoning_content", None) or ""
                for call in delta.tool_calls or []:
                    entry = tools.setdefault(call.index, {"name": "", "arguments": ""})
                    if call.function is not None:
                        entry["name"] += call.function.name or ""
                        entry["arguments"] += call.function.arguments or ""
                finish = choice.finish_reason or finish
    assert (text, reasoning) == (expected.text, expected.reasoning)
    assert [(t["name"], t["arguments"] or "{}") for t in tools.values()] == expected.tool_calls
    assert usage is not None and expected.usage is not None
    assert (
        usage.prompt_tokens
        - (usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else 0)
        == (expected.usage["inputTokens"])
    )
    assert usage.completion_tokens == expected.usage["outputTokens"]
    assert finish in {"stop": ("stop",), "tool-calls": ("tool_calls",), "max-tokens": ("length",)}.get(
        expected.finish or "", ("stop", "content_filter")
    )


@pytest.mark.parametrize("model", ["text", "reasoning", "tool-call", "interleaved-tools", "late-id"])
async def test_openai_sdk_stream_helper_assembles_the_final_completion(
    provider: LocalProvider, model: str
) -> None:
    expected = SCENARIOS[model].expected
    async with (
        openai_client(provider) as client,
        client.chat.completions.stream(
            model=model,
            messages=[{"role": "user", "content": PROMPT}],
            stream_options={"include_usage": True},
        ) as stream,
    ):
        async for _event in stream:
            pass
        final = await stream.get_final_completion()
    message = final.choices[0].message
    assert (message.content or "") == expected.text
    calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]  # type: ignore[union-attr]
    assert calls == expected.tool_calls
    if model == "late-id":
        assert message.tool_calls is not None and message.tool_calls[0].id == "call_late"


async def test_openai_sdk_reads_a_non_streaming_completion(provider: LocalProvider) -> None:
    async with openai_client(provider) as client:
        completion = await client.chat.completions.create(
            model="reasoning", messages=[{"role": "user", "content": PROMPT}]
        )
    message = completion.choices[0].message
    assert message.content == "Hello there!"
    assert (message.model_extra or {})["reasoning_content"] == "The user greets me. I should greet back."


@pytest.mark.parametrize("model", ANTHROPIC_REPLIES + COMPLETE_FAULTS)
async def test_anthropic_sdk_streams_the_scenario(provider: LocalProvider, model: str) -> None:
    expected = SCENARIOS[model].expected_for(PROMPT)
    async with (
        anthropic_client(provider) as client,
        client.messages.stream(
            model=model, max_tokens=1024, messages=[{"role": "user", "content": PROMPT}]
        ) as stream,
    ):
        async for _event in stream:
            pass
        final = await stream.get_final_message()
    text = "".join(b.text for b in final.content if b.type == "text")
    reasoning = "".join(b.thinking for b in final.content if b.type == "thinking")
    tools = [(b.name, json.dumps(b.input)) for b in final.content if b.type == "tool_use"]
    assert (text, reasoning) == (expected.text, expected.reasoning)
    assert [(n, json.loads(a)) for n, a in tools] == [(n, json.loads(a)) for n, a in expected.tool_calls]
    kinds = {"text": "text", "thinking": "reasoning", "tool_use": "tool-call"}
    assert [kinds[b.type] for b in final.content] == expected.block_types
    assert expected.usage is not None
    assert final.usage.input_tokens == expected.usage["inputTokens"]
    assert final.usage.output_tokens == expected.usage["outputTokens"]
    assert final.usage.cache_read_input_tokens == expected.usage.get("cacheReadTokens")
    if reasoning:
        assert all(b.signature for b in final.content if b.type == "thinking")


async def test_anthropic_sdk_sees_the_raw_input_json_fragments(provider: LocalProvider) -> None:
    fragments: list[str] = []
    async with anthropic_client(provider) as client:
        stream = await client.messages.create(
            model="tool-call", max_tokens=64, messages=[{"role": "user", "content": PROMPT}], stream=True
        )
        async for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                fragments.append(event.delta.partial_json)
    assert "".join(fragments) == '{"city": "Tokyo", "unit": "celsius"}'
    assert len(fragments) == 5


async def test_anthropic_sdk_reads_a_non_streaming_message(provider: LocalProvider) -> None:
    async with anthropic_client(provider) as client:
        message = await client.messages.create(
            model="reasoning", max_tokens=64, messages=[{"role": "user", "content": PROMPT}]
        )
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert message.stop_reason == "end_turn"


@pytest.mark.parametrize(
    ("model", "error"),
    [
        ("fault-401", openai.AuthenticationError),
        ("fault-429", openai.RateLimitError),
        ("fault-500", openai.InternalServerError),
        ("fault-context", openai.BadRequestError),
        ("no-such-model", openai.NotFoundError),
    ],
)
async def test_openai_sdk_raises_its_own_error_for_status_faults(
    provider: LocalProvider, model: str, error: type[Exception]
) -> None:
    async with openai_client(provider) as client:
        with pytest.raises(error):
            await client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": PROMPT}], stream=True
            )


async def test_openai_sdk_raises_on_the_in_stream_error(provider: LocalProvider) -> None:
    seen: list[Any] = []
    async with openai_client(provider) as client:
        stream = await client.chat.completions.create(
            model="fault-in-stream-error", messages=[{"role": "user", "content": PROMPT}], stream=True
        )
        with pytest.raises(openai.APIError, match="overloaded"):
            async for chunk in stream:
                seen.append(chunk)
    assert "".join(c.choices[0].delta.content or "" for c in seen if c.choices) == "Hello!"


async def test_anthropic_sdk_raises_on_the_in_stream_error_and_status_faults(provider: LocalProvider) -> None:
    async with anthropic_client(provider) as client:
        with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
            async with client.messages.stream(
                model="fault-in-stream-error", max_tokens=64, messages=[{"role": "user", "content": PROMPT}]
            ) as stream:
                async for _event in stream:
                    pass
        with pytest.raises(anthropic.RateLimitError) as info:
            await client.messages.create(
                model="fault-429", max_tokens=64, messages=[{"role": "user", "content": PROMPT}]
            )
    assert info.value.response.headers["request-id"] == "req-429"


async def test_both_sdks_list_the_scenarios_as_models(provider: LocalProvider) -> None:
    async with openai_client(provider) as oai, anthropic_client(provider) as ant:
        openai_ids = [m.id async for m in oai.models.list()]
        anthropic_ids = [m.id async for m in ant.models.list()]
    assert openai_ids == anthropic_ids == list(SCENARIOS)
