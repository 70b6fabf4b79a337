"""A key inside a compressed or split response never reaches what the tap stores or shows.

The tap asks the upstream for identity (it rewrites ``Accept-Encoding``), so the bodies it keeps are
plain and masked; an upstream that compresses anyway has its reads withheld (parsed, not kept nor
recorded). Each test reads what is on disk and shown, decompressing it as an attacker would.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import zlib
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from _tap_helpers import AUTH, KEY, stream_body
from test_tap_hostile import every_byte_stored, raw_upstream, read_request, recorded_reads

from chunkscope.tap import Tap, TapReplay

CHAT = "/v1/chat/completions"


def _event(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


SSE = (
    _event({"role": "assistant", "content": f"Incorrect API key provided: {KEY}."})
    + _event({}, "stop")
    + b"data: [DONE]\n\n"
)
ERROR = json.dumps(
    {"error": {"message": f"Incorrect API key provided: {KEY}.", "type": "invalid_request_error"}}
).encode()
BODIES = {"sse": (200, "text/event-stream", SSE), "401": (401, "application/json", ERROR)}


def stored_brotli(data: bytes) -> bytes:
    """A valid brotli stream of one uncompressed meta-block: the bytes travel as they are."""
    bits = (len(data) - 1) << 4 | 1 << 20  # WBITS 16, not last, 4 nibbles of MLEN-1, uncompressed
    return bits.to_bytes(3, "little") + data + b"\x03"  # then an empty last meta-block


def raw_zstd(data: bytes) -> bytes:
    """A valid zstd frame of one raw block."""
    size = len(data)
    frame = b"\x20" + bytes([size]) if size < 256 else b"\x60" + (size - 256).to_bytes(2, "little")
    return b"\x28\xb5\x2f\xfd" + frame + (1 | size << 3).to_bytes(3, "little") + data


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": partial(gzip.compress, mtime=0),  # no clock in the header: the same bytes each time
    "deflate": zlib.compress,  # zlib-wrapped
    "deflate-raw": _raw_deflate,
    "br": stored_brotli,
    "zstd": raw_zstd,
}


def attacker_view(blob: bytes) -> bytes:
    """``blob`` and whatever it decompresses to as gzip, zlib or raw deflate (from any offset's start)."""
    found = [blob]
    for wbits in (zlib.MAX_WBITS | 16, zlib.MAX_WBITS, -zlib.MAX_WBITS):
        with contextlib.suppress(zlib.error):
            found.append(zlib.decompressobj(wbits).decompress(blob))
    return b"".join(found)


def _answer(body_kind: str, encoding: str | None) -> bytes:
    status, media, body = BODIES[body_kind]
    coding = b""
    if encoding is not None:
        body = ENCODERS[encoding](body)
        coding = b"content-encoding: %s\r\n" % encoding.removesuffix("-raw").encode()
    reason = b"OK" if status == 200 else b"Unauthorized"
    return (
        b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\n%scontent-length: %d\r\n\r\n"
        % (status, reason, media.encode(), coding, len(body))
        + body
    )


def honouring(body_kind: str, heads: list[bytes]) -> Callable[[socket.socket], None]:
    """An upstream that compresses with the first encoding it was asked for (as providers do)."""

    def serve(connection: socket.socket) -> None:
        while read_request(connection, heads):
            asked = [
                line.partition(b":")[2].decode()
                for line in heads[-1].split(b"\r\n")
                if line.lower().startswith(b"accept-encoding:")
            ]
            tokens = [t.strip().partition(";")[0] for value in asked for t in value.split(",")]
            encoding = next((t for t in tokens if t in ENCODERS), None)
            connection.sendall(_answer(body_kind, encoding))

    return serve


def ignoring(body_kind: str, encoding: str) -> Callable[[socket.socket], None]:
    """An upstream that compresses whatever it was asked for."""

    def serve(connection: socket.socket) -> None:
        while read_request(connection, []):
            connection.sendall(_answer(body_kind, encoding))

    return serve


def assert_no_key_stored(tap: Tap, folder: Path) -> None:
    key = KEY.encode()
    assert key not in every_byte_stored(tap, folder)
    for call in tap.calls:
        assert key not in attacker_view(call.raw)
        assert key not in attacker_view(b"".join(data for _, data in call.reads))
    for path in folder.iterdir():
        assert key not in attacker_view(recorded_reads(path))


@pytest.mark.parametrize("body_kind", ["sse", "401"])
@pytest.mark.parametrize("asked", ["gzip", "deflate", "br", "zstd", "gzip, deflate, br, zstd"])
def test_a_key_the_upstream_would_compress_is_masked_since_the_tap_asks_for_identity(
    asked: str, body_kind: str, tmp_path: Path
) -> None:
    folder = tmp_path / "rec"
    heads: list[bytes] = []
    with (
        raw_upstream(honouring(body_kind, heads)) as (upstream, _),
        Tap(upstream=upstream, record=folder) as tap,
    ):
        got = httpx.post(
            f"{tap.base_url}{CHAT}", json=stream_body("text"), headers={**AUTH, "accept-encoding": asked}
        )
        call = tap.calls[0]
        assert call.wait(5)
    assert got.content == BODIES[body_kind][2]  # the client's SDK reads a correct answer
    sent = [line.lower() for line in heads[0].split(b"\r\n") if line.lower().startswith(b"accept-encoding")]
    assert sent == [b"accept-encoding: identity"]
    assert call.withheld_encoding is None and call.recording is not None
    assert recorded_reads(Path(call.recording)) == got.content.replace(KEY.encode(), b"*" * len(KEY))
    if body_kind == "sse":
        assert call.error is None and call.result is not None and "REDACTED" in call.result.text
    else:
        assert call.error_code == "AUTH"
    assert_no_key_stored(tap, folder)


@pytest.mark.parametrize("body_kind", ["sse", "401"])
@pytest.mark.parametrize("encoding", list(ENCODERS))
def test_a_body_compressed_anyway_is_parsed_and_none_of_it_is_stored(
    encoding: str, body_kind: str, tmp_path: Path
) -> None:
    folder = tmp_path / "rec"
    with (
        raw_upstream(ignoring(body_kind, encoding)) as (upstream, _),
        Tap(upstream=upstream, record=folder) as tap,
        httpx.stream("POST", f"{tap.base_url}{CHAT}", json=stream_body("text"), headers=AUTH) as got,
    ):
        raw = b"".join(got.iter_raw())
        call = tap.calls[0]
        assert call.wait(5)
    plain = BODIES[body_kind][2]
    assert raw == ENCODERS[encoding](plain)  # the client gets the upstream's bytes, as sent
    if encoding.startswith(("gzip", "deflate")):
        assert httpx.Response(200, headers=got.headers, content=raw).content == plain  # and decodes them
    assert call.withheld_encoding == encoding.removesuffix("-raw")
    assert call.raw == b"" and call.reads_dropped == len(raw)
    assert call.recording is not None
    header = json.loads(Path(call.recording).read_text().splitlines()[0])
    assert header["tap"]["withheld_encoding"] == call.withheld_encoding
    [replayed] = TapReplay(folder).calls  # replayed from its chunks and error, with no reads
    assert replayed.error_code == call.error_code and replayed.raw == b""
    assert [c.to_dict() for c in replayed.chunks] == [c.to_dict() for c in call.chunks]
    if body_kind == "401":
        assert call.error_code == "AUTH"
    elif encoding in ("br", "zstd"):
        assert call.error_code == "MALFORMED_RESPONSE"  # the reader decodes gzip and deflate only
    else:
        assert call.error is None and call.result is not None and "REDACTED" in call.result.text
    assert_no_key_stored(tap, folder)


# --- a key split across reads --------------------------------------------------------------------

_PAD = b": " + b"p" * 96 + b"\n\n"  # a first read of its own: 100 bytes


def _split_at(cut: int) -> tuple[bytes, bytes]:
    """The SSE body cut ``cut`` bytes into the key."""
    at = SSE.index(KEY.encode()) + cut
    return SSE[:at], SSE[at:]


def split_upstream(gap: float) -> Callable[[socket.socket], None]:
    """Each answer in three reads: a comment, the body up to the cut, the rest; the cut from the path."""
    heads: list[bytes] = []

    def serve(connection: socket.socket) -> None:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while read_request(connection, heads):
            cut = int(heads[-1].split(b" ")[1].rpartition(b"cut=")[2])
            first, rest = _split_at(cut)
            connection.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n"
                % (len(_PAD) + len(SSE))
                + _PAD
            )
            for part in (first, rest):
                time.sleep(gap)
                connection.sendall(part)

    return serve


