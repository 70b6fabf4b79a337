"""GenerateOptions → Anthropic Messages request bodies."""

from __future__ import annotations

from typing import Any

import pytest

from chunkscope.adapters._base import GenerateOptions
from chunkscope.adapters.anthropic.request import (
    DEFAULT_MAX_TOKENS,
    THINKING_BUDGETS,
    THINKING_EFFORTS,
    build_body,
    thinking_config,
)
from chunkscope.protocol import LlmError


def options(messages: list[Any], **extra: Any) -> GenerateOptions:
    return GenerateOptions("anthropic", "claude-test", messages, **extra)


def test_a_plain_prompt_becomes_a_streaming_body_with_a_default_max_tokens() -> None:
    body = build_body(options([{"role": "user", "content": "hi"}]))
    assert body == {
        "model": "claude-test",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "stream": True,
    }


def test_sends_system_tools_temperature_stop_and_max_tokens() -> None:
    body = build_body(
        options(
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
            system="You are a test.",
            tools=[
                {
                    "name": "get_weather",
                    "description": "Weather by city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
                {"name": "ping"},
            ],
            temperature=0.2,
            stop=["END"],
            max_tokens=100,
        )
    )
    assert body["system"] == "You are a test.\n\nBe brief."
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Weather by city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
        {"name": "ping", "input_schema": {"type": "object", "properties": {}}},
    ]
    assert body["temperature"] == 0.2
    assert body["stop_sequences"] == ["END"]
    assert body["max_tokens"] == 100
    assert [m["role"] for m in body["messages"]] == ["user"]


def test_translates_a_tool_round_trip_into_tool_use_and_tool_result_blocks() -> None:
    body = build_body(
        options(
            [
                {"role": "user", "content": "weather?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Let me check."},
                        {
                            "type": "tool-call",
                            "id": "toolu_1",
                            "name": "get_weather",
                            "arguments": '{"city": "Tokyo"}',
                        },
                        {"type": "tool-call", "id": "toolu_2", "name": "ping", "arguments": ""},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool-result",
                            "toolCallId": "toolu_1",
                            "content": [{"type": "text", "text": "sunny"}],
                        },
                        {"type": "tool-result", "toolCallId": "toolu_2", "content": [], "isError": True},
                    ],
                },
            ]
        )
    )
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Tokyo"}},
            {"type": "tool_use", "id": "toolu_2", "name": "ping", "input": {}},
        ],
    }
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "sunny"}]},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": [], "is_error": True},
        ],
    }


def test_replays_reasoning_as_a_signed_thinking_block_and_drops_unsigned_reasoning() -> None:
    signatures = {"known thought": "sig-1"}
    body = build_body(
        options(
            [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "reasoning", "text": "known thought"},
                        {"type": "reasoning", "text": "foreign thought"},
                        {"type": "text", "text": "answer"},
                    ],
                },
                {"role": "user", "content": "next"},
            ]
        ),
        signature_of=signatures.get,
    )
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "known thought", "signature": "sig-1"},
        {"type": "text", "text": "answer"},
    ]


def test_skips_empty_text_and_empty_messages() -> None:
    body = build_body(options([{"role": "user", "content": ""}, {"role": "user", "content": "hi"}]))
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": [{"type": "tool-call", "id": "t", "name": "x", "arguments": "{}"}]}],
        [{"role": "assistant", "content": [{"type": "tool-result", "toolCallId": "t", "content": []}]}],
        [{"role": "user", "content": [{"type": "reasoning", "text": "x"}]}],
        [
            {
                "role": "assistant",
                "content": [{"type": "tool-call", "id": "t", "name": "x", "arguments": "[1]"}],
            }
        ],
        [{"role": "assistant", "content": [{"type": "tool-call", "id": "t", "name": "x", "arguments": "{"}]}],
        [{"role": "system", "content": [{"type": "reasoning", "text": "x"}]}],
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": "t",
                        "content": [{"type": "reasoning", "text": "x"}],
                    }
                ],
            }
        ],
    ],
)
def test_content_the_wire_cannot_carry_is_refused_as_unsupported_option(messages: list[Any]) -> None:
    with pytest.raises(LlmError) as info:
        build_body(options(messages))
    assert info.value.code == "UNSUPPORTED_OPTION"


def test_publishes_off_low_medium_high_efforts() -> None:
    assert THINKING_EFFORTS.ids == ("off", "low", "medium", "high")
    assert THINKING_EFFORTS.default is None


@pytest.mark.parametrize("effort", ["low", "medium", "high"])
def test_an_effort_enables_thinking_with_its_budget_below_max_tokens(effort: str) -> None:
    body = build_body(options([{"role": "user", "content": "hi"}], reasoning_effort=effort))
    budget = THINKING_BUDGETS[effort]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS + budget


def test_an_explicit_max_tokens_caps_the_thinking_budget() -> None:
    thinking, max_tokens = thinking_config("high", 2000)
    assert thinking == {"type": "enabled", "budget_tokens": 1999}
    assert max_tokens == 2000


def test_an_effort_without_a_thinking_budget_is_unsupported_reasoning_effort() -> None:
    # A user-given ModelInfo may list efforts the wire has no budget for: an LlmError, not a KeyError.
    with pytest.raises(LlmError) as caught:
        thinking_config("max", None)
    assert caught.value.code == "UNSUPPORTED_REASONING_EFFORT"
    assert "'max'" in caught.value.message and "off, low, medium, high" in caught.value.message


def test_effort_off_disables_thinking() -> None:
    body = build_body(options([{"role": "user", "content": "hi"}], reasoning_effort="off"))
    assert body["thinking"] == {"type": "disabled"}
