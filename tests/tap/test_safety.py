"""Not an open proxy; loopback unless told; TLS verified; redirects unfollowed; 413; no key kept."""

from __future__ import annotations

import itertools
import socket
from pathlib import Path

import httpx
import pytest
from _tap_helpers import AUTH, KEY, _Redirect, stdlib_server, stream_body

import chunkscope as cs
from chunkscope.tap import Tap, TapExposedWarning
from chunkscope.tap._redact import ByteMask, redact_query, secrets_of


def raw_request(base_url: str, request: bytes) -> bytes:
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request)
        answer = b""
        while part := sock.recv(65536):
            answer += part
    return answer


def test_an_absolute_request_url_is_refused_and_reaches_no_other_host(provider: cs.LocalProvider) -> None:
    with stdlib_server() as other, Tap(upstream=provider.url) as tap:
        before = len(provider.requests), len(_Redirect.hits)
        answer = raw_request(
            tap.base_url,
            f"POST {other}/v1/chat/completions HTTP/1.1\r\nHost: {other[7:]}\r\nContent-Length: 2\r\n"
            "Connection: close\r\n\r\n{}".encode(),
        )
    assert answer.startswith(b"HTTP/1.1 400")
    assert (len(provider.requests), len(_Redirect.hits)) == before  # neither host was asked anything


def test_the_host_header_never_routes_a_request(provider: cs.LocalProvider) -> None:
    with stdlib_server() as other, Tap(upstream=provider.url) as tap:
        hits = len(_Redirect.hits)
        answer = httpx.post(
            f"{tap.base_url}/v1/chat/completions",
            json=stream_body("text"),
            headers={"host": other.removeprefix("http://")},
        )
    assert answer.status_code == 200 and b"[DONE]" in answer.content
    assert len(_Redirect.hits) == hits
    assert provider.requests[-1].headers["host"] == provider.url.removeprefix("http://")


def test_redirects_go_to_the_client_unfollowed() -> None:
    with stdlib_server() as upstream, Tap(upstream=upstream) as tap:
        hits = len(_Redirect.hits)
        answer = httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("text"))
    assert answer.status_code == 307
    assert answer.headers["location"] == "http://127.0.0.1:9/elsewhere"
    assert len(_Redirect.hits) == hits + 1  # asked once, not followed
    assert tap.calls[0].wait(5) and tap.calls[0].status == 307


def test_upstream_tls_is_verified(tmp_path: Path) -> None:
    with stdlib_server(tls=tmp_path) as upstream, Tap(upstream=upstream) as tap:
        answer = httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("text"))
    assert answer.status_code == 502  # a self-signed certificate is not trusted
    assert tap.calls[0].wait(5) and tap.calls[0].error_code == "TRANSPORT"


def test_request_bodies_are_capped_with_413(provider: cs.LocalProvider) -> None:
    before = len(provider.requests)
    with Tap(upstream=provider.url, max_request_bytes=1000) as tap:
        big = stream_body("text", "x" * 2000)
        assert httpx.post(f"{tap.base_url}/v1/chat/completions", json=big).status_code == 413
        # chunked (no Content-Length): the cap holds while reading
        chunks = iter([b'{"model": "text", "messages": [', b" " * 2000, b"]}"])
        answer = httpx.post(f"{tap.base_url}/v1/chat/completions", content=chunks)
        assert answer.status_code == 413
    assert len(provider.requests) == before


def test_it_binds_loopback_and_warns_loudly_otherwise(provider: cs.LocalProvider) -> None:
    with Tap(upstream=provider.url) as tap:
        assert tap.base_url.startswith("http://127.0.0.1:")
    with pytest.warns(TapExposedWarning, match="not only on loopback"):
        Tap(upstream=provider.url, host="0.0.0.0")


def test_no_credential_is_kept_anywhere(provider: cs.LocalProvider, tmp_path: Path) -> None:
    headers = {
        **AUTH,
        "x-api-key": KEY,
        "x-goog-api-key": KEY,
        "api-key": KEY,
        "cookie": f"session={KEY}",
        "x-amz-security-token": KEY,
    }
    record = tmp_path / "rec"
    with Tap(upstream=provider.url, record=record) as tap:
        # echo answers with the prompt: the key comes back inside the response body too
        answer = httpx.post(
            f"{tap.base_url}/v1/chat/completions?key={KEY}",
            json=stream_body("echo", f"my key is {KEY}"),
            headers=headers,
        )
        assert KEY.encode() in answer.content  # the client still gets exactly what was sent
        call = tap.calls[0]
        assert call.wait(5)
    kept = [
        repr(call),
        repr(call.request_headers),
        call.path,
        call.request_body.decode(),
        call.raw.decode(),
        repr(call.result),
        repr(call.chunks),
        repr(call.response_headers),
        tap.usage.to_frame().to_csv(),
        *(path.read_text() for path in record.iterdir()),
    ]
    for text in kept:
        assert KEY not in text
    names = {name.lower() for name, value in call.request_headers if value == "REDACTED"}
    assert {
        "authorization",
        "x-api-key",
        "x-goog-api-key",
        "api-key",
        "cookie",
        "x-amz-security-token",
    } <= names
    assert "key=REDACTED" in call.path


@pytest.mark.parametrize("cuts", [[3], [10, 11], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]])
def test_a_key_split_across_reads_is_masked(cuts: list[int]) -> None:
    body = b'data: {"text": "' + KEY.encode() + b'"}\n\n'
    start = body.index(KEY.encode())
    points = [0, *(start + c for c in cuts), len(body)]
    reads = [body[a:b] for a, b in itertools.pairwise(points)]
    mask = ByteMask(secrets_of([("authorization", f"Bearer {KEY}")]))
    kept = [mask.push(read) for read in reads]
    joined = b"".join(kept)
    assert KEY.encode() not in joined and len(joined) == len(body)
    assert [len(k) for k in kept] == [len(r) for r in reads]  # read sizes (and so timings) stay true


def test_sigv4_signature_parts_are_secrets() -> None:
    header = (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE1234/20261202/us-east-1/bedrock/aws4_request, "
        "SignedHeaders=host;x-amz-date, "
        "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
    )
    found = secrets_of([("Authorization", header)])
    assert "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7" in found
    assert "REDACTED" in redact_query("X-Amz-Signature=abc123456789&X-Amz-Date=1")
    assert "X-Amz-Date=1" in redact_query("X-Amz-Signature=abc123456789&X-Amz-Date=1")


async def test_a_key_echoed_in_a_binary_bedrock_stream_reaches_no_chunk_or_recording(
    provider: cs.LocalProvider, tmp_path: Path
) -> None:
    record = tmp_path / "rec"
    with Tap(upstream=provider.url, record=record) as tap:
        async with cs.BedrockAdapter(tap.base_url, KEY) as adapter:  # the key as a bearer token
            options = cs.GenerateOptions(
                provider="aws", model="echo", messages=[{"role": "user", "content": f"my key is {KEY}"}]
            )
            result = await cs.collect(adapter.stream(options))
        assert KEY in result.text  # the client got the echo as sent
        call = tap.calls[0]
        assert call.wait(5) and call.wire == "bedrock" and call.result is not None and call.result.ok
    kept = [repr(call.request_headers), call.raw.decode("latin-1"), repr(call.result), repr(call.chunks)]
    kept += [tap.usage.to_frame().to_csv(), *(path.read_text() for path in record.iterdir())]
    for text in kept:
        assert KEY not in text
    assert "REDACTED" in call.result.text  # the echoed key, masked in the parsed stream
