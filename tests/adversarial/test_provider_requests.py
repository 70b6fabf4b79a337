"""Hostile requests to the local provider: 413, 400 and dropped half-open connections, never a hang.

Each test talks to a real LocalProvider on 127.0.0.1 with raw sockets or httpx.
Timeouts are made short through the provider's own settings; socket reads carry
a generous timeout so a regression fails instead of hanging.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from chunkscope.provider import LocalProvider

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def guarded() -> Iterator[LocalProvider]:
    with LocalProvider(max_request_bytes=64 * 1024, request_timeout=1.0) as provider:
        yield provider


def _post(provider: LocalProvider, path: str, content: bytes) -> httpx.Response:
    return httpx.post(provider.url + path, content=content, headers={"content-type": "application/json"})


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
def test_a_body_over_the_limit_is_a_413_with_a_json_error(guarded: LocalProvider, path: str) -> None:
    body = json.dumps({"model": "text", "messages": [{"role": "user", "content": "x" * 100_000}]})
    response = _post(guarded, path, body.encode())
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["message"] == "the request body is larger than this provider's limit of 65,536 bytes"
    assert error["code"] == "request_too_large"
    assert response.headers["connection"] == "close"


def test_a_chunked_body_over_the_limit_is_a_413_without_reading_it_all(guarded: LocalProvider) -> None:
    def pieces() -> Iterator[bytes]:  # no content-length: the limit is counted as the body arrives
        yield b'{"model": "text", "pad": "'
        for _ in range(100):
            yield b"x" * 4096
        yield b'"}'

    response = httpx.post(guarded.base_url + "/chat/completions", content=pieces())
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (DEEP.encode(), "the request body is JSON nested too deeply to read"),
        (b'{"model": "text", "messages": [', "the request body is not valid JSON"),
        (b'{"model": "\xff"}', "the request body is not valid JSON"),
    ],
    ids=["nested", "truncated", "not-utf8"],
)
def test_nested_or_malformed_json_is_a_400(content: bytes, message: str) -> None:
    # the default limits: 200 KB of nesting is well under 8 MiB
    with LocalProvider() as provider:
        for path in ("/v1/chat/completions", "/v1/messages"):
            response = _post(provider, path, content)
            assert response.status_code == 400, path
            assert response.json()["error"]["message"] == message


def _connect(provider: LocalProvider) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", int(provider.url.rsplit(":", 1)[1])), timeout=10)
    return sock


def _read_until_closed(sock: socket.socket) -> bytes:
    data = b""
    while True:
        piece = sock.recv(65536)  # the 10 s socket timeout fails the test rather than hanging it
        if not piece:
            return data
        data += piece


@pytest.mark.parametrize(
    "half",
    [b"", b"POST /v1/chat/comp", b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-ty"],
    ids=["nothing", "half-a-request-line", "half-the-headers"],
)
def test_a_half_open_connection_is_dropped_after_the_request_timeout(
    guarded: LocalProvider, half: bytes
) -> None:
    with _connect(guarded) as sock:
        sock.sendall(half)
        started = time.monotonic()
        assert _read_until_closed(sock) == b""  # closed by the server, nothing answered
        assert time.monotonic() - started < 5


def test_a_body_that_stops_halfway_gets_408_and_the_connection_closes(guarded: LocalProvider) -> None:
    with _connect(guarded) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"content-length: 100\r\n\r\n"
            b'{"model": "text"'
        )
        answer = _read_until_closed(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ")
    assert json.loads(body)["error"]["code"] == "request_timeout"


def test_a_kept_alive_connection_that_sends_half_a_second_request_is_dropped(guarded: LocalProvider) -> None:
    with _connect(guarded) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n")
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 ")
        sock.sendall(b"GET /v1/mod")  # and then nothing: uvicorn's keep-alive timer alone stops here
        rest = _read_until_closed(sock)
    assert b"HTTP/1.1" not in rest


def test_the_limits_leave_ordinary_requests_alone(guarded: LocalProvider) -> None:
    body = {"model": "text", "messages": [{"role": "user", "content": "hi"}], "stream": False}
    response = _post(guarded, "/v1/chat/completions", json.dumps(body).encode())
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"]
