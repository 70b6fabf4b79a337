"""The shared HTTP helpers: error classification, Retry-After, request ids, headers, credentials."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest

from chunkscope.adapters import GenerateOptions, OpenAICompatAdapter
from chunkscope.adapters._base import user_agent
from chunkscope.adapters._failures import (
    error_detail,
    error_from_response,
    http_error_code,
    is_context_window_exceeded,
    is_quota_exceeded,
    redact,
    request_id,
    retry_after_ms,
    stream_error,
    transport_error,
)
from chunkscope.adapters._http import merge_headers, public_url, resolve_api_key
from chunkscope.protocol import LlmError


@pytest.mark.parametrize(
    "text",
    [
        "Insufficient Balance",
        "insufficient_quota",
        "You exceeded your current quota, please check your plan and billing details.",
        "quota exceeded for this project",
        "out of credits",
    ],
)
def test_recognises_quota_wording(text: str) -> None:
    assert is_quota_exceeded(text)
    assert http_error_code(400, text) == "QUOTA"


@pytest.mark.parametrize(
    "text", ["Your credit balance is too low to access the Anthropic API.", "billing_hard_limit_reached"]
)
def test_the_table_reads_provider_quota_wording_beside_the_reference_classifier(text: str) -> None:
    assert not is_quota_exceeded(text)  # the reference's classifier, ported as is
    assert http_error_code(400, text) == "QUOTA"  # the table adds the providers' own wording


@pytest.mark.parametrize(
    "text", ["Rate limit reached for requests", "rate_limit_error", "Too many requests", ""]
)
def test_rate_limit_wording_is_not_quota(text: str) -> None:
    assert not is_quota_exceeded(text)


@pytest.mark.parametrize(
    "text",
    [
        "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens.",
        "context_length_exceeded",
        "input length and max_tokens exceed context limit: 190000 + 20000 > 200000",
        "prompt is too long for the model's context window",
        "Request too large for this model",
        "The input exceeds the model's context window",
    ],
)
def test_recognises_context_window_wording(text: str) -> None:
    assert is_context_window_exceeded(text)


@pytest.mark.parametrize(
    "text", ["messages: field required", "invalid temperature", "max_tokens must be positive"]
)
def test_other_bad_requests_are_not_context_window(text: str) -> None:
    assert not is_context_window_exceeded(text)


@pytest.mark.parametrize(
    ("status", "detail", "code"),
    [
        (401, "", "AUTH"),
        (403, "", "AUTH"),
        (429, "slow down", "RATE_LIMIT"),
        (429, "insufficient_quota", "QUOTA"),
        (402, "", "QUOTA"),
        (403, "insufficient balance", "AUTH"),  # status before wording, as the reference does
        (400, "maximum context length is 8192 tokens", "CONTEXT_WINDOW_EXCEEDED"),
        (400, "bad field", "INVALID_REQUEST"),
        (413, "", "INVALID_REQUEST"),
        (413, "maximum context length is 8192 tokens", "INVALID_REQUEST"),  # 413 is the body's bytes
        (500, "", "SERVER"),
        (529, "overloaded_error", "SERVER"),
        (404, "", "HTTP_404"),
        (409, "", "HTTP_409"),
    ],
)
def test_http_error_code(status: int, detail: str, code: str) -> None:
    assert http_error_code(status, detail) == code


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ({"message": "The server is overloaded", "type": "server_error"}, "SERVER"),
        ({"type": "overloaded_error", "message": "Overloaded"}, "SERVER"),
        ({"type": "rate_limit_error", "message": "slow"}, "RATE_LIMIT"),
        ({"message": "x", "code": 429}, "RATE_LIMIT"),
        ({"message": "Insufficient Balance"}, "QUOTA"),
        ({"message": "something odd"}, "SERVER"),
    ],
)
def test_classifies_an_error_object_inside_a_stream(error: dict[str, object], code: str) -> None:
    assert stream_error(error, label="L").code == code


def test_error_detail_reads_openai_anthropic_and_plain_text_bodies() -> None:
    openai_body = json.dumps(
        {"error": {"message": "bad key", "type": "authentication_error", "code": "invalid_api_key"}}
    )
    assert error_detail(openai_body.encode())[:2] == (
        "bad key",
        "invalid_api_key authentication_error bad key",
    )
    anthropic_body = json.dumps(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    assert error_detail(anthropic_body)[0] == "Overloaded"
    assert error_detail(b"<html>502 Bad Gateway</html>")[0] == "<html>502 Bad Gateway</html>"
    assert error_detail(b"")[0] is None


def test_retry_after_reads_seconds_http_dates_and_retry_after_ms() -> None:
    assert retry_after_ms({"retry-after": "2"}) == 2000.0
    assert retry_after_ms({"retry-after": "0.5"}) == 500.0
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    date = format_datetime(datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC), usegmt=True)
    assert retry_after_ms({"retry-after": date}, now=now.timestamp()) == 30_000.0
    assert retry_after_ms({"retry-after-ms": "250", "retry-after": "9"}) == 250.0
    assert retry_after_ms({"retry-after-ms": "soon", "retry-after": "2"}) == 2000.0  # unusable: falls back
    for bad in ({"retry-after": "soon"}, {"retry-after": "0"}, {"retry-after": "-3"}, {}):
        assert retry_after_ms(bad) is None
    past = format_datetime(datetime(2020, 1, 1, tzinfo=UTC), usegmt=True)
    assert retry_after_ms({"retry-after": past}) is None


def test_request_id_reads_x_request_id_then_request_id() -> None:
    assert request_id(httpx.Headers({"x-request-id": "a", "request-id": "b"})) == "a"
    assert request_id(httpx.Headers({"request-id": "req_1"})) == "req_1"
    assert request_id(httpx.Headers({})) is None


def test_error_from_response_carries_status_retry_delay_request_id_and_redacts_secrets() -> None:
    body = json.dumps({"error": {"message": "Incorrect API key provided: sk-secret-value"}}).encode()
    error = error_from_response(
        401,
        httpx.Headers({"x-request-id": "r1", "retry-after": "1"}),
        body,
        label="test API",
        secrets=["sk-secret-value"],
    )
    assert (error.code, error.status, error.request_id, error.retry_after_ms) == ("AUTH", 401, "r1", 1000.0)
    assert "sk-secret-value" not in str(error) and "sk-secret-value" not in str(error.cause)
    assert "HTTP 401" in str(error)


def test_transport_error_maps_timeouts_connect_failures_and_cut_bodies() -> None:
    request = httpx.Request("POST", "http://x.test")
    assert transport_error(httpx.ReadTimeout("t", request=request), label="L").code == "TIMEOUT"
    assert transport_error(httpx.ConnectError("refused", request=request), label="L").code == "TRANSPORT"
    assert transport_error(httpx.RemoteProtocolError("cut", request=request), label="L").code == "TRANSPORT"
    assert (
        transport_error(httpx.DecodingError("gzip", request=request), label="L").code == "MALFORMED_RESPONSE"
    )


def test_merge_headers_lets_a_caller_replace_the_user_agent_but_never_suppress_it() -> None:
    assert merge_headers(None)["User-Agent"] == user_agent()
    assert merge_headers(None, {"user-agent": "mine/1"}) == {"user-agent": "mine/1"}
    assert merge_headers(None, {"User-Agent": "  "})["User-Agent"] == user_agent()
    custom = httpx.AsyncClient(headers={"User-Agent": "client-ua/3"})
    assert merge_headers(custom)["User-Agent"] == "client-ua/3"
    assert merge_headers(httpx.AsyncClient())["User-Agent"] == user_agent()  # httpx's default is not a choice


def test_resolve_api_key_trims_reads_the_environment_and_refuses_what_no_header_can_carry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert resolve_api_key(" sk-1 ", "NOPE_ENV", label="x") == "sk-1"
    monkeypatch.setenv("MY_KEY_ENV", "sk-env")
    assert resolve_api_key(None, "MY_KEY_ENV", label="x") == "sk-env"
    monkeypatch.setenv("MY_KEY_ENV", "   ")
    with pytest.raises(LlmError) as missing:
        resolve_api_key(None, "MY_KEY_ENV", label="x")
    assert missing.value.code == "MISSING_CREDENTIAL"
    for bad in ("sk-é", "sk\r\nx", "sk x", "sk\x00"):
        with pytest.raises(LlmError) as invalid:
            resolve_api_key(bad, None, label="x")
        assert invalid.value.code == "INVALID_CREDENTIAL"
        assert bad.strip() not in str(invalid.value)


def test_public_url_drops_user_info_query_and_fragment() -> None:
    assert public_url("https://u:pw@api.test/v1?key=k#x") == "https://api.test/v1"
    assert public_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"


def test_redact_replaces_every_occurrence_of_a_secret() -> None:
    assert redact("key sk-abcd and sk-abcd", ["sk-abcd"]) == "key *** and ***"
    assert redact("short a", ["a"]) == "short a"  # trivially short "secrets" are not redacted


def _adapter(handler: object) -> tuple[OpenAICompatAdapter, httpx.AsyncClient]:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))  # type: ignore[arg-type]
    return OpenAICompatAdapter("http://x.test", "sk-test-1234", http_client=client), client


async def _drain(adapter: OpenAICompatAdapter) -> list[object]:
    options = GenerateOptions("deepseek", "deepseek-chat", [{"role": "user", "content": "hi"}])
    return [chunk async for chunk in adapter.stream(options)]


async def test_an_error_status_whose_body_is_cut_keeps_its_code_status_and_request_id() -> None:
    async def cut() -> AsyncIterator[bytes]:
        yield b'{"error": {"message": "Rate limit'
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, headers={"retry-after": "3", "x-request-id": "r-9"}, content=cut())

    adapter, client = _adapter(handler)
    async with client:
        with pytest.raises(LlmError) as info:
            await _drain(adapter)
    error = info.value
    assert (error.code, error.status) == ("RATE_LIMIT", 429)
    assert (error.retry_after_ms, error.request_id) == (3000, "r-9")
    assert type(error.retry_after_ms) is int


async def test_an_error_after_a_2xx_carries_the_request_id() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        headers = {"x-request-id": "r-200", "content-type": "text/event-stream"}
        return httpx.Response(200, headers=headers, content=b'data: {"choices": []}\n\n')

    adapter, client = _adapter(handler)
    async with client:
        with pytest.raises(LlmError) as info:
            await _drain(adapter)
    assert (info.value.code, info.value.request_id) == ("STREAM_CLOSED", "r-200")
