"""Faults pass through untouched and are recorded with their code."""

from __future__ import annotations

import time

import httpx
import pytest
from _tap_helpers import ANTHROPIC_AUTH, AUTH, anthropic_body, normalised, stream_body

import chunkscope as cs
from chunkscope.tap import Tap


@pytest.mark.parametrize(
    ("model", "code"),
    [
        ("fault-429", "RATE_LIMIT"),
        ("fault-401", "AUTH"),
        ("fault-500", "SERVER"),
        ("fault-context", "CONTEXT_WINDOW_EXCEEDED"),
    ],
)
def test_an_upstream_error_status_reaches_the_client_as_sent(
    provider: cs.LocalProvider, tap: Tap, model: str, code: str
) -> None:
    direct = httpx.post(f"{provider.base_url}/chat/completions", json=stream_body(model), headers=AUTH)
    through = httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body(model), headers=AUTH)
    assert through.status_code == direct.status_code >= 400
    assert through.content == direct.content
    assert through.headers.get("retry-after") == direct.headers.get("retry-after")
    call = tap.calls[0]
    assert call.wait(5)
    assert call.status == direct.status_code and call.error_code == code
    assert tap.usage.to_frame().iloc[0]["error_code"] == code


def test_an_anthropic_error_status_is_mapped_by_the_same_table(tap: Tap) -> None:
    through = httpx.post(
        f"{tap.base_url}/v1/messages", json=anthropic_body("fault-429"), headers=ANTHROPIC_AUTH
    )
    assert through.status_code == 429
    assert tap.calls[0].wait(5) and tap.calls[0].error_code == "RATE_LIMIT"


def test_an_upstream_drop_reaches_the_client_as_a_drop_and_keeps_the_output_before_it(tap: Tap) -> None:
    received = bytearray()
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream(
            "POST", f"{tap.base_url}/v1/chat/completions", json=stream_body("fault-drop"), headers=AUTH
        ) as response,
    ):
        for part in response.iter_raw():
            received += part
    call = tap.calls[0]
    assert call.wait(5)
    assert call.error_code == "TRANSPORT"
    assert call.raw == bytes(received)
    assert call.result is not None and call.result.text  # the text deltas before the drop
    assert tap.usage.to_frame().iloc[0]["error_code"] == "TRANSPORT"


def test_an_in_stream_error_passes_and_is_recorded_with_its_code(
    provider: cs.LocalProvider, tap: Tap
) -> None:
    body = stream_body("fault-in-stream-error")
    direct = httpx.post(f"{provider.base_url}/chat/completions", json=body, headers=AUTH)
    through = httpx.post(f"{tap.base_url}/v1/chat/completions", json=body, headers=AUTH)
    assert normalised(through.content) == normalised(direct.content)
    assert tap.calls[0].wait(5) and tap.calls[0].error_code not in (None, "TRANSPORT")


def test_a_truncated_stream_is_recorded_as_stream_closed(tap: Tap) -> None:
    httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("fault-truncated"), headers=AUTH)
    assert tap.calls[0].wait(5) and tap.calls[0].error_code == "STREAM_CLOSED"


def test_a_client_that_disconnects_makes_the_tap_close_the_upstream_at_once(
    provider: cs.LocalProvider, tap: Tap
) -> None:
    before = len(provider.requests)
    with httpx.stream(
        "POST", f"{tap.base_url}/v1/chat/completions", json=stream_body("slow-tokens"), headers=AUTH
    ) as response:
        next(response.iter_raw())  # the first event, then the client goes away mid-stream
    gone = time.monotonic()
    call = tap.calls[0]
    assert call.wait(5)
    assert call.error_code == "ABORTED"
    upstream = provider.requests[before]
    assert upstream.wait_ended(5)
    assert upstream.outcome == "disconnected"
    assert upstream.ended is not None and upstream.ended - gone < 0.2  # not at the stream's natural end
    assert call.result is not None and len(call.result.chunks) < 11


def test_a_stalled_upstream_is_the_clients_to_time_out(tap: Tap) -> None:
    with (
        pytest.raises(httpx.ReadTimeout),
        httpx.stream(
            "POST",
            f"{tap.base_url}/v1/chat/completions",
            json=stream_body("fault-stall"),
            headers=AUTH,
            timeout=httpx.Timeout(5.0, read=0.5),
        ) as response,
    ):
        for _ in response.iter_raw():
            pass
    call = tap.calls[0]
    assert call.wait(5)
    assert call.error_code == "ABORTED"  # the client gave up; the tap kept what it saw
    assert call.result is not None and call.result.text


def test_an_unreachable_upstream_is_a_502_recorded_as_transport() -> None:
    with Tap(upstream="http://127.0.0.1:9") as tap:
        answer = httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("text"), headers=AUTH)
    assert answer.status_code == 502
    assert tap.calls[0].wait(5) and tap.calls[0].error_code == "TRANSPORT"


def _sse_text(stream: bytes) -> str:
    import json

    events = [line[6:] for line in stream.decode().splitlines() if line.startswith("data: {")]
    return "".join(
        choice["delta"].get("content") or "" for event in events for choice in json.loads(event)["choices"]
    )


def _with_usage(body: dict[str, object]) -> dict[str, object]:
    return {**body, "stream_options": {"include_usage": True}}


def test_a_client_that_leaves_once_it_has_read_the_end_marker_made_a_whole_call(
    provider: cs.LocalProvider,
) -> None:
    # The SDKs close as soon as they read [DONE]; an upstream may still hold its body open then.
    import socket
    import threading

    body = _with_usage(stream_body("text"))
    stream = httpx.post(f"{provider.base_url}/chat/completions", json=body, headers=AUTH).content
    listener = socket.create_server(("127.0.0.1", 0))
    held = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            head += b"transfer-encoding: chunked\r\n\r\n"
            connection.sendall(head + b"%x\r\n%s\r\n" % (len(stream), stream))  # no closing chunk
            held.wait(10)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        with (
            Tap(upstream=f"http://127.0.0.1:{listener.getsockname()[1]}") as tap,
            httpx.stream(
                "POST", f"{tap.base_url}/v1/chat/completions", json=stream_body("text"), headers=AUTH
            ) as response,
        ):
            received = b""
            for part in response.iter_raw():
                received += part
                if b"[DONE]" in received:
                    break
            response.close()
            call = tap.calls[0]
            assert call.wait(5)
            assert call.error_code is None and call.result is not None and call.result.ok
            assert call.result.finish.kind == "stop" and call.result.usage is not None
            assert call.result.violations == [], call.result.violations
            assert call.result.text == _sse_text(stream)
    finally:
        held.set()
        listener.close()
