"""Property tests: whatever an Anthropic stream looks like, the translator's output checks clean.

Generated streams split text, thinking and tool-input JSON at random points,
interleave blocks at random, sprinkle pings, and cut the stream anywhere.
Garbage events must end in an ``LlmError``, never another exception.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from _anthropic_events import (
    Event,
    block_stop,
    json_delta,
    message_delta,
    message_start,
    message_stop,
    ping,
    signature_delta,
    sse_body,
    text_delta,
    text_start,
    thinking_delta,
    thinking_start,
    tool_start,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkscope.adapters._base import GenerateOptions
from chunkscope.adapters.anthropic import AnthropicAdapter
from chunkscope.adapters.anthropic.translate import AnthropicTranslator
from chunkscope.protocol import (
    AnyChunk,
    BlockEnd,
    Finish,
    FinishReason,
    LlmError,
    LlmFailure,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    check,
    collect,
)

_text = st.text(min_size=0, max_size=12)
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces, last = [], 0
    for p in points:
        pieces.append(text[last:p])
        last = p
    pieces.append(text[last:])
    return pieces


@st.composite
def wire_blocks(draw: st.DrawFn) -> list[tuple[str, Any, list[str]]]:
    """A list of (kind, content, pieces): text/thinking text or a tool's input object."""
    out = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["text", "thinking", "tool_use"]))
        if kind == "tool_use":
            content: Any = draw(st.dictionaries(st.text(max_size=4), _json_value, max_size=3))
            text = json.dumps(content, ensure_ascii=draw(st.booleans()))
            if not content and draw(st.booleans()):
                text = ""  # no input_json_delta at all
        else:
            content = text = draw(_text)
        pieces = _split(text, draw(st.lists(st.integers(0, 64), max_size=5))) if text else []
        out.append((kind, content, pieces))
    return out


def _block_events(wire_index: int, kind: str, pieces: list[str]) -> list[Event]:
    if kind == "text":
        return [text_start(wire_index), *(text_delta(wire_index, p) for p in pieces), block_stop(wire_index)]
    if kind == "thinking":
        return [
            thinking_start(wire_index),
            *(thinking_delta(wire_index, p) for p in pieces),
            signature_delta(wire_index, f"sig{wire_index}"),
            block_stop(wire_index),
        ]
    return [
        tool_start(wire_index, f"toolu_{wire_index}", f"tool{wire_index}"),
        *(json_delta(wire_index, p) for p in pieces),
        block_stop(wire_index),
    ]


@st.composite
def wire_streams(draw: st.DrawFn) -> tuple[list[Event], list[tuple[str, Any, list[str]]], str]:
    blocks = draw(wire_blocks())
    queues = [_block_events(i, kind, pieces) for i, (kind, _, pieces) in enumerate(blocks)]
    body: list[Event] = []
    if draw(st.booleans()):
        body = [e for q in queues for e in q]  # the real wire: one block after the other
    else:
        # Interleave at random, keeping each block's own order.
        while any(queues):
            live = [q for q in queues if q]
            queue = draw(st.sampled_from(live))
            body.append(queue.pop(0))
    for _ in range(draw(st.integers(0, 2))):
        body.insert(draw(st.integers(0, len(body))), ping())
    stop = draw(
        st.sampled_from(["end_turn", "stop_sequence", "max_tokens", "tool_use", "refusal", "pause_turn"])
    )
    if stop == "tool_use" and not any(kind == "tool_use" for kind, _, _ in blocks):
        stop = "end_turn"
    events = [
        message_start(draw(st.integers(0, 10**6))),
        *body,
        message_delta(stop, draw(st.integers(1, 999))),  # cumulative: never below message_start's 1
        message_stop(),
    ]
    # Blocks come out in the order the wire started them.
    started = [data["index"] for name, data in body if name == "content_block_start"]
    return events, [blocks[i] for i in started], stop


def _run(events: list[Event]) -> tuple[list[AnyChunk], LlmError | None]:
    translator = AnthropicTranslator()
    out: list[AnyChunk] = []
    try:
        for name, data in events:
            out.extend(translator.feed_parsed(name, data))
        translator.close()
    except LlmError as exc:
        return out, exc
    return out, None


def _with_error_finish(chunks: list[AnyChunk], code: str) -> list[AnyChunk]:
    # What a consumer records for a raised stream: the partial output, then an error finish.
    return [*chunks, Finish(reason=FinishReason(kind="error", failure=LlmFailure(message="x", code=code)))]


