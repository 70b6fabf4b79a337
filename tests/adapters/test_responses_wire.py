"""The OpenAI Responses wire: the pure translator on small real-shaped streams (no HTTP), the
request body, and the adapter on hostile bodies through a mock transport."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from _responses_events import USAGE, Events, sse, translate

import chunkscope as cs
from chunkscope.adapters._failures import ERROR_OBJECT_CODES
from chunkscope.adapters.openai_responses import OpenAIResponsesAdapter, build_body
from chunkscope.adapters.openai_responses.request import sent_options
from chunkscope.adapters.openai_responses.translate import ResponsesTranslator, map_usage, read_whole
from chunkscope.adapters.wires import WIRES
from chunkscope.protocol import LlmError, StreamResult, check, collect
from chunkscope.protocol._errors import ERROR_CODES

KEY = "sk-responses-SECRET-0123456789"


def result_of(chunks: list[Any]) -> StreamResult:
    return asyncio.run(collect(chunks))


def assert_strict(chunks: list[Any]) -> None:
    assert check(chunks, "strict") == [], [str(v) for v in check(chunks, "strict")]


def failing(events: Events, **kwargs: Any) -> tuple[LlmError, list[Any]]:
    """Feed until the translator raises: the error and every chunk delivered (salvage included)."""
    translator = ResponsesTranslator(**kwargs)
    chunks: list[Any] = []
    for event in events.events:
        try:
            chunks += translator.feed((event["type"], json.dumps(event)))
        except LlmError as error:
            return error, chunks + translator.salvage()
    raise AssertionError("no failure")


# --- content ------------------------------------------------------------------------


def test_text_deltas_make_one_text_block_then_disjoint_usage_and_stop() -> None:
    chunks, translator = translate(Events().created().message(0, "Hel", "lo!").terminal())
    assert translator.done
    assert_strict(chunks)
    result = result_of(chunks)
    assert result.text == "Hello!" and [b.type for b in result.blocks] == ["text"]
    # input_tokens 40 includes 30 cache hits; output_tokens 25 includes 20 reasoning tokens
    assert result.usage is not None and result.usage.to_dict() == {
        "inputTokens": 10,
        "outputTokens": 25,
        "cacheReadTokens": 30,
        "reasoningTokens": 20,
    }
    assert result.finish is not None and result.finish.kind == "stop"
    assert translator.ignored_count == 0


def test_each_summary_part_is_its_own_reasoning_block_never_interleaved() -> None:
    events = (
        Events().created().reasoning(0, ["Look", "ing."], ["Then", " act."]).message(1, "Done.").terminal()
    )
    chunks, _ = translate(events)
    assert_strict(chunks)
    blocks = result_of(chunks).blocks
    assert [(b.type, getattr(b, "text", None)) for b in blocks] == [
        ("reasoning", "Looking."),
        ("reasoning", "Then act."),
        ("text", "Done."),
    ]


def test_reasoning_text_deltas_are_reasoning_one_block_per_content_part() -> None:
    chunks, _ = translate(
        Events().created().reasoning(0, ["Raw", " thought."], raw=True).message(1, "Ok").terminal()
    )
    assert_strict(chunks)
    result = result_of(chunks)
    assert result.reasoning == "Raw thought." and [b.type for b in result.blocks] == ["reasoning", "text"]


def test_several_message_items_are_one_text_block_each() -> None:
    events = Events().created().message(0, "First.", item_id="msg_a").message(1, " Second.", item_id="msg_b")
    chunks, _ = translate(events.terminal())
    assert_strict(chunks)
    assert [b.text for b in result_of(chunks).blocks] == ["First.", " Second."]  # type: ignore[union-attr]


def test_a_function_call_item_is_one_tool_call_block_with_its_call_id_and_name() -> None:
    events = (
        Events().created().message(0, "Checking.").call(1, "call_abc", "get_weather", '{"city":', ' "Tokyo"}')
    )
    chunks, _ = translate(events.terminal())
    assert_strict(chunks)
    result = result_of(chunks)
    (call,) = result.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_abc", "get_weather", '{"city": "Tokyo"}')
    assert result.finish is not None and result.finish.kind == "tool-calls"


@pytest.mark.parametrize("where", ["arguments.done", "output_item.done"])
def test_arguments_sent_whole_without_deltas_are_the_calls_arguments(where: str) -> None:
    events = Events().created().call_added(0, "call_w", "ping")
    if where == "arguments.done":
        events.add(
            "response.function_call_arguments.done", item_id="fc_1", output_index=0, arguments='{"n": 1}'
        )
        events.item_done(0, {"type": "function_call", "call_id": "call_w", "name": "ping", "arguments": ""})
    else:
        events.item_done(
            0, {"type": "function_call", "call_id": "call_w", "name": "ping", "arguments": '{"n": 1}'}
        )
    chunks, _ = translate(events.terminal())
    assert_strict(chunks)
    assert [c.arguments for c in result_of(chunks).tool_calls] == ['{"n": 1}']


def test_a_call_without_arguments_gets_an_empty_object() -> None:
    chunks, _ = translate(Events().created().call(0, "call_p", "ping").terminal())
    assert_strict(chunks)
    assert [c.arguments for c in result_of(chunks).tool_calls] == ["{}"]


def test_an_item_whose_events_arrive_while_another_is_open_waits_its_turn() -> None:
    events = Events().created().call_added(0, "call_1", "a").call_added(1, "call_2", "b", item_id="fc_2")
    events.add("response.function_call_arguments.delta", item_id="fc_2", output_index=1, delta='{"y": 2}')
    events.add("response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta='{"x": 1}')
    events.item_done(1, {"type": "function_call", "call_id": "call_2", "name": "b", "arguments": '{"y": 2}'})
    events.item_done(0, {"type": "function_call", "call_id": "call_1", "name": "a", "arguments": '{"x": 1}'})
    chunks, _ = translate(events.terminal())
    assert_strict(chunks)
    assert [(c.id, c.arguments) for c in result_of(chunks).tool_calls] == [
        ("call_1", '{"x": 1}'),
        ("call_2", '{"y": 2}'),
    ]


def test_an_item_done_without_its_added_event_still_counts() -> None:
    events = Events().created()
    events.item_done(0, {"type": "message", "content": [{"type": "output_text", "text": "Whole."}]})
    chunks, _ = translate(events.terminal())
    assert_strict(chunks)
    assert result_of(chunks).text == "Whole."


# --- finishes -----------------------------------------------------------------------


def test_incomplete_at_max_output_tokens_is_max_tokens_with_usage() -> None:
    chunks, _ = translate(
        Events()
        .created()
        .message(0, "This is cu")
        .terminal("response.incomplete", reason="max_output_tokens")
    )
    assert_strict(chunks)
    result = result_of(chunks)
    assert result.finish is not None and result.finish.kind == "max-tokens" and result.usage is not None


def test_incomplete_by_content_filter_is_a_content_filter_error_finish_keeping_the_text() -> None:
    chunks, _ = translate(
        Events().created().message(0, "I can").terminal("response.incomplete", reason="content_filter")
    )
    assert_strict(chunks)
    result = result_of(chunks)
    assert result.text == "I can" and result.error_code == "CONTENT_FILTER"
    assert result.finish is not None and result.finish.kind == "error"


def test_a_refusal_is_shown_as_text_and_ends_with_refusal() -> None:
    events = Events().created()
    events.add(
        "response.output_item.added", output_index=0, item={"id": "m", "type": "message", "content": []}
    )
    events.add("response.refusal.delta", item_id="m", output_index=0, content_index=0, delta="I can't help.")
    events.add("response.refusal.done", item_id="m", output_index=0, content_index=0, refusal="I can't help.")
    events.item_done(0, {"id": "m", "type": "message", "content": []})
    chunks, _ = translate(events.terminal())
    assert_strict(chunks)
    result = result_of(chunks)
    assert result.text == "I can't help." and result.error_code == "REFUSAL"


def test_a_completed_response_without_content_is_an_empty_response() -> None:
    chunks, _ = translate(Events().created().terminal())
    assert_strict(chunks)
    assert result_of(chunks).error_code == "EMPTY_RESPONSE"


@pytest.mark.parametrize(
    ("wire_code", "code"),
    [
        ("rate_limit_exceeded", "RATE_LIMIT"),
        ("insufficient_quota", "QUOTA"),
        ("server_error", "SERVER"),
        ("context_length_exceeded", "CONTEXT_WINDOW_EXCEEDED"),
        ("invalid_prompt", "INVALID_REQUEST"),
        ("bio_policy", "CONTENT_FILTER"),
    ],
)
def test_the_error_event_raises_the_code_its_code_names_keeping_the_output(wire_code: str, code: str) -> None:
    events = (
        Events().created().message(0, "Part").add("error", code=wire_code, message="went wrong", param=None)
    )
    error, chunks = failing(events)
    assert error.code == code and "went wrong" in error.message
    assert result_of(chunks).text == "Part"


def test_response_failed_is_an_error_finish_by_its_code_after_usage() -> None:
    events = (
        Events()
        .created()
        .message(0, "Half")
        .terminal("response.failed", error={"code": "rate_limit_exceeded", "message": "slow down"})
    )
    chunks, translator = translate(events)
    assert translator.done
    assert_strict(chunks)
    result = result_of(chunks)
    assert result.error_code == "RATE_LIMIT" and result.usage is not None and result.text == "Half"
    assert result.finish is not None and "slow down" in result.finish.failure.message  # type: ignore[union-attr]


def test_the_body_ending_before_the_terminal_response_is_stream_closed() -> None:
    _, translator = translate(Events().created().message(0, "cut"))
    with pytest.raises(LlmError) as raised:
        translator.end()
    assert raised.value.code == "STREAM_CLOSED"


# --- what is not ours, and what is wrong ----------------------------------------------


def test_events_and_items_outside_the_vocabulary_are_ignored_and_counted() -> None:
    events = Events().created()
    events.add("response.output_item.added", output_index=0, item={"id": "ws", "type": "web_search_call"})
    events.add("response.web_search_call.in_progress", output_index=0, item_id="ws")
    events.add("response.web_search_call.completed", output_index=0, item_id="ws")
    events.item_done(0, {"id": "ws", "type": "web_search_call"})
    events.message(1, "Found.")
    events.add("response.output_text.annotation.added", output_index=1, content_index=0, annotation={})
    events.add("response.brand_new_event", anything=True)
    chunks, translator = translate(events.terminal())
    assert_strict(chunks)
    assert result_of(chunks).text == "Found."
    assert translator.ignored == {
        "output_item:web_search_call": 1,
        "response.web_search_call.in_progress": 1,
        "response.web_search_call.completed": 1,
        "response.output_text.annotation.added": 1,
        "response.brand_new_event": 1,
    }
    assert translator.ignored_count == 5


def test_a_done_marker_is_not_this_wires_end() -> None:
    _, translator = translate(Events().created().message(0, "cut"))
    assert translator.feed(("message", "[DONE]")) == [] and translator.ignored["[DONE]"] == 1
    with pytest.raises(LlmError) as raised:
        translator.end()
    assert raised.value.code == "STREAM_CLOSED"


def test_a_sequence_gap_is_malformed_after_the_output_before_it() -> None:
    events = Events().created().message(0, "Kept")
    events.sequence += 1  # one event lost
    events.message(1, "lost?")
    error, chunks = failing(events)
    assert error.code == "MALFORMED_RESPONSE" and "skipped 1 event" in error.message
    assert result_of(chunks).text == "Kept"


def test_a_repeated_sequence_number_is_malformed() -> None:
    events = Events().created()
    events.sequence -= 1
    error, _ = failing(events.message(0, "twice"))
    assert error.code == "MALFORMED_RESPONSE" and "repeated" in error.message


def test_check_sequence_off_accepts_a_renumbering_gateway() -> None:
    events = Events().created().message(0, "a")
    events.sequence += 5
    chunks, translator = translate(events.message(1, "b").terminal(), check_sequence=False)
    assert translator.done and result_of(chunks).text == "ab"


@pytest.mark.parametrize(
    ("payload", "wording"),
    [
        ('{"type": "response.output_text.delta", "delta": "unterminated', "not JSON"),
        ("[" * 100_000 + "]" * 100_000, "not JSON"),
        ('["a list"]', "not an object"),
        ('{"type": ["a", "list"], "sequence_number": 0}', "not a string"),
        ('{"type": "response.output_text.delta", "output_index": 7, "delta": "x"}', "never added"),
        ('{"type": "response.output_item.added", "output_index": "0", "item": {}}', "integer output_index"),
    ],
)
def test_payloads_that_are_not_the_wire_shape_are_malformed(payload: str, wording: str) -> None:
    translator = ResponsesTranslator(secrets=(KEY,))
    with pytest.raises(LlmError) as raised:
        translator.feed(("message", payload))
    assert raised.value.code == "MALFORMED_RESPONSE" and wording in raised.value.message


def test_a_text_delta_for_a_function_call_item_is_malformed() -> None:
    events = Events().created().call_added(0, "c", "f")
    events.add("response.output_text.delta", item_id="fc_1", output_index=0, content_index=0, delta="x")
    error, _ = failing(events)
    assert error.code == "MALFORMED_RESPONSE" and "not a text item" in error.message


def test_completed_call_arguments_that_are_not_a_json_object_are_malformed() -> None:
    error, _ = failing(Events().created().call(0, "c", "f", '{"cut": ').terminal())
    assert error.code == "MALFORMED_RESPONSE" and "not a JSON object" in error.message


def test_a_count_that_is_not_a_count_is_malformed() -> None:
    error, _ = failing(Events().created().message(0, "x").terminal(usage={"input_tokens": -1}))
    assert error.code == "MALFORMED_RESPONSE"


def test_usage_mapping_takes_cache_reads_and_writes_out_of_the_input() -> None:
    usage = map_usage({**USAGE, "input_tokens_details": {"cached_tokens": 30, "cache_write_tokens": 5}})
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (5, 30, 5)
    plain = map_usage({"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 3})
    assert plain.to_dict() == {"inputTokens": 12, "outputTokens": 3, "cacheReadTokens": 0}  # sent: 0
    bare = map_usage({"input_tokens": 12, "output_tokens": 3})
    assert bare.to_dict() == {"inputTokens": 12, "outputTokens": 3}  # not sent: absent


def test_read_whole_gives_the_usage_and_finish_of_a_non_streaming_answer() -> None:
    body = {"status": "completed", "output": [{"type": "function_call"}], "usage": USAGE}
    usage, finish = read_whole(body)
    assert (
        usage is not None and usage.input_tokens == 10 and finish is not None and finish.kind == "tool-calls"
    )
    _, cut = read_whole({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}})
    assert cut is not None and cut.kind == "max-tokens"
    _, failed = read_whole({"status": "failed", "error": {"code": "server_error", "message": "x"}})
    assert failed is not None and failed.failure is not None and failed.failure.code == "SERVER"


def test_every_error_object_code_maps_to_a_registered_code() -> None:
    assert all(code in ERROR_CODES for code in ERROR_OBJECT_CODES.values())


# --- the request --------------------------------------------------------------------


def test_the_body_carries_input_items_tools_effort_and_limits() -> None:
    options = cs.GenerateOptions(
        "openai",
        "gpt-5-mini",
        [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "reasoning", "text": "thinking"},
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool-call",
                        "id": "call_1",
                        "name": "get_weather",
                        "arguments": '{"city":"Tokyo"}',
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": "call_1",
                        "content": [{"type": "text", "text": "sunny"}],
                    },
                    {"type": "text", "text": "Thanks"},
                ],
            },
        ],
        system="Be brief.",
        tools=[{"name": "get_weather", "description": "d", "parameters": {"type": "object"}}],
        max_tokens=99,
        temperature=0.5,
        reasoning_effort="low",
    )
    body = OpenAIResponsesAdapter("https://api.openai.com/v1", KEY).request_body(options)
    assert body["stream"] is True and body["store"] is False and body["instructions"] == "Be brief."
    assert body["input"] == [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Checking."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Tokyo"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"role": "user", "content": "Thanks"},
    ]
    assert body["tools"] == [
        {"type": "function", "name": "get_weather", "description": "d", "parameters": {"type": "object"}}
    ]
    assert body["max_output_tokens"] == 99 and body["temperature"] == 0.5
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    sent = sent_options(body)
    assert (
        "Be brief." in json.dumps(sent.system)
        and sent.tool_names == ["get_weather"]
        and sent.max_tokens == 99
    )
    assert WIRES["responses"].sent is sent_options


def test_off_sends_effort_none_and_an_o_series_model_has_no_off() -> None:
    adapter = OpenAIResponsesAdapter("https://api.openai.com/v1", KEY)
    options = cs.GenerateOptions(
        "openai", "gpt-5.1", [{"role": "user", "content": "hi"}], reasoning_effort="off"
    )
    assert adapter.request_body(adapter.prepare(options))["reasoning"] == {"effort": "none"}
    with pytest.raises(LlmError) as raised:
        adapter.prepare(options.replace(model="o3-mini"))
    assert raised.value.code == "UNSUPPORTED_REASONING_EFFORT"
    assert "reasoning" not in build_body(
        cs.GenerateOptions("openai", "gpt-4.1", [{"role": "user", "content": "x"}])
    )


def test_stop_sequences_are_refused_before_any_io() -> None:
    adapter = OpenAIResponsesAdapter("https://api.openai.com/v1", KEY)
    with pytest.raises(LlmError) as raised:
        adapter.prepare(
            cs.GenerateOptions("openai", "gpt-5", [{"role": "user", "content": "x"}], stop=["END"])
        )
    assert raised.value.code == "UNSUPPORTED_OPTION"


# --- the adapter on hostile bodies ----------------------------------------------------


async def stream_body(body: bytes, **kwargs: Any) -> StreamResult:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/responses"
        assert request.headers["authorization"] == f"Bearer {KEY}"
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        adapter = OpenAIResponsesAdapter("https://api.test/v1", KEY, http_client=client, **kwargs)
        options = cs.GenerateOptions("openai", "gpt-5", [{"role": "user", "content": "hi"}])
        result = await collect(adapter.stream(options))
    assert KEY not in repr(adapter) and (result.error is None or KEY not in str(result.error))
    return result


async def test_a_whole_stream_through_the_adapter() -> None:
    result = await stream_body(
        sse(Events().created().reasoning(0, ["Hm."]).message(1, "Hi").terminal().events)
    )
    assert result.ok and (result.reasoning, result.text) == ("Hm.", "Hi") and result.violations == []


async def test_an_event_over_the_size_limit_is_malformed_after_the_output_before_it() -> None:
    events = Events().created().message(0, "Kept").events
    huge = Events(start=len(events)).message(1, "x" * 5000).events
    result = await stream_body(sse(events + huge), max_event_bytes=2048)
    assert result.error is not None and result.error.code == "MALFORMED_RESPONSE"
    assert result.text == "Kept"


async def test_an_error_event_echoing_the_key_never_shows_it() -> None:
    events = Events().created().add("error", code="invalid_prompt", message=f"bad key {KEY}").events
    result = await stream_body(sse(events))
    assert result.error is not None and result.error.code == "INVALID_REQUEST"
    assert KEY not in str(result.error) and KEY not in repr(result.error)


@pytest.mark.parametrize(
    "block",
    [
        b"event: response.output_text.delta\ndata: {}",
        b"event: \ndata: {}",
        b"event:x\ndata: {}",
        b"event: a\ndata:{}",
        b"event: a\ndata: one\ndata: two",
        b"event: a\nid: 7\ndata: {}",
        b'event: a:b\ndata: {"k": 1}',
        b"event: a\n: comment\ndata: {}",
        "event: é\ndata: 日本".encode(),
    ],
)
def test_the_framings_named_event_fast_path_reads_what_the_full_parser_reads(block: bytes) -> None:
    from chunkscope.adapters._core import SseDecoder

    full: list[Any] = []
    SseDecoder()._parse(block, full)
    assert SseDecoder().feed(block + b"\n\n") == full
