"""AnthropicAdapter over a mocked transport: the request it sends, the chunks and errors it yields."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from _anthropic_events import (
    Event,
    abort_once_live,
    block_stop,
    message_delta,
    message_start,
    message_stop,
    ping,
    signature_delta,
    sse_body,
    text_delta,
    text_reply,
    text_start,
    thinking_delta,
    thinking_start,
)

from chunkscope.adapters._base import AbortController, GenerateOptions, ModelInfo
from chunkscope.adapters.anthropic import THINKING_EFFORTS, AnthropicAdapter
from chunkscope.protocol import LlmError, ReasoningBlock, StreamResult, TextBlock, check, collect

KEY = "sk-ant-test-0123456789"
Handler = Callable[[httpx.Request], httpx.Response]


class Recorder:
    """A MockTransport handler that records requests and answers with a fixed response."""

    def __init__(self, respond: Callable[[httpx.Request], httpx.Response]) -> None:
        self.respond = respond
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.respond(request)

    @property
    def body(self) -> dict[str, Any]:
        return json.loads(self.requests[-1].content)  # type: ignore[no-any-return]


def sse(
    events: list[Event], status: int = 200, headers: dict[str, str] | None = None
) -> Callable[..., httpx.Response]:
    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            status,
            headers={"content-type": "text/event-stream", **(headers or {})},
            content=sse_body(events),
        )

    return respond


def error_response(
    status: int, error_type: str, message: str, **headers: str
) -> Callable[..., httpx.Response]:
    def respond(request: httpx.Request) -> httpx.Response:
        body = {"type": "error", "error": {"type": error_type, "message": message}}
        return httpx.Response(status, json=body, headers=headers)

    return respond


def adapter_for(handler: Handler, **kwargs: Any) -> AnthropicAdapter:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    kwargs.setdefault("api_key", KEY)
    return AnthropicAdapter("https://api.example.test", http_client=client, **kwargs)


def opts(model: str = "claude-test", content: str = "hi", **extra: Any) -> GenerateOptions:
    return GenerateOptions("anthropic", model, [{"role": "user", "content": content}], **extra)


async def run(adapter: AnthropicAdapter, options: GenerateOptions | None = None) -> StreamResult:
    return await collect(adapter.stream(options or opts()))


# --- the request ----------------------------------------------------------------


async def test_posts_to_v1_messages_with_key_version_and_attribution_headers() -> None:
    recorder = Recorder(sse(text_reply("hi")))
    result = await run(adapter_for(recorder))
    assert result.ok
    request = recorder.requests[0]
    assert request.method == "POST"
    assert str(request.url) == "https://api.example.test/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("chunkscope/")
    assert recorder.body["stream"] is True
    assert recorder.body["model"] == "claude-test"
    assert recorder.body["max_tokens"] == 4096


async def test_a_trailing_slash_in_base_url_does_not_double() -> None:
    recorder = Recorder(sse(text_reply("hi")))
    client = httpx.AsyncClient(transport=httpx.MockTransport(recorder))
    adapter = AnthropicAdapter("https://api.example.test/", KEY, http_client=client)
    await run(adapter)
    assert str(recorder.requests[0].url) == "https://api.example.test/v1/messages"


async def test_reads_the_api_key_from_anthropic_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
    recorder = Recorder(sse(text_reply("hi")))
    await run(adapter_for(recorder, api_key=None))
    assert recorder.requests[0].headers["x-api-key"] == "sk-from-env"


async def test_no_api_key_is_missing_credential_before_any_io(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    recorder = Recorder(sse(text_reply("hi")))
    result = await run(adapter_for(recorder, api_key=None))
    assert result.error_code == "MISSING_CREDENTIAL"
    assert recorder.requests == []


async def test_a_key_no_header_can_carry_is_invalid_credential_and_never_echoed() -> None:
    recorder = Recorder(sse(text_reply("hi")))
    bad = "sk-ant-bad\nkey-9876"
    result = await run(adapter_for(recorder, api_key=bad))
    assert result.error_code == "INVALID_CREDENTIAL"
    assert recorder.requests == []
    assert "bad" not in str(result.error)


async def test_the_key_is_not_in_the_repr_nor_in_errors() -> None:
    recorder = Recorder(error_response(401, "authentication_error", f"invalid x-api-key {KEY}"))
    adapter = adapter_for(recorder)
    assert KEY not in repr(adapter)
    result = await run(adapter)
    assert result.error_code == "AUTH"
    assert result.error is not None
    assert KEY not in str(result.error) and KEY not in repr(result.error)
    assert KEY not in str(result.error.cause)


SECRET_URLS = ["http://user:url-secret@host.test", "http://host.test/?key=url-secret"]


@pytest.mark.parametrize("base_url", SECRET_URLS)
async def test_credentials_in_base_url_never_show_in_the_repr_or_errors(base_url: str) -> None:
    adapter = AnthropicAdapter(base_url, KEY)
    assert "url-secret" not in repr(adapter)
    assert "host.test" in repr(adapter)

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    answers = [
        error_response(500, "api_error", "boom"),
        refuse,
        lambda request: httpx.Response(200, json={"not": "a stream"}),
        sse([*text_reply("a")[:3], ("error", {"type": "error", "error": {"type": "api_error"}})]),
    ]
    for answer in answers:
        client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
        result = await run(AnthropicAdapter(base_url, KEY, http_client=client))
        assert result.error is not None
        texts = [str(result.error), repr(result.error), str(result.error.cause)]
        assert not any("url-secret" in text for text in texts), texts
    # the label names the server: the HTTP, transport and payload errors built from it say where
    client = httpx.AsyncClient(transport=httpx.MockTransport(refuse))
    result = await run(AnthropicAdapter(base_url, KEY, http_client=client))
    assert "http://host.test" in str(result.error)


def test_a_base_url_that_is_not_http_is_refused_without_showing_its_credentials() -> None:
    with pytest.raises(ValueError) as info:
        AnthropicAdapter("ftp://user:url-secret@host.test/?key=url-secret", KEY)
    assert "url-secret" not in str(info.value)


async def test_a_query_in_base_url_is_kept_after_the_messages_path() -> None:
    recorder = Recorder(sse(text_reply("hi")))
    client = httpx.AsyncClient(transport=httpx.MockTransport(recorder))
    result = await run(AnthropicAdapter("https://api.example.test/proxy?key=q", KEY, http_client=client))
    assert result.ok
    assert str(recorder.requests[0].url) == "https://api.example.test/proxy/v1/messages?key=q"


async def test_sends_thinking_for_an_effort_of_a_thinking_model() -> None:
    recorder = Recorder(sse(text_reply("hi")))
    adapter = adapter_for(recorder)
    assert adapter.model_info("claude-sonnet-4-5") is not None
    await run(adapter, opts("claude-sonnet-4-5", reasoning_effort="medium"))
    assert recorder.body["thinking"] == {"type": "enabled", "budget_tokens": 4096}


async def test_an_effort_for_a_model_without_thinking_is_refused_before_any_io() -> None:
    recorder = Recorder(sse(text_reply("hi")))
    result = await run(adapter_for(recorder), opts("claude-3-5-haiku", reasoning_effort="low"))
    assert result.error_code == "UNSUPPORTED_REASONING_EFFORT"
    assert recorder.requests == []


async def test_given_models_publish_their_own_reasoning_metadata() -> None:
    recorder = Recorder(sse(text_reply("hi")))
    adapter = adapter_for(
        recorder, models=[ModelInfo("reasoning", reasoning=THINKING_EFFORTS), ModelInfo("text")]
    )
    assert [m.id for m in adapter.models()] == ["reasoning", "text"]
    assert (
        await run(adapter, opts("text", reasoning_effort="low"))
    ).error_code == "UNSUPPORTED_REASONING_EFFORT"
    assert (await run(adapter, opts("reasoning", reasoning_effort="off"))).ok
    assert recorder.body["thinking"] == {"type": "disabled"}


async def test_content_the_wire_cannot_carry_is_unsupported_option_before_any_io() -> None:
    recorder = Recorder(sse(text_reply("hi")))
    options = GenerateOptions(
        "anthropic", "m", [{"role": "user", "content": [{"type": "reasoning", "text": "x"}]}]
    )
    result = await run(adapter_for(recorder), options)
    assert result.error_code == "UNSUPPORTED_OPTION"
    assert recorder.requests == []


async def test_replays_reasoning_it_streamed_with_its_signature() -> None:
    events = [
        message_start(),
        thinking_start(0),
        thinking_delta(0, "Think."),
        signature_delta(0, "sig-xyz"),
        block_stop(0),
        text_start(1),
        text_delta(1, "Answer."),
        block_stop(1),
        message_delta(),
        message_stop(),
    ]
    recorder = Recorder(sse(events))
    adapter = adapter_for(recorder)
    first = await run(adapter)
    assert first.blocks == [ReasoningBlock(text="Think."), TextBlock(text="Answer.")]
    assert first.finish is not None
    assert first.chunks[-1].replay_state == {"thinking": [{"index": 0, "signature": "sig-xyz"}]}  # type: ignore[union-attr]
    follow_up = GenerateOptions(
        "anthropic",
        "claude-test",
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [b.to_dict() for b in first.blocks]},
            {"role": "user", "content": "more"},
        ],
    )
    await run(adapter, follow_up)
    assert recorder.body["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "Think.",
        "signature": "sig-xyz",
    }


# --- the stream -----------------------------------------------------------------


async def test_streams_chunks_that_check_clean_under_strict() -> None:
    result = await run(adapter_for(Recorder(sse(text_reply("Hel", "lo")))))
    assert check(result.chunks, "strict") == []
    assert result.text == "Hello"
    assert result.finish is not None and result.finish.kind == "stop"
    assert result.usage is not None and result.usage.input_tokens == 12


async def test_error_finishes_carry_the_request_id_of_the_response() -> None:
    recorder = Recorder(sse(text_reply("no", stop_reason="refusal"), headers={"request-id": "req_abc"}))
    result = await run(adapter_for(recorder))
    assert result.finish is not None and result.finish.failure is not None
    assert result.finish.failure.code == "REFUSAL"
    assert result.finish.failure.request_id == "req_abc"


async def test_in_stream_errors_carry_the_request_id_and_keep_the_partial_output() -> None:
    events = [
        *text_reply("a", "b")[:4],
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]
    result = await run(adapter_for(Recorder(sse(events, headers={"request-id": "req_x"}))))
    assert result.error_code == "SERVER"
    assert result.error is not None and result.error.request_id == "req_x"
    assert result.text == "ab"


async def test_a_200_that_is_not_an_event_stream_is_malformed_response() -> None:
    recorder = Recorder(lambda request: httpx.Response(200, json={"type": "message", "content": []}))
    assert (await run(adapter_for(recorder))).error_code == "MALFORMED_RESPONSE"


async def test_a_body_that_ends_before_message_stop_is_stream_closed() -> None:
    result = await run(adapter_for(Recorder(sse(text_reply("a", "b")[:-2]))))
    assert result.error_code == "STREAM_CLOSED"
    assert result.text == "ab"


@pytest.mark.parametrize(
    ("status", "error_type", "message", "code"),
    [
        (401, "authentication_error", "invalid x-api-key", "AUTH"),
        (403, "permission_error", "not allowed", "AUTH"),
        (402, "billing_error", "payment required", "QUOTA"),
        (400, "invalid_request_error", "Your credit balance is too low to access the Anthropic API", "QUOTA"),
        (400, "billing_error", "billing problem", "QUOTA"),
        (
            400,
            "invalid_request_error",
            "prompt is too long: 208000 tokens > 200000 maximum",
            "CONTEXT_WINDOW_EXCEEDED",
        ),
        (
            400,
            "invalid_request_error",
            "input length and max_tokens exceed context limit",
            "CONTEXT_WINDOW_EXCEEDED",
        ),
        (400, "invalid_request_error", "messages: field required", "INVALID_REQUEST"),
        (413, "request_too_large", "Request exceeds the maximum allowed number of bytes", "INVALID_REQUEST"),
        (404, "not_found_error", "model: nope", "HTTP_404"),
        (500, "api_error", "Internal server error", "SERVER"),
        (529, "overloaded_error", "Overloaded", "SERVER"),
        (418, "teapot_error", "short and stout", "HTTP_418"),
    ],
)
async def test_maps_http_errors_to_codes(status: int, error_type: str, message: str, code: str) -> None:
    result = await run(
        adapter_for(Recorder(error_response(status, error_type, message, **{"request-id": "req_1"})))
    )
    assert result.error_code == code
    assert result.error is not None
    assert result.error.status == status
    assert result.error.request_id == "req_1"
    assert message in result.error.message
    assert result.chunks == []


async def test_maps_http_429_to_rate_limit_with_retry_after_and_request_id() -> None:
    recorder = Recorder(
        error_response(429, "rate_limit_error", "slow down", **{"retry-after": "2", "request-id": "req-429"})
    )
    result = await run(adapter_for(recorder))
    assert result.error is not None
    assert (result.error.code, result.error.retry_after_ms, result.error.request_id) == (
        "RATE_LIMIT",
        2000,
        "req-429",
    )


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (httpx.ConnectError("connection refused"), "TRANSPORT"),
        (httpx.ReadError("connection reset"), "TRANSPORT"),
        (httpx.ReadTimeout("read timed out"), "TIMEOUT"),
    ],
)
async def test_maps_transport_failures(exc: Exception, code: str) -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        raise exc

    assert (await run(adapter_for(fail))).error_code == code


# --- stalls, aborts and the connection ------------------------------------------


class StallingBody(httpx.AsyncByteStream):
    """A body that sends ``head`` and then nothing, until closed; records the close."""

    def __init__(self, head: bytes) -> None:
        self.head = head
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        await asyncio.Event().wait()  # silence forever
        yield b""  # pragma: no cover

    async def aclose(self) -> None:
        self.closed = True


def stalling(body: StallingBody) -> Handler:
    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    return respond


async def test_an_abort_ends_a_stalled_stream_with_aborted_within_100_ms_and_closes_it() -> None:
    body = StallingBody(sse_body(text_reply("a", "b")[:4]))
    adapter = adapter_for(stalling(body), idle_timeout=None)
    # live: block-start and the two deltas arrived
    error, seconds = await abort_once_live(lambda signal: adapter.stream(opts(signal=signal)))
    assert seconds < 0.1
    assert error.code == "ABORTED"
    assert body.closed


async def test_an_abort_while_the_consumer_holds_a_chunk_ends_the_stream_at_the_next_step() -> None:
    controller = AbortController()
    stream = adapter_for(Recorder(sse(text_reply("a", "b", "c")))).stream(opts(signal=controller.signal))
    await stream.__anext__()
    controller.abort()
    with pytest.raises(LlmError) as info:
        await stream.__anext__()
    assert info.value.code == "ABORTED"


async def test_an_already_aborted_signal_fails_before_any_io() -> None:
    controller = AbortController()
    controller.abort()
    recorder = Recorder(sse(text_reply("hi")))
    assert (await run(adapter_for(recorder), opts(signal=controller.signal))).error_code == "ABORTED"
    assert recorder.requests == []


async def test_silence_longer_than_the_idle_timeout_is_timeout_and_closes_the_body() -> None:
    body = StallingBody(sse_body(text_reply("a", "b")[:4]))
    started = time.perf_counter()
    result = await run(adapter_for(stalling(body), idle_timeout=0.05))
    assert result.error_code == "TIMEOUT"
    assert time.perf_counter() - started < 2.0
    assert result.text == "ab"
    assert body.closed


class TailBody(httpx.AsyncByteStream):
    """A body that sends ``head``, then ``tail`` (after ``message_stop``); records how far it was read."""

    def __init__(self, head: bytes, tail: list[bytes]) -> None:
        self.head = head
        self.tail = tail
        self.exhausted = False
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        for part in self.tail:
            yield part
        self.exhausted = True

    async def aclose(self) -> None:
        self.closed = True


async def test_the_body_after_message_stop_is_read_to_its_end_so_the_connection_is_reused() -> None:
    # What follows message_stop (a ping, a malformed line) is read, not translated.
    body = TailBody(sse_body(text_reply("hi")), [sse_body([ping()]), b"event: junk\ndata: {not json\n\n"])
    result = await run(
        adapter_for(
            lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)
        )
    )
    assert result.ok, result.error
    assert result.text == "hi"
    assert body.exhausted  # read to its end: httpx returns a fully read connection to the pool
    assert body.closed


@pytest.mark.parametrize("idle_timeout", [None, 60.0])
async def test_a_server_that_keeps_the_body_open_after_message_stop_still_completes_in_bounded_time(
    idle_timeout: float | None,
) -> None:
    body = StallingBody(sse_body(text_reply("a", "b")))
    started = time.perf_counter()
    result = await run(adapter_for(stalling(body), idle_timeout=idle_timeout))
    assert result.ok, result.error
    assert result.text == "ab"
    assert result.finish is not None and result.finish.kind == "stop"
    assert time.perf_counter() - started < 2.0  # the drain is bounded (0.25 s), not the idle timeout
    assert body.closed


async def test_a_server_that_trickles_on_after_message_stop_still_completes_in_bounded_time() -> None:
    class Trickle(httpx.AsyncByteStream):
        closed = False

        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield sse_body(text_reply("a"))
            while True:  # the real time is the point: pings keep the connection busy forever
                await asyncio.sleep(0.01)
                yield sse_body([ping()])

        async def aclose(self) -> None:
            self.closed = True

    body = Trickle()
    started = time.perf_counter()
    result = await run(
        adapter_for(
            lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)
        )
    )
    assert result.ok, result.error
    assert time.perf_counter() - started < 2.0
    assert body.closed


async def test_a_given_client_s_read_timeout_does_not_apply_the_idle_timeout_governs() -> None:
    recorder = Recorder(sse(text_reply("hi")))
    client = httpx.AsyncClient(transport=httpx.MockTransport(recorder))  # httpx's default: 5 s reads
    assert (await run(AnthropicAdapter("https://api.example.test", KEY, http_client=client))).ok
    timeout = recorder.requests[0].extensions["timeout"]
    assert timeout["read"] is None  # a thinking pause is judged by idle_timeout alone


async def test_the_adapter_closes_the_client_it_owns_but_not_a_given_one() -> None:
    given = httpx.AsyncClient(transport=httpx.MockTransport(Recorder(sse(text_reply("hi")))))
    adapter = AnthropicAdapter("https://api.example.test", KEY, http_client=given)
    await adapter.aclose()
    assert not given.is_closed
    await given.aclose()

    own = AnthropicAdapter("https://api.example.test", KEY)
    client = own._clients.get()
    async with own:
        pass
    assert client.is_closed


async def test_an_in_stream_error_echoing_the_key_is_redacted() -> None:
    events = [
        *text_reply("a")[:3],
        ("error", {"type": "error", "error": {"type": "api_error", "message": f"bad {KEY}"}}),
    ]
    result = await run(adapter_for(Recorder(sse(events))))
    assert result.error_code == "SERVER"
    assert KEY not in str(result.error)
