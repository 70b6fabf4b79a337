"""Issue 8 §3 over HTTP: small streams in the shapes real OpenAI-compatible servers and the
Anthropic API send, through the whole adapter (mock transport), read instead of lost."""

from __future__ import annotations

import json
from typing import Any

import httpx

from chunkscope.adapters import AnthropicAdapter, GenerateOptions, OpenAICompatAdapter
from chunkscope.protocol import StreamResult, collect

KEY = "sk-dialect-test-0123"
SSE = {"content-type": "text/event-stream"}


def body(*payloads: Any, done: str = "data: [DONE]\n\n") -> bytes:
    return ("".join(f"data: {json.dumps(p)}\n\n" for p in payloads) + done).encode()


def choice(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def client(raw: bytes) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.MockTransport(lambda request: httpx.Response(200, headers=SSE, content=raw))
    )


async def stream_openai(raw: bytes, **kwargs: Any) -> StreamResult:
    adapter = OpenAICompatAdapter("http://dialect.test", KEY, http_client=client(raw), **kwargs)
    options = GenerateOptions("x", "some-model", [{"role": "user", "content": "hi"}])
    return await collect(adapter.stream(options))


def blocks(result: StreamResult) -> list[tuple[str, str]]:
    return [(b.type, getattr(b, "text", "")) for b in result.blocks]


async def test_mistral_content_parts_stream_as_reasoning_then_text() -> None:
    raw = body(
        choice(
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "2+2"}]}],
            }
        ),
        choice({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": " is 4"}]}]}),
        choice({"content": [{"type": "text", "text": "Four."}]}, "stop"),
        choice({}, None, usage={"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}),
    )
    result = await stream_openai(raw)
    assert result.error is None
    assert blocks(result) == [("reasoning", "2+2 is 4"), ("text", "Four.")]


async def test_openrouter_reasoning_details_stream_as_reasoning_counted_once() -> None:
    raw = body(
        choice({"reasoning": "Hmm", "reasoning_details": [{"type": "reasoning.text", "text": "Hmm"}]}),
        choice({"reasoning": ", yes", "reasoning_details": [{"type": "reasoning.text", "text": ", yes"}]}),
        choice({"content": "Yes"}, "stop"),
    )
    result = await stream_openai(raw)
    assert blocks(result) == [("reasoning", "Hmm, yes"), ("text", "Yes")]

    only_details = body(
        choice({"reasoning_details": [{"type": "reasoning.summary", "summary": "Plan."}]}),
        choice({"content": "Done"}, "stop"),
    )
    result = await stream_openai(only_details)
    assert blocks(result) == [("reasoning", "Plan."), ("text", "Done")]


async def test_xai_usage_has_output_tokens_including_reasoning() -> None:
    usage = {
        "prompt_tokens": 12,
        "completion_tokens": 3,
        "total_tokens": 55,
        "completion_tokens_details": {"reasoning_tokens": 40},
    }
    result = await stream_openai(body(choice({"content": "ok"}, "stop", usage=usage)))
    assert result.usage is not None
    assert (result.usage.output_tokens, result.usage.reasoning_tokens) == (43, 40)


async def test_a_final_done_without_the_closing_blank_line_ends_cleanly() -> None:
    for ending in ("data: [DONE]", "data: [DONE]\n", "data: [DONE]\r"):
        result = await stream_openai(body(choice({"content": "hi"}, "stop"), done=ending))
        assert result.error is None, ending
        assert result.finish is not None and result.finish.kind == "stop"


async def test_a_cut_payload_at_the_end_is_still_stream_closed() -> None:
    raw = body(choice({"content": "hi"}), done='data: {"choices": [{"delta": {"content": "x')
    result = await stream_openai(raw)
    assert result.error is not None and result.error.code == "STREAM_CLOSED"


async def test_think_tags_become_reasoning_with_the_constructor_flag() -> None:
    raw = body(
        choice({"content": "<th"}),
        choice({"content": "ink>Let me see.</thi"}),
        choice({"content": "nk>It is 4."}, "stop"),
    )
    result = await stream_openai(raw, think_tags=True)
    assert blocks(result) == [("reasoning", "Let me see."), ("text", "It is 4.")]
    plain = await stream_openai(raw)
    assert blocks(plain) == [("text", "<think>Let me see.</think>It is 4.")]


async def test_anthropic_usage_iterations_are_all_counted() -> None:
    events = [
        (
            "message_start",
            {"type": "message_start", "message": {"usage": {"input_tokens": 30, "output_tokens": 1}}},
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {
                    "output_tokens": 7,
                    "iterations": [
                        {"type": "compaction", "input_tokens": 900, "output_tokens": 120},
                        {"type": "message", "input_tokens": 30, "output_tokens": 7},
                    ],
                },
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    raw = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
    adapter = AnthropicAdapter("http://dialect.test", KEY, http_client=client(raw))
    result = await collect(
        adapter.stream(GenerateOptions("anthropic", "claude-x", [{"role": "user", "content": "hi"}]))
    )
    assert result.error is None
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (930, 127)
