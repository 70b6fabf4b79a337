"""Hypothesis: whatever order and framing a chat-completions wire uses, the adapter's output is strict.

Generated wire streams split reasoning, text and tool-call arguments at random
points, interleave tool calls at random, send ids late or never, place usage
on the finish chunk, a trailing chunk, both or neither, and cut the SSE bytes
at random points. Properties: only ``LlmError`` ever escapes; the output
checks clean under ``strict``; it assembles to exactly what the wire said.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from _openai_events import API_KEY, BASE_URL, chunk, options, tool, usage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope.adapters.openai_compat import OpenAICompatAdapter
from chunkscope.protocol import BlockEnd, StreamResult, check, collect

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Call:
    wire_index: int
    id: str | None
    id_at: int  # the fragment that carries the id (may be past the last one: never)
    name: str
    name_at: int
    fragments: list[str]


@dataclass
class Wire:
    events: list[dict[str, Any]]
    reasoning: str
    text: str
    calls: list[Call]
    usage: dict[str, Any] | None
    finish: str
    cuts: list[int]


def _split(draw: Any, text: str) -> list[str]:
    if not text:
        return [text]
    points = sorted(set(draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=6))))
    points = [p for p in points if 0 < p < len(text)]
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


_words = st.text(alphabet="abc xyz.é日", min_size=1, max_size=12)
_args = st.dictionaries(
    st.sampled_from(["q", "city", "n", "list"]),
    st.one_of(st.integers(-5, 99), _words, st.lists(st.integers(0, 9), max_size=3)),
    max_size=3,
)


@st.composite
def wires(draw: Any) -> Wire:
    # content segments: ("reasoning" | "text", string) in order
    segments = draw(st.lists(st.tuples(st.sampled_from(["reasoning", "text"]), _words), max_size=5))
    pieces: list[tuple[str, Any]] = []
    for kind, words in segments:
        pieces += [(kind, part) for part in _split(draw, words)]
    calls: list[Call] = []
    n_calls = draw(st.integers(0, 3))
    used_ids: set[str] = set()
    for i in range(n_calls):
        arguments = "" if draw(st.booleans()) and draw(st.booleans()) else json.dumps(draw(_args))
        fragments = _split(draw, arguments) if arguments else [""]
        id_mode = draw(st.sampled_from(["first", "late", "never"]))
        id_at = {"first": 0, "late": draw(st.integers(0, len(fragments) - 1)), "never": len(fragments)}[
            id_mode
        ]
        call_id = None if id_mode == "never" else f"call_{i}_{draw(st.integers(0, 9))}"
        if call_id in used_ids:
            call_id = f"{call_id}_{i}"
        if call_id:
            used_ids.add(call_id)
        calls.append(
            Call(
                i,
                call_id,
                id_at,
                draw(st.sampled_from(["lookup", "get_time"])),
                draw(st.integers(0, len(fragments) - 1)),
                fragments,
            )
        )
    # tool fragments, in an interleaving that keeps each call's own order
    queues = [[("tool", (c, k)) for k in range(len(c.fragments))] for c in calls]
    tool_events: list[tuple[str, Any]] = []
    while any(queues):
        pick = draw(st.sampled_from([q for q in queues if q]))
        tool_events.append(pick.pop(0))
    # place tool events among the content pieces (content keeps its order)
    merged: list[tuple[str, Any]] = []
    content = list(pieces)
    for item in tool_events:
        while content and draw(st.booleans()):
            merged.append(content.pop(0))
        merged.append(item)
    merged += content

    events: list[dict[str, Any]] = []
    if draw(st.booleans()):
        events.append(chunk(reasoning=""))  # DeepSeek's empty first reasoning fragment
    for kind, value in merged:
        if kind == "reasoning":
            events.append(chunk(reasoning=value))
        elif kind == "text":
            events.append(chunk(content=value))
        else:
            call, k = value
            events.append(
                chunk(
                    tools=[
                        tool(
                            call.wire_index,
                            id=call.id if k == call.id_at else None,
                            name=call.name if k == call.name_at else None,
                            arguments=call.fragments[k],
                        )
                    ]
                )
            )
    # ``length`` with calls: the model was cut off while calling (their JSON happens to be whole here)
    finishes = ["tool_calls", "tool_calls", "length"] if calls else ["stop", "stop", "length"]
    finish = draw(st.sampled_from(finishes))
    wire_usage = usage(draw(st.integers(0, 500)), draw(st.integers(0, 500)))
    placement = draw(st.sampled_from(["finish", "trailing", "both", "none"]))
    events.append(chunk(finish=finish, usage=wire_usage if placement in ("finish", "both") else None))
    if placement in ("trailing", "both"):
        events.append(chunk(no_choices=True, usage=wire_usage))
    cuts = draw(st.lists(st.integers(1, 4000), max_size=8))
    return Wire(
        events=events,
        reasoning="".join(v for k, v in pieces if k == "reasoning"),
        text="".join(v for k, v in pieces if k == "text"),
        calls=calls,
        usage=None if placement == "none" else wire_usage,
        finish=finish,
        cuts=cuts,
    )


def frame(events: list[dict[str, Any]], newline: str = "\n") -> bytes:
    text = "".join(f"data: {json.dumps(e)}{newline}{newline}" for e in events)
    return (text + f"data: [DONE]{newline}{newline}").encode()


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
        adapter = OpenAICompatAdapter(BASE_URL, API_KEY, http_client=client, idle_timeout=5.0)
        return await collect(adapter.stream(options()))


@SETTINGS
@given(wire=wires(), crlf=st.booleans())
def test_any_wire_order_and_framing_gives_a_strict_stream_that_assembles_to_the_wire_content(
    wire: Wire, crlf: bool
) -> None:
    result = asyncio.run(stream_bytes(frame(wire.events, "\r\n" if crlf else "\n"), wire.cuts))
    assert result.error is None, result.error
    assert [v for v in check(result.chunks, "strict") if v.severity == "error"] == []
    assert result.reasoning == wire.reasoning
    assert result.text == wire.text
    emitted = [c.block for c in result.chunks if isinstance(c, BlockEnd) and c.block.type == "tool-call"]
    assert sorted((t.name, t.arguments) for t in emitted) == sorted(
        (c.name, "".join(c.fragments) or "{}") for c in wire.calls
    )
    assert {c.id for c in wire.calls if c.id} <= {t.id for t in emitted}
    assert len({t.id for t in emitted}) == len(emitted)
    if result.finish is not None and result.finish.kind == "max-tokens":
        assert result.tool_calls == []  # the assembler drops tool calls cut by max-tokens
    else:
        assert result.tool_calls == emitted
    if wire.usage is not None:
        assert result.usage is not None and result.usage.output_tokens == wire.usage["completion_tokens"]
    else:
        assert result.usage is None


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wire=wires(), crlf=st.booleans())
def test_many_more_wire_orders_and_framings_stay_strict(wire: Wire, crlf: bool) -> None:
    test_any_wire_order_and_framing_gives_a_strict_stream_that_assembles_to_the_wire_content.hypothesis.inner_test(
        wire, crlf
    )


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "choices",
                    "delta",
                    "content",
                    "reasoning_content",
                    "tool_calls",
                    "index",
                    "id",
                    "function",
                    "name",
                    "arguments",
                    "finish_reason",
                    "usage",
                    "error",
                    "prompt_tokens",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@SETTINGS
@given(
    payloads=st.lists(_json, max_size=6), done=st.booleans(), cuts=st.lists(st.integers(1, 500), max_size=4)
)
def test_arbitrary_json_payloads_raise_only_llm_error_and_keep_what_came_before_clean(
    payloads: list[Any], done: bool, cuts: list[int]
) -> None:
    events = [chunk(content="ok"), *payloads]
    text = "".join(f"data: {json.dumps(p)}\n\n" for p in events) + ("data: [DONE]\n\n" if done else "")
    result = asyncio.run(stream_bytes(text.encode(), cuts))
    if result.error is not None:
        assert result.error.code != "UNKNOWN", repr(result.error.cause)
    errors = [v for v in check(result.chunks, "strict") if v.severity == "error"]
    if result.error is None:
        assert errors == [], [str(v) for v in errors]
    else:
        assert [v for v in errors if v.position is not None] == [], [str(v) for v in errors]
