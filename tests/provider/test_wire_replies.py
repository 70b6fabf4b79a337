"""Every reply scenario, read off the raw HTTP bytes of both wires, says what the table says."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from _provider_wire_reader import (
    ANTHROPIC_FINISH,
    OPENAI_FINISH,
    Reply,
    fold_anthropic,
    fold_openai,
    parse_sse,
)

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
USER = [{"role": "user", "content": "Hi there"}]


def openai_request(model: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": model,
        "messages": USER,
        "stream": True,
        "stream_options": {"include_usage": True},
        **extra,
    }


def anthropic_request(model: str, **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": USER, "max_tokens": 1024, "stream": True, **extra}


async def openai_stream(provider: LocalProvider, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        response = await client.post(provider.base_url + "/chat/completions", json=body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    return response


async def anthropic_stream(provider: LocalProvider, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        response = await client.post(provider.url + "/v1/messages", json=body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    return response


@pytest.mark.parametrize("model", OPENAI_REPLIES + COMPLETE_FAULTS)
async def test_openai_stream_says_what_the_table_says(provider: LocalProvider, model: str) -> None:
    reply = fold_openai(parse_sse((await openai_stream(provider, openai_request(model))).text))
    assert_says_what_the_table_says(reply, model, OPENAI_FINISH)


@pytest.mark.parametrize("model", ANTHROPIC_REPLIES + COMPLETE_FAULTS)
async def test_anthropic_stream_says_what_the_table_says(provider: LocalProvider, model: str) -> None:
    reply = fold_anthropic(parse_sse((await anthropic_stream(provider, anthropic_request(model))).text))
    assert_says_what_the_table_says(reply, model, ANTHROPIC_FINISH)


def assert_says_what_the_table_says(reply: Reply, model: str, finish_table: dict[str, str]) -> None:
    expected = SCENARIOS[model].expected_for("Hi there")
    assert reply.ended
    assert (reply.text, reply.reasoning, reply.tool_calls) == (
        expected.text,
        expected.reasoning,
        expected.tool_calls,
    )
    assert reply.block_types == expected.block_types
    assert reply.usage == expected.usage
    assert finish_kind(reply, finish_table) == expected.finish


def finish_kind(reply: Reply, table: dict[str, str]) -> str:
    kind = table.get(reply.finish or "", "error")
    return "error" if kind == "stop" and not reply.block_types else kind  # an empty response


async def test_openai_tool_ids_arrive_where_the_table_says(provider: LocalProvider) -> None:
    async def tools(model: str) -> list[list[dict[str, Any]]]:
        events = parse_sse((await openai_stream(provider, openai_request(model))).text)
        calls = []
        for event in events[:-1]:
            for choice in json.loads(event.data)["choices"]:
                if "tool_calls" in choice["delta"]:
                    calls.append(choice["delta"]["tool_calls"])
        return calls

    late = await tools("late-id")
    assert "id" not in late[0][0] and late[0][0]["function"]["name"] == "lookup"
    assert late[1][0]["id"] == "call_late"
    assert all("id" not in call[0] for call in await tools("no-id"))
    (ping,) = await tools("no-args")
    assert ping[0]["id"] == "call_ping" and "arguments" not in ping[0]["function"]
    interleaved = [call[0]["index"] for call in await tools("interleaved-tools")]
    assert interleaved == [0, 1, 0, 1, 0, 1]


async def test_anthropic_tool_use_blocks_always_have_ids(provider: LocalProvider) -> None:
    for model, expected_id in [
        ("late-id", "call_late"),
        ("no-id", "toolu_chunkscope_0"),
        ("no-args", "call_ping"),
    ]:
        reply = fold_anthropic(parse_sse((await anthropic_stream(provider, anthropic_request(model))).text))
        assert [tool["id"] for tool in reply.tools.values()] == [expected_id]


async def test_thinking_block_gets_a_signature_before_it_stops(provider: LocalProvider) -> None:
    events = parse_sse((await anthropic_stream(provider, anthropic_request("reasoning"))).text)
    names = [(e.event, json.loads(e.data).get("delta", {}).get("type")) for e in events]
    stop = names.index(("content_block_stop", None))
    assert names[stop - 1] == ("content_block_delta", "signature_delta")


async def test_openai_first_chunk_is_the_role_with_empty_content(provider: LocalProvider) -> None:
    for model, first in [
        ("text", {"role": "assistant", "content": ""}),
        ("reasoning", {"role": "assistant", "content": None, "reasoning_content": ""}),
    ]:
        events = parse_sse((await openai_stream(provider, openai_request(model))).text)
        assert json.loads(events[0].data)["choices"][0]["delta"] == first


async def test_usage_chunk_only_when_include_usage_is_asked(provider: LocalProvider) -> None:
    body = openai_request("text")
    del body["stream_options"]
    events = parse_sse((await openai_stream(provider, body)).text)
    assert events[-1].data == "[DONE]"
    assert all("usage" not in json.loads(e.data) for e in events[:-1])
    usage_chunk = json.loads(parse_sse((await openai_stream(provider, openai_request("text"))).text)[-2].data)
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["total_tokens"] == 20


async def test_echo_sends_back_the_last_user_text_split_on_spaces(provider: LocalProvider) -> None:
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "say "}, {"type": "text", "text": "this  back"}],
        },
    ]
    events = parse_sse((await openai_stream(provider, openai_request("echo", messages=messages))).text)
    pieces = [
        c["choices"][0]["delta"].get("content")
        for c in (json.loads(e.data) for e in events[:-1])
        if c["choices"] and c["choices"][0]["delta"].get("content")
    ]
    assert pieces == ["say", " this", "  back"]
    reply = fold_anthropic(
        parse_sse((await anthropic_stream(provider, anthropic_request("echo", messages=messages))).text)
    )
    assert reply.text == "say this  back"


async def test_long_n_sends_n_tokens_one_per_event(provider: LocalProvider) -> None:
    reply = fold_openai(parse_sse((await openai_stream(provider, openai_request("long-1000"))).text))
    assert reply.text.split() == [f"word{i}" for i in range(1000)]
    assert reply.usage == {"inputTokens": 12, "outputTokens": 1000}


async def test_openai_non_streaming_body(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        body = (
            await client.post(
                provider.base_url + "/chat/completions", json={"model": "reasoning", "messages": USER}
            )
        ).json()
        tools = (
            await client.post(
                provider.base_url + "/chat/completions", json={"model": "tool-call", "messages": USER}
            )
        ).json()
    assert body["object"] == "chat.completion"
    message = body["choices"][0]["message"]
    assert (message["content"], message["reasoning_content"]) == (
        "Hello there!",
        "The user greets me. I should greet back.",
    )
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["completion_tokens"] == 11
    (call,) = tools["choices"][0]["message"]["tool_calls"]
    assert call == {
        "id": "call_weather_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Tokyo", "unit": "celsius"}'},
    }


async def test_anthropic_non_streaming_body(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.post(
            provider.url + "/v1/messages", json={"model": "tool-call", "messages": USER, "max_tokens": 10}
        )
    body = response.json()
    assert body["type"] == "message" and body["stop_reason"] == "tool_use"
    assert body["content"] == [
        {"type": "text", "text": "Let me check."},
        {
            "type": "tool_use",
            "id": "call_weather_1",
            "name": "get_weather",
            "input": {"city": "Tokyo", "unit": "celsius"},
        },
    ]
    assert body["usage"] == {"input_tokens": 12, "output_tokens": 8}


async def test_token_delay_paces_every_event() -> None:
    async with LocalProvider(token_delay=0.02) as slow, httpx.AsyncClient() as client:
        start = time.monotonic()
        response = await client.post(slow.base_url + "/chat/completions", json=openai_request("text"))
        elapsed = time.monotonic() - start
    # 12 events (role, 8 deltas, finish, usage, [DONE]) → 11 pauses (less a little clock slack).
    assert elapsed >= 11 * 0.02 * 0.9
    assert fold_openai(parse_sse(response.text)).text == "Hello! I am the chunkscope local provider."


async def test_slow_tokens_waits_50_ms_between_events(provider: LocalProvider) -> None:
    start = time.monotonic()
    response = await anthropic_stream(provider, anthropic_request("slow-tokens"))
    elapsed = time.monotonic() - start
    events = parse_sse(response.text)
    assert fold_anthropic(events).text == "Hello! I am the chunkscope local provider."
    assert elapsed >= (len(events) - 1) * 0.05 * 0.9
