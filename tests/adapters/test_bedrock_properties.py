"""Property tests: whatever a ConverseStream looks like, the translator's output checks clean.

Generated streams split text, reasoning and tool input at random points, pad payloads, cut
the body anywhere and split its reads anywhere; garbage bytes and corrupted frames must end
in an ``LlmError`` with a registered code, never another exception.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import httpx
from _bedrock_frames import (
    event,
    message_stop,
    metadata,
    reasoning,
    signature,
    start,
    stop_block,
    text,
    tool_input,
    tool_start,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkscope.adapters._base import GenerateOptions
from chunkscope.adapters.bedrock import BedrockAdapter, BedrockTranslator, EventStreamDecoder
from chunkscope.protocol import AnyChunk, LlmError, check, collect
from chunkscope.protocol._errors import ERROR_CODES, code_family

_piece = st.text(min_size=1, max_size=8)
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def _stream(draw: st.DrawFn) -> tuple[list[bytes], dict[str, Any]]:
    """A valid stream: blocks of text / reasoning / tool calls, and what it must assemble to."""
    frames = [start()]
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[tuple[str, str]] = []
    for index in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["text", "reasoning", "tool"]))
        if kind == "tool":
            args = json.dumps(draw(st.dictionaries(st.text(max_size=4), _json_value, max_size=3)))
            cuts = sorted(draw(st.lists(st.integers(0, len(args)), max_size=4)))
            parts = [args[a:b] for a, b in zip([0, *cuts], [*cuts, len(args)], strict=True) if args[a:b]]
            frames.append(tool_start(index, f"tooluse_{index}", f"tool{index}"))
            frames += [tool_input(index, p) for p in parts]
            calls.append((f"tool{index}", args))
        else:
            pieces = draw(st.lists(_piece, min_size=1, max_size=4))
            make = text if kind == "text" else reasoning
            frames += [make(index, p) for p in pieces]
            if kind == "reasoning" and draw(st.booleans()):
                frames.append(signature(index))
            (texts if kind == "text" else thoughts).append("".join(pieces))
        if draw(st.booleans()):
            frames.append(stop_block(index))
    reason = (
        "tool_use" if calls and draw(st.booleans()) else draw(st.sampled_from(["end_turn", "max_tokens"]))
    )
    frames += [message_stop(reason), metadata(outputTokens=draw(st.integers(0, 99)))]
    return frames, {"text": "".join(texts), "reasoning": "".join(thoughts), "calls": calls}


def _run(data: bytes, cuts: list[int]) -> tuple[list[AnyChunk], LlmError | None]:
    decoder = EventStreamDecoder(1 << 16)
    translator = BedrockTranslator()
    chunks: list[AnyChunk] = []
    bounds = sorted({0, *cuts, len(data)})
    try:
        for a, b in itertools.pairwise(bounds):
            for frame in decoder.feed(data[a:b]):
                chunks += translator.feed(frame)
            if decoder.failure is not None:
                raise LlmError(str(decoder.failure), "MALFORMED_RESPONSE")
        chunks += translator.end()
    except LlmError as exc:
        return chunks + translator.salvage(), exc
    return chunks, None


def _assembled(chunks: list[AnyChunk]) -> dict[str, Any]:
    texts = "".join(c.text for c in chunks if c.type == "text-delta")  # type: ignore[union-attr]
    thoughts = "".join(c.text for c in chunks if c.type == "reasoning-delta")  # type: ignore[union-attr]
    calls = [
        (c.block.name, c.block.arguments)  # type: ignore[union-attr]
        for c in chunks
        if c.type == "block-end" and c.block.type == "tool-call"  # type: ignore[union-attr]
    ]
    return {"text": texts, "reasoning": thoughts, "calls": calls}


@given(_stream(), st.lists(st.integers(0, 4000), max_size=6))
@settings(max_examples=150, deadline=None)
def test_any_valid_stream_split_anywhere_assembles_and_checks_clean(
    stream: tuple[list[bytes], dict[str, Any]], cuts: list[int]
) -> None:
    frames, expected = stream
    chunks, error = _run(b"".join(frames), cuts)
    assert error is None, error
    assert check(chunks, "strict") == []
    assert _assembled(chunks) == expected


@given(_stream(), st.data())
@settings(max_examples=150, deadline=None)
def test_a_stream_cut_or_corrupted_anywhere_ends_in_a_registered_error_with_clean_output(
    stream: tuple[list[bytes], dict[str, Any]], data: st.DataObject
) -> None:
    body = bytearray(b"".join(stream[0]))
    if data.draw(st.booleans()):
        del body[data.draw(st.integers(0, len(body) - 1)) :]
    else:
        body[data.draw(st.integers(0, len(body) - 1))] ^= data.draw(st.integers(1, 255))
    chunks, error = _run(bytes(body), [])
    if error is not None:
        assert code_family(error.code) in ERROR_CODES
    errors = [v for v in check(chunks, "strict") if v.severity == "error" and v.position is not None]
    assert errors == [], [str(v) for v in errors]


@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=4))
@settings(max_examples=200, deadline=None)
def test_garbage_bytes_never_raise_anything_but_a_registered_llm_error(data: bytes, cuts: list[int]) -> None:
    _, error = _run(data, cuts)
    assert error is not None  # never a complete stream
    assert code_family(error.code) in ERROR_CODES


@given(
    st.sampled_from(
        [
            "contentBlockDelta",
            "contentBlockStart",
            "contentBlockStop",
            "messageStop",
            "metadata",
            "messageStart",
        ]
    ),
    _json_value,
)
@settings(max_examples=200, deadline=None)
def test_any_json_payload_on_any_event_is_handled(event_type: str, payload: Any) -> None:
    frame = event(event_type, payload, pad=None) if isinstance(payload, dict) else None
    translator = BedrockTranslator()
    translator.feed_event("messageStart", {})
    try:
        if frame is not None:
            for f in EventStreamDecoder().feed(frame):
                translator.feed(f)
        else:
            translator.feed_event(event_type, payload)
    except LlmError as exc:
        assert code_family(exc.code) in ERROR_CODES


@given(_stream())
@settings(max_examples=30, deadline=None)
def test_the_adapter_over_http_yields_what_the_translator_does(
    stream: tuple[list[bytes], dict[str, Any]],
) -> None:
    frames, expected = stream
    body = b"".join(frames)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "application/vnd.amazon.eventstream"}, content=body
        )

    async def run() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            adapter = BedrockAdapter("http://bedrock.test", "k-0123456789", http_client=client)
            return await collect(
                adapter.stream(GenerateOptions("aws", "m", [{"role": "user", "content": "x"}]))
            )

    result = asyncio.run(run())
    assert result.error is None, result.error
    assert (result.text, result.reasoning) == (expected["text"], expected["reasoning"])
    # read off the chunks: a max-tokens finish leaves its calls out of the assembled result
    assert _assembled(result.chunks)["calls"] == expected["calls"]
