"""The Gemini wire: the translator from small real-shaped events (no HTTP), the request body, the
failure table's google.rpc rows, and the adapter end-to-end against the local provider."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fault_matrix import FAULTS, IDLE_TIMEOUT, REPLIES, run_fault_case

import chunkscope as cs
from chunkscope.adapters._core import SseDecoder
from chunkscope.adapters._failures import error_from_response, stream_error
from chunkscope.adapters.gemini import GeminiAdapter, GeminiTranslator, build_body
from chunkscope.adapters.gemini.request import sent_options
from chunkscope.adapters.gemini.translate import map_usage, read_whole
from chunkscope.protocol import LlmError, StreamResult, TokenUsage, check, collect
from chunkscope.provider import LocalProvider, get_scenario

API_KEY = "AIza-local-test-SECRET-0123456789"
PROMPT = "Hi there, provider"


# --- real-shaped events -------------------------------------------------------------


def response(
    *parts: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """One ``GenerateContentResponse`` event, as the Gemini API streams it."""
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash", "responseId": "r1"}
    if usage is not None:
        out["usageMetadata"] = usage
    out.update(extra)
    return out


USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def run(events: list[Any]) -> tuple[list[Any], LlmError | None]:
    """Feed events (dicts, or raw data strings) and end; (chunks, the error raised, if any)."""
    translator = GeminiTranslator(secrets=(API_KEY,))
    chunks: list[Any] = []
    try:
        for event in events:
            data = event if isinstance(event, str) else json.dumps(event)
            chunks += translator.feed(("message", data))
        chunks += translator.end()
    except LlmError as error:
        return chunks + translator.salvage(), error
    return chunks, None


def assembled(chunks: list[Any]) -> StreamResult:
    return asyncio.run(collect(chunks))


def result_of(events: list[Any]) -> StreamResult:
    chunks, error = run(events)
    assert error is None, error
    assert check(chunks, "strict") == []
    return assembled(chunks)


def test_text_parts_are_one_text_block_and_the_last_usage_counts() -> None:
    result = result_of(
        [
            response({"text": "Hel"}, usage={"promptTokenCount": 10, "totalTokenCount": 10}),
            response({"text": "lo"}, usage={"promptTokenCount": 10, "totalTokenCount": 10}),
            response({"text": "!"}, finish="STOP", usage=USAGE),
        ]
    )
    assert result.text == "Hello!" and [b.type for b in result.blocks] == ["text"]
    assert result.usage == TokenUsage(input_tokens=10, output_tokens=5)
    assert result.finish is not None and result.finish.kind == "stop"


def test_thought_parts_are_reasoning_and_thoughts_count_into_the_output() -> None:
    usage = {
        "promptTokenCount": 10,
        "candidatesTokenCount": 4,
        "thoughtsTokenCount": 30,
        "totalTokenCount": 44,
    }
    result = result_of(
        [
            response({"text": "Thinking", "thought": True}),
            response({"text": " hard.", "thought": True}),
            response({"text": "Answer."}),
            response({"text": ""}, finish="STOP", usage=usage),
        ]
    )
    assert (result.reasoning, result.text) == ("Thinking hard.", "Answer.")
    assert [b.type for b in result.blocks] == ["reasoning", "text"]
    assert result.usage == TokenUsage(input_tokens=10, output_tokens=34, reasoning_tokens=30)


def test_cache_hits_are_taken_out_of_the_prompt_count_and_tool_prompts_added() -> None:
    usage = {
        "promptTokenCount": 7800,
        "cachedContentTokenCount": 7680,
        "toolUsePromptTokenCount": 50,
        "candidatesTokenCount": 9,
        "totalTokenCount": 7859,
    }
    assert map_usage(usage) == TokenUsage(input_tokens=170, output_tokens=9, cache_read_tokens=7680)


def test_a_whole_function_call_is_one_tool_call_delta_of_its_args_json() -> None:
    call = {
        "functionCall": {"name": "get_weather", "args": {"city": "Tokyo", "unit": "celsius"}, "id": "fc_1"}
    }
    result = result_of([response({"text": "Checking."}), response(call, finish="STOP", usage=USAGE)])
    [tool] = result.tool_calls
    assert (tool.id, tool.name, tool.arguments) == (
        "fc_1",
        "get_weather",
        '{"city": "Tokyo", "unit": "celsius"}',
    )
    assert result.finish is not None and result.finish.kind == "tool-calls"


def test_calls_without_ids_get_made_up_unique_ids_and_no_args_is_an_empty_object() -> None:
    result = result_of(
        [
            response({"functionCall": {"name": "ping"}}, {"functionCall": {"name": "ping", "args": {}}}),
            response({"text": ""}, finish="STOP", usage=USAGE),
        ]
    )
    ids = [t.id for t in result.tool_calls]
    assert len(set(ids)) == 2 and all(ids) and [t.arguments for t in result.tool_calls] == ["{}", "{}"]


def partial(*patches: dict[str, Any], name: str | None = None, more: bool = True) -> dict[str, Any]:
    call: dict[str, Any] = {"partialArgs": list(patches)}
    if name is not None:
        call["name"] = name
    if more:
        call["willContinue"] = True
    return {"functionCall": call}


def test_partial_args_are_written_in_order_so_their_concatenation_is_the_final_json() -> None:
    events = [
        response(
            partial({"jsonPath": "$.city", "stringValue": "San ", "willContinue": True}, name="forecast")
        ),
        response(partial({"jsonPath": "$.city", "stringValue": "Francisco"})),
        response(partial({"jsonPath": "$.days", "numberValue": 3})),
        response(partial({"jsonPath": "$.units.temp", "stringValue": "celsius"})),
        response(partial({"jsonPath": "$.units.metric", "boolValue": True})),
        response(partial({"jsonPath": "$.alerts[0]", "stringValue": "rain"})),
        response(partial({"jsonPath": "$.alerts[1]", "nullValue": "NULL_VALUE"})),
        response({"functionCall": {}}),
        response({"text": ""}, finish="STOP", usage=USAGE),
    ]
    chunks, error = run(events)
    assert error is None
    deltas = [c.arguments_delta for c in chunks if c.type == "tool-call-delta"]
    assert len(deltas) > 5  # streamed as the patches came, not at the end
    final = {
        "city": "San Francisco",
        "days": 3,
        "units": {"temp": "celsius", "metric": True},
        "alerts": ["rain", None],
    }
    assert "".join(deltas) == json.dumps(final)
    assert check(chunks, "strict") == []


def test_a_partial_call_ended_by_will_continue_false_and_one_with_no_patches_at_all() -> None:
    result = result_of(
        [
            response(partial({"jsonPath": "$.q", "stringValue": "x"}, name="lookup", more=False)),
            response({"functionCall": {"name": "ping", "willContinue": True}}),
            response({"functionCall": {}}, finish="STOP", usage=USAGE),
        ]
    )
    assert [(t.name, t.arguments) for t in result.tool_calls] == [("lookup", '{"q": "x"}'), ("ping", "{}")]


@pytest.mark.parametrize(
    "patches",
    [
        [
            {"jsonPath": "$.a.x", "numberValue": 1},
            {"jsonPath": "$.b", "numberValue": 2},
            {"jsonPath": "$.a.y", "numberValue": 3},
        ],
        [{"jsonPath": "$.n", "numberValue": 1}, {"jsonPath": "$.n", "numberValue": 2}],
        [{"jsonPath": "$.l[1]", "numberValue": 1}],
        [{"jsonPath": "city", "stringValue": "x"}],
        [{"jsonPath": "$", "stringValue": "x"}],
        [{"jsonPath": "$" + ".a" * 100, "numberValue": 1}],
        [{"jsonPath": "$.a", "numberValue": "3"}],
    ],
)
def test_partial_args_out_of_order_or_ill_formed_are_malformed_with_the_output_before_kept(
    patches: list[dict[str, Any]],
) -> None:
    chunks, error = run([response({"text": "Before."}), response(partial(*patches, name="f"))])
    assert error is not None and error.code == "MALFORMED_RESPONSE"
    assert assembled(chunks).text == "Before."


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        ("SAFETY", "CONTENT_FILTER"),
        ("RECITATION", "CONTENT_FILTER"),
        ("BLOCKLIST", "CONTENT_FILTER"),
        ("PROHIBITED_CONTENT", "CONTENT_FILTER"),
        ("SPII", "CONTENT_FILTER"),
        ("MALFORMED_FUNCTION_CALL", "MALFORMED_RESPONSE"),
        ("LANGUAGE", "LANGUAGE"),  # unmapped: the reason itself, under <FINISH_REASON>
    ],
)
def test_finish_reasons_that_are_no_success_are_error_finishes_with_the_registered_code(
    reason: str, code: str
) -> None:
    chunks, error = run([response({"text": "Partial"}), response(finish=reason, usage=USAGE)])
    assert error is None and check(chunks, "strict") == []
    finish = chunks[-1]
    assert finish.reason.kind == "error" and finish.reason.failure.code == code
    assert assembled(chunks).text == "Partial"


def test_max_tokens_is_a_max_tokens_finish() -> None:
    result = result_of([response({"text": "cut"}), response(finish="MAX_TOKENS", usage=USAGE)])
    assert result.finish is not None and result.finish.kind == "max-tokens"


def test_a_blocked_prompt_is_a_content_filter_finish() -> None:
    blocked = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": USAGE}
    chunks, error = run([blocked])
    assert error is None and check(chunks, "strict") == []
    assert chunks[-1].reason.failure.code == "CONTENT_FILTER"


def test_stop_with_no_content_is_an_empty_response() -> None:
    chunks, _ = run([response(finish="STOP", usage=USAGE)])
    assert chunks[-1].reason.failure.code == "EMPTY_RESPONSE"


def test_a_stream_without_a_finish_reason_is_stream_closed_after_its_output() -> None:
    chunks, error = run([response({"text": "Hel"}), response({"text": "lo"})])
    assert error is not None and error.code == "STREAM_CLOSED"
    assert assembled(chunks).text == "Hello"


def test_content_after_the_finish_reason_is_malformed_but_usage_after_it_counts() -> None:
    _, error = run([response({"text": "a"}, finish="STOP"), response({"text": "b"})])
    assert error is not None and error.code == "MALFORMED_RESPONSE"
    result = result_of([response({"text": "a"}, finish="STOP"), {"usageMetadata": USAGE}])
    assert result.usage == TokenUsage(input_tokens=10, output_tokens=5)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ({"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}, "SERVER"),
        ({"code": 500, "message": "Internal error", "status": "INTERNAL"}, "SERVER"),
        ({"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}, "RATE_LIMIT"),
        ({"code": 400, "message": "Bad", "status": "INVALID_ARGUMENT"}, "INVALID_REQUEST"),
    ],
)
def test_an_error_object_inside_the_stream_raises_its_code_after_the_output_before_it(
    error: dict[str, Any], code: str
) -> None:
    chunks, raised = run([response({"text": "Hello"}), {"error": error}])
    assert raised is not None and raised.code == code
    assert assembled(chunks).text == "Hello"


@pytest.mark.parametrize(
    "data",
    [
        '{"candidates": [{"content": {"parts": [{"text": "unterminated',
        "[1, 2]",
        '{"candidates": {"a": 1}}',
        '{"candidates": [{"content": {"parts": [{"text": 5}]}}]}',
        '{"candidates": [{"content": {"parts": [{"functionCall": {"name": 3}}]}}]}',
        '{"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": [1]}}]}}]}',
        '{"candidates": [{"finishReason": 7}]}',
        "[" * 100_000 + "]" * 100_000,
    ],
)
def test_hostile_events_are_malformed_responses_never_another_exception(data: str) -> None:
    _chunks, error = run([response({"text": "ok"}), data])
    assert error is not None and error.code == "MALFORMED_RESPONSE"
    assert API_KEY not in error.message


def test_a_nameless_call_and_bad_usage_are_malformed() -> None:
    _, error = run([response({"functionCall": {"args": {"a": 1}}}), response(finish="STOP")])
    assert error is not None and error.code == "MALFORMED_RESPONSE"
    _, error = run([response({"text": "a"}, finish="STOP", usage={"promptTokenCount": -1})])
    assert error is not None and error.code == "MALFORMED_RESPONSE"


def test_other_part_kinds_are_skipped_and_counted() -> None:
    translator = GeminiTranslator()
    translator.feed(("message", json.dumps(response({"executableCode": {"code": "1"}}, {"inlineData": {}}))))
    assert translator.ignored == {"executableCode": 1, "inlineData": 1}


def test_thought_signatures_ride_on_the_finish_and_on_their_calls() -> None:
    translator = GeminiTranslator()
    chunks = translator.feed(
        (
            "message",
            json.dumps(response({"functionCall": {"name": "f", "id": "c1"}, "thoughtSignature": "sig"})),
        )
    )
    chunks += translator.feed(("message", json.dumps(response(finish="STOP", usage=USAGE))))
    chunks += translator.end()
    assert chunks[-1].replay_state == {"thoughtSignatures": [{"index": 0, "signature": "sig"}]}
    assert translator.call_signatures() == [("c1", "sig")]


def test_crlf_framed_events_decode_as_lf_framed_ones() -> None:
    body = "".join(f"data: {json.dumps(response({'text': t}))}\r\n\r\n" for t in ("a", "b", "c"))
    for split in (1, 7, len(body) // 2):
        decoder = SseDecoder()
        raw = body.encode()
        events = decoder.feed(raw[:split]) + decoder.feed(raw[split:]) + decoder.end()
        assert [json.loads(data)["candidates"][0]["content"]["parts"][0]["text"] for _, data in events] == [
            "a",
            "b",
            "c",
        ]


def test_read_whole_reads_a_generate_content_answer() -> None:
    body = response({"functionCall": {"name": "f", "args": {}}}, finish="STOP", usage=USAGE)
    usage, finish = read_whole(body)
    assert usage == TokenUsage(input_tokens=10, output_tokens=5)
    assert finish is not None and finish.kind == "tool-calls"
    assert read_whole({"promptFeedback": {"blockReason": "SAFETY"}})[1].failure.code == "CONTENT_FILTER"  # type: ignore[union-attr]


# --- error bodies: the google.rpc rows of the one table --------------------------------


def _rpc(kind: str, **fields: Any) -> dict[str, Any]:
    return {"@type": f"type.googleapis.com/google.rpc.{kind}", **fields}


@pytest.mark.parametrize(
    ("status", "error", "code", "retry"),
    [
        (
            429,
            {
                "status": "RESOURCE_EXHAUSTED",
                "message": "You exceeded your current quota, please check your plan and billing details.",
                "details": [
                    _rpc(
                        "QuotaFailure",
                        violations=[{"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}],
                    ),
                    _rpc("RetryInfo", retryDelay="37s"),
                ],
            },
            "RATE_LIMIT",
            37000,
        ),
        (
            429,
            {
                "status": "RESOURCE_EXHAUSTED",
                "message": "You exceeded your current quota.",
                "details": [
                    _rpc(
                        "QuotaFailure",
                        violations=[{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
                    ),
                    _rpc("RetryInfo", retryDelay="1.5s"),
                ],
            },
            "QUOTA",
            1500,
        ),
        (429, {"status": "RESOURCE_EXHAUSTED", "message": "You exceeded your current quota."}, "QUOTA", None),
        (
            429,
            {"status": "RESOURCE_EXHAUSTED", "message": "Resource has been exhausted."},
            "RATE_LIMIT",
            None,
        ),
        (
            400,
            {
                "status": "INVALID_ARGUMENT",
                "message": "API key not valid. Please pass a valid API key.",
                "details": [_rpc("ErrorInfo", reason="API_KEY_INVALID", domain="googleapis.com")],
            },
            "AUTH",
            None,
        ),
        (
            400,
            {
                "status": "INVALID_ARGUMENT",
                "message": "The input token count (1200000) exceeds the maximum number of tokens "
                "allowed (1048576).",
            },
            "CONTEXT_WINDOW_EXCEEDED",
            None,
        ),
        (400, {"status": "INVALID_ARGUMENT", "message": "Invalid JSON payload"}, "INVALID_REQUEST", None),
        (403, {"status": "PERMISSION_DENIED", "message": "denied"}, "AUTH", None),
        (401, {"status": "UNAUTHENTICATED", "message": "no"}, "AUTH", None),
        (503, {"status": "UNAVAILABLE", "message": "The model is overloaded."}, "SERVER", None),
        (504, {"status": "DEADLINE_EXCEEDED", "message": "Deadline exceeded"}, "SERVER", None),
        (404, {"status": "NOT_FOUND", "message": "models/x is not found"}, "HTTP_404", None),
        (
            429,
            {"status": "RESOURCE_EXHAUSTED", "details": [_rpc("RetryInfo", retryDelay="soon")]},
            "RATE_LIMIT",
            None,
        ),
    ],
)
def test_google_rpc_error_bodies_map_by_their_status_and_details(
    status: int, error: dict[str, Any], code: str, retry: int | None
) -> None:
    body = json.dumps({"error": {"code": status, **error}}).encode()
    raised = error_from_response(status, httpx.Headers(), body, label="Gemini API")
    assert (raised.code, raised.retry_after_ms, raised.status) == (code, retry, status)
    inside = stream_error({"code": status, **error}, label="Gemini API")
    assert (inside.code, inside.retry_after_ms) == (code, retry)


# --- the request ----------------------------------------------------------------------


def test_the_request_carries_every_option_where_gemini_wants_it() -> None:
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "thinking"},
                {"type": "text", "text": "Checking."},
                {"type": "tool-call", "id": "fc_1", "name": "get_weather", "arguments": '{"city": "Tokyo"}'},
                {"type": "tool-call", "id": "call_chunkscope_3", "name": "ping", "arguments": ""},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool-result", "toolCallId": "fc_1", "content": [{"type": "text", "text": "22 C"}]},
                {"type": "tool-result", "toolCallId": "call_chunkscope_3", "content": [], "isError": True},
            ],
        },
    ]
    tool = {"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}}
    options = cs.GenerateOptions(
        "google",
        "gemini-2.5-flash",
        history,
        system="Sys.",
        tools=[tool],
        temperature=0.5,
        max_tokens=99,
        stop=["END"],
        reasoning_effort="low",
    )
    body = build_body(options, GeminiAdapter("https://x").model_info("gemini-2.5-flash"), {"fc_1": "sig"}.get)
    assert body["systemInstruction"] == {"parts": [{"text": "Sys.\n\nBe brief."}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Weather?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Checking."},
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Tokyo"}, "id": "fc_1"},
                    "thoughtSignature": "sig",
                },
                {"functionCall": {"name": "ping", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"output": "22 C"}, "id": "fc_1"}},
                {"functionResponse": {"name": "ping", "response": {"error": ""}}},
            ],
        },
    ]
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "get_weather", "parametersJsonSchema": {"type": "object"}, "description": "Weather"}
            ]
        }
    ]
    assert body["generationConfig"] == {
        "temperature": 0.5,
        "maxOutputTokens": 99,
        "stopSequences": ["END"],
        "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 1024},
    }
    assert "model" not in body and "stream" not in body
    sent = sent_options(body)
    assert (sent.stops, sent.tool_names, sent.max_tokens, sent.temperature) == (
        ["END"],
        ["get_weather"],
        99,
        0.5,
    )


@pytest.mark.parametrize(
    ("model", "effort", "config"),
    [
        ("gemini-2.5-flash", "off", {"thinkingBudget": 0}),
        ("gemini-2.5-flash", None, {"includeThoughts": True}),
        ("gemini-3-pro-preview", "high", {"includeThoughts": True, "thinkingLevel": "high"}),
        ("gemini-2.0-flash", None, None),
    ],
)
def test_thinking_config_per_model_family(model: str, effort: str | None, config: Any) -> None:
    adapter = GeminiAdapter("https://x", "k")
    body = adapter.request_body(
        cs.GenerateOptions("google", model, [{"role": "user", "content": "hi"}], reasoning_effort=effort)
    )
    assert body.get("generationConfig", {}).get("thinkingConfig") == config


def test_an_unlisted_effort_and_a_result_without_its_call_are_refused_before_any_io() -> None:
    adapter = GeminiAdapter("https://x", "k")
    with pytest.raises(LlmError) as info:
        adapter.prepare(cs.GenerateOptions("google", "gemini-2.5-pro", [], reasoning_effort="off"))
    assert info.value.code == "UNSUPPORTED_REASONING_EFFORT"
    orphan = [{"role": "user", "content": [{"type": "tool-result", "toolCallId": "x", "content": []}]}]
    with pytest.raises(LlmError) as info:
        adapter.request_body(cs.GenerateOptions("google", "m", orphan))
    assert info.value.code == "UNSUPPORTED_OPTION"


def test_the_key_goes_in_a_header_never_in_the_url_or_the_repr() -> None:
    adapter = GeminiAdapter("https://generativelanguage.googleapis.com", API_KEY)
    url = adapter.request_url(cs.GenerateOptions("google", "models/gemini-2.5-flash", []))
    assert (
        url
        == "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert adapter.wire_headers(API_KEY) == {"x-goog-api-key": API_KEY}
    assert API_KEY not in repr(adapter) and API_KEY not in url


# --- end to end, against the local provider -------------------------------------------


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as p:
        yield p


def factory(provider: LocalProvider, client: httpx.AsyncClient, idle_timeout: float) -> cs.LlmAdapter:
    return GeminiAdapter(provider.url, API_KEY, http_client=client, idle_timeout=idle_timeout)


@pytest.mark.parametrize("name", REPLIES)
async def test_every_reply_scenario_assembles_to_its_expected_reply_and_checks_clean(
    provider: LocalProvider, name: str
) -> None:
    async with GeminiAdapter(provider.url, API_KEY, idle_timeout=IDLE_TIMEOUT) as adapter:
        result = await collect(
            adapter.stream(cs.GenerateOptions("google", name, [{"role": "user", "content": PROMPT}]))
        )
    expected = get_scenario(name).expected_for(PROMPT)  # type: ignore[union-attr]
    assert result.error is None, result.error
    assert (result.text, result.reasoning) == (expected.text, expected.reasoning)
    assert [(t.name, t.arguments) for t in result.tool_calls] == expected.tool_calls
    assert [b.type for b in result.blocks] == expected.block_types
    assert result.usage is not None and result.usage.to_dict() == expected.usage
    assert result.finish is not None and result.finish.kind == expected.finish
    assert check(result.chunks, "strict") == [] and result.violations == []


@pytest.mark.parametrize("name", FAULTS)
async def test_fault_matrix_gemini_wire(provider: LocalProvider, name: str) -> None:
    await run_fault_case(factory, provider, name, wire="gemini", api_key=API_KEY)


async def test_fault_429_carries_the_retry_info_delay(provider: LocalProvider) -> None:
    result = await run_fault_case(factory, provider, "fault-429", wire="gemini", api_key=API_KEY)
    assert result.error is not None and (result.error.status, result.error.retry_after_ms) == (429, 2000)


async def test_the_tool_roundtrip_quotes_the_function_response(provider: LocalProvider) -> None:
    async with GeminiAdapter(provider.url, API_KEY) as adapter:
        first = await collect(
            adapter.stream(
                cs.GenerateOptions("google", "tool-roundtrip", [{"role": "user", "content": "w?"}])
            )
        )
        [call] = first.tool_calls
        history = [
            {"role": "user", "content": "w?"},
            {"role": "assistant", "content": [call.to_dict()]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": call.id,
                        "content": [{"type": "text", "text": "sunny"}],
                    }
                ],
            },
        ]
        second = await collect(adapter.stream(cs.GenerateOptions("google", "tool-roundtrip", history)))
    assert second.text == "The tool said: sunny"
    sent = provider.requests[-1]
    assert sent.headers["x-goog-api-key"] == "<redacted>" and API_KEY not in sent.path
    assert sent.model == "tool-roundtrip"


async def test_the_key_comes_from_gemini_api_key_else_google_api_key(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = cs.GenerateOptions("google", "text", [{"role": "user", "content": PROMPT}])
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    sent: list[str] = []

    async def note(request: httpx.Request) -> None:
        sent.append(request.headers["x-goog-api-key"])

    async with httpx.AsyncClient(event_hooks={"request": [note]}) as client:
        adapter = GeminiAdapter(provider.url, http_client=client)
        assert repr(adapter).count("<from $GEMINI_API_KEY or $GOOGLE_API_KEY>") == 1
        missing = await collect(adapter.stream(options))
        assert missing.error is not None and missing.error.code == "MISSING_CREDENTIAL" and sent == []
        assert "set GEMINI_API_KEY or GOOGLE_API_KEY" in str(missing.error)
        monkeypatch.setenv("GOOGLE_API_KEY", "google-key-0123456789")  # the google-genai SDK's other name
        assert (await collect(adapter.stream(options))).ok
        monkeypatch.setenv("GEMINI_API_KEY", "gemini-key-0123456789")  # both set: GEMINI_API_KEY first
        assert (await collect(adapter.stream(options))).ok
    assert sent == ["google-key-0123456789", "gemini-key-0123456789"]
