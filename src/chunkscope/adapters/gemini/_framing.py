"""The Gemini API's SSE framing: CRLF line ends (``data: {…}\\r\\n\\r\\n``), read without a copy.

``CrlfSseDecoder`` is the shared ``SseDecoder`` with one fast path: a read with no event held
from the one before, not ending in a CR, is split on ``\\r\\n\\r\\n`` directly instead of
being normalised to LF first (a copy of the whole read: about a tenth of the adapter's time
per event). A CRLF is always one line end, so each ``\\r\\n\\r\\n`` ends an event wherever
it stands; a block with line ends inside (lone CRs, LFs, several lines) is normalised alone.
A read that may end inside a CRLF, or continues a held event, takes the shared decoder's path.
A read whose events all have the common shape (one ``data: `` line) is read whole at once
(``whole_events``: a few passes over the read's text, no Python step per event).
"""

from __future__ import annotations

from .._core import SseDecoder, SseEvent
from .._core.framing import whole_events

__all__ = ["CrlfSseDecoder"]


def _lf(data: bytes) -> bytes:
    """``data`` with every line end (CRLF, CR) as LF, as the shared decoder normalises a read."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


class CrlfSseDecoder(SseDecoder):
    """``SseDecoder`` with a copy-free path for reads framed wholly in CRLF."""

    __slots__ = ()

    def feed(self, data: bytes) -> list[SseEvent]:
        """The events ``data`` completes (as ``SseDecoder.feed``)."""
        if not self._started and self.failure is None:
            data = self._start(data)
        if (
            self._parts
            or self._cr
            or self.failure is not None
            or b"\r\n\r\n" not in data
            or data.endswith(b"\r")
        ):
            return super().feed(data)
        return self._crlf_events(data)

    def _crlf_events(self, data: bytes) -> list[SseEvent]:
        """The events of ``data`` (no event held before it), read whole when they have the
        common shape, else block by block."""
        cut = data.rfind(b"\r\n\r\n") + 4  # the end of the last whole event
        if cut <= self.max_event_bytes:  # no event in it can be past the limit
            # a slice of a whole bytes object is that object: no copy for a read ending its event
            whole = whole_events(data[:cut].decode("utf-8", "replace"), "\r\n")
            if whole is not None:
                if cut < len(data):
                    self._hold(_lf(data[cut:]))
                return whole
        return self._crlf_blocks(data)

    def _crlf_blocks(self, data: bytes) -> list[SseEvent]:
        """The events of ``data`` (no event held before it) split on CRLF CRLF, block by block;
        a block with other line ends is normalised alone; an unterminated tail is held."""
        blocks = data.split(b"\r\n\r\n")
        tail = blocks.pop()
        events: list[SseEvent] = []
        limit = self.max_event_bytes
        for block in blocks:
            if len(block) > limit:
                self.failure = ValueError(
                    f"an SSE event of {len(block)} bytes exceeds the limit of {limit} bytes"
                )
                return events
            if block.startswith(b"data: ") and b"\n" not in block and b"\r" not in block:
                events.append(("message", block[6:].decode("utf-8", "replace")))
            elif block:
                self._parse(_lf(block), events)
        if tail:
            self._hold(_lf(tail))
        return events
