"""The TypeScript reference's vectors for the adapters: translate, finish/usage maps, SSE framing,
adapter streams, HTTP errors and the wording classifiers.

Compared on what must agree: the assembled text, reasoning and tool calls, the usage, the finish
(kind and code), error codes, HTTP status and retry-after. Exact messages are informative in the
vectors (``conventions.errors``); ours name the server and the cause.

Deliberate differences, each pinned by its own test below:

- **Blocks never overlap.** The reference emits every block-end at ``[DONE]`` and appends to one
  text and one reasoning block per response; here a block ends before the next begins (the
  ``strict`` profile), so text resuming after a tool call opens a new block. Assembled content,
  concatenated per kind, is the same.
- **Non-object JSON payloads** (``123``, ``[1,2]``, ``"text"``, ``null``) are ``MALFORMED_RESPONSE``
  here; the reference ignores them (and crashes with TRANSPORT on ``null``).
- **A tool call without a function name** is ``MALFORMED_RESPONSE`` here (nobody can execute it);
  the reference emits a call named ``""``.
- **Cache hits above the prompt count** are read as an uncached prompt here; the reference lets
  ``inputTokens`` go negative.
- **An empty-string finish_reason** is no finish reason here (``stop``); the reference makes it an
  error finish with the empty code.
- **A final ``data: [DONE]`` without its blank line** ends the stream cleanly here (issue 8 §3);
  the reference reports ``STREAM_CLOSED``. A last CR-only terminator likewise completes its event.
- **An empty ``data:`` payload** is skipped here (nothing to read); the reference reports
  ``MALFORMED_RESPONSE``.
- **HTTP 402** is ``QUOTA`` here (Payment Required); the reference maps a bare 402 to ``HTTP_402``.
- **A 200 with an empty body** is ``STREAM_CLOSED`` here (no ``[DONE]``); the reference says
  ``EMPTY_RESPONSE``.
- **A finish reason this package knows** gets its registered code (Bedrock's ``guardrail_intervened``
  → ``CONTENT_FILTER``); the reference upper-cases every reason, as this package does for a reason it
  does not map. Where the reference's upper-cased reason is itself a published code (DeepSeek's
  ``insufficient_system_resource`` → ``INSUFFICIENT_SYSTEM_RESOURCE``) both emit it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from chunkscope.adapters import (
    AbortController,
    GenerateOptions,
    OpenAICompatAdapter,
    is_context_window_exceeded,
    is_quota_exceeded,
)
from chunkscope.adapters._core import SseDecoder
from chunkscope.adapters._failures import error_from_response, retry_after_ms
from chunkscope.adapters._finish import FINISH_CODES
from chunkscope.adapters.openai_compat import OpenAITranslator, map_finish_reason, map_usage
from chunkscope.protocol import LlmError
from chunkscope.protocol._errors import ERROR_CODES, is_unmapped

KEY = "sk-vector-test-key"

# --- helpers ------------------------------------------------------------------------------


def _payload_text(payload: Any) -> str:
    return payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))


def _dicts(chunks: list[Any]) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in chunks]


def digest(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What must agree between two streams of the same response, whatever their block layout."""
    text, reasoning = [], []
    calls: dict[int, dict[str, str]] = {}
    usage: Any = None
    finish: Any = None
    for c in chunks:
        kind = c["type"]
        if kind == "text-delta":
            text.append(c["text"])
        elif kind == "reasoning-delta":
            reasoning.append(c["text"])
        elif kind == "tool-call-delta":
            call = calls.setdefault(c["index"], {"id": "", "name": "", "arguments": ""})
            call["id"] = c.get("id") or call["id"]
            call["name"] = c.get("name") or call["name"]
            call["arguments"] += c.get("argumentsDelta", "")
        elif kind == "usage":
            usage = c["usage"]
        elif kind == "finish":
            reason = c["reason"]
            finish = (reason["kind"], (reason.get("failure") or {}).get("code"))
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "tool_calls": [calls[i] for i in sorted(calls)],
        "usage": usage,
        "finish": finish,
    }


def translate(payloads: list[Any], *, fast: bool = True) -> tuple[list[dict[str, Any]], LlmError | None]:
    translator = OpenAITranslator("L", (KEY,), fast=fast)
    out: list[Any] = []
    try:
        for payload in payloads:
            out += translator.feed(("message", _payload_text(payload)))
            if translator.done:
                break
        out += translator.end()
    except LlmError as exc:
        return _dicts(out + translator.salvage()), exc
    return _dicts(out), None


