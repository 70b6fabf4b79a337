"""The Anthropic event translator: wire events in, strict-valid StreamChunks out."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _anthropic_events import (
    Event,
    block_stop,
    error,
    json_delta,
    message_delta,
    message_start,
    message_stop,
    ping,
    signature_delta,
    text_delta,
    text_reply,
    text_start,
    thinking_delta,
    thinking_start,
    tool_start,
)

from chunkscope.adapters.anthropic.translate import (
    AnthropicTranslator,
    anthropic_error_code,
    map_stop_reason,
)
from chunkscope.protocol import (
    AnyChunk,
    BlockEnd,
    BlockStart,
    Finish,
    LlmError,
    ReasoningBlock,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
    check,
)


def translate(events: list[Event], *, close: bool = True) -> list[AnyChunk]:
    translator = AnthropicTranslator()
    out: list[AnyChunk] = []
    for name, data in events:
        out.extend(translator.feed_parsed(name, data))
    if close:
        translator.close()
    return out


def translate_until_error(events: list[Event]) -> tuple[list[AnyChunk], LlmError]:
    translator = AnthropicTranslator(request_id="req-1")
    out: list[AnyChunk] = []
    with pytest.raises(LlmError) as info:
        for name, data in events:
            out.extend(translator.feed_parsed(name, data))
        translator.close()
    return out, info.value


def blocks(chunks: list[AnyChunk]) -> list[Any]:
    return [c.block for c in chunks if isinstance(c, BlockEnd)]


def finish(chunks: list[AnyChunk]) -> Finish:
    last = chunks[-1]
    assert isinstance(last, Finish)
    return last


def usage(chunks: list[AnyChunk]) -> TokenUsage:
    found = [c.usage for c in chunks if isinstance(c, Usage)]
    assert len(found) == 1
    return found[0]


def test_translates_a_text_stream_into_one_text_block() -> None:
    chunks = translate(text_reply("Hel", "lo", "!"))
    assert check(chunks, "strict") == []
    assert blocks(chunks) == [TextBlock(text="Hello!")]
    assert [c.to_dict() for c in chunks[:2]] == [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "Hel"},
    ]
    assert finish(chunks).reason.kind == "stop"


def test_reports_input_usage_from_message_start_and_output_from_message_delta() -> None:
    events = text_reply("hi", output_tokens=7)
    events[0] = message_start(20, cache_read=300, cache_write=40)
    chunks = translate(events)
    # Anthropic's input_tokens is already uncached: nothing is subtracted.
    assert usage(chunks) == TokenUsage(
        input_tokens=20, output_tokens=7, cache_read_tokens=300, cache_write_tokens=40
    )
    assert check(chunks, "strict") == []


def test_message_delta_usage_overrides_cumulative_counts_and_reads_thinking_tokens() -> None:
    events = text_reply("hi")
    events[-2] = message_delta(
        "end_turn",
        9,
        input_tokens=25,
        cache_read_input_tokens=3,
        output_tokens_details={"thinking_tokens": 4},
    )
    assert usage(translate(events)) == TokenUsage(
        input_tokens=25, output_tokens=9, cache_read_tokens=3, reasoning_tokens=4
    )


def test_usage_comes_once_right_before_finish() -> None:
    chunks = translate(text_reply("a", "b"))
    assert isinstance(chunks[-2], Usage)
    assert sum(isinstance(c, Usage) for c in chunks) == 1


@pytest.mark.parametrize(
    ("stop_reason", "kind"),
    [("end_turn", "stop"), ("stop_sequence", "stop"), ("max_tokens", "max-tokens")],
)
def test_maps_stop_reasons_to_finish_kinds(stop_reason: str, kind: str) -> None:
    chunks = translate(text_reply("x", stop_reason=stop_reason))
    assert finish(chunks).reason.kind == kind
    assert check(chunks, "strict") == []


def test_maps_refusal_to_an_error_finish_with_code_refusal() -> None:
    chunks = translate(text_reply("I can", stop_reason="refusal"))
    reason = finish(chunks).reason
    assert reason.kind == "error"
    assert reason.failure is not None and reason.failure.code == "REFUSAL"
    assert blocks(chunks) == [TextBlock(text="I can")]
    assert check(chunks, "strict") == []


def test_maps_an_unknown_stop_reason_to_an_error_finish_with_its_upper_cased_name() -> None:
    # pause_turn and model_context_window_exceeded are mapped now (test_finish_codes.py);
    # a reason added after this adapter was written keeps the reference's upper-cased code.
    reason = finish(translate(text_reply("x", stop_reason="some_future_reason"))).reason
    assert reason.kind == "error"
    assert reason.failure is not None and reason.failure.code == "SOME_FUTURE_REASON"
    assert map_stop_reason("model_context_window_exceeded").failure.code == (  # type: ignore[union-attr]
        "CONTEXT_WINDOW_EXCEEDED"
    )


def test_translates_thinking_then_text_into_reasoning_and_text_blocks() -> None:
    events = [
        message_start(),
        thinking_start(0),
        thinking_delta(0, "Let me "),
        thinking_delta(0, "think."),
        signature_delta(0, "sig-abc"),
        block_stop(0),
        text_start(1),
        text_delta(1, "Done."),
        block_stop(1),
        message_delta(),
        message_stop(),
    ]
    chunks = translate(events)
    assert check(chunks, "strict") == []
    assert blocks(chunks) == [ReasoningBlock(text="Let me think."), TextBlock(text="Done.")]
    assert chunks[1].to_dict() == {"type": "reasoning-delta", "index": 0, "text": "Let me "}
    # The signature is kept for replay, not shown as content.
    assert finish(chunks).replay_state == {"thinking": [{"index": 0, "signature": "sig-abc"}]}


def test_keeps_redacted_thinking_in_replay_state_without_opening_a_block() -> None:
    events = [
        message_start(),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "redacted_thinking", "data": "opaque"},
            },
        ),
        block_stop(0),
        text_start(1),
        text_delta(1, "ok"),
        block_stop(1),
        message_delta(),
        message_stop(),
    ]
    chunks = translate(events)
    assert check(chunks, "strict") == []
    assert chunks[0] == BlockStart(index=0, block_type="text")  # our indexes stay 0, 1, 2, …
    assert finish(chunks).replay_state == {"redactedThinking": ["opaque"]}


def test_translates_a_tool_use_block_with_partial_json_into_a_tool_call() -> None:
    events = [
        message_start(),
        text_start(0),
        text_delta(0, "Let me check."),
        block_stop(0),
        tool_start(1, "toolu_01", "get_weather"),
        json_delta(1, ""),
        json_delta(1, '{"city": '),
        json_delta(1, '"Tokyo"}'),
        block_stop(1),
        message_delta("tool_use"),
        message_stop(),
    ]
    chunks = translate(events)
    assert check(chunks, "strict") == []
    assert blocks(chunks)[1] == ToolCallBlock(
        id="toolu_01", name="get_weather", arguments='{"city": "Tokyo"}'
    )
    deltas = [c for c in chunks if isinstance(c, ToolCallDelta)]
    # The name rides on the first delta only; an empty partial_json emits nothing.
    assert [(d.id, d.name, d.arguments_delta) for d in deltas] == [
        ("toolu_01", "get_weather", '{"city": '),
        ("toolu_01", None, '"Tokyo"}'),
    ]
    assert finish(chunks).reason.kind == "tool-calls"


def test_a_tool_use_without_input_deltas_gets_arguments_from_the_start_event() -> None:
    events = [
        message_start(),
        tool_start(0, "toolu_ping", "ping"),
        block_stop(0),
        message_delta("tool_use"),
        message_stop(),
    ]
    chunks = translate(events)
    assert check(chunks, "strict") == []
    assert blocks(chunks) == [ToolCallBlock(id="toolu_ping", name="ping", arguments="{}")]


def test_a_tool_use_whose_start_event_carries_the_input_keeps_it() -> None:
    events = [
        message_start(),
        tool_start(0, "toolu_x", "lookup", input={"q": "x"}),
        block_stop(0),
        message_delta("tool_use"),
        message_stop(),
    ]
    chunks = translate(events)
    assert check(chunks, "strict") == []
    assert json.loads(blocks(chunks)[0].arguments) == {"q": "x"}


def test_makes_up_a_unique_id_for_a_tool_use_without_one() -> None:
    events = [
        message_start(),
        tool_start(0, "", "lookup"),
        json_delta(0, '{"q": "x"}'),
        block_stop(0),
        tool_start(1, "", "lookup"),
        json_delta(1, '{"q": "y"}'),
        block_stop(1),
        message_delta("tool_use"),
        message_stop(),
    ]
    chunks = translate(events)
    assert check(chunks, "strict") == []
    ids = [b.id for b in blocks(chunks)]
    assert all(ids) and len(set(ids)) == 2


def test_interleaved_wire_blocks_come_out_one_after_the_other() -> None:
    events = [
        message_start(),
        tool_start(0, "call_1", "get_weather"),
        tool_start(1, "call_2", "get_time"),
        json_delta(0, '{"city": '),
        json_delta(1, '{"timezone": '),
        json_delta(0, '"Tokyo"}'),
        json_delta(1, '"Asia/Tokyo"}'),
        block_stop(0),
        block_stop(1),
        message_delta("tool_use"),
        message_stop(),
    ]
    chunks = translate(events)
    assert check(chunks, "strict") == []
    assert blocks(chunks) == [
        ToolCallBlock(id="call_1", name="get_weather", arguments='{"city": "Tokyo"}'),
        ToolCallBlock(id="call_2", name="get_time", arguments='{"timezone": "Asia/Tokyo"}'),
    ]


def test_a_block_stopped_before_the_open_one_waits_for_its_turn() -> None:
    events = [
        message_start(),
        text_start(0),
        thinking_start(1),
        thinking_delta(1, "hmm"),
        block_stop(1),
        text_delta(0, "first"),
        block_stop(0),
        message_delta(),
        message_stop(),
    ]
    chunks = translate(events)
    assert check(chunks, "strict") == []
    assert blocks(chunks) == [TextBlock(text="first"), ReasoningBlock(text="hmm")]


def test_a_block_never_stopped_ends_with_the_message() -> None:
    events = [message_start(), text_start(0), text_delta(0, "x"), message_delta(), message_stop()]
    chunks = translate(events)
    assert check(chunks, "strict") == []
    assert blocks(chunks) == [TextBlock(text="x")]


def test_ignores_pings_and_unknown_events_and_delta_types() -> None:
    events = text_reply("a", "b")
    events.insert(1, ping())
    events.insert(
        3,
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {}}},
        ),
    )
    events.insert(4, ("future_event", {"type": "future_event"}))
    chunks = translate(events)
    assert check(chunks, "strict") == []
    assert blocks(chunks) == [TextBlock(text="ab")]


def test_skips_content_blocks_it_cannot_represent() -> None:
    events = [
        message_start(),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}},
            },
        ),
        json_delta(0, '{"query": "x"}'),
        block_stop(0),
        text_start(1),
        text_delta(1, "found"),
        block_stop(1),
        message_delta(),
        message_stop(),
    ]
    chunks = translate(events)
    assert check(chunks, "strict") == []
    assert blocks(chunks) == [TextBlock(text="found")]


def test_an_empty_response_is_an_error_finish_with_code_empty_response() -> None:
    chunks = translate([message_start(output_tokens=0), message_delta("end_turn", 0), message_stop()])
    reason = finish(chunks).reason
    assert reason.kind == "error"
    assert reason.failure is not None and reason.failure.code == "EMPTY_RESPONSE"
    assert check(chunks, "strict") == []


def test_an_empty_text_block_still_counts_as_an_empty_response() -> None:
    events = [message_start(), text_start(0), block_stop(0), message_delta(), message_stop()]
    chunks = translate(events)
    assert finish(chunks).reason.failure.code == "EMPTY_RESPONSE"  # type: ignore[union-attr]
    assert check(chunks, "strict") == []


def test_a_stream_that_ends_before_message_stop_raises_stream_closed_after_its_deltas() -> None:
    events = text_reply("a", "b", "c")[:-3]
    chunks, err = translate_until_error(events)
    assert err.code == "STREAM_CLOSED"
    assert [c.to_dict().get("text") for c in chunks[1:]] == ["a", "b", "c"]


def test_a_stream_cut_after_message_delta_still_raises_stream_closed() -> None:
    _, err = translate_until_error(text_reply("a")[:-1])
    assert err.code == "STREAM_CLOSED"


def test_malformed_json_raises_malformed_response() -> None:
    translator = AnthropicTranslator()
    translator.feed_text("message_start", json.dumps(message_start()[1]))
    with pytest.raises(LlmError) as info:
        translator.feed_text("content_block_delta", "{not json")
    assert info.value.code == "MALFORMED_RESPONSE"


@pytest.mark.parametrize(
    "bad",
    [
        [message_start(), message_start()],
        [message_start(), text_delta(0, "x")],  # never started
        [message_start(), text_start(0), text_start(0)],
        [message_start(), text_start(0), thinking_delta(0, "x")],  # wrong kind
        [
            message_start(),
            text_start(0),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}},
            ),
        ],
        [message_start(), text_start(0), block_stop(0), text_delta(0, "late")],
        [message_start(), ("content_block_start", {"type": "content_block_start", "index": "0"})],
        [message_start(), text_start(0), text_delta(0, "x"), block_stop(0), message_stop()],  # no stop_reason
        [message_start(), ("message_delta", [1, 2])],
    ],
)
def test_a_stream_that_is_not_the_wire_shape_raises_malformed_response(bad: list[Event]) -> None:
    _, err = translate_until_error(bad)
    assert err.code == "MALFORMED_RESPONSE"


def test_tool_use_stop_with_arguments_that_are_not_json_raises_malformed_response() -> None:
    events = [
        message_start(),
        tool_start(0),
        json_delta(0, '{"city": "To'),
        block_stop(0),
        message_delta("tool_use"),
        message_stop(),
    ]
    chunks, err = translate_until_error(events)
    assert err.code == "MALFORMED_RESPONSE"
    assert [c for c in chunks if isinstance(c, ToolCallDelta)]  # the partial output was delivered


def test_max_tokens_may_cut_a_tool_calls_json_short() -> None:
    events = [
        message_start(),
        tool_start(0),
        json_delta(0, '{"city": "To'),
        block_stop(0),
        message_delta("max_tokens"),
        message_stop(),
    ]
    chunks = translate(events)
    assert finish(chunks).reason.kind == "max-tokens"
    assert check(chunks, "strict") == []


@pytest.mark.parametrize(
    ("error_type", "message", "code"),
    [
        ("overloaded_error", "Overloaded", "SERVER"),
        ("api_error", "Internal server error", "SERVER"),
        ("rate_limit_error", "Number of requests has exceeded your rate limit", "RATE_LIMIT"),
        ("authentication_error", "invalid x-api-key", "AUTH"),
        ("permission_error", "not allowed", "AUTH"),
        ("invalid_request_error", "messages: field required", "INVALID_REQUEST"),
        (
            "invalid_request_error",
            "input length and max_tokens exceed context limit",
            "CONTEXT_WINDOW_EXCEEDED",
        ),
        (
            "invalid_request_error",
            "prompt is too long: 208000 tokens > 200000 maximum",
            "CONTEXT_WINDOW_EXCEEDED",
        ),
        ("invalid_request_error", "Your credit balance is too low to access the Anthropic API", "QUOTA"),
        ("billing_error", "payment required", "QUOTA"),
        ("some_future_error", "?", "SERVER"),
    ],
)
def test_maps_error_events_to_codes_after_the_partial_deltas(
    error_type: str, message: str, code: str
) -> None:
    events = [*text_reply("a", "b")[:4], error(error_type, message)]
    chunks, err = translate_until_error(events)
    assert err.code == code
    assert err.request_id == "req-1"
    assert message in err.message
    assert [c.to_dict().get("text") for c in chunks[1:]] == ["a", "b"]


def test_error_code_falls_back_to_the_http_status_for_unknown_types() -> None:
    assert anthropic_error_code(None, "gone", 410) == "HTTP_410"
    assert anthropic_error_code("not_found_error", "model: x") == "HTTP_404"


def test_nothing_follows_the_finish() -> None:
    translator = AnthropicTranslator()
    for name, data in text_reply("a"):
        translator.feed_parsed(name, data)
    assert translator.finished
    assert translator.feed_parsed(*text_delta(0, "late")) == []
    translator.close()  # does not raise once finished


def test_error_finishes_carry_the_request_id() -> None:
    translator = AnthropicTranslator(request_id="req-9")
    out: list[AnyChunk] = []
    for name, data in text_reply("x", stop_reason="refusal"):
        out.extend(translator.feed_parsed(name, data))
    assert finish(out).reason.failure.request_id == "req-9"  # type: ignore[union-attr]


def test_a_stream_without_message_start_an_empty_first_delta_and_a_web_search_read_as_the_answer() -> None:
    # message_start carries only the id, model and first usage: without it the content still reads;
    # Anthropic runs web_search itself (server_tool_use, web_search_tool_result): no client call.
    server = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    events = [
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": server}),
        json_delta(0, '{"query": "weather"}'),
        block_stop(0),
        ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": found}),
        block_stop(1),
        text_start(2),
        text_delta(2, ""),
        text_delta(2, "Sunny."),
        block_stop(2),
        message_delta(),
        message_stop(),
    ]
    chunks = translate(events)
    assert check(chunks, "strict") == []
    assert blocks(chunks) == [TextBlock(text="Sunny.")] and finish(chunks).reason.kind == "stop"
