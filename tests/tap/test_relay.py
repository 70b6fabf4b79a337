"""The relay below the tap: keep-alive, byte-identical framing, backpressure, 100-continue, HTTP/1.0."""

from __future__ import annotations

import hashlib
import http.server
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ClassVar

import httpx
from _tap_helpers import AUTH, KEY, stream_body

import chunkscope as cs
from chunkscope.tap import Tap


class _KeepAlive(http.server.BaseHTTPRequestHandler):
    """Answers JSON naming the TCP port the request came from (the tap's upstream connection)."""

    protocol_version = "HTTP/1.1"
    ports: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        type(self).ports.append(self.client_address[1])
        body = json.dumps({"port": self.client_address[1]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def raw_upstream(serve: Callable[[socket.socket], None]) -> Iterator[str]:
    """A one-connection-at-a-time raw TCP upstream on 127.0.0.1 that runs ``serve`` per connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)

    def loop() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                serve(connection)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


def read_head(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        part = sock.recv(65536)
        if not part:
            break
        data += part
    return data


def test_two_calls_on_one_client_connection_share_one_upstream_connection_and_are_each_recorded() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with (
            Tap(upstream=f"http://127.0.0.1:{server.server_address[1]}") as tap,
            httpx.Client(limits=httpx.Limits(max_connections=1)) as client,
        ):
            first = client.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("a", stream=False))
            second = client.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("b", stream=False))
            assert first.status_code == second.status_code == 200
            assert first.json()["port"] == second.json()["port"]  # the paired upstream connection, reused
            assert [call.wait(5) for call in tap.calls] == [True, True]
            assert [call.model for call in tap.calls] == ["a", "b"]
            assert [call.raw for call in tap.calls] == [first.content, second.content]
    finally:
        server.shutdown()
        server.server_close()


def test_a_fresh_upstream_connection_when_the_upstream_closed_the_kept_alive_one() -> None:
    answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
    served: list[int] = []

    def serve(connection: socket.socket) -> None:
        read_head(connection)
        connection.sendall(answer)  # says keep-alive, then closes while idle
        served.append(1)
        time.sleep(0.1)

    with (
        raw_upstream(serve) as upstream,
        Tap(upstream=upstream) as tap,
        httpx.Client(limits=httpx.Limits(max_connections=1)) as client,
    ):
        first = client.get(f"{tap.base_url}/v1/models")
        time.sleep(0.3)  # the upstream closed its side meanwhile; the client's connection to the tap stays
        second = client.get(f"{tap.base_url}/v1/models")
        assert first.status_code == second.status_code == 200 and second.content == b"{}"
        assert len(served) == 2
        assert all(call.wait(5) and call.error_code is None for call in tap.calls)


_CHUNKED_STREAM = [
    b"data: {}\n\n",
    b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":'
    b'{"role":"assistant","content":"Hel"},"finish_reason":null}]}\n\n',
    b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":'
    b'{"content":"lo"},"finish_reason":"stop"}]}\n\n',
    b"data: [DONE]\n\n",
]


def test_a_chunked_response_reaches_the_client_byte_identical_at_the_socket() -> None:
    # Odd framing on purpose: upper-case hex, a chunk extension, an empty-looking keep-alive event,
    # a trailer, and writes that cut size lines, data and CRLFs anywhere.
    events = _CHUNKED_STREAM[1:]
    framed = b"".join(b"%X;note=x\r\n%s\r\n" % (len(event), event) for event in events)
    sent = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Odd-Case: Kept\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + framed + b"0\r\nX-Trailer: t\r\n\r\n"
    )

    def serve(connection: socket.socket) -> None:
        read_head(connection)
        for at in range(0, len(sent), 7):
            connection.sendall(sent[at : at + 7])
            time.sleep(0.001)
        time.sleep(0.5)

    with raw_upstream(serve) as upstream, Tap(upstream=upstream) as tap:
        host, port = tap.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            body = json.dumps(stream_body("m")).encode()
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body)
            )
            received = b""
            while len(received) < len(sent):
                part = sock.recv(65536)
                assert part, received
                received += part
        assert received == sent  # status, headers, chunk framing and trailer as the upstream wrote them
        call = tap.calls[0]
        assert call.wait(5)
        assert call.raw == b"".join(events)  # the call and the parser got the body de-chunked
        assert call.result is not None and call.result.ok and call.result.text == "Hello"
        assert ("X-Odd-Case", "Kept") in call.response_headers


def test_a_slow_client_pauses_the_upstream_and_loses_nothing() -> None:
    total = 48 << 20
    block = hashlib.sha256(b"seed").digest() * 2048  # 64 KiB
    progress = [0]

    def serve(connection: socket.socket) -> None:
        read_head(connection)
        connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n")
        connection.sendall(b"content-length: %d\r\n\r\n" % total)
        try:
            while progress[0] < total:
                connection.sendall(block)
                progress[0] += len(block)
        except OSError:
            pass

    with raw_upstream(serve) as upstream, Tap(upstream=upstream) as tap:
        host, port = tap.base_url.removeprefix("http://").split(":")
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
            sock.settimeout(10)
            sock.connect((host, int(port)))
            sock.sendall(b"GET /blob HTTP/1.1\r\nHost: x\r\n\r\n")
            time.sleep(1.0)  # the client reads nothing
            stalled = progress[0]
            time.sleep(0.5)
            assert progress[0] == stalled < total // 2  # the upstream is held back, not buffered in the tap
            digest = hashlib.sha256()
            head = read_head(sock)
            start = head.index(b"\r\n\r\n") + 4
            digest.update(head[start:])
            got = len(head) - start
            while got < total:
                part = sock.recv(1 << 20)
                assert part
                digest.update(part)
                got += len(part)
        assert got == total
        assert digest.digest() == hashlib.sha256(block * (total // len(block))).digest()
        call = tap.calls[0]
        assert call.wait(5) and call.error_code is None
        # 48 MiB is over the call's share of keep_bytes (a quarter of 64 MiB): the rest is said, not kept.
        kept = len(call.raw)
        assert total // 8 < kept <= tap.keep_bytes // 4 and call.reads_dropped == total - kept


def test_expect_100_continue_is_answered_before_the_body(provider: cs.LocalProvider) -> None:
    with Tap(upstream=provider.url) as tap:
        host, port = tap.base_url.removeprefix("http://").split(":")
        body = json.dumps(stream_body("text", stream=False)).encode()
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                b"Connection: close\r\n"
                b"Authorization: Bearer %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
                % (KEY.encode(), len(body))
            )
            assert sock.recv(65536).startswith(b"HTTP/1.1 100 Continue\r\n")
            sock.sendall(body)
            answer = b""
            while part := sock.recv(65536):
                answer += part
            assert answer.startswith(b"HTTP/1.1 200") and b'"usage"' in answer
        assert tap.calls[0].wait(5) and tap.calls[0].error_code is None
        assert "expect" not in provider.requests[-1].headers


def test_an_http_1_0_client_gets_a_body_it_can_read_and_the_connection_closes(
    provider: cs.LocalProvider,
) -> None:
    with Tap(upstream=provider.url) as tap:
        host, port = tap.base_url.removeprefix("http://").split(":")
        body = json.dumps(stream_body("text")).encode()
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.0\r\nHost: x\r\ncontent-type: application/json\r\n"
                b"Authorization: Bearer %s\r\ncontent-length: %d\r\n\r\n%s" % (KEY.encode(), len(body), body)
            )
            answer = b""
            while part := sock.recv(65536):  # the end of the body is the end of the connection
                answer += part
        head, _, rest = answer.partition(b"\r\n\r\n")
        assert b"chunked" not in head.lower()  # the upstream answered the HTTP/1.0 request it was sent
        assert rest.endswith(b"data: [DONE]\n\n")
        call = tap.calls[0]
        assert call.wait(5) and call.result is not None and call.result.ok and call.raw == rest


def test_stop_ends_an_open_stream_aborted_with_its_recording(
    provider: cs.LocalProvider, tmp_path: object
) -> None:
    import pathlib

    record = pathlib.Path(str(tmp_path)) / "rec"
    tap = Tap(upstream=provider.url, record=record).start()
    with httpx.stream(
        "POST", f"{tap.base_url}/v1/chat/completions", json=stream_body("slow-tokens"), headers=AUTH
    ) as response:
        next(response.iter_raw())
        tap.stop()  # while the stream is open
    call = tap.calls[0]
    assert call.done and call.error_code == "ABORTED"
    assert call.recording is not None and pathlib.Path(call.recording).exists()
    assert not tap.running


def test_an_https_upstream_trusted_through_a_given_context_is_relayed(tmp_path: object) -> None:
    import pathlib
    import ssl

    from _tap_helpers import stdlib_server

    folder = pathlib.Path(str(tmp_path))
    with stdlib_server(tls=folder) as upstream:
        context = ssl.create_default_context(cafile=folder / "cert.pem")
        context.check_hostname = False  # the test certificate names 127.0.0.1 only in its CN
        with Tap(upstream=upstream, verify=context) as tap:
            answer = httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("text"))
            assert answer.status_code == 307  # the upstream's own answer, over verified TLS
            assert tap.calls[0].wait(5) and tap.calls[0].status == 307


def test_a_calls_status_and_headers_show_while_its_first_body_byte_is_still_to_come() -> None:
    # A model that thinks before its first token: the head at once, the body a while later.
    go = threading.Event()

    def serve(connection: socket.socket) -> None:
        read_head(connection)
        connection.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-request-id: req-thinking\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        go.wait(10)
        event = b'data: {"id":"x","object":"chat.completion.chunk","choices":[]}\n\ndata: [DONE]\n\n'
        connection.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(event), event))

    with (
        raw_upstream(serve) as upstream,
        Tap(upstream=upstream) as tap,
        httpx.stream(
            "POST", f"{tap.base_url}/v1/chat/completions", json=stream_body("thinking"), headers=AUTH
        ) as response,
    ):
        assert response.status_code == 200  # the head reached the client; no body byte has
        call = tap.calls[0]
        deadline = time.monotonic() + 2
        while call.status is None and time.monotonic() < deadline:
            time.sleep(0.005)
        shown = (call.status, dict(call.response_headers).get("x-request-id"), call.timings.first_byte_s)
        go.set()
        response.read()
        assert call.wait(5)
    assert shown == (200, "req-thinking", None)
    assert call.timings.headers_s is not None and call.timings.first_byte_s is not None
    assert call.timings.headers_s < call.timings.first_byte_s