def _cases(upstream: dict[str, Any], group: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = upstream[group]
    return cases


# --- translate ----------------------------------------------------------------------------

TRANSLATE_DIFFERENT = {
    "non_object_json_payloads",
    "tool_call_function_without_arguments",
    "tool_call_without_id_or_name",
    "tool_call_without_function_object",
}


def test_translate_vectors_agree_on_content_usage_finish_and_error_codes(
    upstream_cases: dict[str, Any],
) -> None:
    cases = _cases(upstream_cases, "translate")
    assert len(cases) == 48
    checked = 0
    for case in cases:
        if case["name"] in TRANSLATE_DIFFERENT:
            continue
        for fast in (True, False):
            chunks, error = translate(case["payloads"], fast=fast)
            expected = case["expected"]
            if "error" in expected:
                assert error is not None, case["name"]
                assert error.code == expected["error"]["code"], case["name"]
                ours, theirs = digest(chunks), digest(expected["chunks_before_error"])
                assert (ours["text"], ours["reasoning"]) == (theirs["text"], theirs["reasoning"]), case[
                    "name"
                ]
            else:
                assert error is None, (case["name"], error)
                assert digest(chunks) == digest(expected["chunks"]), case["name"]
        checked += 1
    assert checked == 48 - len(TRANSLATE_DIFFERENT)


def test_difference_text_resuming_after_other_blocks_opens_a_new_block_not_an_overlap(
    upstream_cases: dict[str, Any],
) -> None:
    case = next(
        c
        for c in _cases(upstream_cases, "translate")
        if c["name"] == "reasoning_resumes_after_text_reuses_blocks"
    )
    chunks, _ = translate(case["payloads"])
    ends = [c["block"] for c in chunks if c["type"] == "block-end"]
    assert [b["type"] for b in ends] == ["reasoning", "text", "reasoning", "text"]
    assert digest(chunks) == digest(case["expected"]["chunks"])  # the same content, concatenated per kind


def test_difference_non_object_json_payloads_are_malformed_response(upstream_cases: dict[str, Any]) -> None:
    case = next(c for c in _cases(upstream_cases, "translate") if c["name"] == "non_object_json_payloads")
    _, error = translate(case["payloads"])
    assert error is not None and error.code == "MALFORMED_RESPONSE"
    _, error = translate(["null", "[DONE]"])
    assert error is not None and error.code == "MALFORMED_RESPONSE"


@pytest.mark.parametrize("name", ["tool_call_without_id_or_name", "tool_call_without_function_object"])
def test_difference_a_tool_call_without_a_name_is_malformed_response(
    upstream_cases: dict[str, Any], name: str
) -> None:
    case = next(c for c in _cases(upstream_cases, "translate") if c["name"] == name)
    _, error = translate(case["payloads"])
    assert error is not None and error.code == "MALFORMED_RESPONSE"
    assert "no function name" in error.message


def test_difference_a_tool_call_without_arguments_gets_an_empty_object(
    upstream_cases: dict[str, Any],
) -> None:
    case = next(
        c for c in _cases(upstream_cases, "translate") if c["name"] == "tool_call_function_without_arguments"
    )
    chunks, error = translate(case["payloads"])
    assert error is None
    [call] = digest(chunks)["tool_calls"]
    [theirs] = digest(case["expected"]["chunks"])["tool_calls"]
    assert (call["id"], call["name"], call["arguments"], theirs["arguments"]) == (
        theirs["id"],
        theirs["name"],
        "{}",
        "",
    )


def test_translate_finish_reason_map_vectors(upstream_cases: dict[str, Any]) -> None:
    for case in _cases(upstream_cases, "translate_finish_reason_map"):
        ours = map_finish_reason(case["finish_reason"])
        expected = case["expected"]
        assert ours.kind == expected["kind"], case["name"]
        if "failure" in expected:
            code = FINISH_CODES.get(case["finish_reason"], expected["failure"]["code"])
            assert ours.failure is not None and ours.failure.code == code, case["name"]


def test_insufficient_system_resource_is_the_references_code_registered_as_retryable(
    upstream_cases: dict[str, Any],
) -> None:
    # A published code does not change: DeepSeek's out-of-capacity finish carries the reference's
    # upper-cased reason, registered (not unmapped) and retryable.
    cases = _cases(upstream_cases, "translate")
    case = next(c for c in cases if c["name"] == "finish_insufficient_system_resource")
    chunks, error = translate(case["payloads"])
    assert error is None
    assert digest(chunks) == digest(case["expected"]["chunks"])
    assert digest(chunks)["finish"] == ("error", "INSUFFICIENT_SYSTEM_RESOURCE")
    assert ERROR_CODES["INSUFFICIENT_SYSTEM_RESOURCE"].retryable
    assert not is_unmapped("INSUFFICIENT_SYSTEM_RESOURCE")


def test_difference_a_known_finish_reason_gets_its_registered_code_not_its_upper_cased_name(
    upstream_cases: dict[str, Any],
) -> None:
    # The reference upper-cases every reason; we map the ones we know to registered codes, the
    # same on every wire. Only the reasons whose upper-cased name is not their code differ.
    reason_map = _cases(upstream_cases, "translate_finish_reason_map")
    for c in reason_map:
        reason = c["finish_reason"]
        if reason in FINISH_CODES:
            assert c["expected"]["failure"]["code"] == reason.upper()
            failure = map_finish_reason(reason).failure
            assert failure is not None and failure.code == FINISH_CODES[reason]
    differing = {reason: code for reason, code in FINISH_CODES.items() if code != reason.upper()}
    assert differing["guardrail_intervened"] == "CONTENT_FILTER"
    assert "insufficient_system_resource" not in differing


def test_difference_an_empty_finish_reason_is_no_finish_reason() -> None:
    chunks, error = translate([{"choices": [{"delta": {"content": "x"}, "finish_reason": ""}]}, "[DONE]"])
    assert error is None and digest(chunks)["finish"] == ("stop", None)


def test_translate_usage_map_vectors(upstream_cases: dict[str, Any]) -> None:
    cases = _cases(upstream_cases, "translate_usage_map")
    for case in cases:
        if case["name"] == "no_clamping_when_cache_exceeds_prompt":
            continue
        ours = map_usage(case["wire_usage"]).model_dump(by_alias=True, exclude_none=True)
        assert ours == case["expected"], case["name"]


def test_difference_cache_hits_above_the_prompt_count_never_make_input_negative(
    upstream_cases: dict[str, Any],
) -> None:
    case = next(
        c
        for c in _cases(upstream_cases, "translate_usage_map")
        if c["name"] == "no_clamping_when_cache_exceeds_prompt"
    )
    assert case["expected"]["inputTokens"] < 0
    ours = map_usage(case["wire_usage"])
    assert ours.input_tokens == case["wire_usage"]["prompt_tokens"]


# --- SSE framing ------------------------------------------------------------------------------


def _reads(reads: list[Any]) -> list[bytes]:
    return [bytes.fromhex(r["hex"]) if isinstance(r, dict) else r.encode() for r in reads]


def frame(reads: list[bytes]) -> tuple[list[str], list[str], bool]:
    """(payloads up to [DONE], comments, whether [DONE] came) as the adapter frames them."""
    decoder = SseDecoder(keep_comments=True)
    payloads: list[str] = []
    for read in reads:
        for _, data in decoder.feed(read):
            payloads.append(data)
            if data == "[DONE]":
                return payloads, decoder.comments, True
    tail = [data for _, data in decoder.end()]
    if tail and tail[0] == "[DONE]":
        return [*payloads, "[DONE]"], decoder.comments, True
    return payloads, decoder.comments, False


SSE_DIFFERENT = {
    "unterminated_final_done_is_truncation",
    "done_with_single_newline_only_is_truncation",
    "cr_only_final_cr_at_eof_is_truncation",
}


def test_sse_framing_vectors(upstream_cases: dict[str, Any]) -> None:
    cases = _cases(upstream_cases, "sse")
    assert len(cases) == 33
    for case in cases:
        expected = case["expected"]
        payloads, comments, done = frame(_reads(case["reads"]))
        if case["name"] in SSE_DIFFERENT:
            assert expected["error"]["code"] == "STREAM_CLOSED"
            assert (payloads, done) == ([*expected["payloads_before_error"], "[DONE]"], True), case["name"]
            continue
        assert comments == expected.get("comments", []), case["name"]
        if "error" in expected:
            assert expected["error"]["code"] == "STREAM_CLOSED"
            assert (payloads, done) == (expected["payloads_before_error"], False), case["name"]
        else:
            assert (payloads, done) == (expected["payloads"], True), case["name"]


def test_difference_a_final_done_without_its_blank_line_ends_the_stream(
    upstream_cases: dict[str, Any],
) -> None:
    payloads, _, done = frame([b'data: {"a":1}\n\ndata: [DONE]'])
    assert (payloads, done) == (['{"a":1}', "[DONE]"], True)


# --- whole adapter: streams and HTTP errors ---------------------------------------------------


def _run(
    status: int,
    headers: dict[str, str],
    reads: list[bytes],
    error_after: bool = False,
    *,
    stall: bool = False,
    refuse: bool = False,
    abort: bool = False,
    **adapter_kwargs: Any,
) -> tuple[list[dict[str, Any]], LlmError | None]:
    async def body() -> Any:
        for read in reads:
            yield read
        if stall:
            await asyncio.Event().wait()
        if error_after:
            raise httpx.ReadError("connection reset")

    def handler(request: httpx.Request) -> httpx.Response:
        if refuse:
            raise httpx.ConnectError("connection refused")
        return httpx.Response(status, headers=headers, content=body())

    async def main() -> tuple[list[dict[str, Any]], LlmError | None]:
        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        adapter = OpenAICompatAdapter("http://vectors.test", KEY, http_client=client, **adapter_kwargs)
        controller = AbortController()
        if abort:
            controller.abort()
        options = GenerateOptions(
            "deepseek", "deepseek-chat", [{"role": "user", "content": "hi"}], signal=controller.signal
        )
        out: list[Any] = []
        try:
            async for chunk in adapter.stream(options):
                out.append(chunk)
        except LlmError as exc:
            return _dicts(out), exc
        finally:
            await client.aclose()
        return _dicts(out), None

    return asyncio.run(main())


SETUPS: dict[str, dict[str, Any]] = {
    "no_response_body_is_empty_response": {},  # 200, nothing: STREAM_CLOSED here (docstring)
    "fetch_rejects_is_transport": {"refuse": True},
    "pre_aborted_signal_is_aborted_finish": {"abort": True},
    "idle_body_times_out": {"stall": True, "idle_timeout": 0.06},
}


def test_adapter_stream_vectors(upstream_cases: dict[str, Any]) -> None:
    cases = _cases(upstream_cases, "adapter_stream")
    assert len(cases) == 11
    for case in cases:
        headers = {"content-type": "text/event-stream"}
        expected = case["expected_runtime_chunks"]
        finish = expected[-1]["reason"]
        if "setup" in case:
            chunks, error = _run(200, headers, [], **SETUPS[case["name"]])
            assert error is not None, case["name"]
            code = "STREAM_CLOSED" if case["name"] == "no_response_body_is_empty_response" else None
            assert error.code == (code or finish["failure"]["code"]), case["name"]
            assert chunks == [], case["name"]
            continue
        chunks, error = _run(
            200, headers, _reads(case["body_reads"]), bool(case.get("body_error_after_reads"))
        )
        if case["name"] == "empty_data_payload_is_malformed":
            # An empty ``data:`` line carries no payload here and is skipped (a keep-alive).
            assert error is None and digest(chunks)["finish"] == ("error", "EMPTY_RESPONSE")
            continue
        if case["name"] == "json_null_payload_is_transport":
            # JSON null is not the wire shape: MALFORMED_RESPONSE here (the reference crashes, TRANSPORT).
            assert error is not None and error.code == "MALFORMED_RESPONSE"
            continue
        if finish["kind"] in ("error", "aborted") and error is not None:
            assert error.code == finish["failure"]["code"], case["name"]
            ours, theirs = digest(chunks), digest(expected[:-1])
            assert (ours["text"], ours["reasoning"]) == (theirs["text"], theirs["reasoning"]), case["name"]
        else:
            assert error is None, (case["name"], error)
            assert digest(chunks) == digest(expected), case["name"]


def test_http_error_vectors(upstream_cases: dict[str, Any]) -> None:
    cases = _cases(upstream_cases, "http_errors")
    assert len(cases) == 67
    seen = 0
    for case in cases:
        if case["kind"] != "response":
            continue
        expected = case["expected"]
        failure = expected.get("failure") or {}
        request = case["request"]
        status = request["status"]
        headers = {k.lower(): v for k, v in request.get("headers", {}).items()}
        _, error = _run(status, headers, [request.get("body", "").encode()])
        assert error is not None, case["name"]
        code = failure.get("code") or case.get("expected_code")
        if status == 402 and code == "HTTP_402":
            assert error.code == "QUOTA"  # a deliberate difference (docstring)
        else:
            assert error.code == code, case["name"]
        assert error.status == status, case["name"]
        if "providerRetryAfterMs" in failure and not _date(headers.get("retry-after", "")):
            assert error.retry_after_ms == failure["providerRetryAfterMs"], case["name"]
        elif "retry-after" in headers and "providerRetryAfterMs" not in failure:
            assert error.retry_after_ms is None or _date(headers["retry-after"]), case["name"]
        if "requestId" in failure:
            assert error.request_id == failure["requestId"], case["name"]
        seen += 1
    assert seen > 0


def test_http_error_retry_after_dates_with_the_vectors_clock(upstream_cases: dict[str, Any]) -> None:
    dated = [
        c
        for c in _cases(upstream_cases, "http_errors")
        if c["kind"] == "response" and "now_ms" in c["request"]
    ]
    assert dated
    for case in dated:
        headers = {k.lower(): v for k, v in case["request"]["headers"].items()}
        expected = case["expected"]["failure"].get("providerRetryAfterMs")
        assert retry_after_ms(headers, now=case["request"]["now_ms"] / 1000) == expected, case["name"]


def _date(value: str) -> bool:
    return not value.strip().isdigit() and any(ch.isalpha() for ch in value)


def test_http_error_code_vectors_by_status_and_provider_error(upstream_cases: dict[str, Any]) -> None:
    cases = [c for c in _cases(upstream_cases, "http_errors") if c["kind"] == "code_only"]
    assert len(cases) == 27
    for case in cases:
        body = json.dumps({"error": case["provider_error"]} if case["provider_error"] else {}).encode()
        error = error_from_response(case["status"], {}, body, label="L")
        expected = case["expected_code"]
        if expected == "HTTP_402":
            assert error.code == "QUOTA", case["name"]  # a deliberate difference (module docstring)
        else:
            assert error.code == expected, case["name"]


def test_retry_after_is_an_integer_number_of_milliseconds() -> None:
    assert retry_after_ms({"retry-after": "2"}) == 2000
    assert retry_after_ms({"retry-after-ms": "1.2"}) == 2
    assert type(retry_after_ms({"retry-after": "1.5"})) is int


# --- classifiers ------------------------------------------------------------------------------


def test_classifier_vectors(upstream_cases: dict[str, Any]) -> None:
    cases = _cases(upstream_cases, "classifiers")
    assert len(cases) == 68
    for case in cases:
        text = case["text"]
        assert is_context_window_exceeded(text) is case["isContextWindowExceededError"], case["name"]
        assert is_quota_exceeded(text) is case["isQuotaExceededError"], case["name"]


def test_difference_a_bare_402_is_quota(upstream_cases: dict[str, Any]) -> None:
    case = next(c for c in _cases(upstream_cases, "http_errors") if c["name"] == "status_402_without_body")
    assert case["expected"]["failure"]["code"] == "HTTP_402"
    _, error = _run(402, {}, [b""])
    assert error is not None and (error.code, error.status) == ("QUOTA", 402)


def test_difference_a_200_with_an_empty_body_is_stream_closed(upstream_cases: dict[str, Any]) -> None:
    case = next(
        c
        for c in _cases(upstream_cases, "adapter_stream")
        if c["name"] == "no_response_body_is_empty_response"
    )
    assert case["expected_runtime_chunks"][-1]["reason"]["failure"]["code"] == "EMPTY_RESPONSE"
    chunks, error = _run(200, {"content-type": "text/event-stream"}, [])
    assert chunks == [] and error is not None and error.code == "STREAM_CLOSED"


def test_difference_an_empty_data_payload_is_skipped_not_malformed() -> None:
    chunks, error = translate(["", {"choices": [{"delta": {"content": "x"}}]}, "[DONE]"])
    assert error is None and digest(chunks)["text"] == "x"


def test_difference_a_json_null_payload_is_malformed_response_not_transport() -> None:
    _, error = _run(200, {"content-type": "text/event-stream"}, [b"data: null\n\ndata: [DONE]\n\n"])
    assert error is not None and error.code == "MALFORMED_RESPONSE"
