"""``application/vnd.amazon.eventstream`` framing: bytes → frames, both CRC32s checked, bounded.

One frame (all integers big-endian)::

    total length     uint32   the whole frame, prelude and trailing CRC included
    headers length   uint32
    prelude CRC      uint32   CRC32 of the 8 bytes above
    headers          n x (name length uint8, name, value type uint8, value)
    payload          total - headers - 16 bytes (JSON on Bedrock)
    message CRC      uint32   CRC32 of every byte before it

Header value types: 0 true, 1 false, 2 int8, 3 int16, 4 int32, 5 int64, 6 bytes (uint16
length), 7 string (uint16 length, UTF-8), 8 timestamp (int64 ms), 9 UUID (16 bytes).

``EventStreamDecoder`` has the ``Decoder`` interface of the SSE core (``feed(bytes) ->
frames``, ``end()``, ``failure``). It never trusts a length before its checksum and never
holds more than one frame of at most ``max_frame_bytes``: a total length that lies (smaller
than a frame can be, larger than the limit, or inconsistent with the headers length), a
prelude or message CRC that does not match, or a header that runs past its frame sets
``failure`` (a ``ValueError``, so the core reports ``MALFORMED_RESPONSE``); the frames before
it are returned, and every later ``feed`` raises it.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from typing import Any

__all__ = ["EventFrame", "EventStreamDecoder", "MIN_FRAME_BYTES", "decode_headers"]

MIN_FRAME_BYTES = 16
"""A frame with no headers and no payload: prelude (12) + message CRC (4)."""

_PRELUDE = 12
_FIXED = {2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}  # value type -> byte width of fixed-size values
_from_bytes = int.from_bytes
_crc32 = zlib.crc32
_prelude = struct.Struct("!III").unpack_from
_u32 = struct.Struct("!I").unpack_from
_HEADER_CACHE = 64  # header blocks remembered per decoder (a stream repeats a handful)


class EventFrame:
    """One decoded frame: its headers (name → value) and its raw payload bytes.

    ``message_type`` (``:message-type``: ``event``, ``exception``, ``error``) and
    ``event_type`` (``:event-type``, or ``:exception-type`` on an exception) are read once.
    ``headers`` may be shared by frames whose header bytes are the same: read it, never
    change it.
    """

    __slots__ = ("event_type", "headers", "message_type", "payload")

    def __init__(self, headers: dict[str, Any], payload: bytes, kinds: tuple[str, str] | None = None) -> None:
        self.headers = headers
        self.payload = payload
        self.message_type, self.event_type = kinds if kinds is not None else frame_kinds(headers)

    def __repr__(self) -> str:
        return f"EventFrame({self.message_type!r}, {self.event_type!r}, {len(self.payload)} payload bytes)"


def frame_kinds(headers: Mapping[str, Any]) -> tuple[str, str]:
    """``(message type, event type)`` of a frame's headers (``""`` where a header is missing)."""
    message_type = headers.get(":message-type")
    message_type = message_type if isinstance(message_type, str) else ""
    event_type = headers.get(":exception-type" if message_type == "exception" else ":event-type")
    return message_type, event_type if isinstance(event_type, str) else ""


def decode_headers(data: bytes | memoryview) -> dict[str, Any]:
    """The headers block of a frame, as a dict; ``ValueError`` for a header that does not parse."""
    headers: dict[str, Any] = {}
    i, end = 0, len(data)
    while i < end:
        size = data[i]
        j = i + 1 + size
        if size == 0 or j >= end:
            raise ValueError("an event-stream header runs past its headers block")
        try:
            name = bytes(data[i + 1 : j]).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("an event-stream header name is not UTF-8") from None
        kind = data[j]
        i = j + 1
        value: Any
        if kind == 7 or kind == 6:
            if i + 2 > end:
                raise ValueError(f"event-stream header {name!r} runs past its headers block")
            length = _from_bytes(data[i : i + 2], "big")
            i += 2
            if i + length > end:
                raise ValueError(f"event-stream header {name!r} runs past its headers block")
            raw = bytes(data[i : i + length])
            i += length
            if kind == 7:
                try:
                    value = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise ValueError(f"event-stream header {name!r} is not UTF-8") from None
            else:
                value = raw
        elif kind == 0 or kind == 1:
            value = kind == 0
        elif kind in _FIXED:
            width = _FIXED[kind]
            if i + width > end:
                raise ValueError(f"event-stream header {name!r} runs past its headers block")
            raw = bytes(data[i : i + width])
            i += width
            value = raw if kind == 9 else _from_bytes(raw, "big", signed=True)
        else:
            raise ValueError(f"event-stream header {name!r} has unknown value type {kind}")
        if name in headers:
            raise ValueError(f"event-stream header {name!r} is sent twice in one frame")
        headers[name] = value
    return headers


