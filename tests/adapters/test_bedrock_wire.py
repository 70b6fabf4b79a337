"""The Bedrock ConverseStream wire: the pure translator on small real-shaped frames (no HTTP),
hostile input, the request, the HTTP error answers, and the adapter against the local provider
(every scenario, the fault matrix, SigV4 signing through botocore)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from _bedrock_frames import (
    event,
    exception,
    hello,
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
from fault_matrix import FAULTS, IDLE_TIMEOUT, REPLIES, run_fault_case

import chunkscope as cs
from chunkscope.adapters._base import GenerateOptions, LlmAdapter
from chunkscope.adapters.bedrock import BedrockAdapter, BedrockTranslator, EventStreamDecoder, build_body
from chunkscope.adapters.bedrock.request import sent_options
from chunkscope.adapters.bedrock.translate import read_whole
from chunkscope.protocol import AnyChunk, LlmError, StreamResult, TokenUsage, check, collect
from chunkscope.provider import LocalProvider, get_scenario

API_KEY = "bedrock-api-key-SECRET-0123456789"
PROMPT = "Hi there, provider"
EVENTSTREAM = "application/vnd.amazon.eventstream"


def translate(frames: list[bytes]) -> tuple[list[AnyChunk], LlmError | None, BedrockTranslator]:
    """Decode and translate ``frames``; the chunks (salvage included) and the error, if any."""
    decoder = EventStreamDecoder()
    translator = BedrockTranslator()
    chunks: list[AnyChunk] = []
    try:
        for piece in frames:
            for frame in decoder.feed(piece):
                chunks += translator.feed(frame)
            if decoder.failure is not None:
                raise LlmError(str(decoder.failure), "MALFORMED_RESPONSE")
        chunks += translator.end()
    except LlmError as exc:
        return chunks + translator.salvage(), exc, translator
    return chunks, None, translator


def result_of(chunks: list[AnyChunk]) -> StreamResult:
    import asyncio

    async def gen() -> Any:
        for c in chunks:
            yield c

    return asyncio.run(collect(gen()))


# --- the translator, frame by frame ------------------------------------------------------


def test_a_text_reply_is_one_text_block_then_usage_then_the_finish() -> None:
    chunks, error, _ = translate(hello())
    assert error is None and check(chunks, "strict") == []
    assert [c.type for c in chunks] == [
        "block-start",
        "text-delta",
        "text-delta",
        "block-end",
        "usage",
        "finish",
    ]
    result = result_of(chunks)
    assert result.text == "Hello world" and result.finish is not None and result.finish.kind == "stop"
    assert result.usage == TokenUsage(input_tokens=10, output_tokens=5)


def test_the_finish_waits_for_the_metadata_that_follows_message_stop() -> None:
    frames = hello()
    _, _, translator = translate(frames[:-1])
    decoder, translator = EventStreamDecoder(), BedrockTranslator()
    out: list[AnyChunk] = []
    for f in decoder.feed(b"".join(frames[:-1])):
        out += translator.feed(f)
    assert [c.type for c in out][-1] == "block-end" and not translator.done  # no finish yet
    finals = [c for f in decoder.feed(frames[-1]) for c in translator.feed(f)]
    assert [c.type for c in finals] == ["usage", "finish"] and translator.done


def test_a_stream_cut_after_message_stop_is_stream_closed_with_the_text_kept() -> None:
    chunks, error, _ = translate(hello()[:-1])
    assert error is not None and error.code == "STREAM_CLOSED" and "before metadata" in error.message
    assert result_of(chunks).text == "Hello world"


def test_reasoning_then_text_are_two_blocks_and_the_signature_is_not_shown() -> None:
    frames = [
        start(),
        reasoning(0, "Let me"),
        reasoning(0, " think."),
        signature(0),
        stop_block(0),
        text(1, "Answer."),
        stop_block(1),
        message_stop(),
        metadata(),
    ]
    chunks, error, _ = translate(frames)
    assert error is None and check(chunks, "strict") == []
    result = result_of(chunks)
    assert [b.type for b in result.blocks] == ["reasoning", "text"]
    assert result.reasoning == "Let me think." and result.text == "Answer."
    assert "c2ln" not in repr(chunks)


def test_a_tool_call_streams_its_id_name_and_input_fragments() -> None:
    frames = [
        start(),
        text(0, "Checking."),
        stop_block(0),
        tool_start(1, "tooluse_abc", "get_weather"),
        tool_input(1, '{"city": '),
        tool_input(1, '"Tokyo"}'),
        stop_block(1),
        message_stop("tool_use"),
        metadata(),
    ]
    chunks, error, _ = translate(frames)
    assert error is None and check(chunks, "strict") == []
    result = result_of(chunks)
    assert [(t.id, t.name, t.arguments) for t in result.tool_calls] == [
        ("tooluse_abc", "get_weather", '{"city": "Tokyo"}')
    ]
    assert result.finish is not None and result.finish.kind == "tool-calls"


def test_a_tool_call_without_input_has_empty_object_arguments() -> None:
    frames = [start(), tool_start(0, "t1", "ping"), stop_block(0), message_stop("tool_use"), metadata()]
    chunks, error, _ = translate(frames)
    assert error is None and result_of(chunks).tool_calls[0].arguments == "{}"


def test_cache_counts_are_disjoint_as_bedrock_sends_them() -> None:
    frames = [
        *hello()[:-1],
        metadata(inputTokens=4, outputTokens=170, cacheReadInputTokens=1021, cacheWriteInputTokens=7),
    ]
    chunks, error, _ = translate(frames)
    assert error is None
    assert result_of(chunks).usage == TokenUsage(
        input_tokens=4, output_tokens=170, cache_read_tokens=1021, cache_write_tokens=7
    )


@pytest.mark.parametrize(
    ("reason", "kind", "code"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("max_tokens", "max-tokens", None),
        ("guardrail_intervened", "error", "CONTENT_FILTER"),
        ("content_filtered", "error", "CONTENT_FILTER"),
        ("model_context_window_exceeded", "error", "CONTEXT_WINDOW_EXCEEDED"),
        ("malformed_model_output", "error", "MALFORMED_RESPONSE"),
        ("malformed_tool_use", "error", "MALFORMED_RESPONSE"),
    ],
)
def test_every_stop_reason_maps_to_its_finish(reason: str, kind: str, code: str | None) -> None:
    frames = [start(), text(0, "Some text"), stop_block(0), message_stop(reason), metadata()]
    chunks, error, _ = translate(frames)
    assert error is None and check(chunks, "strict") == []
    finish = result_of(chunks).finish
    assert finish is not None and finish.kind == kind
    assert (finish.failure.code if finish.failure else None) == code


def test_an_empty_completed_reply_is_empty_response() -> None:
    chunks, error, _ = translate([start(), message_stop(), metadata()])
    finish = result_of(chunks).finish
    assert error is None and finish is not None and finish.failure is not None
    assert finish.failure.code == "EMPTY_RESPONSE"


@pytest.mark.parametrize(
    ("kind", "message", "code"),
    [
        ("throttlingException", "Too many requests, please wait before trying again.", "RATE_LIMIT"),
        ("serviceUnavailableException", "Bedrock is unable to process your request.", "SERVER"),
        ("internalServerException", "An internal server error occurred.", "SERVER"),
        ("modelStreamErrorException", "The model stream failed.", "SERVER"),
        ("validationException", "Input is too long for requested model.", "CONTEXT_WINDOW_EXCEEDED"),
        (
            "validationException",
            "prompt is too long: 210000 tokens > 200000 maximum",
            "CONTEXT_WINDOW_EXCEEDED",
        ),
        ("validationException", "messages: roles must alternate", "INVALID_REQUEST"),
    ],
)
def test_an_exception_frame_ends_the_stream_with_its_code_after_the_output_before(
    kind: str, message: str, code: str
) -> None:
    chunks, error, _ = translate([start(), text(0, "Partial"), exception(kind, message), text(0, "never")])
    assert error is not None and error.code == code and message in error.message
    assert result_of(chunks).text == "Partial"


def test_an_error_frame_of_the_protocol_itself_is_mapped_by_its_code() -> None:
    from _bedrock_frames import frame, header

    headers = (
        header(":message-type", "error")
        + header(":error-code", "ThrottlingException")
        + header(":error-message", "slow down")
    )
    _, error, _ = translate([start(), frame(headers, b"")])
    assert error is not None and error.code == "RATE_LIMIT" and "slow down" in error.message


def test_a_bad_crc_mid_stream_is_malformed_with_the_output_before_kept() -> None:
    bad = bytearray(text(0, " world"))
    bad[-2] ^= 0xFF
    chunks, error, _ = translate([start(), text(0, "Hello"), bytes(bad), message_stop(), metadata()])
    assert error is not None and error.code == "MALFORMED_RESPONSE"
    assert result_of(chunks).text == "Hello"


def test_unknown_events_and_delta_kinds_are_ignored() -> None:
    citation = event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"citation": {"title": "x"}}})
    frames = [
        start(),
        event("somethingNew", {"x": 1}),
        text(0, "Hi"),
        citation,
        stop_block(0),
        message_stop(),
        metadata(),
    ]
    chunks, error, _ = translate(frames)
    assert error is None and result_of(chunks).text == "Hi" and check(chunks, "strict") == []


@pytest.mark.parametrize(
    ("frames", "says"),
    [
        ([start(), start()], "second messageStart"),
        ([text(0, "x"), start()], "after its content began"),
        (
            [start(), event("contentBlockDelta", {"contentBlockIndex": -1, "delta": {"text": "x"}})],
            "contentBlockIndex",
        ),
        ([start(), event("contentBlockDelta", {"contentBlockIndex": 0, "delta": "x"})], "delta object"),
        (
            [start(), event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": 3}})],
            "not a string",
        ),
        ([start(), text(0, "a"), stop_block(0), text(0, "b")], "already ended"),
        ([start(), tool_input(0, "{}")], "not an open toolUse"),
        ([start(), tool_start(0, "t", "")], "without a name"),
        ([start(), tool_start(0, "t", "f"), tool_start(0, "t", "f")], "twice"),
        ([start(), text(0, "a"), metadata()], "before messageStop"),
        ([start(), message_stop(), message_stop()], "second messageStop"),
        ([start(), event("messageStop", {})], "without a stopReason"),
        ([start(), text(0, "a"), message_stop("tool_use"), metadata()], "without any toolUse"),
        (
            [start(), tool_start(0, "t", "f"), tool_input(0, "[1]"), message_stop("tool_use"), metadata()],
            "not a JSON object",
        ),
        ([start(), text(0, "a"), message_stop(), metadata(inputTokens=-1)], "non-negative"),
    ],
)
def test_a_stream_that_breaks_the_wire_is_malformed(frames: list[bytes], says: str) -> None:
    _, error, _ = translate(frames)
    assert error is not None and error.code == "MALFORMED_RESPONSE" and says in error.message


def test_a_payload_that_is_not_json_or_nested_too_deeply_is_malformed() -> None:
    from _bedrock_frames import frame, header

    headers = header(":event-type", "contentBlockDelta") + header(":message-type", "event")
    for payload in (b"{not json", b"[" * 100_000 + b"]" * 100_000, b'{"delta": {}}x', b"\xff\xfe{}", b""):
        _, error, _ = translate([start(), frame(headers, payload)])
        assert error is not None and error.code == "MALFORMED_RESPONSE"


def test_read_whole_reads_a_converse_answer() -> None:
    usage, finish = read_whole({"stopReason": "max_tokens", "usage": {"inputTokens": 3, "outputTokens": 4}})
    assert usage == TokenUsage(input_tokens=3, output_tokens=4)
    assert finish is not None and finish.kind == "max-tokens"
    assert read_whole({}) == (None, None)


# --- the request -------------------------------------------------------------------------


def test_the_body_carries_messages_system_tools_and_inference_config() -> None:
    options = GenerateOptions(
        "aws",
        "us.anthropic.claude-sonnet-4-20250514-v1:0",
        [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "reasoning", "text": "thinking"},
                    {"type": "tool-call", "id": "t1", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": "t1",
                        "content": [{"type": "text", "text": "sunny"}],
                        "isError": False,
                    }
                ],
            },
        ],
        system="You help.",
        tools=[{"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}}],
        temperature=0.2,
        max_tokens=300,
        stop=["END"],
        reasoning_effort="low",
    )
    body = build_body(options)
    assert "model" not in body and "stream" not in body
    assert body["system"] == [{"text": "You help."}, {"text": "be brief"}]
    assert body["messages"] == [
        {"role": "user", "content": [{"text": "weather?"}]},
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Oslo"}}}],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "t1", "content": [{"text": "sunny"}], "status": "success"}}
            ],
        },
    ]
    assert body["inferenceConfig"] == {"maxTokens": 300, "temperature": 0.2, "stopSequences": ["END"]}
    assert body["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "get_weather",
                    "description": "Weather",
                    "inputSchema": {"json": {"type": "object"}},
                }
            }
        ]
    }
    assert body["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 299}}
    sent = sent_options(body)
    assert (sent.stops, sent.tool_names, sent.max_tokens, sent.temperature) == (
        ["END"],
        ["get_weather"],
        300,
        0.2,
    )


def test_nova_2_reasoning_goes_in_reasoning_config_and_other_models_have_no_efforts() -> None:
    body = build_body(
        GenerateOptions(
            "aws", "amazon.nova-2-lite-v1:0", [{"role": "user", "content": "x"}], reasoning_effort="high"
        )
    )
    assert body["additionalModelRequestFields"] == {
        "reasoningConfig": {"type": "enabled", "maxReasoningEffort": "high"}
    }
    adapter = BedrockAdapter("https://bedrock-runtime.eu-west-1.amazonaws.com", API_KEY)
    assert adapter.region == "eu-west-1"
    assert adapter.model_info("meta.llama3-70b-instruct-v1:0") is None
    assert adapter.model_info("global.anthropic.claude-opus-4-1-20250805-v1:0") is not None


def test_the_url_names_the_model_percent_encoded_and_the_key_is_a_bearer_token() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, headers={"content-type": EVENTSTREAM}, content=b"".join(hello()))

    async def run() -> StreamResult:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            adapter = BedrockAdapter(
                "https://bedrock-runtime.us-east-1.amazonaws.com", API_KEY, http_client=client
            )
            model = (
                "arn:aws:bedrock:us-east-1:123:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0"
            )
            return await collect(
                adapter.stream(GenerateOptions("aws", model, [{"role": "user", "content": "hi"}]))
            )

    import asyncio

    result = asyncio.run(run())
    assert result.ok and result.text == "Hello world"
    request = seen[0]
    assert request.url.raw_path.startswith(
        b"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus."
    )
    assert request.url.raw_path.endswith(b"/converse-stream")
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["accept"] == EVENTSTREAM


@pytest.mark.parametrize(
    ("status", "error_type", "message", "code"),
    [
        (429, "ThrottlingException", "Too many requests", "RATE_LIMIT"),
        (400, "ValidationException", "Input is too long for requested model.", "CONTEXT_WINDOW_EXCEEDED"),
        (400, "ValidationException", "Malformed input request", "INVALID_REQUEST"),
        (400, "ServiceQuotaExceededException", "Your account's quota is exhausted", "QUOTA"),
        (403, "AccessDeniedException", "You don't have access to the model", "AUTH"),
        (404, "ResourceNotFoundException", "Model not found", "HTTP_404"),
        (500, "InternalServerException", "Internal error", "SERVER"),
        (503, "ServiceUnavailableException", "Service unavailable", "SERVER"),
    ],
)
def test_http_error_answers_map_by_status_message_and_x_amzn_error_type(
    status: int, error_type: str, message: str, code: str
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        headers = {
            "x-amzn-ErrorType": f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/",
            "x-amzn-RequestId": "req-aws-1",
        }
        return httpx.Response(status, headers=headers, json={"message": message})

    async def run() -> StreamResult:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            adapter = BedrockAdapter(
                "https://bedrock-runtime.us-east-1.amazonaws.com", API_KEY, http_client=client
            )
            return await collect(
                adapter.stream(GenerateOptions("aws", "m", [{"role": "user", "content": "hi"}]))
            )

    import asyncio

    error = asyncio.run(run()).error
    assert error is not None and (error.code, error.status, error.request_id) == (code, status, "req-aws-1")
    assert message in error.message


def test_an_answer_that_is_not_an_event_stream_is_malformed() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"output": {}})

    async def run() -> StreamResult:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            adapter = BedrockAdapter("http://bedrock.test", API_KEY, http_client=client)
            return await collect(
                adapter.stream(GenerateOptions("aws", "m", [{"role": "user", "content": "hi"}]))
            )

    import asyncio

    assert asyncio.run(run()).error_code == "MALFORMED_RESPONSE"


def test_the_key_is_in_no_repr_and_a_missing_one_without_aws_credentials_is_missing_credential(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    adapter = BedrockAdapter("http://bedrock.test", API_KEY)
    assert API_KEY not in repr(adapter) and API_KEY not in repr(vars(adapter))
    import pickle

    assert API_KEY.encode() not in pickle.dumps(adapter._credential)
    for name in (
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    keyless = BedrockAdapter("http://127.0.0.1:9", region="us-east-1")

    async def run() -> StreamResult:
        return await collect(keyless.stream(GenerateOptions("aws", "m", [{"role": "user", "content": "hi"}])))

    import asyncio

    error = asyncio.run(run()).error
    assert (
        error is not None
        and error.code == "MISSING_CREDENTIAL"
        and "AWS_BEARER_TOKEN_BEDROCK" in error.message
    )
    with pytest.raises(LlmError) as raised:
        BedrockAdapter("http://b.test", signing="bearer")._credential.resolve("x")
    assert raised.value.code == "MISSING_CREDENTIAL"
    with pytest.raises(ValueError):
        BedrockAdapter("http://b.test", signing="hmac")  # type: ignore[arg-type]


def _hide_botocore(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    for name in ("botocore", "botocore.auth", "botocore.awsrequest", "botocore.session"):
        monkeypatch.setitem(sys.modules, name, None)  # its import fails as an absent package's does


def test_sigv4_without_botocore_is_a_missing_extra_when_the_adapter_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _hide_botocore(monkeypatch)
    with pytest.raises(cs.MissingExtraError) as raised:
        BedrockAdapter("http://127.0.0.1:9", signing="sigv4", region="us-east-1")
    assert str(raised.value) == (
        'BedrockAdapter(signing="sigv4") needs the "bedrock" extra (botocore is not installed): '
        'pip install "chunkscope[bedrock]"'
    )
    assert raised.value.__cause__ is None and raised.value.__context__ is None  # it stands alone


async def test_auto_signing_without_a_key_or_botocore_ends_missing_credential_naming_both(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _hide_botocore(monkeypatch)
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    adapter = BedrockAdapter("http://127.0.0.1:9", region="us-east-1")  # a key may still come from the env
    result = await collect(adapter.stream(GenerateOptions("aws", "m", [{"role": "user", "content": "hi"}])))
    assert result.error is not None and result.error.code == "MISSING_CREDENTIAL", result.error
    assert "AWS_BEARER_TOKEN_BEDROCK" in result.error.message
    assert 'pip install "chunkscope[bedrock]"' in result.error.message


# --- against the local provider ------------------------------------------------------------


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as p:
        yield p


def factory(provider: LocalProvider, client: httpx.AsyncClient, idle_timeout: float) -> LlmAdapter:
    return BedrockAdapter(provider.url, API_KEY, http_client=client, idle_timeout=idle_timeout)


def opts(model: str, **kwargs: Any) -> GenerateOptions:
    return GenerateOptions("aws", model, [{"role": "user", "content": PROMPT}], **kwargs)


@pytest.mark.parametrize("name", REPLIES)
async def test_every_reply_scenario_assembles_to_its_expected_reply_and_checks_clean(
    provider: LocalProvider, name: str
) -> None:
    async with BedrockAdapter(provider.url, API_KEY, idle_timeout=IDLE_TIMEOUT) as adapter:
        result = await collect(adapter.stream(opts(name)))
    expected = get_scenario(name).expected_for(PROMPT, "bedrock")  # type: ignore[union-attr]
    assert result.error is None, result.error
    assert (result.text, result.reasoning) == (expected.text, expected.reasoning)
    assert [(t.name, t.arguments) for t in result.tool_calls] == expected.tool_calls
    assert [b.type for b in result.blocks] == expected.block_types
    assert result.usage is not None and result.usage.to_dict() == expected.usage
    assert result.finish is not None and result.finish.kind == expected.finish
    assert check(result.chunks, "strict") == [] and result.violations == []


@pytest.mark.parametrize("name", FAULTS)
async def test_fault_matrix_bedrock_wire(provider: LocalProvider, name: str) -> None:
    await run_fault_case(factory, provider, name, wire="bedrock", api_key=API_KEY)


async def test_a_tool_roundtrip_quotes_the_tool_result_sent_as_a_bedrock_tool_result(
    provider: LocalProvider,
) -> None:
    messages: list[Any] = [
        {"role": "user", "content": PROMPT},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool-call",
                    "id": "call_weather_1",
                    "name": "get_weather",
                    "arguments": '{"city": "Tokyo"}',
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "call_weather_1",
                    "content": [{"type": "text", "text": "sunny, 21 C"}],
                }
            ],
        },
    ]
    async with BedrockAdapter(provider.url, API_KEY) as adapter:
        result = await collect(adapter.stream(GenerateOptions("aws", "tool-roundtrip", messages)))
    assert result.ok and result.text == "The tool said: sunny, 21 C"


async def test_sigv4_signing_through_botocore_reaches_the_provider_and_leaks_no_secret(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret, token = "wJalrXUtnFEMI-K7MDENG-SECRETKEY", "FwoGZXIvYXdzEJr-SESSION-TOKEN"
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    sent: list[httpx.Request] = []

    async def keep(request: httpx.Request) -> None:
        sent.append(request)

    since = provider.request_log.count
    async with httpx.AsyncClient(event_hooks={"request": [keep]}) as client:
        adapter = BedrockAdapter(provider.url, signing="sigv4", region="us-west-2", http_client=client)
        assert secret not in repr(adapter) and token not in repr(vars(adapter))
        result = await collect(adapter.stream(opts("text")))
        failed = await collect(adapter.stream(opts("fault-429")))
    assert result.ok and result.text == get_scenario("text").expected.text  # type: ignore[union-attr]
    authorization = sent[0].headers["authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-west-2/bedrock/aws4_request" in authorization and "SignedHeaders=" in authorization
    assert "host" in authorization and "x-amz-date" in authorization
    assert sent[0].headers["x-amz-security-token"] == token
    records = provider.request_log.snapshot(since)
    assert [r.model for r in records] == ["text", "fault-429"]
    logged = json.dumps([[r.headers, r.body, r.path] for r in records])
    assert secret not in logged and token not in logged and "<redacted>" in logged
    assert failed.error is not None and failed.error.code == "RATE_LIMIT"
    for text_ in (str(failed.error), repr(failed.error), repr(failed.chunks)):
        assert secret not in text_ and token not in text_


# --- Kimi K2's empty first delta, Nova's server-side tool, a stream without messageStart --------


def test_a_text_block_whose_first_delta_is_empty_holds_the_answer_not_an_empty_response() -> None:
    # Kimi K2 on Bedrock opens each text block with {"text": ""}; the answer follows in the block.
    frames = [start(), text(0, ""), text(0, "The answer"), text(0, " is 4."), stop_block(0)]
    chunks, error, _ = translate([*frames, message_stop(), metadata()])
    result = result_of(chunks)
    assert error is None and check(chunks, "strict") == []
    assert result.finish is not None and result.finish.kind == "stop" and result.text == "The answer is 4."
    assert [c.type for c in chunks][:2] == ["block-start", "text-delta"]  # no block for the empty delta


def _nova_code_interpreter() -> list[bytes]:
    """Nova 2 running its nova_code_interpreter system tool, then answering (the Converse shape:
    a toolUse of type server_tool_use, its toolResult block, then the text)."""
    use = {
        "toolUse": {"toolUseId": "tooluse_srv1", "name": "nova_code_interpreter", "type": "server_tool_use"}
    }
    result = {
        "toolResult": {
            "toolUseId": "tooluse_srv1",
            "type": "nova_code_interpreter_result",
            "status": "success",
        }
    }
    output = {"toolResult": [{"json": {"stdOut": "4\n", "stdErr": "", "exitCode": 0, "isError": False}}]}
    return [
        start(),
        event("contentBlockStart", {"contentBlockIndex": 0, "start": use}),
        tool_input(0, '{"snippet": "print(2 + 2)"}'),
        stop_block(0),
        event("contentBlockStart", {"contentBlockIndex": 1, "start": result}),
        event("contentBlockDelta", {"contentBlockIndex": 1, "delta": output}),
        stop_block(1),
        text(2, "2 + 2 is 4."),
        stop_block(2),
        message_stop("end_turn"),
        metadata(),
    ]


def test_a_tool_aws_runs_itself_is_no_client_tool_call() -> None:
    chunks, error, _ = translate(_nova_code_interpreter())
    result = result_of(chunks)
    assert error is None and check(chunks, "strict") == []
    assert result.tool_calls == [] and result.text == "2 + 2 is 4."  # an agent loop has nothing to run
    assert result.finish is not None and result.finish.kind == "stop"
    assert "nova_code_interpreter" not in json.dumps([c.to_dict() for c in chunks])


def test_a_stream_whose_first_block_comes_without_message_start_is_read() -> None:
    chunks, error, _ = translate(hello()[1:])  # messageStart carries only the role
    assert error is None and check(chunks, "strict") == []
    assert result_of(chunks).text == "Hello world"


def test_a_non_streaming_converse_answer_leaves_the_server_tool_out() -> None:
    from chunkscope.adapters.bedrock.translate import whole_answer

    content = [
        {
            "toolUse": {
                "toolUseId": "t1",
                "name": "nova_code_interpreter",
                "type": "server_tool_use",
                "input": {},
            }
        },
        {"toolResult": {"toolUseId": "t1", "content": [{"json": {"stdOut": "4"}}]}},
        {"text": "It is 4."},
    ]
    body = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 9, "outputTokens": 4, "totalTokens": 13},
    }
    chunks = whole_answer(body)
    result = result_of(chunks)
    assert check(chunks, "strict") == [] and result.tool_calls == [] and result.text == "It is 4."
    assert result.usage == TokenUsage(input_tokens=9, output_tokens=4)
