"""The tap against hostile clients, upstreams and folders: what is stored, recorded and shown.

Each test names the hardening it holds (issue: the tap is safe to leave running): a key echoed in
response headers, planted links and shared folders, heads that never end, too many connections,
restarts, failed writes, two framings at once, oversized heads, non-RFC chunk sizes, memory.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from _tap_helpers import AUTH, KEY, stream_body

import chunkscope as cs
from chunkscope.tap import Tap, TapReplay

CHAT = "/v1/chat/completions"


@contextlib.contextmanager
def raw_upstream(serve: Callable[[socket.socket], None]) -> Iterator[tuple[str, list[bytes]]]:
    """A raw TCP upstream on 127.0.0.1 running ``serve`` per connection (a thread each); the heads it got."""
    listener = socket.create_server(("127.0.0.1", 0))
    heads: list[bytes] = []

    def handle(connection: socket.socket) -> None:
        with connection, contextlib.suppress(OSError):
            serve(connection)

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", heads
    finally:
        listener.close()


def read_request(connection: socket.socket, heads: list[bytes]) -> bool:
    """Read one request (head and Content-Length body); False when the connection ended instead."""
    data = b""
    while b"\r\n\r\n" not in data:
        part = connection.recv(65536)
        if not part:
            return False
        data += part
    head, _, body = data.partition(b"\r\n\r\n")
    heads.append(head)
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        ),
        0,
    )
    while len(body) < length:
        body += connection.recv(65536)
    return True


def answer_each(response: bytes, heads: list[bytes]) -> Callable[[socket.socket], None]:
    def serve(connection: socket.socket) -> None:
        while read_request(connection, heads):
            connection.sendall(response)

    return serve


def connect(tap: Tap) -> socket.socket:
    host, port = tap.base_url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=5)


def read_all(sock: socket.socket) -> bytes:
    answer = b""
    with contextlib.suppress(ConnectionResetError):
        while part := sock.recv(65536):
            answer += part
    return answer


def recorded_reads(path: Path) -> bytes:
    lines = [json.loads(line) for line in path.read_bytes().splitlines()]
    return b"".join(base64.b64decode(line["read"]) for line in lines if "read" in line)


def every_byte_stored(tap: Tap, folder: Path | None) -> bytes:
    """What the tap keeps and shows of its calls: reprs, fields, rows, and every recording file."""
    shown = [
        repr(tap),
        *(repr(call) for call in tap.calls),
        *(str(vars(call)) for call in tap.calls),
        *(str(call.row()) for call in tap.calls),
        tap.usage.to_frame().to_csv(),
    ]
    files = b"".join(path.read_bytes() for path in folder.iterdir()) if folder is not None else b""
    return "".join(shown).encode() + files


# --- a key echoed in response headers --------------------------------------------------------------


def test_a_key_echoed_in_response_headers_is_masked_in_the_call_and_the_recording(tmp_path: Path) -> None:
    body = b'{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}'
    response = (
        b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n"
        b"x-request-id: req-" + KEY.encode() + b"\r\n"
        b'www-authenticate: Bearer error_description="bad key ' + KEY.encode() + b'"\r\n'
        b"content-length: %d\r\n\r\n" % len(body) + body
    )
    folder = tmp_path / "rec"
    with (
        raw_upstream(answer_each(response, [])) as (upstream, _),
        Tap(upstream=upstream, record=folder) as tap,
    ):
        got = httpx.post(f"{tap.base_url}{CHAT}", json=stream_body("text"), headers=AUTH)
        call = tap.calls[0]
        assert call.wait(5)
    assert got.headers["x-request-id"] == f"req-{KEY}"  # the client gets the upstream's bytes untouched
    assert call.error_code == "AUTH"
    headers = dict(call.response_headers)
    assert headers["x-request-id"] == "req-REDACTED" and "REDACTED" in headers["www-authenticate"]
    assert KEY.encode() not in every_byte_stored(tap, folder)


# --- the recordings folder -----------------------------------------------------------------------


def test_a_planted_link_is_never_followed_nor_a_file_overwritten(
    provider: cs.LocalProvider, tmp_path: Path
) -> None:
    folder, victim = tmp_path / "rec", tmp_path / "victim.txt"
    folder.mkdir(mode=0o700)
    victim.write_text("precious")
    for name in ("00001-openai-text.jsonl.part", "00001-openai-text.jsonl", ".00001-openai-text.jsonl.part"):
        (folder / name).symlink_to(victim)
    with Tap(upstream=provider.url, record=folder) as tap:
        httpx.post(f"{tap.base_url}{CHAT}", json=stream_body("text"), headers=AUTH)
        call = tap.calls[0]
        assert call.wait(5)
    assert victim.read_text() == "precious"
    assert call.recording is not None and not Path(call.recording).is_symlink()
    assert cs.ReplayAdapter(call.recording).read().header["adapter"] == "Tap"
    assert not [p for p in folder.iterdir() if p.name.endswith(".part") and not p.is_symlink()]


def test_a_folder_others_can_write_to_is_refused_in_one_line(
    provider: cs.LocalProvider, tmp_path: Path
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    tap = Tap(upstream=provider.url, record=folder)
    with pytest.raises(PermissionError) as refused:
        tap.start()
    assert not tap.running
    message = str(refused.value)
    assert "\n" not in message and str(folder) in message and "other users" in message
    folder.chmod(0o700)
    with Tap(upstream=provider.url, record=folder) as tap:
        assert tap.running
    fresh = tmp_path / "fresh" / "rec"
    with Tap(upstream=provider.url, record=fresh):
        pass
    assert fresh.stat().st_mode & 0o077 == 0  # a folder the tap makes is its user's alone


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_a_folder_owned_by_another_user_is_refused(provider: cs.LocalProvider, tmp_path: Path) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)
    with pytest.raises(PermissionError, match="belongs to another user"):
        Tap(upstream=provider.url, record=folder).start()


# --- restarts and failed writes --------------------------------------------------------------------


def test_a_restarted_tap_never_overwrites_an_earlier_runs_recordings(
    provider: cs.LocalProvider, tmp_path: Path
) -> None:
    folder = tmp_path / "rec"
    recorded: list[str] = []
    for prompt in ("first run", "second run"):
        with Tap(upstream=provider.url, record=folder) as tap:
            httpx.post(f"{tap.base_url}{CHAT}", json=stream_body("text", prompt), headers=AUTH)
            assert tap.calls[0].wait(5) and tap.calls[0].recording is not None
            recorded.append(tap.calls[0].recording)
    assert len(set(recorded)) == 2 and sorted(p.name for p in folder.iterdir()) == sorted(
        Path(p).name for p in recorded
    )
    bodies = [cs.ReplayAdapter(p).read().header["tap"]["request_body"] for p in recorded]
    assert ["first run" in bodies[0], "second run" in bodies[1]] == [True, True]
    assert [p.name[:5] for p in sorted(folder.iterdir())] == ["00001", "00002"]  # ids go on


def test_a_failed_recording_keeps_the_calls_result_and_is_said_once(
    provider: cs.LocalProvider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "rec"
    with (
        caplog.at_level(logging.WARNING, logger="chunkscope.tap"),
        Tap(upstream=provider.url, record=folder) as tap,
    ):
        folder.rmdir()
        folder.write_text("not a folder any more")
        for _ in range(2):
            got = httpx.post(f"{tap.base_url}{CHAT}", json=stream_body("text"), headers=AUTH)
            assert got.status_code == 200
        assert all(call.wait(5) for call in tap.calls)
    for call in tap.calls:
        assert call.error_code is None and call.result is not None and call.result.text
        assert call.recording is None
        assert call.recording_error is not None and "NotADirectoryError" in call.recording_error
    warnings = [r for r in caplog.records if r.name == "chunkscope.tap" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(folder) in warnings[0].getMessage()
    assert KEY not in caplog.text


# --- request heads: size, time, framing ------------------------------------------------------------


def _head(extra: int) -> bytes:
    filler = b"".join(b"x-filler-%05d: %s\r\n" % (n, b"v" * 40) for n in range(extra // 56 + 1))
    return b"GET /v1/models HTTP/1.1\r\nHost: x\r\n" + filler + b"Connection: close\r\n\r\n"


@pytest.mark.parametrize("pieces", [1, 7])
def test_one_head_size_limit_however_the_head_arrives(pieces: int) -> None:
    heads: list[bytes] = []
    answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}"
    with raw_upstream(answer_each(answer, heads)) as (upstream, _), Tap(upstream=upstream) as tap:
        for size, expected in (
            (30_000, b"HTTP/1.1 200"),
            (200_000, b"HTTP/1.1 431"),
            (110_000, b"HTTP/1.1 431"),
        ):
            request = _head(size)
            with connect(tap) as sock:
                step = len(request) // pieces + 1
                with contextlib.suppress(OSError):  # the tap may answer and close before the last piece
                    for at in range(0, len(request), step):
                        sock.sendall(request[at : at + step])
                assert read_all(sock).startswith(expected), size
    assert len(heads) == 1  # only the head within the limit reached the upstream


def test_a_head_that_never_completes_is_cut_off_and_others_are_served(provider: cs.LocalProvider) -> None:
    with Tap(upstream=provider.url, head_timeout=0.3) as tap:
        silent, half, drip = connect(tap), connect(tap), connect(tap)
        half.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        stop = threading.Event()

        def dripping() -> None:  # one byte every 50 ms, never a whole head
            with contextlib.suppress(OSError):
                for byte in b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"y" * 1000:
                    if stop.wait(0.05):
                        return
                    drip.sendall(bytes([byte]))

        thread = threading.Thread(target=dripping, daemon=True)
        thread.start()
        got = httpx.post(f"{tap.base_url}{CHAT}", json=stream_body("text"), headers=AUTH)
        assert got.status_code == 200
        started = time.monotonic()
        answers = [read_all(sock) for sock in (silent, half, drip)]
        waited = time.monotonic() - started
        stop.set()
        thread.join(5)
        for sock in (silent, half, drip):
            sock.close()
    assert answers[0] == b""  # idle: closed, nothing to answer
    assert answers[1].startswith(b"HTTP/1.1 408") and answers[2].startswith(b"HTTP/1.1 408")
    assert waited < 3


def test_a_body_that_trickles_is_cut_off_and_nothing_is_forwarded() -> None:
    heads: list[bytes] = []
    answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"
    with (
        raw_upstream(answer_each(answer, heads)) as (upstream, _),
        Tap(upstream=upstream, body_timeout=0.3) as tap,
        connect(tap) as sock,
    ):
        sock.sendall(_POST + b"Content-Length: 100\r\n\r\n" + b"{" * 10)
        started = time.monotonic()
        got = read_all(sock)
        waited = time.monotonic() - started
        whole = httpx.post(f"{tap.base_url}{CHAT}", json=stream_body("text"), headers=AUTH)
    assert got.startswith(b"HTTP/1.1 408") and waited < 3
    assert whole.status_code == 200 and len(heads) == 1 and len(tap.calls) == 1


def test_connections_over_the_cap_are_answered_503_not_left_hanging(provider: cs.LocalProvider) -> None:
    with Tap(upstream=provider.url, max_connections=4) as tap:
        idle = [connect(tap) for _ in range(4)]
        with connect(tap) as over:
            assert read_all(over).startswith(b"HTTP/1.1 503")
        idle.pop().close()
        deadline = time.monotonic() + 5
        while True:  # the closed connection is counted out once the tap saw it close
            got = httpx.post(f"{tap.base_url}{CHAT}", json=stream_body("text"), headers=AUTH)
            if got.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert got.status_code == 200
        for sock in idle:
            sock.close()


_POST = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
_SMUGGLED = [
    _POST + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
    _POST + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
    _POST + b"Content-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n",
]


@pytest.mark.parametrize("head", _SMUGGLED, ids=["cl-te", "te-cl", "folded-te"])
def test_a_request_with_two_framings_is_refused_and_nothing_after_it_is_forwarded(head: bytes) -> None:
    heads: list[bytes] = []
    answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"
    with (
        raw_upstream(answer_each(answer, heads)) as (upstream, _),
        Tap(upstream=upstream) as tap,
        connect(tap) as sock,
    ):
        sock.sendall(head + b"0\r\n\r\nGET /v1/admin HTTP/1.1\r\nHost: x\r\n\r\n")
        answer_bytes = read_all(sock)
    assert answer_bytes.startswith(b"HTTP/1.1 400") and answer_bytes.count(b"HTTP/1.1") == 1
    assert heads == [] and tap.calls == []


def test_a_response_with_two_framings_closes_the_connection_after_it() -> None:
    heads: list[bytes] = []
    answer = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 3\r\n"
        b"transfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    )
    with (
        raw_upstream(answer_each(answer, heads)) as (upstream, _),
        Tap(upstream=upstream) as tap,
        connect(tap) as sock,
    ):
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        first = b""
        while not first.endswith(b"0\r\n\r\n"):
            first += sock.recv(65536)
        with contextlib.suppress(OSError):
            sock.sendall(b"GET /v1/admin HTTP/1.1\r\nHost: x\r\n\r\n")
        rest = read_all(sock)
    assert first.startswith(b"HTTP/1.1 200") and rest == b""
    assert len(heads) == 1 and b"/v1/admin" not in b"".join(heads)


# --- response chunk sizes --------------------------------------------------------------------------


@pytest.mark.parametrize("size", [b"0x19", b"1_9", b"+19", b" 19"])
def test_a_chunk_size_outside_rfc_9112_is_recorded_as_the_client_saw_it(size: bytes, tmp_path: Path) -> None:
    event = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'.ljust(25, b" ")[:25]
    answer = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + size
        + b"\r\n"
        + event
        + b"\r\n0\r\n\r\n"
    )
    folder = tmp_path / "rec"
    with raw_upstream(answer_each(answer, [])) as (upstream, _), Tap(upstream=upstream, record=folder) as tap:
        request = {"json": stream_body("text"), "headers": AUTH}
        with (
            pytest.raises(httpx.HTTPError),  # what a client makes of it: a broken stream
            httpx.stream("POST", f"{tap.base_url}{CHAT}", **request) as got,
        ):
            got.read()
        call = tap.calls[0]
        assert call.wait(5)
    assert call.error_code == "TRANSPORT" and "chunk size" in str(call.error)
    assert call.recording is not None
    recorded = cs.ReplayAdapter(call.recording).read()
    assert recorded.error is not None and recorded.error.code == "TRANSPORT"


# --- memory ----------------------------------------------------------------------------------------


def _sse_pings(count: int, size: int) -> Callable[[socket.socket], None]:
    ping = b": " + b"p" * (size - 4) + b"\n\n"

    def serve(connection: socket.socket) -> None:
        read_request(connection, [])
        connection.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n"
            % (count * size)
        )
        for _ in range(count):
            connection.sendall(ping)

    return serve


def test_a_call_over_its_share_says_so_and_its_recording_keeps_it_whole(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    with (
        raw_upstream(_sse_pings(100, 1000)) as (upstream, _),
        Tap(upstream=upstream, record=folder, keep_bytes=40_000) as tap,
    ):
        got = httpx.post(f"{tap.base_url}{CHAT}", json=stream_body("text"), headers=AUTH)
        call = tap.calls[0]
        assert call.wait(5)
    assert len(got.content) == 100_000  # the client gets everything
    assert len(call.raw) <= 10_000 and call.reads_dropped == 100_000 - len(call.raw)
    assert got.content.startswith(call.raw)
    assert call.recording is not None and recorded_reads(Path(call.recording)) == got.content
    assert not list(folder.glob(".*.part"))


def test_finished_calls_leave_the_list_oldest_first_within_the_byte_budget(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    with (
        raw_upstream(_sse_pings(5, 1000)) as (upstream, _),
        Tap(upstream=upstream, record=folder, keep_bytes=24_000) as tap,
    ):
        for n in range(10):
            httpx.post(f"{tap.base_url}{CHAT}", json=stream_body("text", f"call {n}"), headers=AUTH)
        deadline = time.monotonic() + 5
        while len(list(folder.glob("*.jsonl"))) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        kept = list(tap.calls)
    assert len(list(folder.glob("*.jsonl"))) == 10  # every call recorded
    assert 2 <= len(kept) < 10 and [c.id for c in kept] == list(range(11 - len(kept), 11))  # the newest
    assert sum(len(c.raw) + len(c.request_body) for c in kept) <= 24_000
    assert len(tap.usage) == 10  # the usage log keeps a row for every call


def _many_deltas(count: int) -> bytes:
    """A chat-completions stream of ``count`` one-word deltas (a usage chunk among them), a finish
    and the usage."""
    usage = b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":%d,"total_tokens":%d}}\n\n'
    events = [b'data: {"choices":[{"index":0,"delta":{"content":"w%d "}}]}\n\n' % n for n in range(count)]
    events.insert(5, usage % (1, 4))
    events += [
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
        usage % (count, count + 3),
        b"data: [DONE]\n\n",
    ]
    return b"".join(events)


def _chunk_lines(path: Path) -> list[object]:
    return [line["chunk"] for line in map(json.loads, path.read_bytes().splitlines()) if "chunk" in line]


def test_a_call_whose_chunks_outgrow_its_share_drops_the_oldest_and_records_every_one(tmp_path: Path) -> None:
    body = _many_deltas(3000)
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n" % len(body)
    response = head + body
    calls = []
    for keep, folder in ((64 << 20, tmp_path / "whole"), (40_000, tmp_path / "windowed")):
        with (
            raw_upstream(answer_each(response, [])) as (upstream, _),
            Tap(upstream=upstream, record=folder, keep_bytes=keep) as tap,
        ):
            got = httpx.post(f"{tap.base_url}{CHAT}", json=stream_body("text"), headers=AUTH)
            call = tap.calls[0]
            assert call.wait(5) and got.content == body
            calls.append((call, call.result, tap.usage.to_frame()))
    (whole, whole_result, whole_usage), (call, result, usage) = calls
    assert whole.chunks_dropped == 0 and whole.chunk_count == len(whole.chunks) > 3000
    # Windowed: the latest chunks only, within the call's share; every count still the whole call's.
    assert 0 < len(call.chunks) < 20 and call.chunks == whole.chunks[-len(call.chunks) :]
    assert call.chunks_dropped == whole.chunk_count - len(call.chunks)
    assert call.chunk_count == whole.chunk_count and call.row()["chunks"] == whole.chunk_count
    assert f"chunks={whole.chunk_count} ({call.chunks_dropped} not kept) ok" in repr(call)
    assert result is not None and whole_result is not None
    assert f"chunks={whole.chunk_count} ({call.chunks_dropped} not kept)" in repr(result)
    assert result.text == whole_result.text == "".join(f"w{n} " for n in range(3000))
    assert (result.usage, result.finish) == (whole_result.usage, whole_result.finish)
    assert result.usage is not None and result.usage.output_tokens == 3000
    assert [(v.rule, v.position) for v in result.violations] == [
        (v.rule, v.position) for v in whole_result.violations
    ]
    assert result.timings.first_chunk_s == pytest.approx(whole_result.timings.first_chunk_s, abs=0.05)
    assert result.timings.chunk_times == call.chunk_times and len(call.chunk_times) == len(call.chunks)
    assert usage["chunks"].tolist() == whole_usage["chunks"].tolist() == [whole.chunk_count]
    # The recording holds every chunk, as the whole call's does, and reads back the same.
    assert call.recording is not None and whole.recording is not None
    assert _chunk_lines(Path(call.recording)) == _chunk_lines(Path(whole.recording))
    [replayed] = TapReplay(call.recording).calls  # parsed again from the recorded reads
    assert replayed.chunk_count == whole.chunk_count and replayed.result is not None
    assert replayed.result.text == whole_result.text
    assert not list((tmp_path / "windowed").glob(".*.part"))