@given(wire_streams())
@settings(max_examples=150, deadline=None)
def test_any_well_formed_stream_translates_clean_and_keeps_every_block(
    stream: tuple[list[Event], list[tuple[str, Any, list[str]]], str],
) -> None:
    events, blocks, _stop = stream
    chunks, error = _run(events)
    assert error is None, error
    assert check(chunks, "strict") == []
    ended = [c.block for c in chunks if isinstance(c, BlockEnd)]
    assert len(ended) == len(blocks)
    # Each block comes out whole, in the order the wire started them.
    for block, (kind, content, _pieces) in zip(ended, blocks, strict=True):
        if kind == "text":
            assert block == TextBlock(text=content)
        elif kind == "thinking":
            assert block == ReasoningBlock(text=content)
        else:
            assert isinstance(block, ToolCallBlock)
            assert json.loads(block.arguments) == content


@given(wire_streams(), st.integers(0, 10**6))
@settings(max_examples=150, deadline=None)
def test_a_stream_cut_anywhere_raises_stream_closed_with_valid_partial_output(
    stream: tuple[list[Event], list[tuple[str, Any, list[str]]], str], cut: int
) -> None:
    events = stream[0]
    events = events[: cut % len(events)]  # never the whole stream: message_stop is missing
    chunks, error = _run(events)
    assert error is not None and error.code == "STREAM_CLOSED"
    assert check(_with_error_finish(chunks, error.code), "strict") == []


_event_names = st.sampled_from(
    [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
        "other",
    ]
)


@st.composite
def garbage_events(draw: st.DrawFn) -> Event:
    name = draw(_event_names)
    data: dict[str, Any] = {"type": draw(st.one_of(st.just(name), _event_names))}
    for key, values in (
        ("index", st.one_of(st.integers(-1, 3), _json_value)),
        ("message", st.one_of(st.just({"usage": {"input_tokens": 3}}), _json_value)),
        (
            "content_block",
            st.one_of(
                st.sampled_from(
                    [
                        {"type": "text", "text": ""},
                        {"type": "thinking", "thinking": ""},
                        {"type": "tool_use", "id": "t", "name": "n", "input": {}},
                        {"type": "tool_use", "name": "n"},
                        {"type": "redacted_thinking", "data": "d"},
                    ]
                ),
                _json_value,
            ),
        ),
        (
            "delta",
            st.one_of(
                st.fixed_dictionaries(
                    {
                        "type": st.sampled_from(
                            ["text_delta", "thinking_delta", "input_json_delta", "signature_delta"]
                        ),
                        "text": _text,
                        "thinking": _text,
                        "partial_json": _text,
                        "signature": _text,
                    }
                ),
                st.fixed_dictionaries(
                    {"stop_reason": st.sampled_from(["end_turn", "tool_use", "max_tokens", "x"])}
                ),
                _json_value,
            ),
        ),
        ("usage", st.one_of(st.just({"output_tokens": 2}), _json_value)),
        ("error", st.one_of(st.just({"type": "overloaded_error", "message": "o"}), _json_value)),
    ):
        if draw(st.booleans()):
            data[key] = draw(values)
    return (name, data)


@given(st.lists(garbage_events(), max_size=14))
@settings(max_examples=200, deadline=None)
def test_garbage_events_end_in_llm_error_or_a_clean_stream(events: list[Event]) -> None:
    chunks, error = _run([message_start(), *events])
    if error is None:
        assert check(chunks, "strict") == []
    else:
        assert check(_with_error_finish(chunks, error.code), "strict") == []


@given(st.lists(st.tuples(_event_names, st.text(max_size=20)), max_size=8))
@settings(max_examples=100, deadline=None)
def test_raw_text_payloads_never_raise_anything_but_llm_error(events: list[tuple[str, str]]) -> None:
    translator = AnthropicTranslator()
    chunks: list[AnyChunk] = []
    try:
        for name, data in events:
            chunks.extend(translator.feed_text(name, data))
        translator.close()
    except LlmError:
        pass
    # Whatever came out before the failure is a valid prefix: at most the end lacks its finish.
    assert [str(v) for v in check(chunks, "strict") if v.position is not None] == []


class _Pieces(httpx.AsyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


async def _through_adapter(body: bytes, cuts: list[int]) -> tuple[list[AnyChunk], LlmError | None]:
    points = sorted({c % (len(body) + 1) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Pieces(pieces))

    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        adapter = AnthropicAdapter("https://api.example.test", "key-1234", http_client=client)
        result = await collect(
            adapter.stream(GenerateOptions("anthropic", "m", [{"role": "user", "content": "q"}]))
        )
    return list(result.chunks), result.error


@given(wire_streams(), st.lists(st.integers(0, 10**6), max_size=8))
@settings(max_examples=60, deadline=None)
def test_the_adapter_yields_the_translators_chunks_however_the_bytes_are_split(
    stream: tuple[list[Event], list[tuple[str, Any, list[str]]], str], cuts: list[int]
) -> None:
    events = stream[0]
    expected, expected_error = _run(events)
    chunks, error = asyncio.run(_through_adapter(sse_body(events), cuts))
    assert error is None and expected_error is None
    assert [c.to_dict() for c in chunks] == [c.to_dict() for c in expected]
    assert check(chunks, "strict") == []
