"""The event-stream framing: both CRC32s checked, lengths that lie refused in bounded memory,
reads split anywhere, every header type read, the padding field never reaching the output."""

from __future__ import annotations

import struct
import zlib

import pytest
from _bedrock_frames import event, frame, header, hello

from chunkscope.adapters.bedrock.framing import EventStreamDecoder, decode_headers
from chunkscope.adapters.bedrock.translate import BedrockTranslator
from chunkscope.protocol import LlmError, check


def decode_all(data: bytes, max_frame_bytes: int = 1 << 20) -> tuple[list[object], ValueError | None]:
    decoder = EventStreamDecoder(max_frame_bytes)
    frames = decoder.feed(data)
    return frames, decoder.failure


def test_a_whole_stream_decodes_to_its_frames_with_their_headers_and_payloads() -> None:
    frames, failure = decode_all(b"".join(hello()))
    assert failure is None
    assert [(f.message_type, f.event_type) for f in frames] == [  # type: ignore[attr-defined]
        ("event", "messageStart"),
        ("event", "contentBlockDelta"),
        ("event", "contentBlockDelta"),
        ("event", "contentBlockStop"),
        ("event", "messageStop"),
        ("event", "metadata"),
    ]
    assert frames[1].headers[":content-type"] == "application/json"  # type: ignore[attr-defined]
    assert b'"Hello"' in frames[1].payload  # type: ignore[attr-defined]


def test_reads_split_at_every_byte_give_the_same_frames() -> None:
    data = b"".join(hello())
    whole = [(f.event_type, f.payload) for f in decode_all(data)[0]]  # type: ignore[attr-defined]
    for cut in range(len(data) + 1):
        decoder = EventStreamDecoder()
        frames = decoder.feed(data[:cut]) + decoder.feed(data[cut:])
        assert [(f.event_type, f.payload) for f in frames] == whole, cut
    decoder = EventStreamDecoder()
    one_by_one = [f for i in range(len(data)) for f in decoder.feed(data[i : i + 1])]
    assert [(f.event_type, f.payload) for f in one_by_one] == whole
    assert decoder.pending == 0 and decoder.failure is None


@pytest.mark.parametrize("where", ["prelude", "message"])
def test_a_bad_crc_is_a_failure_after_the_frames_before_it(where: str) -> None:
    good = event("messageStart", {"role": "assistant"})
    bad = bytearray(event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}}))
    if where == "prelude":
        bad[8] ^= 0x01
    else:
        bad[-1] ^= 0x01
    frames, failure = decode_all(good + bytes(bad) + good)
    assert len(frames) == 1
    assert failure is not None and f"{where} CRC" in str(failure)


def test_a_flipped_payload_byte_fails_the_message_crc() -> None:
    data = bytearray(event("messageStart", {"role": "assistant"}))
    data[-8] ^= 0x20
    assert "message CRC" in str(decode_all(bytes(data))[1])


def _lying(total: int, headers: int = 0) -> bytes:
    prelude = struct.pack("!II", total, headers)
    return prelude + struct.pack("!I", zlib.crc32(prelude))


@pytest.mark.parametrize(
    ("total", "headers", "says"),
    [
        (8, 0, "fewer than any frame"),
        (15, 0, "fewer than any frame"),
        (0xFFFFFFFF, 0, "exceeds the limit"),
        ((1 << 20) + 1, 0, "exceeds the limit"),
        (100, 90, "bytes of headers"),
    ],
)
def test_a_length_that_lies_is_refused_as_soon_as_its_prelude_arrives(
    total: int, headers: int, says: str
) -> None:
    decoder = EventStreamDecoder(1 << 20)
    assert decoder.feed(_lying(total, headers)) == []
    assert decoder.failure is not None and says in str(decoder.failure)
    assert decoder.pending == 0  # nothing held for a frame that will never be
    with pytest.raises(ValueError):
        decoder.feed(b"more")


def test_a_length_too_large_for_its_bytes_holds_at_most_one_frame_then_fails_its_crc() -> None:
    real = event("messageStart", {"role": "assistant"})
    prelude = struct.pack("!II", len(real) + 40, 0)
    lying = prelude + struct.pack("!I", zlib.crc32(prelude)) + real[12:]
    decoder = EventStreamDecoder(1 << 20)
    assert decoder.feed(lying) == []
    assert decoder.pending == len(lying)
    decoder.feed(real * 3)  # what follows is swallowed into the lying frame, whose CRC then fails
    assert decoder.failure is not None and "CRC" in str(decoder.failure)


def test_a_body_that_ends_mid_frame_leaves_no_frame_and_the_translator_reports_it_closed() -> None:
    data = b"".join(hello())
    decoder = EventStreamDecoder()
    translator = BedrockTranslator()
    for f in decoder.feed(data[:-7]):
        translator.feed(f)
    assert decoder.end() == []
    with pytest.raises(LlmError) as raised:
        translator.end()
    assert raised.value.code == "STREAM_CLOSED"


def test_every_header_value_type_is_read() -> None:
    headers = (
        header("t", True)
        + header("f", False)
        + header("b", -3, 2)
        + header("s", -300, 3)
        + header("i", 70000, 4)
        + header("l", -(1 << 40), 5)
        + header("bytes", b"\x00\x01")
        + header("str", "héllo")
        + header("ts", 1700000000000, 8)
        + header("id", bytes(range(16)), 9)
    )
    assert decode_headers(headers) == {
        "t": True,
        "f": False,
        "b": -3,
        "s": -300,
        "i": 70000,
        "l": -(1 << 40),
        "bytes": b"\x00\x01",
        "str": "héllo",
        "ts": 1700000000000,
        "id": bytes(range(16)),
    }


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        (b"\x05ab", "runs past"),
        (b"\x01a\x07\x00\x09abc", "runs past"),
        (b"\x01a\x04\x00", "runs past"),
        (b"\x01a\x0a", "unknown value type"),
        (b"\x01\xff\x00", "not UTF-8"),
        (b"\x01a\x00\x01a\x01", "twice"),
    ],
)
def test_a_header_that_does_not_parse_fails_its_frame(headers: bytes, says: str) -> None:
    frames, failure = decode_all(frame(headers, b"{}"))
    assert frames == [] and failure is not None and says in str(failure)


def test_the_padding_field_never_reaches_the_chunks() -> None:
    translator = BedrockTranslator()
    chunks = [c for f in decode_all(b"".join(hello()))[0] for c in translator.feed(f)]  # type: ignore[arg-type]
    assert check(chunks, "strict") == []
    assert "abcdefgh" not in repr([c.to_dict() for c in chunks])
    assert "".join(c.text for c in chunks if c.type == "text-delta") == "Hello world"  # type: ignore[union-attr]
