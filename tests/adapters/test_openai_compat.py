"""OpenAICompatAdapter against hand-built SSE bytes (httpx.MockTransport): every wire mapping."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
from _openai_events import API_KEY, BASE_URL, MockServer, chunk, options, run, sse, tool, types_of, usage
from fault_matrix import cancel_after_first_chunk

from chunkscope.adapters._base import AbortController, ModelInfo, ReasoningEffort, ReasoningInfo, user_agent
from chunkscope.adapters.openai_compat import OpenAICompatAdapter
from chunkscope.protocol import (
    BlockEnd,
    BlockStart,
    Finish,
    LlmError,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
    check,
    collect,
)


def assert_clean(result: Any) -> None:
    """No strict-profile error (the usage-missing warning is allowed: most bodies here send no usage)."""
    assert result.errors == [], [str(v) for v in result.errors]
    assert [v for v in check(result.chunks, "strict") if v.severity == "error"] == []


# --- text, reasoning, blocks ------------------------------------------------------


async def test_streams_text_deltas_as_one_text_block_then_usage_then_stop() -> None:
    body = sse(
        chunk(content="Hel"),
        chunk(content="lo"),
        chunk(finish="stop"),
        chunk(no_choices=True, usage=usage(7, 2)),
    )
    result = await run(body)
    assert types_of(result.chunks) == [
        "block-start",
        "text-delta",
        "text-delta",
        "block-end",
        "usage",
        "finish",
    ]
    assert result.chunks[0] == BlockStart(index=0, block_type="text")
    assert result.chunks[1] == TextDelta(index=0, text="Hel")
    assert result.chunks[3].block.text == "Hello"
    assert result.usage == TokenUsage(input_tokens=7, output_tokens=2)
    assert result.finish is not None and result.finish.kind == "stop"
    assert_clean(result)


async def test_an_empty_first_reasoning_fragment_opens_no_block() -> None:
    body = sse(chunk(reasoning=""), chunk(content="hi", reasoning=None), chunk(finish="stop"))
    result = await run(body)
    assert [b.type for b in result.blocks] == ["text"]
    assert_clean(result)


async def test_maps_reasoning_content_to_a_reasoning_block_before_the_text_block() -> None:
    body = sse(
        chunk(reasoning=""),
        chunk(reasoning="Think"),
        chunk(reasoning="ing."),
        chunk(content="Answer"),
        chunk(finish="stop"),
    )
    result = await run(body)
    assert [b.type for b in result.blocks] == ["reasoning", "text"]
    assert result.reasoning == "Thinking." and result.text == "Answer"
    # the reasoning block ends before the text block starts: no interleaving
    kinds = types_of(result.chunks)
    assert kinds.index("block-end") < kinds.index("text-delta")
    assert_clean(result)


async def test_opens_a_new_reasoning_block_when_reasoning_resumes_after_text() -> None:
    body = sse(
        chunk(reasoning="First."),
        chunk(content="Partial."),
        chunk(reasoning="Second."),
        chunk(content=" Final."),
        chunk(finish="stop"),
    )
    result = await run(body)
    assert [b.type for b in result.blocks] == ["reasoning", "text", "reasoning", "text"]
    assert [c.index for c in result.chunks if isinstance(c, BlockStart)] == [0, 1, 2, 3]
    assert result.text == "Partial. Final."
    assert_clean(result)


async def test_reasoning_and_content_in_one_event_become_two_consecutive_blocks() -> None:
    body = sse(chunk(reasoning="r", content="t"), chunk(finish="stop"))
    result = await run(body)
    assert [b.type for b in result.blocks] == ["reasoning", "text"]
    assert_clean(result)


async def test_accepts_the_reasoning_spelling_some_gateways_use() -> None:
    payload = chunk()
    payload["choices"][0]["delta"] = {"reasoning": "because"}
    result = await run(sse(payload, chunk(content="so"), chunk(finish="stop")))
    assert result.reasoning == "because"
    assert_clean(result)


async def test_null_error_and_usage_keys_on_every_chunk_change_nothing() -> None:
    events = [chunk(content="a"), chunk(content="b"), chunk(reasoning="r"), chunk(finish="stop")]
    for event in events:
        event["error"] = None
        event["usage"] = None
    result = await run(sse(*events))
    assert (result.text, result.reasoning) == ("ab", "r")
    assert_clean(result)


async def test_each_block_end_carries_the_complete_block_its_deltas_built() -> None:
    body = sse(chunk(content="a"), chunk(content="b"), chunk(content="c"), chunk(finish="stop"))
    result = await run(body)
    ends = [c for c in result.chunks if isinstance(c, BlockEnd)]
    assert len(ends) == 1 and ends[0].block.text == "abc"


# --- tool calls ------------------------------------------------------------------


async def test_maps_a_tool_call_per_wire_index_and_tool_calls_finish() -> None:
    body = sse(
        chunk(content="Let me check."),
        chunk(tools=[tool(0, id="call_a", name="get_weather", arguments="")]),
        chunk(tools=[tool(0, arguments='{"city": ')]),
        chunk(tools=[tool(0, arguments='"Tokyo"}')]),
        chunk(finish="tool_calls"),
    )
    result = await run(body)
    assert result.finish is not None and result.finish.kind == "tool-calls"
    assert result.tool_calls == [
        ToolCallBlock(id="call_a", name="get_weather", arguments='{"city": "Tokyo"}')
    ]
    deltas = [c for c in result.chunks if isinstance(c, ToolCallDelta)]
    assert {d.id for d in deltas} == {"call_a"}
    assert deltas[0].name == "get_weather"
    assert_clean(result)


async def test_sequential_tool_calls_each_stream_live_as_their_own_block() -> None:
    body = sse(
        chunk(tools=[tool(0, id="call_1", name="a", arguments='{"x": 1}')]),
        chunk(tools=[tool(1, id="call_2", name="b", arguments='{"y"')]),
        chunk(tools=[tool(1, arguments=": 2}")]),
        chunk(finish="tool_calls"),
    )
    result = await run(body)
    assert [(t.id, t.name, t.arguments) for t in result.tool_calls] == [
        ("call_1", "a", '{"x": 1}'),
        ("call_2", "b", '{"y": 2}'),
    ]
    # call 1's second fragment streamed as its own delta (live, not buffered into one)
    assert len([c for c in result.chunks if isinstance(c, ToolCallDelta) and c.id == "call_2"]) == 2
    assert_clean(result)


async def test_interleaved_tool_call_fragments_become_consecutive_blocks() -> None:
    body = sse(
        chunk(tools=[tool(0, id="call_1", name="get_weather", arguments='{"city"')]),
        chunk(tools=[tool(1, id="call_2", name="get_time", arguments='{"timezone"')]),
        chunk(tools=[tool(0, arguments=': "Tokyo"}')]),
        chunk(tools=[tool(1, arguments=': "Asia/Tokyo"}')]),
        chunk(finish="tool_calls"),
    )
    result = await run(body)
    assert [(t.id, t.arguments) for t in result.tool_calls] == [
        ("call_1", '{"city": "Tokyo"}'),
        ("call_2", '{"timezone": "Asia/Tokyo"}'),
    ]
    assert_clean(result)


async def test_holds_fragments_of_a_tool_call_until_its_late_id_arrives() -> None:
    body = sse(
        chunk(tools=[tool(0, name="lookup", arguments='{"q"')]),
        chunk(tools=[tool(0, id="call_late", arguments=': "x"}')]),
        chunk(finish="tool_calls"),
    )
    result = await run(body)
    deltas = [c for c in result.chunks if isinstance(c, ToolCallDelta)]
    assert [d.id for d in deltas] == ["call_late", "call_late"]
    assert result.tool_calls[0].arguments == '{"q": "x"}'
    assert_clean(result)


async def test_makes_up_a_unique_id_for_a_tool_call_that_never_gets_one() -> None:
    body = sse(
        chunk(tools=[tool(0, id="call-1", name="a", arguments="{}")]),
        chunk(tools=[tool(1, name="b", arguments="{}")]),
        chunk(tools=[tool(2, name="c", arguments="{}")]),
        chunk(finish="tool_calls"),
    )
    result = await run(body)
    ids = [t.id for t in result.tool_calls]
    assert ids[0] == "call-1"
    assert all(ids) and len(set(ids)) == 3
    assert_clean(result)


async def test_emits_empty_object_arguments_for_a_tool_call_without_arguments() -> None:
    body = sse(chunk(tools=[tool(0, id="call_ping", name="ping")]), chunk(finish="tool_calls"))
    result = await run(body)
    assert result.tool_calls == [ToolCallBlock(id="call_ping", name="ping", arguments="{}")]
    assert_clean(result)


async def test_a_name_arriving_on_a_fragment_without_arguments_still_reaches_a_delta() -> None:
    body = sse(
        chunk(tools=[tool(0, id="call_1", arguments='{"q": 1}')]),
        chunk(tools=[tool(0, name="lookup", arguments="")]),
        chunk(finish="tool_calls"),
    )
    result = await run(body)
    deltas = [c for c in result.chunks if isinstance(c, ToolCallDelta)]
    assert [d.name for d in deltas if d.name] == ["lookup"]
    assert result.tool_calls == [ToolCallBlock(id="call_1", name="lookup", arguments='{"q": 1}')]
    assert_clean(result)


async def test_a_tool_call_without_a_name_is_malformed_response() -> None:
    body = sse(chunk(tools=[tool(0, id="call_x", arguments="{}")]), chunk(finish="tool_calls"))
    result = await run(body)
    assert result.error_code == "MALFORMED_RESPONSE"
    assert "no function name" in str(result.error)


async def test_text_arriving_inside_an_incomplete_tool_call_is_emitted_after_it() -> None:
    body = sse(
        chunk(tools=[tool(0, id="call_1", name="a", arguments='{"x"')]),
        chunk(content="meanwhile"),
        chunk(tools=[tool(0, arguments=": 1}")]),
        chunk(finish="tool_calls"),
    )
    result = await run(body)
    assert [b.type for b in result.blocks] == ["tool-call", "text"]
    assert result.text == "meanwhile"
    assert_clean(result)


async def test_text_after_a_complete_tool_call_closes_it_and_streams_live() -> None:
    body = sse(
        chunk(tools=[tool(0, id="call_1", name="a", arguments='{"x": 1}')]),
        chunk(content="done"),
        chunk(tools=[tool(0, arguments="  ")]),  # whitespace for a closed call: dropped
        chunk(finish="stop"),
    )
    result = await run(body)
    assert [b.type for b in result.blocks] == ["tool-call", "text"]
    assert result.tool_calls[0].arguments == '{"x": 1}'
    assert_clean(result)


async def test_arguments_for_a_closed_tool_call_are_malformed_response() -> None:
    body = sse(
        chunk(tools=[tool(0, id="call_1", name="a", arguments='{"x": 1}')]),
        chunk(content="done"),
        chunk(tools=[tool(0, arguments=', "y": 2}')]),
        chunk(finish="stop"),
    )
    result = await run(body)
    assert result.error_code == "MALFORMED_RESPONSE"
    assert result.text == "done"  # the partial output before it is kept


# --- usage and finish ------------------------------------------------------------


async def test_subtracts_prompt_cache_hit_tokens_to_keep_usage_disjoint() -> None:
    wire = usage(
        7800,
        9,
        prompt_cache_hit_tokens=7680,
        prompt_cache_miss_tokens=120,
        completion_tokens_details={"reasoning_tokens": 4},
    )
    result = await run(sse(chunk(content="x"), chunk(finish="stop"), chunk(no_choices=True, usage=wire)))
    assert result.usage == TokenUsage(
        input_tokens=120, output_tokens=9, cache_read_tokens=7680, reasoning_tokens=4
    )
    assert_clean(result)


async def test_a_prompt_count_below_its_cache_hits_is_taken_as_uncached_never_negative() -> None:
    wire = usage(50, 3, prompt_cache_hit_tokens=200)
    result = await run(sse(chunk(content="x"), chunk(finish="stop", usage=wire)))
    assert result.usage == TokenUsage(input_tokens=50, output_tokens=3, cache_read_tokens=200)
    assert_clean(result)


async def test_reads_cached_tokens_from_prompt_tokens_details() -> None:
    wire = usage(100, 3, prompt_tokens_details={"cached_tokens": 60})
    result = await run(sse(chunk(content="x"), chunk(finish="stop", usage=wire)))
    assert result.usage == TokenUsage(input_tokens=40, output_tokens=3, cache_read_tokens=60)


async def test_keeps_the_latest_usage_and_emits_it_once_before_finish() -> None:
    body = sse(
        chunk(content="x", usage=usage(1, 1)),
        chunk(finish="stop", usage=usage(5, 2)),
        chunk(no_choices=True, usage=usage(5, 3)),
    )
    result = await run(body)
    usages = [c for c in result.chunks if isinstance(c, Usage)]
    assert len(usages) == 1 and usages[0].usage.output_tokens == 3
    assert isinstance(result.chunks[-1], Finish)
    assert_clean(result)


@pytest.mark.parametrize(
    ("wire", "kind"), [("stop", "stop"), ("tool_calls", "tool-calls"), ("length", "max-tokens")]
)
async def test_maps_finish_reason(wire: str, kind: str) -> None:
    tools = [tool(0, id="c", name="f", arguments="{}")] if wire == "tool_calls" else None
    result = await run(sse(chunk(content="x", tools=tools), chunk(finish=wire)))
    assert result.finish is not None and result.finish.kind == kind
    assert_clean(result)


async def test_maps_content_filter_to_an_error_finish_with_code_content_filter() -> None:
    result = await run(sse(chunk(content="I can't"), chunk(finish="content_filter")))
    assert result.error is None
    assert result.finish is not None and result.finish.kind == "error"
    assert result.finish.failure is not None and result.finish.failure.code == "CONTENT_FILTER"
    assert_clean(result)


async def test_a_stop_with_no_content_at_all_is_an_empty_response_error_finish() -> None:
    result = await run(
        sse(chunk(reasoning=""), chunk(finish="stop"), chunk(no_choices=True, usage=usage(3, 0)))
    )
    assert result.finish is not None and result.finish.kind == "error"
    assert result.error_code == "EMPTY_RESPONSE"
    assert_clean(result)


async def test_done_without_a_finish_reason_finishes_stop() -> None:
    result = await run(sse(chunk(content="x")))
    assert result.finish is not None and result.finish.kind == "stop"
    assert_clean(result)


async def test_a_length_cut_tool_call_keeps_its_partial_arguments_consistent() -> None:
    body = sse(chunk(tools=[tool(0, id="c", name="f", arguments='{"a": ')]), chunk(finish="length"))
    result = await run(body)
    assert result.finish is not None and result.finish.kind == "max-tokens"
    assert_clean(result)


# --- in-stream failures ----------------------------------------------------------


async def test_an_error_object_inside_a_200_stream_raises_after_the_partial_deltas() -> None:
    error = {
        "error": {"message": "The server is overloaded", "type": "server_error", "code": "server_overloaded"}
    }
    result = await run(sse(chunk(content="a"), chunk(content="b"), error, done=False))
    assert result.error_code == "SERVER"
    assert result.text == "ab"
    assert "overloaded" in str(result.error)


async def test_an_in_stream_quota_error_maps_to_quota() -> None:
    error = {"error": {"message": "Insufficient Balance", "type": "insufficient_quota"}}
    result = await run(sse(error, done=False))
    assert result.error_code == "QUOTA"


async def test_a_stream_without_done_is_stream_closed_after_its_deltas() -> None:
    result = await run(sse(chunk(content="a"), chunk(content="b"), done=False))
    assert result.error_code == "STREAM_CLOSED"
    assert result.text == "ab"
    assert types_of(result.chunks) == ["block-start", "text-delta", "text-delta"]


async def test_an_in_stream_error_and_a_missing_done_carry_the_request_id_of_the_response() -> None:
    error = {"error": {"message": "The server is overloaded", "type": "server_error"}}
    for body in (sse(chunk(content="a"), error, done=False), sse(chunk(content="a"), done=False)):
        server = MockServer(body, headers={"x-request-id": "req-stream"})
        result = await collect(server.adapter().stream(options()))
        assert result.error is not None and result.error.request_id == "req-stream", result.error


async def test_the_chunks_a_failing_payload_produced_before_its_fault_are_delivered() -> None:
    bad_usage = chunk(content="b", usage={"prompt_tokens": "many"})
    result = await run(sse(chunk(content="a"), bad_usage, done=False))
    assert result.error_code == "MALFORMED_RESPONSE"
    assert result.text == "ab"


async def test_a_payload_that_is_not_json_is_malformed_response() -> None:
    result = await run(sse(chunk(content="a"), "{not json", done=False))
    assert result.error_code == "MALFORMED_RESPONSE"
    assert result.text == "a"


@pytest.mark.parametrize(
    "payload",
    [
        [1, 2],
        pytest.param("[" * 100_000, id="nested-deeper-than-the-parser-recurses"),
        {"choices": "nope"},
        {"choices": [{"delta": {"content": 5}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": "0"}]}}]},
        {"choices": [], "usage": {"prompt_tokens": "many"}},
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": -1}},
    ],
)
async def test_json_that_is_not_the_wire_shape_is_malformed_response(payload: Any) -> None:
    result = await run(sse(payload))
    assert result.error_code == "MALFORMED_RESPONSE"


async def test_a_200_answer_that_is_not_an_event_stream_is_malformed_response() -> None:
    server = MockServer(b'{"ok": true}', headers={"content-type": "application/json"})
    adapter = server.adapter()
    result = await collect(adapter.stream(options()))
    assert result.error_code == "MALFORMED_RESPONSE"


async def test_ignores_sse_comments_and_events_after_done() -> None:
    body = (
        b": keep-alive\n\n"
        + sse(chunk(content="a"))
        + b"data: "
        + json.dumps(chunk(content="late")).encode()
        + b"\n\n"
    )
    result = await run(body)
    assert result.text == "a"
    assert_clean(result)


# --- HTTP errors -----------------------------------------------------------------


def _error_body(message: str, type_: str = "invalid_request_error", code: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": type_, "code": code}}).encode()


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (401, _error_body("Authentication Fails, Your api key is invalid", "authentication_error"), "AUTH"),
        (403, _error_body("forbidden", "permission_error"), "AUTH"),
        (429, _error_body("Rate limit reached", "rate_limit_error"), "RATE_LIMIT"),
        (429, _error_body("You exceeded your current quota", "insufficient_quota"), "QUOTA"),
        (402, _error_body("Insufficient Balance", "unknown_error"), "QUOTA"),
        (
            400,
            _error_body(
                "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens."
            ),
            "CONTEXT_WINDOW_EXCEEDED",
        ),
        (400, _error_body("messages must not be empty"), "INVALID_REQUEST"),
        (413, b"Request Entity Too Large", "INVALID_REQUEST"),
        (500, _error_body("Internal server error", "server_error"), "SERVER"),
        (503, b"<html>busy</html>", "SERVER"),
        (404, _error_body("model not found", "invalid_request_error", "model_not_found"), "HTTP_404"),
        (418, b"", "HTTP_418"),
    ],
)
async def test_maps_http_status_and_body_to_the_documented_code(status: int, body: bytes, code: str) -> None:
    server = MockServer(body, status=status, headers={"content-type": "application/json"})
    adapter = server.adapter()
    with pytest.raises(LlmError) as info:
        async for _ in adapter.stream(options()):
            pass
    assert info.value.code == code
    assert info.value.status == status
    assert str(status) in str(info.value)


async def test_maps_http_429_to_rate_limit_with_retry_after_ms_and_request_id() -> None:
    server = MockServer(
        _error_body("slow down", "rate_limit_error"),
        status=429,
        headers={"Retry-After": "2", "x-request-id": "req-429"},
    )
    result = await collect(server.adapter().stream(options()))
    assert result.error is not None
    assert (result.error.code, result.error.retry_after_ms, result.error.request_id) == (
        "RATE_LIMIT",
        2000.0,
        "req-429",
    )
    assert result.error.failure.provider_retry_after_ms == 2000.0


async def test_reads_retry_after_as_an_http_date_and_retry_after_ms() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    server = MockServer(b"", status=503, headers={"Retry-After": when})
    result = await collect(server.adapter().stream(options()))
    assert result.error is not None and result.error.retry_after_ms is not None
    assert 25_000 < result.error.retry_after_ms <= 30_000
    server = MockServer(b"", status=429, headers={"retry-after-ms": "1500", "retry-after": "9"})
    result = await collect(server.adapter().stream(options()))
    assert result.error is not None and result.error.retry_after_ms == 1500.0


# --- transport failures ----------------------------------------------------------


async def test_a_refused_connection_is_transport() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    adapter = OpenAICompatAdapter(
        BASE_URL, API_KEY, http_client=httpx.AsyncClient(transport=httpx.MockTransport(refuse))
    )
    result = await collect(adapter.stream(options()))
    assert result.error_code == "TRANSPORT"
    assert isinstance(result.error.cause if result.error else None, httpx.ConnectError)


async def test_a_body_cut_mid_stream_is_transport_after_its_deltas() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield sse(chunk(content="a"), done=False)
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    result = await collect(MockServer(body).adapter().stream(options()))
    assert result.error_code == "TRANSPORT"
    assert result.text == "a"


async def test_an_httpx_read_timeout_is_timeout() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield sse(chunk(content="a"), done=False)
        raise httpx.ReadTimeout("timed out")

    result = await collect(MockServer(body).adapter().stream(options()))
    assert result.error_code == "TIMEOUT"


def _stalling(first: bytes, forever: asyncio.Event, closed: list[bool]) -> Any:
    async def body() -> AsyncIterator[bytes]:
        try:
            yield first
            await forever.wait()
            yield b""
        finally:
            closed.append(True)

    return body


async def test_no_bytes_for_the_idle_timeout_is_timeout_after_the_partial_output() -> None:
    closed: list[bool] = []
    server = MockServer(_stalling(sse(chunk(content="a"), done=False), asyncio.Event(), closed))
    adapter = server.adapter(idle_timeout=0.2)
    start = time.perf_counter()
    result = await collect(adapter.stream(options()))
    elapsed = time.perf_counter() - start
    assert result.error_code == "TIMEOUT"
    assert result.text == "a"
    assert 0.15 < elapsed < 1.5
    assert closed == [True]


async def test_a_slow_consumer_is_not_an_idle_provider() -> None:
    server = MockServer(sse(chunk(content="a"), chunk(content="b"), chunk(finish="stop")))
    adapter = server.adapter(idle_timeout=0.05)
    seen = []
    async for c in adapter.stream(options()):
        seen.append(c)
        await asyncio.sleep(0.08)  # the real time is the point: longer than the idle timeout
    assert isinstance(seen[-1], Finish)


# --- abort and cancellation ------------------------------------------------------


async def test_abort_from_another_thread_ends_a_stalled_stream_with_aborted_within_100_ms() -> None:
    closed: list[bool] = []
    server = MockServer(_stalling(sse(chunk(content="a"), done=False), asyncio.Event(), closed))
    adapter = server.adapter(idle_timeout=30)
    controller = AbortController()
    stream = adapter.stream(options(signal=controller.signal))
    first = await stream.__anext__()
    assert isinstance(first, BlockStart)
    await stream.__anext__()
    fired: list[float] = []

    def abort() -> None:
        fired.append(time.perf_counter())
        controller.abort("user pressed stop")

    threading.Timer(0.05, abort).start()
    with pytest.raises(LlmError) as info:
        await stream.__anext__()
    assert info.value.code == "ABORTED"
    assert time.perf_counter() - fired[0] < 0.1
    assert "user pressed stop" in str(info.value)
    assert closed == [True]
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_abort_while_the_consumer_holds_a_chunk_raises_aborted_at_the_next_step() -> None:
    server = MockServer(sse(chunk(content="a"), chunk(content="b"), chunk(finish="stop")))
    controller = AbortController()
    stream = server.adapter().stream(options(signal=controller.signal))
    await stream.__anext__()
    controller.abort()
    await asyncio.sleep(0)  # let the loop deliver the abort
    with pytest.raises(LlmError) as info:
        await stream.__anext__()
    assert info.value.code == "ABORTED"


async def test_an_already_aborted_signal_raises_aborted_before_any_request() -> None:
    server = MockServer(sse(chunk(content="a")))
    controller = AbortController()
    controller.abort()
    result = await collect(server.adapter().stream(options(signal=controller.signal)))
    assert result.error_code == "ABORTED"
    assert server.requests == []


async def test_task_cancellation_propagates_and_closes_the_response() -> None:
    closed: list[bool] = []
    server = MockServer(_stalling(sse(chunk(content="a"), done=False), asyncio.Event(), closed))
    await cancel_after_first_chunk(server.adapter(idle_timeout=30).stream(options()))
    assert closed == [True]


# --- the request -----------------------------------------------------------------


async def test_a_query_in_base_url_is_kept_after_the_chat_completions_path() -> None:
    server = MockServer(sse(chunk(content="x")))
    adapter = OpenAICompatAdapter(
        "https://gateway.test/openai?api-version=2024-10-21", API_KEY, http_client=server.client()
    )
    await collect(adapter.stream(options()))
    assert (
        str(server.requests[0].url) == "https://gateway.test/openai/chat/completions?api-version=2024-10-21"
    )


async def test_posts_a_streaming_chat_completion_with_usage_and_attribution() -> None:
    server = MockServer(sse(chunk(content="x")))
    await collect(server.adapter().stream(options(prompt="hello")))
    request = server.requests[0]
    assert request.method == "POST"
    assert str(request.url) == BASE_URL + "/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["user-agent"] == user_agent()
    assert request.headers["accept"] == "text/event-stream"
    body = server.json_body()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "user", "content": "hello"}]


async def test_a_caller_may_replace_the_user_agent_but_not_suppress_it() -> None:
    server = MockServer(sse(chunk(content="x")))
    await collect(server.adapter(headers={"User-Agent": "myapp/2.0"}).stream(options()))
    assert server.requests[-1].headers["user-agent"] == "myapp/2.0"
    await collect(server.adapter(headers={"user-agent": ""}).stream(options()))
    assert server.requests[-1].headers["user-agent"] == user_agent()


async def test_serializes_system_tools_history_and_sampling_options() -> None:
    server = MockServer(sse(chunk(content="x")))
    opts = options(
        system="be brief",
        tools=[{"name": "get_weather", "description": "weather", "parameters": {"type": "object"}}],
        temperature=0.3,
        max_tokens=64,
        stop="END",
    )
    history = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "need a tool"},
                {"type": "text", "text": ""},
                {
                    "type": "tool-call",
                    "id": "call_1",
                    "name": "get_weather",
                    "arguments": '{"city": "Tokyo"}',
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
            ],
        },
    ]
    opts = opts.replace(messages=history)
    await collect(server.adapter().stream(opts))
    body = server.json_body()
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "need a tool",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "weather", "parameters": {"type": "object"}},
        }
    ]
    assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.3, 64, ["END"])


async def test_tool_results_go_right_after_the_call_before_the_users_further_text() -> None:
    server = MockServer(sse(chunk(content="x")))
    history = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [{"type": "tool-call", "id": "c1", "name": "w", "arguments": "{}"}]},
        {
            "role": "user",
            "content": [
                {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "sunny"}]},
                {"type": "text", "text": "and tomorrow?"},
            ],
        },
    ]
    await collect(server.adapter().stream(options().replace(messages=history)))
    roles = [(m["role"], m["content"]) for m in server.json_body()["messages"]]
    assert roles[2:] == [("tool", "sunny"), ("user", "and tomorrow?")]


@pytest.mark.parametrize(
    ("effort", "expected"),
    [
        ("off", {"thinking": {"type": "disabled"}}),
        ("high", {"thinking": {"type": "enabled"}, "reasoning_effort": "high"}),
        ("max", {"thinking": {"type": "enabled"}, "reasoning_effort": "max"}),
    ],
)
async def test_maps_deepseek_reasoning_efforts_to_the_thinking_toggle(
    effort: str, expected: dict[str, Any]
) -> None:
    server = MockServer(sse(chunk(content="x")))
    await collect(server.adapter().stream(options("deepseek-v4-flash", reasoning_effort=effort)))
    body = server.json_body()
    assert {k: body[k] for k in ("thinking", "reasoning_effort") if k in body} == expected


async def test_publishes_off_low_high_max_for_deepseek_models_and_none_for_others() -> None:
    adapter = MockServer().adapter()
    for model in ("deepseek-chat", "deepseek-reasoner", "deepseek-v4-pro"):
        info = adapter.model_info(model)
        assert info is not None and info.reasoning is not None
        assert info.reasoning.ids == ("off", "low", "high", "max")
    assert adapter.model_info("gpt-4o") is None
    assert [m.id for m in adapter.models()] == ["deepseek-chat", "deepseek-reasoner"]


async def test_refuses_an_effort_the_model_does_not_list_before_any_request() -> None:
    server = MockServer(sse(chunk(content="x")))
    result = await collect(server.adapter().stream(options("deepseek-chat", reasoning_effort="medium")))
    assert result.error_code == "UNSUPPORTED_REASONING_EFFORT"
    result = await collect(server.adapter().stream(options("some-local-model", reasoning_effort="low")))
    assert result.error_code == "UNSUPPORTED_REASONING_EFFORT"
    assert server.requests == []


async def test_a_configured_model_table_and_default_effort_apply() -> None:
    effort = ReasoningInfo((ReasoningEffort("low", "Low"), ReasoningEffort("high", "High")), default="low")
    server = MockServer(sse(chunk(content="x")))
    adapter = server.adapter(models=[ModelInfo("o-mini", reasoning=effort)])
    await collect(adapter.stream(options("o-mini")))
    body = server.json_body()
    assert body["reasoning_effort"] == "low" and "thinking" not in body


# --- credentials -----------------------------------------------------------------


async def test_missing_api_key_is_missing_credential_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    server = MockServer(sse(chunk(content="x")))
    adapter = OpenAICompatAdapter(BASE_URL, http_client=server.client())
    result = await collect(adapter.stream(options()))
    assert result.error_code == "MISSING_CREDENTIAL"
    assert "DEEPSEEK_API_KEY" in str(result.error)
    assert server.requests == []


async def test_reads_the_api_key_from_deepseek_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "  sk-from-env  ")
    server = MockServer(sse(chunk(content="x")))
    adapter = OpenAICompatAdapter(BASE_URL, http_client=server.client())
    await collect(adapter.stream(options()))
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"


@pytest.mark.parametrize("key", ["sk-ключ", "sk-abc\r\nX-Evil: 1", "sk-abc\ndef", "sk abc"])
async def test_a_key_no_header_can_carry_is_invalid_credential_and_never_echoed(key: str) -> None:
    server = MockServer(sse(chunk(content="x")))
    adapter = OpenAICompatAdapter(BASE_URL, key, http_client=server.client())
    result = await collect(adapter.stream(options()))
    assert result.error_code == "INVALID_CREDENTIAL"
    assert key not in str(result.error) and key not in repr(result.error)
    assert server.requests == []


async def test_the_api_key_never_appears_in_repr_or_in_an_echoing_error() -> None:
    body = _error_body(f"Incorrect API key provided: {API_KEY}", "authentication_error")
    server = MockServer(body, status=401)
    adapter = server.adapter()
    assert API_KEY not in repr(adapter) and API_KEY not in repr(vars(adapter))
    result = await collect(adapter.stream(options()))
    assert result.error is not None and result.error.code == "AUTH"
    for text in (
        str(result.error),
        repr(result.error),
        str(result.error.cause),
        result.error.failure.model_dump_json(),
    ):
        assert API_KEY not in text


async def test_credentials_in_the_base_url_appear_in_no_repr_or_error() -> None:
    server = MockServer(_error_body("bad key", "authentication_error"), status=401)
    url = "http://gateway-user:gw-PASSWORD-42@mock.test/v1?api-key=url-KEY-42"
    adapter = OpenAICompatAdapter(url, API_KEY, http_client=server.client())
    result = await collect(adapter.stream(options()))
    assert result.error_code == "AUTH"
    assert str(server.requests[0].url).startswith(url.split("?")[0])  # the request itself is unchanged
    for text in (repr(adapter), str(result.error), repr(result.error), str(result.error.cause)):
        assert "PASSWORD-42" not in text and "KEY-42" not in text, text
    assert "mock.test/v1" in str(result.error)


def test_idle_timeout_must_be_positive_or_none() -> None:
    for bad in (0, -1.0):
        with pytest.raises(ValueError):
            OpenAICompatAdapter(BASE_URL, API_KEY, idle_timeout=bad)


async def test_aclose_leaves_a_callers_client_open() -> None:
    client = MockServer().client()
    async with OpenAICompatAdapter(BASE_URL, API_KEY, http_client=client) as adapter:
        assert adapter.http_client is client
    assert not client.is_closed
    await client.aclose()


async def test_json_with_leading_whitespace_is_accepted_and_trailing_garbage_is_malformed() -> None:
    spaced = b"data:   " + json.dumps(chunk(content="a")).encode() + b"\n\n" + sse(chunk(finish="stop"))
    assert (await run(spaced)).text == "a"
    garbage = b"data: " + json.dumps(chunk(content="a")).encode() + b" tail\n\n" + sse(chunk(finish="stop"))
    assert (await run(garbage)).error_code == "MALFORMED_RESPONSE"


async def test_abort_is_seen_at_once_after_a_yield_even_before_the_loop_delivers_it() -> None:
    server = MockServer(sse(chunk(content="a"), chunk(content="b"), chunk(finish="stop")))
    controller = AbortController()
    stream = server.adapter().stream(options(signal=controller.signal))
    await stream.__anext__()
    await stream.__anext__()
    controller.abort()  # no loop step in between
    with pytest.raises(LlmError) as info:
        await stream.__anext__()
    assert info.value.code == "ABORTED"


async def test_idle_timeout_none_waits_without_a_watchdog() -> None:
    server = MockServer(sse(chunk(content="a"), chunk(finish="stop")))
    result = await collect(server.adapter(idle_timeout=None).stream(options()))
    assert result.text == "a"
    assert_clean(result)


async def test_a_server_that_keeps_the_body_open_after_done_still_finishes_promptly() -> None:
    closed: list[bool] = []
    body = sse(chunk(content="a"), chunk(finish="stop"))
    server = MockServer(_stalling(body, asyncio.Event(), closed))
    start = time.perf_counter()
    result = await collect(server.adapter(idle_timeout=30).stream(options()))
    assert result.error is None and result.text == "a"
    assert result.finish is not None and result.finish.kind == "stop"
    assert time.perf_counter() - start < 2.0
    assert closed == [True]


async def test_a_server_that_trickles_on_after_done_does_not_hold_up_the_finish() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield sse(chunk(content="a"), chunk(finish="stop"))
        while True:  # keep-alive comments forever: the real timing is the point
            yield b": ping\n\n"
            await asyncio.sleep(0.02)

    start = time.perf_counter()
    result = await asyncio.wait_for(collect(MockServer(body).adapter().stream(options())), 10)
    assert result.error is None and result.text == "a"
    assert time.perf_counter() - start < 2.0


async def test_a_body_cut_after_done_still_finishes() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield sse(chunk(content="a"), chunk(finish="stop"))
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    result = await collect(MockServer(body).adapter().stream(options()))
    assert result.error is None and result.text == "a"
