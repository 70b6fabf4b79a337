"""Hypothesis: whatever a Gemini stream holds and however its bytes are cut, the adapter is strict.

Generated streams mix thought runs, text runs, whole ``functionCall`` parts (with or without
ids) and ``partialArgs`` calls (strings cut at random points, nested objects, arrays),
grouped into events at random, with cumulative usage on some events, a finish reason at the
end, LF or CRLF framing, and the SSE bytes cut at random points. Properties: only ``LlmError``
escapes; the output checks clean under ``strict``; it assembles to exactly what the wire said.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunkscope as cs
from chunkscope.adapters._core import SseDecoder
from chunkscope.adapters.gemini import GeminiAdapter
from chunkscope.adapters.gemini._framing import CrlfSseDecoder
from chunkscope.protocol import StreamResult, check, collect

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
API_KEY = "AIza-property-SECRET-0123456789"
BASE_URL = "https://generativelanguage.googleapis.com"

_words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6)
_keys = st.text("abcdefgh_", min_size=1, max_size=4)
_leaf = st.none() | st.booleans() | st.integers(-1000, 1000) | _words
_args = st.dictionaries(
    _keys,
    st.recursive(
        _leaf,
        lambda inner: (
            st.lists(inner, min_size=1, max_size=3) | st.dictionaries(_keys, inner, min_size=1, max_size=3)
        ),
        max_leaves=6,
    ),
    max_size=4,
)


@dataclass
class Wire:
    events: list[dict[str, Any]]
    text: str
    reasoning: str
    calls: list[tuple[str, Any]]
    prompt: int
    output: int
    cuts: list[int]


def _patches(draw: Any, value: Any, path: str) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [p for key, inner in value.items() for p in _patches(draw, inner, f"{path}.{key}")]
    if isinstance(value, list):
        return [p for i, inner in enumerate(value) for p in _patches(draw, inner, f"{path}[{i}]")]
    if isinstance(value, str):
        cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(value) - 1)), max_size=2))) - {len(value)})
        pieces = [value[a:b] for a, b in zip([0, *cuts], [*cuts, len(value)], strict=True)]
        return [
            {
                "jsonPath": path,
                "stringValue": piece,
                **({"willContinue": True} if i < len(pieces) - 1 else {}),
            }
            for i, piece in enumerate(pieces)
        ]
    if isinstance(value, bool):
        return [{"jsonPath": path, "boolValue": value}]
    if value is None:
        return [{"jsonPath": path, "nullValue": "NULL_VALUE"}]
    return [{"jsonPath": path, "numberValue": value}]


def _empty_container(value: Any) -> bool:
    if isinstance(value, dict):
        return not value or any(_empty_container(v) for v in value.values())
    if isinstance(value, list):
        return not value or any(_empty_container(v) for v in value)
    return False


@st.composite
def wires(draw: Any) -> Wire:
    parts: list[dict[str, Any]] = []
    text, reasoning, calls = [], [], []
    for _ in range(draw(st.integers(0, 7))):
        kind = draw(st.sampled_from(["text", "thought", "call", "partial"]))
        if kind in ("text", "thought"):
            words = draw(st.lists(_words, min_size=1, max_size=3))
            for word in words:
                parts.append({"text": word, "thought": True} if kind == "thought" else {"text": word})
            (reasoning if kind == "thought" else text).append("".join(words))
            continue
        name = draw(st.sampled_from(["get_weather", "lookup", "ping"]))
        args = draw(_args)
        if kind == "call" or any(_empty_container(v) for v in args.values()):
            call: dict[str, Any] = {"name": name, "args": args}
            if draw(st.booleans()):
                call["id"] = f"fc_{len(calls)}"
            parts.append({"functionCall": call})
        else:
            patches = _patches(draw, args, "$")
            first: dict[str, Any] = {"name": name, "willContinue": True, "partialArgs": patches[:1]}
            parts.append({"functionCall": first})
            parts.extend({"functionCall": {"partialArgs": [p], "willContinue": True}} for p in patches[1:])
            parts.append({"functionCall": {}})
        calls.append((name, args))
    prompt = draw(st.integers(0, 50))
    output = draw(st.integers(0, 50))
    finish = draw(st.sampled_from(["STOP", "MAX_TOKENS"]))
    events: list[dict[str, Any]] = []
    i = 0
    while i < len(parts):
        n = draw(st.integers(1, 3))
        events.append({"candidates": [{"content": {"role": "model", "parts": parts[i : i + n]}, "index": 0}]})
        if draw(st.booleans()):
            events[-1]["usageMetadata"] = {"promptTokenCount": prompt, "totalTokenCount": prompt}
        i += n
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}
    events.append(
        {
            "candidates": [{"content": {"role": "model", "parts": []}, "finishReason": finish, "index": 0}],
            "usageMetadata": usage,
        }
    )
    cuts = draw(st.lists(st.integers(1, 5000), max_size=5))
    return Wire(events, "".join(text), "".join(reasoning), calls, prompt, output, cuts)


def frame(events: list[Any], newline: str) -> bytes:
    return "".join(f"data: {json.dumps(e, ensure_ascii=False)}{newline}{newline}" for e in events).encode()


async def stream_bytes(raw: bytes, cuts: list[int]) -> StreamResult:
    points = sorted({c % max(1, len(raw)) for c in cuts} - {0})

    async def body() -> AsyncIterator[bytes]:
        last = 0
        for p in [*points, len(raw)]:
            yield raw[last:p]
            last = p

    def handler(request: httpx.Request) -> httpx.Response:
        assert API_KEY not in str(request.url)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        adapter = GeminiAdapter(BASE_URL, API_KEY, http_client=client, idle_timeout=5.0)
        return await collect(
            adapter.stream(
                cs.GenerateOptions("google", "gemini-2.5-flash", [{"role": "user", "content": "hi"}])
            )
        )


@SETTINGS
@given(wire=wires(), crlf=st.booleans())
def test_any_gemini_stream_and_framing_gives_a_strict_stream_that_assembles_to_the_wire_content(
    wire: Wire, crlf: bool
) -> None:
    result = asyncio.run(stream_bytes(frame(wire.events, "\r\n" if crlf else "\n"), wire.cuts))
    if (
        not wire.text
        and not wire.reasoning
        and not wire.calls
        and wire.events[-1]["candidates"][0]["finishReason"] == "STOP"
    ):
        assert result.finish is not None and result.finish.failure is not None
        assert result.finish.failure.code == "EMPTY_RESPONSE"
        return
    assert result.error is None, result.error
    assert [v for v in check(result.chunks, "strict") if v.severity == "error"] == []
    assert (result.text, result.reasoning) == (wire.text, wire.reasoning)
    emitted = [c.block for c in result.chunks if c.type == "block-end" and c.block.type == "tool-call"]
    assert [(t.name, json.loads(t.arguments)) for t in emitted] == wire.calls
    assert len({t.id for t in emitted}) == len(emitted)
    assert result.usage is not None and (result.usage.input_tokens, result.usage.output_tokens) == (
        wire.prompt,
        wire.output,
    )


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wire=wires(), crlf=st.booleans())
def test_many_more_gemini_streams_stay_strict(wire: Wire, crlf: bool) -> None:
    test_any_gemini_stream_and_framing_gives_a_strict_stream_that_assembles_to_the_wire_content.hypothesis.inner_test(  # type: ignore[attr-defined]
        wire, crlf
    )


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "candidates",
                    "content",
                    "parts",
                    "text",
                    "thought",
                    "functionCall",
                    "name",
                    "args",
                    "id",
                    "partialArgs",
                    "jsonPath",
                    "stringValue",
                    "willContinue",
                    "finishReason",
                    "usageMetadata",
                    "promptTokenCount",
                    "error",
                    "status",
                    "index",
                    "promptFeedback",
                    "blockReason",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@SETTINGS
@given(payloads=st.lists(_json, max_size=6), cuts=st.lists(st.integers(1, 500), max_size=4))
def test_arbitrary_json_payloads_raise_only_llm_error_and_keep_what_came_before_clean(
    payloads: list[Any], cuts: list[int]
) -> None:
    events = [{"candidates": [{"content": {"parts": [{"text": "ok"}]}}]}, *payloads]
    result = asyncio.run(stream_bytes(frame(events, "\n"), cuts))
    if result.error is not None:
        assert result.error.code != "UNKNOWN", repr(result.error.cause)
        assert API_KEY not in str(result.error)
    errors = [v for v in check(result.chunks, "strict") if v.severity == "error"]
    if result.error is None:
        assert errors == [], [str(v) for v in errors]
    else:
        assert [v for v in errors if v.position is not None] == [], [str(v) for v in errors]


@SETTINGS
@given(
    pieces=st.lists(
        st.sampled_from(
            [
                b"\r",
                b"\n",
                b"\r\n",
                b"\r\n\r\n",
                b"data: a",
                b"data: {}",
                b": note",
                b"event: e",
                b"\xef\xbb\xbf",
            ]
        ),
        max_size=14,
    ),
    cuts=st.lists(st.integers(0, 200), max_size=4),
)
def test_the_crlf_decoder_reads_exactly_the_events_the_shared_decoder_reads(
    pieces: list[bytes], cuts: list[int]
) -> None:
    data = b"".join(pieces)
    points = sorted({c % (len(data) + 1) for c in cuts})

    def events(decoder: SseDecoder) -> list[tuple[str, str]]:
        out, last = [], 0
        for point in [*points, len(data)]:
            out += decoder.feed(data[last:point])
            last = point
        return out + decoder.end()

    assert events(CrlfSseDecoder()) == events(SseDecoder())
