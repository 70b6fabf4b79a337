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

import zlib
from typing import Any

__all__ = ["EventFrame", "EventStreamDecoder", "MIN_FRAME_BYTES", "decode_headers"]

MIN_FRAME_BYTES = 16
"""A frame with no headers and no payload: prelude (12) + message CRC (4)."""

_PRELUDE = 12
_FIXED = {2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}  # value type -> byte width of fixed-size values
_from_bytes = int.from_bytes
_crc32 = zlib.crc32


class EventFrame:
    """One decoded frame: its headers (name → value) and its raw payload bytes.

    ``message_type`` (``:message-type``: ``event``, ``exception``, ``error``) and
    ``event_type`` (``:event-type``, or ``:exception-type`` on an exception) are read once.
    """

    __slots__ = ("event_type", "headers", "message_type", "payload")

    def __init__(self, headers: dict[str, Any], payload: bytes) -> None:
        self.headers = headers
        self.payload = payload
        message_type = headers.get(":message-type")
        self.message_type = message_type if isinstance(message_type, str) else ""
        key = ":exception-type" if self.message_type == "exception" else ":event-type"
        event_type = headers.get(key)
        self.event_type = event_type if isinstance(event_type, str) else ""

    def __repr__(self) -> str:
        return f"EventFrame({self.message_type!r}, {self.event_type!r}, {len(self.payload)} payload bytes)"


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

    __slots__ = ("_buf", "_need", "failure", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = 8 << 20) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()  # the unfinished frame (or prelude) so far
        self._need = 0  # the total length of the frame in ``_buf`` once its prelude is checked
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
        frames: list[EventFrame] = []
        pos, size = 0, len(data)
        view = memoryview(data)
        try:
            while size - pos >= _PRELUDE:
                total = self._prelude(view, pos)
                if size - pos < total:
                    self._need = total
                    break
                frames.append(self._frame(view, pos, total))
                pos += total
                self._need = 0
        except ValueError as exc:
            self.failure = exc
            self._need = 0
            return frames
        if pos < size:
            buf += view[pos:]
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

    def _prelude(self, view: memoryview, pos: int) -> int:
        """The checked total length of the frame at ``pos`` (its 12 prelude bytes are there)."""
        if self._need:
            return self._need  # checked when it first arrived
        head = view[pos : pos + 8]
        crc = _from_bytes(view[pos + 8 : pos + 12], "big")
        if _crc32(head) != crc:
            raise ValueError("an event-stream frame's prelude CRC does not match")
        total = _from_bytes(head[:4], "big")
        headers = _from_bytes(head[4:], "big")
        if total < MIN_FRAME_BYTES:
            raise ValueError(f"an event-stream frame claims {total} bytes, fewer than any frame has")
        if total > self.max_frame_bytes:
            raise ValueError(
                f"an event-stream frame of {total} bytes exceeds the limit of {self.max_frame_bytes} bytes"
            )
        if headers > total - MIN_FRAME_BYTES:
            raise ValueError(f"an event-stream frame of {total} bytes claims {headers} bytes of headers")
        return total

    def _frame(self, view: memoryview, pos: int, total: int) -> EventFrame:
        end = pos + total
        crc = _from_bytes(view[end - 4 : end], "big")
        if _crc32(view[pos : end - 4]) != crc:
            raise ValueError("an event-stream frame's message CRC does not match")
        headers_end = pos + _PRELUDE + _from_bytes(view[pos + 4 : pos + 8], "big")
        headers = decode_headers(view[pos + _PRELUDE : headers_end])
        return EventFrame(headers, bytes(view[headers_end : end - 4]))
