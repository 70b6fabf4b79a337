"""The one wire reader, without I/O: a head and body bytes in, chunks and an ending out."""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass
from typing import Any

import pytest
from _anthropic_events import sse_body, text_reply

from chunkscope.adapters.wires import WIRES, WireReader, wire_named
from chunkscope.protocol import LlmError

LABEL = "the test API"

_REPLY = (
    b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n'
    b"data: [DONE]\n\n"
)
_SSE = {"content-type": "text/event-stream"}


def _reader(*, expect_stream: bool = True, max_body_bytes: int = 1 << 20) -> WireReader:
    return wire_named("openai").reader(LABEL, expect_stream=expect_stream, max_body_bytes=max_body_bytes)


@dataclass
class Read:
    reader: WireReader
    chunks: list[Any]

    @property
    def error(self) -> Any:
        return self.reader.error

    @property
    def text(self) -> str:
        return "".join(getattr(c, "text", "") for c in self.chunks)


def _read(body: bytes, headers: dict[str, str] = _SSE, status: int = 200, cut: int = 0, **kw: Any) -> Read:
    reader = _reader(**kw)
    reader.head(status, headers)
    reads = [body[i : i + cut] for i in range(0, len(body), cut)] if cut else [body]
    chunks = []
    for data in reads:
        chunks += reader.feed(data)
        if reader.done:
            break
    tail, _ = reader.close()
    return Read(reader, chunks + reader.final + tail)


def test_a_whole_stream_cut_at_every_byte_reads_the_same() -> None:
    whole = _read(_REPLY)
    assert whole.error is None and whole.reader.done and whole.text == "Hello"
    assert whole.chunks[-1].type == "finish" and whole.chunks[-2].type == "usage"
    for cut in range(1, 12):
        assert _read(_REPLY, cut=cut).chunks == whole.chunks


def test_a_truncated_last_event_is_stream_closed_and_a_whole_one_without_its_blank_line_counts() -> None:
    cut = _REPLY[: _REPLY.index(b"data: [DONE]") - 12]
    assert _read(cut).error.code == "STREAM_CLOSED"  # type: ignore[union-attr]
    assert _read(_REPLY.removesuffix(b"\n\n")).error is None  # [DONE] without its blank line


def test_a_gzip_bomb_inflates_by_bounded_pieces_and_stops_at_the_body_limit() -> None:
    bomb = gzip.compress(b"data: " + b"0" * (8 << 20))
    reader = _read(bomb, {**_SSE, "content-encoding": "gzip"}, max_body_bytes=2 << 20)
    assert reader.error is not None and reader.error.code == "MALFORMED_RESPONSE"
    assert "exceeds the limit of 2097152 bytes" in reader.error.message


@pytest.mark.parametrize("wbits", [zlib.MAX_WBITS, -zlib.MAX_WBITS])
def test_deflate_zlib_wrapped_or_raw_reads_alike(wbits: int) -> None:
    packer = zlib.compressobj(wbits=wbits)
    body = packer.compress(_REPLY) + packer.flush()
    reader = _read(body, {**_SSE, "content-encoding": "deflate"}, cut=7)
    assert reader.error is None and reader.text == "Hello"


def test_an_error_head_gets_its_code_from_the_status_and_body_even_compressed() -> None:
    body = gzip.compress(json.dumps({"error": {"message": "slow down", "type": "rate_limit_error"}}).encode())
    headers = {"content-type": "application/json", "content-encoding": "gzip", "retry-after": "3"}
    reader = _read(body, headers, status=429)
    assert reader.error is not None and reader.error.code == "RATE_LIMIT" and reader.error.status == 429
    assert reader.error.retry_after_ms == 3000 and "slow down" in reader.error.message
    unreadable = _read(b"\x00\x01", {"content-encoding": "br"}, status=401)
    assert unreadable.error is not None and unreadable.error.code == "AUTH"


def test_a_2xx_that_is_no_stream_is_malformed_when_a_stream_was_asked_for_else_read_whole() -> None:
    body = json.dumps(
        {"choices": [{"finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
    ).encode()
    asked = _read(body, {"content-type": "application/json"})
    assert asked.error is not None and asked.error.code == "MALFORMED_RESPONSE"
    assert "not an event stream" in asked.error.message
    whole = _read(body, {"content-type": "application/json"}, expect_stream=False)
    usage = whole.reader.usage
    assert whole.error is None and usage is not None and usage.input_tokens == 3


def test_an_encoding_it_cannot_read_is_refused_by_name() -> None:
    reader = _read(b"...", {**_SSE, "content-encoding": "br"})
    assert reader.error is not None and reader.error.code == "MALFORMED_RESPONSE"
    assert "'br'" in reader.error.message


def test_a_drop_keeps_what_came_and_an_abort_after_the_terminator_is_a_whole_stream() -> None:
    reader = _reader()
    reader.head(200, _SSE)
    assert [getattr(c, "text", None) for c in reader.feed(_REPLY[:90])].count("Hel") == 1
    dropped = LlmError("the upstream dropped", "TRANSPORT")
    assert reader.close(dropped)[1] is dropped
    aborted = _reader()
    aborted.head(200, _SSE)
    aborted.feed(_REPLY)
    assert aborted.done and aborted.close(LlmError("client left", "ABORTED"))[1] is None


def _text_streams() -> dict[str, bytes]:
    """A text stream of 300 pieces on each wire whose events are plain SSE JSON."""
    pieces = [f"w{n} " for n in range(300)]
    openai = b"".join(
        b'data: {"choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' % p.encode() for p in pieces
    )
    openai += b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    gemini = b"".join(
        b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"%s"}]}}]}\n\n' % p.encode()
        for p in pieces
    )
    gemini += b'data: {"candidates":[{"content":{"role":"model","parts":[]},"finishReason":"STOP"}]}\n\n'
    return {"openai": openai, "anthropic": sse_body(text_reply(*pieces)), "gemini": gemini}


@pytest.mark.parametrize("wire", ["openai", "anthropic", "gemini"])
def test_compacting_the_translators_text_changes_no_chunk(wire: str) -> None:
    body = _text_streams()[wire]
    events = body.split(b"\n\n")
    outputs = []
    for compact in (False, True):
        reader = wire_named(wire).reader(LABEL)
        reader.head(200, _SSE)
        chunks: list[Any] = []
        for event in events:
            chunks += reader.feed(event + b"\n\n")
            if compact:
                reader.compact()  # the tap's window over a long stream: one string a block
        more, error = reader.close(None)
        assert error is None
        outputs.append(chunks + more)
    assert outputs[0] == outputs[1]
    ends = [c for c in outputs[1] if c.type == "block-end"]
    assert [e.block.text for e in ends] == ["".join(f"w{n} " for n in range(300))]


def test_every_wire_can_compact_its_text() -> None:
    for wire in WIRES.values():
        assert callable(getattr(wire.reader(LABEL).translator, "compact", None)), wire.name