class EventStreamDecoder:
    """Bytes → ``EventFrame``s; reads may split anywhere (inside the prelude, a header, a CRC).

    Args:
        max_frame_bytes: the largest total length accepted (the adapter's ``max_event_bytes``);
            a prelude announcing more is a failure as soon as its 12 bytes are checked.
    """

    __slots__ = ("_buf", "_headers", "_need", "failure", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = 8 << 20) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()  # the unfinished frame (or prelude) so far
        self._need = 0  # the total length of the frame in ``_buf`` once its prelude is checked
        # header bytes -> (headers, kinds): every frame of one event type has the same headers
        self._headers: dict[bytes, tuple[dict[str, Any], tuple[str, str]]] = {}
        self.failure: ValueError | None = None

    def feed(self, data: bytes) -> list[EventFrame]:
        """The frames ``data`` completes, up to a frame that fails (then ``failure``)."""
        if self.failure is not None:
            raise self.failure
        buf = self._buf
        if buf:
            buf += data
            if len(buf) < (self._need or _PRELUDE):
                return []
            data = bytes(buf)
            buf.clear()
        elif type(data) is not bytes:
            data = bytes(data)
        frames: list[EventFrame] = []
        append = frames.append
        cache = self._headers
        pos, size = 0, len(data)
        try:
            while size - pos >= _PRELUDE:
                total = self._need or self._prelude(data, pos)
                end = pos + total
                if end > size:
                    self._need = total
                    break
                self._need = 0
                if _crc32(data[pos : end - 4]) != _u32(data, end - 4)[0]:
                    raise ValueError("an event-stream frame's message CRC does not match")
                headers_end = pos + _PRELUDE + _u32(data, pos + 4)[0]
                raw = data[pos + _PRELUDE : headers_end]
                known = cache.get(raw)
                if known is None:
                    known = self._decode(raw)
                append(EventFrame(known[0], data[headers_end : end - 4], known[1]))
                pos = end
        except ValueError as exc:
            self.failure = exc
            self._need = 0
            return frames
        if pos < size:
            buf += data[pos:]
        return frames

    def end(self) -> list[EventFrame]:
        """Nothing: a frame cut off by the body's end is not a frame (the translator reports the
        stream as closed early); the partial bytes are dropped."""
        self._buf.clear()
        self._need = 0
        return []

    @property
    def pending(self) -> int:
        """Bytes held of an unfinished frame."""
        return len(self._buf)

    def _prelude(self, data: bytes, pos: int) -> int:
        """The checked total length of the frame at ``pos`` (its 12 prelude bytes are there)."""
        total, headers, crc = _prelude(data, pos)
        if _crc32(data[pos : pos + 8]) != crc:
            raise ValueError("an event-stream frame's prelude CRC does not match")
        if total < MIN_FRAME_BYTES:
            raise ValueError(f"an event-stream frame claims {total} bytes, fewer than any frame has")
        if total > self.max_frame_bytes:
            raise ValueError(
                f"an event-stream frame of {total} bytes exceeds the limit of {self.max_frame_bytes} bytes"
            )
        if headers > total - MIN_FRAME_BYTES:
            raise ValueError(f"an event-stream frame of {total} bytes claims {headers} bytes of headers")
        return int(total)

    def _decode(self, raw: bytes) -> tuple[dict[str, Any], tuple[str, str]]:
        headers = decode_headers(raw)
        known = (headers, frame_kinds(headers))
        if len(self._headers) < _HEADER_CACHE:
            self._headers[raw] = known
        return known
