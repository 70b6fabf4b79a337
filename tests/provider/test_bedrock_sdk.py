"""boto3's ``bedrock-runtime`` client judges the local provider's Bedrock wire: it streams every
reply, and where it and our adapter read the same bytes they agree on text, reasoning, tool
calls and usage; faults reach boto3 as the errors real Bedrock raises.

boto3 is synchronous: each call runs in a worker thread (``asyncio.to_thread``) while the
provider serves from its own thread.
"""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EventStreamError

from chunkscope.adapters import BedrockAdapter, GenerateOptions
from chunkscope.protocol import collect
from chunkscope.provider import SCENARIOS, LocalProvider

PAUSED = ("slow-tokens", "slow-first-byte", "stall-recovers")  # scenarios that wait: tested apart
REPLIES = [name for name, s in SCENARIOS.items() if not s.fault and name not in PAUSED]
COMPLETE_FAULTS = ["fault-content-filter", "fault-empty"]
PROMPT = "Hi there"


def client(provider: LocalProvider) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=provider.url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),  # a fault is read, not retried
    )


def boto_reply(provider: LocalProvider, model: str, tool_result: str | None = None) -> dict[str, Any]:
    """What boto3's converse_stream says for ``model``, assembled by hand from its events."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": PROMPT}]}]
    response = client(provider).converse_stream(modelId=model, messages=messages)
    text, reasoning, stop, usage = [], [], None, None
    calls: dict[int, dict[str, Any]] = {}
    kinds: list[str] = []
    for event in response["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tool = start["start"]["toolUse"]
            calls[start["contentBlockIndex"]] = {"id": tool["toolUseId"], "name": tool["name"], "input": ""}
            kinds.append("tool-call")
        elif "contentBlockDelta" in event:
            delta, index = (
                event["contentBlockDelta"]["delta"],
                event["contentBlockDelta"]["contentBlockIndex"],
            )
            if "text" in delta:
                text.append(delta["text"])
                kinds.append("text")
            elif "reasoningContent" in delta and "text" in delta["reasoningContent"]:
                reasoning.append(delta["reasoningContent"]["text"])
                kinds.append("reasoning")
            elif "toolUse" in delta:
                calls[index]["input"] += delta["toolUse"]["input"]
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
        elif "metadata" in event:
            usage = event["metadata"]["usage"]
    blocks = [k for i, k in enumerate(kinds) if i == 0 or k != kinds[i - 1] or k == "tool-call"]
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "calls": [(c["name"], c["input"] or "{}") for c in calls.values()],
        "ids": [c["id"] for c in calls.values()],
        "blocks": blocks,
        "stop": stop,
        "usage": usage,
    }


async def ours(provider: LocalProvider, model: str) -> Any:
    async with BedrockAdapter(provider.url, "bedrock-key-0123456789") as adapter:
        return await collect(
            adapter.stream(GenerateOptions("aws", model, [{"role": "user", "content": PROMPT}]))
        )


_STOPS = {"stop": "end_turn", "tool-calls": "tool_use", "max-tokens": "max_tokens"}


@pytest.mark.parametrize("model", ["long-40" if n == "long" else n for n in REPLIES] + COMPLETE_FAULTS)
async def test_boto3_streams_the_scenario_and_agrees_with_our_adapter(
    provider: LocalProvider, model: str
) -> None:
    sdk = await asyncio.to_thread(boto_reply, provider, model)
    result = await ours(provider, model)
    scenario = SCENARIOS.get(model) or SCENARIOS["long"]
    if model.startswith("long"):
        assert sdk["text"] == result.text and sdk["text"].startswith("word0 word1")
    else:
        expected = scenario.expected_for(PROMPT, "bedrock")
        assert (sdk["text"], sdk["reasoning"], sdk["calls"]) == (
            expected.text,
            expected.reasoning,
            expected.tool_calls,
        )
        if expected.finish in _STOPS:
            assert sdk["stop"] == _STOPS[expected.finish]
    # the same bytes, read by both
    assert (sdk["text"], sdk["reasoning"]) == (result.text, result.reasoning)
    assert sdk["calls"] == [(t.name, t.arguments) for t in result.tool_calls]
    assert sdk["ids"] == [t.id for t in result.tool_calls]
    assert sdk["blocks"] == [b.type for b in result.blocks]
    usage = sdk["usage"]
    assert result.usage is not None
    assert (usage["inputTokens"], usage["outputTokens"]) == (
        result.usage.input_tokens,
        result.usage.output_tokens,
    )
    assert usage.get("cacheReadInputTokens") == result.usage.cache_read_tokens
    assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"] + (
        usage.get("cacheReadInputTokens") or 0
    )


def test_the_content_filter_is_a_guardrail_stop_for_boto3(provider: LocalProvider) -> None:
    assert boto_reply(provider, "fault-content-filter")["stop"] == "guardrail_intervened"


def test_the_in_stream_error_is_an_exception_frame_boto3_raises_by_its_name(provider: LocalProvider) -> None:
    with pytest.raises(EventStreamError) as raised:
        boto_reply(provider, "fault-in-stream-error")
    assert raised.value.response["Error"]["Code"] == "serviceUnavailableException"


def test_the_malformed_fault_is_a_frame_whose_checksum_boto3_refuses(provider: LocalProvider) -> None:
    from botocore.eventstream import ChecksumMismatch

    with pytest.raises(ChecksumMismatch):
        boto_reply(provider, "fault-malformed")


@pytest.mark.parametrize(
    ("model", "status", "code"),
    [
        ("fault-429", 429, "ThrottlingException"),
        ("fault-500", 500, "InternalServerException"),
        ("fault-context", 400, "ValidationException"),
        ("fault-401", 401, "UnrecognizedClientException"),
        ("no-such-scenario", 404, "ResourceNotFoundException"),
    ],
)
def test_http_faults_reach_boto3_as_the_exception_x_amzn_error_type_names(
    provider: LocalProvider, model: str, status: int, code: str
) -> None:
    with pytest.raises(ClientError) as raised:
        boto_reply(provider, model)
    error = raised.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == status and error["Error"]["Code"] == code
    assert error["Error"]["Message"]


def test_the_non_streaming_converse_answer_reads_in_boto3(provider: LocalProvider) -> None:
    answer = client(provider).converse(
        modelId="reasoning-text-tools", messages=[{"role": "user", "content": [{"text": "x"}]}]
    )
    content = answer["output"]["message"]["content"]
    assert content[0]["reasoningContent"]["reasoningText"]["text"] == "Two lookups needed."
    assert content[1] == {"text": "Checking both."}
    assert [c["toolUse"]["name"] for c in content[2:]] == ["get_weather", "get_time"]
    assert answer["stopReason"] == "tool_use" and answer["usage"]["inputTokens"] == 12


def test_a_boto3_tool_roundtrip_quotes_the_tool_result(provider: LocalProvider) -> None:
    messages = [
        {"role": "user", "content": [{"text": PROMPT}]},
        {
            "role": "assistant",
            "content": [
                {
                    "toolUse": {
                        "toolUseId": "call_weather_1",
                        "name": "get_weather",
                        "input": {"city": "Tokyo"},
                    }
                }
            ],
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "call_weather_1", "content": [{"text": "rain"}]}}],
        },
    ]
    response = client(provider).converse_stream(modelId="tool-roundtrip", messages=messages)
    text = "".join(
        e["contentBlockDelta"]["delta"].get("text", "")
        for e in response["stream"]
        if "contentBlockDelta" in e
    )
    assert text == "The tool said: rain"
