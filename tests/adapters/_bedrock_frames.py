"""Small real-shaped Bedrock ConverseStream frames for the translator and framing tests.

Encoded here, independently of both the adapter's decoder and the provider's encoder, from
the event-stream format (prelude, headers, payload, two CRC32s).
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any


def header(name: str, value: str | bytes | bool | int, kind: int | None = None) -> bytes:
    raw = name.encode()
    out = bytes([len(raw)]) + raw
    if isinstance(value, bool):
        return out + (b"\x00" if value else b"\x01")
    if isinstance(value, str):
        data = value.encode()
        return out + b"\x07" + struct.pack("!H", len(data)) + data
    if isinstance(value, bytes):
        if kind == 9:
            return out + b"\x09" + value
        return out + b"\x06" + struct.pack("!H", len(value)) + value
    widths = {2: "!b", 3: "!h", 4: "!i", 5: "!q", 8: "!q"}
    kind = kind or 4
    return out + bytes([kind]) + struct.pack(widths[kind], value)


def frame(headers: bytes, payload: bytes) -> bytes:
    total = 16 + len(headers) + len(payload)
    prelude = struct.pack("!II", total, len(headers))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack("!I", zlib.crc32(body))


def event(event_type: str, payload: dict[str, Any], *, pad: str | None = "abcdefgh") -> bytes:
    if pad is not None:
        payload = {**payload, "p": pad}
    headers = (
        header(":event-type", event_type)
        + header(":content-type", "application/json")
        + header(":message-type", "event")
    )
    return frame(headers, json.dumps(payload).encode())


def exception(kind: str, message: str) -> bytes:
    headers = (
        header(":exception-type", kind)
        + header(":content-type", "application/json")
        + header(":message-type", "exception")
    )
    return frame(headers, json.dumps({"message": message}).encode())


def start() -> bytes:
    return event("messageStart", {"role": "assistant"})


def text(index: int, piece: str) -> bytes:
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}})


def reasoning(index: int, piece: str) -> bytes:
    return event(
        "contentBlockDelta", {"contentBlockIndex": index, "delta": {"reasoningContent": {"text": piece}}}
    )


def signature(index: int, value: str = "c2ln") -> bytes:
    delta = {"reasoningContent": {"signature": value}}
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})


def tool_start(index: int, call_id: str, name: str) -> bytes:
    start_ = {"toolUse": {"toolUseId": call_id, "name": name}}
    return event("contentBlockStart", {"contentBlockIndex": index, "start": start_})


def tool_input(index: int, piece: str) -> bytes:
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}})


def stop_block(index: int) -> bytes:
    return event("contentBlockStop", {"contentBlockIndex": index})


def message_stop(reason: str = "end_turn") -> bytes:
    return event("messageStop", {"stopReason": reason})


def metadata(**usage: int) -> bytes:
    counts = {"inputTokens": 10, "outputTokens": 5, **usage}
    counts.setdefault("totalTokens", sum(counts.values()))
    return event("metadata", {"usage": counts, "metrics": {"latencyMs": 120}})


def hello() -> list[bytes]:
    """A whole text reply: messageStart, 'Hello world' in two deltas, the stop, the metadata."""
    return [start(), text(0, "Hello"), text(0, " world"), stop_block(0), message_stop(), metadata()]
