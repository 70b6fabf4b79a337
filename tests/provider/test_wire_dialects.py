"""The dialect, cut and slow scenarios say on the raw wire what docs/scenarios.md says."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
from _provider_wire_reader import parse_sse

from chunkscope.provider import LocalProvider
from chunkscope.provider._scenarios import FIRST_BYTE_SECONDS


def openai_body(model: str) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def openai_text(provider: LocalProvider, model: str) -> str:
    async with httpx.AsyncClient() as client:
        response = await client.post(provider.base_url + "/chat/completions", json=openai_body(model))
    assert response.status_code == 200
    return response.text


def deltas(text: str) -> list[dict[str, Any]]:
    out = []
    for event in parse_sse(text):
        if event.data == "[DONE]":
            continue
        for choice in json.loads(event.data)["choices"]:
            out.append(choice["delta"])
    return out


def usage_of(text: str) -> dict[str, Any]:
    (usage,) = [
        json.loads(e.data)["usage"]
        for e in parse_sse(text)
        if e.data != "[DONE]" and json.loads(e.data).get("usage")
    ]
    return usage  # type: ignore[no-any-return]


async def test_content_parts_carry_thinking_and_text_as_typed_lists(provider: LocalProvider) -> None:
    said = deltas(await openai_text(provider, "dialect-content-parts"))
    parts = [d["content"] for d in said if isinstance(d.get("content"), list)]
    thinking = "".join(p[0]["thinking"][0]["text"] for p in parts if p[0]["type"] == "thinking")
    text = "".join(p[0]["text"] for p in parts if p[0]["type"] == "text")
    assert (thinking, text) == ("Thinking in parts.", "Parts are text.")
    assert not any("reasoning_content" in d for d in said)


async def test_reasoning_details_say_the_reasoning_once_per_fragment(provider: LocalProvider) -> None:
    said = deltas(await openai_text(provider, "dialect-reasoning-details"))
    details = [d for d in said if "reasoning_details" in d]
    assert "".join(d["reasoning_details"][0]["text"] for d in details) == "Details first, then both."
    assert [d["reasoning_details"][0]["type"] for d in details] == ["reasoning.text"] * 4
    # the last two also as delta.reasoning, the same text: said twice, counted once
    assert [d.get("reasoning") for d in details] == [None, None, " then", " both."]


async def test_xai_usage_leaves_reasoning_out_of_completion_tokens(provider: LocalProvider) -> None:
    usage = usage_of(await openai_text(provider, "dialect-xai-usage"))
    assert usage["completion_tokens"] == 5
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 20}
    assert usage["total_tokens"] == usage["prompt_tokens"] + 5 + 20


async def test_done_without_the_closing_blank_line_ends_the_body(provider: LocalProvider) -> None:
    text = await openai_text(provider, "dialect-done-no-blank-line")
    assert text.endswith("}\n\ndata: [DONE]\n")


async def test_usage_iterations_split_the_billed_usage(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.post(
            provider.url + "/v1/messages",
            json={"model": "dialect-usage-iterations", "max_tokens": 64, "stream": True, "messages": []},
        )
    events = {e.event: json.loads(e.data) for e in parse_sse(response.text)}
    usage = events["message_delta"]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (12, 2)
    assert usage["iterations"] == [
        {"type": "compaction", "input_tokens": 3000, "output_tokens": 180},
        {"type": "message", "input_tokens": 12, "output_tokens": 2},
    ]
    assert events["message_start"]["message"]["usage"]["input_tokens"] == 12


async def test_cut_before_usage_sends_the_stop_then_ends_without_usage_or_done(
    provider: LocalProvider,
) -> None:
    text = await openai_text(provider, "fault-cut-before-usage")
    events = parse_sse(text)
    last = json.loads(events[-1].data)
    assert last["choices"][0]["finish_reason"] == "stop"
    assert "[DONE]" not in text and '"usage"' not in text
    async with httpx.AsyncClient() as client:
        response = await client.post(
            provider.url + "/v1/messages",
            json={"model": "fault-cut-before-usage", "max_tokens": 64, "stream": True, "messages": []},
        )
    names = [e.event for e in parse_sse(response.text)]
    assert names[-1] == "content_block_stop"
    assert "message_delta" not in names and "message_stop" not in names


async def test_slow_first_byte_holds_even_the_headers(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        started = time.monotonic()
        async with client.stream(
            "POST", provider.base_url + "/chat/completions", json=openai_body("slow-first-byte")
        ) as response:
            waited = time.monotonic() - started
            assert response.status_code == 200
            await response.aread()
    assert waited >= FIRST_BYTE_SECONDS * 0.95
