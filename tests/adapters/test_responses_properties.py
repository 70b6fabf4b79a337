"""Hypothesis: whatever items, parts, splits and framing a Responses stream uses, the output is strict.

Generated streams hold message items (one or two text parts), reasoning items (summary parts,
or reasoning text), function calls (arguments cut anywhere, or sent whole), and items and
events outside the vocabulary; argument deltas of two calls may interleave; the SSE bytes are
cut at random points. Properties: only ``LlmError`` ever escapes; the output checks clean under
``strict``; it assembles to exactly what the wire said, one block per part, in item order.
A second property feeds events of the wire's types with arbitrary fields: never anything but
``LlmError``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from _responses_events import Events
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope.adapters._base import GenerateOptions
from chunkscope.adapters.openai_responses import OpenAIResponsesAdapter
from chunkscope.adapters.openai_responses.translate import ResponsesTranslator
from chunkscope.protocol import LlmError, StreamResult, check, collect

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEY = "sk-prop-SECRET-0123456789"

_words = st.text(alphabet='abc xyz.é日\n"\\', min_size=1, max_size=12)
_args = st.dictionaries(
    st.sampled_from(["q", "city", "n"]), st.one_of(st.integers(-5, 99), _words), max_size=3
)


def _split(draw: Any, text: str) -> list[str]:
    points = sorted(set(draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=5))))
    bounds = [0, *[p for p in points if 0 < p < len(text)], len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@dataclass
class Stream:
    events: list[dict[str, Any]]
    blocks: list[tuple[str, str]] = field(default_factory=list)  # (kind, text) in order
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, arguments)
    finish: str = "stop"
    cuts: list[int] = field(default_factory=list)


@st.composite
def streams(draw: Any) -> Stream:
    events = Events().created()
    out = Stream(events=[])
    kinds = draw(
        st.lists(st.sampled_from(["message", "reasoning", "raw", "call", "other", "pair"]), max_size=5)
    )
    index = 0
    for kind in kinds:
        if kind == "message":
            parts = [draw(_words) for _ in range(draw(st.integers(1, 2)))]
            item = f"msg_{index}"
            events.add(
                "response.output_item.added",
                output_index=index,
                item={"id": item, "type": "message", "content": []},
            )
            for number, text in enumerate(parts):
                events.text_part(index, *_split(draw, text), item_id=item, part=number)
                out.blocks.append(("text", text))
            events.item_done(index, {"id": item, "type": "message", "content": []})
        elif kind in ("reasoning", "raw"):
            parts = [draw(_words) for _ in range(draw(st.integers(1, 2)))]
            events.reasoning(
                index, *[_split(draw, p) for p in parts], item_id=f"rs_{index}", raw=kind == "raw"
            )
            out.blocks += [("reasoning", p) for p in parts]
        elif kind == "call":
            arguments = json.dumps(draw(_args))
            call_id = f"call_{index}"
            if draw(st.booleans()):
                events.call(index, call_id, "lookup", *_split(draw, arguments), item_id=f"fc_{index}")
            else:  # the arguments only whole, in output_item.done
                events.call_added(index, call_id, "lookup", item_id=f"fc_{index}")
                item = {"type": "function_call", "call_id": call_id, "name": "lookup", "arguments": arguments}
                events.item_done(index, item)
            out.blocks.append(("tool-call", arguments))
            out.calls.append((call_id, "lookup", arguments))
        elif kind == "pair":  # two calls whose argument deltas interleave
            first, second = json.dumps(draw(_args)), json.dumps(draw(_args))
            a, b = _split(draw, first), _split(draw, second)
            events.call_added(index, f"call_{index}", "a", item_id=f"fc_{index}")
            events.call_added(index + 1, f"call_{index + 1}", "b", item_id=f"fc_{index + 1}")
            queues = [[(index, f) for f in a], [(index + 1, f) for f in b]]
            while any(queues):
                target, fragment = draw(st.sampled_from([q for q in queues if q])).pop(0)
                events.add(
                    "response.function_call_arguments.delta",
                    item_id=f"fc_{target}",
                    output_index=target,
                    delta=fragment,
                )
            for at, name, arguments in (
                (index + 1, "b", second),
                (index, "a", first),
            ):  # done out of order too
                events.item_done(
                    at,
                    {"type": "function_call", "call_id": f"call_{at}", "name": name, "arguments": arguments},
                )
            out.blocks += [("tool-call", first), ("tool-call", second)]
            out.calls += [(f"call_{index}", "a", first), (f"call_{index + 1}", "b", second)]
            index += 1
        else:
            events.add(
                "response.output_item.added", output_index=index, item={"id": "x", "type": "file_search_call"}
            )
            events.add("response.file_search_call.searching", output_index=index, item_id="x")
            events.item_done(index, {"id": "x", "type": "file_search_call"})
        index += 1
        if draw(st.booleans()):
            events.add("response.some_future_event", payload=draw(_words))
    cut = draw(st.booleans()) and bool(out.blocks)
    if cut:
        events.terminal("response.incomplete", reason="max_output_tokens")
        out.finish = "max-tokens"
    else:
        events.terminal()
        out.finish = "tool-calls" if out.calls else ("stop" if out.blocks else "error")
    out.events = events.events
    out.cuts = draw(st.lists(st.integers(1, 5000), max_size=8))
    return out


async def stream_bytes(raw: bytes, cuts: list[int]) -> StreamResult:
    points = sorted({c % max(1, len(raw)) for c in cuts} - {0})

    async def body() -> AsyncIterator[bytes]:
        last = 0
        for p in [*points, len(raw)]:
            yield raw[last:p]
            last = p

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        adapter = OpenAIResponsesAdapter("https://api.test/v1", KEY, http_client=client, idle_timeout=5.0)
        return await collect(
            adapter.stream(GenerateOptions("openai", "gpt-5", [{"role": "user", "content": "x"}]))
        )


@SETTINGS
@given(stream=streams(), crlf=st.booleans())
def test_any_items_parts_and_framing_give_a_strict_stream_of_exactly_the_wire_content(
    stream: Stream, crlf: bool
) -> None:
    newline = "\r\n" if crlf else "\n"
    raw = "".join(
        f"event: {e['type']}{newline}data: {json.dumps(e)}{newline}{newline}" for e in stream.events
    )
    result = asyncio.run(stream_bytes(raw.encode(), stream.cuts))
    assert result.error is None, result.error
    assert check(result.chunks, "strict") == []
    blocks = [(b.type, getattr(b, "text", None) or getattr(b, "arguments", "")) for b in result.blocks]
    if stream.finish == "max-tokens":  # the assembler drops the calls a max-tokens finish may cut
        assert blocks == [b for b in stream.blocks if b[0] != "tool-call"]
    else:
        assert blocks == stream.blocks
        assert [(t.id, t.name, t.arguments) for t in result.tool_calls] == stream.calls
    assert result.finish is not None and result.finish.kind == stream.finish


_TYPES = [
    "response.output_item.added",
    "response.output_item.done",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
]
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10,
)
_fields = st.fixed_dictionaries(
    {},
    optional={
        "output_index": st.integers(-1, 3) | _json,
        "content_index": st.integers(0, 2) | _json,
        "summary_index": st.integers(0, 2) | _json,
        "delta": st.text(max_size=5) | _json,
        "arguments": st.text(max_size=5) | _json,
        "item": st.fixed_dictionaries(
            {"type": st.sampled_from(["message", "reasoning", "function_call", "web_search_call"]) | _json},
            optional={
                "call_id": _json,
                "name": _json,
                "arguments": _json,
                "content": _json,
                "summary": _json,
            },
        )
        | _json,
        "response": st.fixed_dictionaries(
            {}, optional={"usage": _json, "incomplete_details": _json, "error": _json}
        )
        | _json,
        "code": _json,
        "message": _json,
        "sequence_number": st.integers(0, 40) | _json,
    },
)


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(_TYPES) | _json, _fields), max_size=12))
def test_arbitrary_fields_on_the_wires_event_types_raise_only_llm_errors(events: list[Any]) -> None:
    translator = ResponsesTranslator(check_sequence=False)
    try:
        for kind, fields in events:
            translator.feed((str(kind), json.dumps({"type": kind, **fields})))
        translator.end()
    except LlmError as error:
        assert error.code in {
            "MALFORMED_RESPONSE",
            "STREAM_CLOSED",
            "SERVER",
            "RATE_LIMIT",
            "QUOTA",
            "INVALID_REQUEST",
            "CONTEXT_WINDOW_EXCEEDED",
            "CONTENT_FILTER",
            "AUTH",
            "HTTP_404",
        }, error.code
        check(translator.salvage(), "strict")