@pytest.mark.parametrize(
    "where",
    ["memory", "share-boundary", "spilled"],
)
def test_a_key_split_across_reads_at_every_byte_is_masked_on_disk_and_in_the_call(
    where: str, tmp_path: Path
) -> None:
    folder = tmp_path / "rec"
    # keep_bytes: the share (a quarter) holds everything / ends between the two halves / only the pad
    boundary = len(_PAD) + SSE.index(KEY.encode()) + len(KEY)  # past every first half, before the rest
    keep = {"memory": 1 << 20, "share-boundary": 4 * boundary, "spilled": 4 * len(_PAD)}[where]
    cuts = range(1, len(KEY))
    split = 0
    with (
        raw_upstream(split_upstream(0.01)) as (upstream, _),
        Tap(upstream=upstream, record=folder, keep_bytes=keep, keep_calls=len(KEY)) as tap,
        httpx.Client(base_url=tap.base_url, headers=AUTH) as client,
    ):
        for cut in cuts:
            got = client.post(f"{CHAT}?cut={cut}", json=stream_body("text"))
            assert got.content == _PAD + SSE  # the client gets the key: it is the upstream's answer
        deadline = time.monotonic() + 10
        while len(list(folder.glob("*.jsonl"))) < len(cuts) and time.monotonic() < deadline:
            time.sleep(0.01)
        listed = {call.id: call for call in tap.calls}
    recordings = sorted(folder.glob("*.jsonl"))
    assert len(recordings) == len(cuts)
    for path, cut in zip(recordings, cuts, strict=True):  # call n was cut n bytes into the key
        reads = [json.loads(line) for line in path.read_bytes().splitlines() if b'"read"' in line]
        split += len(reads) >= 3
        recorded = recorded_reads(path)
        assert recorded == (_PAD + SSE).replace(KEY.encode(), b"*" * len(KEY)), cut
        call = listed.get(cut)
        if call is not None:
            assert call.raw == recorded if where == "memory" else recorded.startswith(call.raw)
            assert (call.reads_dropped > 0) == (where != "memory")
    assert split >= len(cuts) // 2  # the reads really were cut (a loaded machine may merge a few)
    assert_no_key_stored(tap, folder)


def test_a_key_in_a_request_body_sent_in_pieces_is_masked(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    body = json.dumps(stream_body("text", f"my key is {KEY}")).encode()
    with (
        raw_upstream(honouring("sse", [])) as (upstream, _),
        Tap(upstream=upstream, record=folder) as tap,
    ):
        host, port = tap.base_url.removeprefix("http://").split(":")
        at = body.index(KEY.encode()) + len(KEY) // 2
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(
                b"POST %s HTTP/1.1\r\nHost: x\r\nauthorization: Bearer %s\r\n"
                b"content-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
                % (CHAT.encode(), KEY.encode(), len(body))
            )
            for piece in (body[:at], body[at:]):
                time.sleep(0.02)
                sock.sendall(piece)
            while sock.recv(65536):
                pass
        call = tap.calls[0]
        assert call.wait(5)
    assert call.request_body == body.replace(KEY.encode(), b"*" * len(KEY))
    assert_no_key_stored(tap, folder)


# --- a gzip bomb -----------------------------------------------------------------------------------

_BOMB = textwrap.dedent(
    """
    import asyncio, json, resource, socket, threading, zlib
    import httpx
    from chunkscope.adapters import GenerateOptions, OpenAICompatAdapter
    from chunkscope.protocol import LlmError
    from chunkscope.tap import Tap

    def bomb(opening):
        # ~1.5 MB of gzip inflating to 1.5 GiB: one block after a full flush repeats byte for byte.
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        filler = b"a" * (1 << 20)
        head = packer.compress(opening + filler) + packer.flush(zlib.Z_FULL_FLUSH)
        block = packer.compress(filler) + packer.flush(zlib.Z_FULL_FLUSH)
        return head + block * 1500 + packer.compress(b'"}}\\n\\n') + packer.flush()

    KINDS = {
        "sse": (b"200 OK", b"text/event-stream", bomb(b'data: {"x":"')),
        "500": (b"500 Internal Server Error", b"application/json", bomb(b'{"error":{"message":"')),
        "json": (b"200 OK", b"application/json", bomb(b'{"id":"')),
    }

    def serve(connection, kind):
        status, media, body = KINDS[kind]
        with connection:
            data = b""
            while b"\\r\\n\\r\\n" not in data:
                data += connection.recv(65536)
            connection.sendall(
                b"HTTP/1.1 %s\\r\\ncontent-type: %s\\r\\ncontent-encoding: gzip\\r\\n"
                b"content-length: %d\\r\\nconnection: close\\r\\n\\r\\n" % (status, media, len(body)) + body
            )

    def upstream(kind):
        listener = socket.create_server(("127.0.0.1", 0))
        def accept():
            while True:
                connection, _ = listener.accept()
                threading.Thread(target=serve, args=(connection, kind), daemon=True).start()
        threading.Thread(target=accept, daemon=True).start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}"

    async def adapter_code(url, stream):
        adapter = OpenAICompatAdapter(url, "sk-bomb-test-key-0123")
        options = GenerateOptions("x", "m", [{"role": "user", "content": "hi"}])
        try:
            async for _ in adapter.stream(options):
                pass
        except LlmError as exc:
            return exc.code
        return None

    report = {}
    urls = {kind: upstream(kind) for kind in KINDS}
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for kind, url in urls.items():
        with Tap(upstream=url) as tap:
            body = {"model": "m", "stream": kind != "json", "messages": [{"role": "user", "content": "hi"}]}
            headers = {"authorization": "Bearer sk-bomb-test-key-0123"}
            url = f"{tap.base_url}/v1/chat/completions"
            with httpx.stream("POST", url, json=body, headers=headers) as got:
                forwarded = sum(len(part) for part in got.iter_raw())
            call = tap.calls[0]
            call.wait(60)
            report[kind] = {"tap": call.error_code, "forwarded": forwarded, "sent": len(KINDS[kind][2])}
    report["growth"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024
    for kind, url in urls.items():
        report[kind]["adapter"] = asyncio.run(adapter_code(url, kind != "json"))
    print(json.dumps(report))
    """
)


def _child_report(script: str, *args: str, timeout: float) -> dict[str, Any]:
    """Run ``script`` in a fresh Python (its peak RSS is the tap's alone) and read the JSON report
    it prints last."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    result = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": src},
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.slow
def test_a_gzip_bomb_through_the_tap_is_forwarded_in_bounded_memory_with_the_adapters_code() -> None:
    report = _child_report(_BOMB, timeout=240)
    for kind in ("sse", "500", "json"):
        assert report[kind]["forwarded"] == report[kind]["sent"] < 2_000_000, report  # the client got it all
    assert report["sse"]["tap"] == report["sse"]["adapter"] == "MALFORMED_RESPONSE", report
    assert report["500"]["tap"] == report["500"]["adapter"] == "SERVER", report
    # A whole JSON answer: the adapters (which ask for a stream) and the tap both call it malformed.
    assert report["json"]["tap"] == report["json"]["adapter"] == "MALFORMED_RESPONSE", report
    assert report["growth"] < 200 << 20, report  # peak RSS growth of the tap's process (1.5 GiB inflated)


# --- the parser's backlog --------------------------------------------------------------------------

_BACKLOG = textwrap.dedent(
    """
    import json, resource, socket, sys, threading, time
    import httpx
    from chunkscope.tap import Tap, _call

    backlog = int(sys.argv[1])
    ping = b": " + b"p" * 65532 + b"\\n\\n"  # 64 KiB SSE comments
    count = 1600  # 100 MiB, sent as fast as the tap reads it
    read = _call.Parser.read

    def slow_read(self, t, data):  # a parser far slower than the wire: ~30 MiB/s
        time.sleep(len(data) / (30 << 20))
        return read(self, t, data)

    _call.Parser.read = slow_read

    def serve(connection):
        with connection:
            data = b""
            while b"\\r\\n\\r\\n" not in data:
                data += connection.recv(65536)
            connection.sendall(
                b"HTTP/1.1 200 OK\\r\\ncontent-type: text/event-stream\\r\\ncontent-length: %d\\r\\n\\r\\n"
                % (count * len(ping))
            )
            for _ in range(count):
                connection.sendall(ping)

    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=lambda: serve(listener.accept()[0]), daemon=True).start()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with Tap(upstream=f"http://127.0.0.1:{listener.getsockname()[1]}", keep_bytes=1 << 20,
             max_parse_backlog=backlog) as tap:
        body = {"model": "m", "stream": True, "messages": []}
        with httpx.stream("POST", f"{tap.base_url}/v1/chat/completions", json=body) as got:
            received = sum(len(part) for part in got.iter_raw())
        call = tap.calls[0]
        call.wait(60)
        growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024
        print(json.dumps({"received": received, "sent": count * len(ping), "growth": growth,
                          "code": call.error_code}))
    """
)


@pytest.mark.slow
def test_a_parser_behind_a_fast_upstream_holds_the_upstream_not_the_bytes() -> None:
    report = _child_report(_BACKLOG, str(4 << 20), timeout=120)
    assert report["received"] == report["sent"] == 100 << 20  # the client gets every byte
    # The stream never ends its SSE (no [DONE]): the adapters' code for it; nothing else failed.
    assert report["code"] == "STREAM_CLOSED", report
    assert report["growth"] < 48 << 20, report  # 100 MiB forwarded, 4 MiB of it waiting at most
