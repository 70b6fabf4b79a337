"""SSE framing: bytes → ``(event_name, data)`` events, within ``max_event_bytes``."""

from __future__ import annotations

from itertools import repeat
from operator import itemgetter

__all__ = ["DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_EVENT_BYTES", "SseDecoder", "SseEvent"]

DEFAULT_MAX_EVENT_BYTES = 8 << 20
"""Largest single SSE event (its raw lines) accepted: 8 MiB. Beyond it: ``MALFORMED_RESPONSE``."""
DEFAULT_MAX_BODY_BYTES = 256 << 20
"""Largest response body accepted after decompression: 256 MiB. Beyond it: ``MALFORMED_RESPONSE``."""

SseEvent = tuple[str, str]
"""One dispatched SSE event: ``(event_name, data)``; the name is ``"message"`` when none was sent."""


_after_event = itemgetter(slice(7, None))  # a line's value after ``event: ``
_after_data = itemgetter(slice(6, None))  # a line's value after ``data: ``


def whole_events(text: str, newline: str = "\n") -> list[SseEvent] | None:
    """The events of ``text`` when every one has a common shape, else None (then parse line by line).

    ``text`` is whole events, each ended by its blank line (so ``text`` ends with one), its line
    ends ``newline``: LF (then the caller guarantees no CR at all, as the shared decoder's
    normalised reads have none) or CRLF (then a lone CR or LF anywhere makes it None). The two
    shapes: every event one ``data: `` line (chat completions, Gemini), or every event one
    ``event: <name>`` line then one ``data: `` line (Anthropic, Responses). The shape is checked
    with whole-text passes (``split``, ``count``, ``startswith`` mapped in C) and the events built
    without a Python step per event: the framing of a whole read then costs about what its
    ``str.split`` costs (measured in benchmarks/bench_adapters.py). None is always safe: the
    caller's line parser is the reference.
    """
    blank = newline + newline
    if text.startswith("data: "):
        # Split on the next event's ``data: `` too: the payloads come out with no second copy.
        datas = text.split(blank + "data: ")
        ends = 2 * len(datas)  # the line ends of the blank lines, the last one's included
        if text.count("\n") != ends or (newline != "\n" and text.count("\r") != ends):
            return None  # a line end inside an event: more than one line, or a lone CR or LF
        datas[0] = datas[0][6:]
        datas[-1] = datas[-1][: -len(blank)]
        return list(zip(repeat("message"), datas))
    if text.startswith("event: "):
        lines = text.split(newline)  # name, data, blank, …, name, data, blank, "" (after the last)
        if newline != "\n":
            ends = len(lines) - 1
            if text.count("\n") != ends or text.count("\r") != ends:
                return None  # a lone CR or LF
        if len(lines) % 3 != 1 or any(lines[2::3]):
            return None  # not (name, data, blank) lines throughout
        names, datas = lines[0:-1:3], lines[1::3]
        if not all(map(str.startswith, names, repeat("event: "))) or not all(
            map(str.startswith, datas, repeat("data: "))
        ):
            return None
        named = list(map(_after_event, names))
        if "" in named:
            return None  # ``event: `` alone names the default, ``message``: the line parser says so
        return list(zip(named, map(_after_data, datas), strict=True))
    return None


# --- SSE framing ----------------------------------------------------------------------


class SseDecoder:
    """Bytes → SSE events (WHATWG framing: LF, CRLF or CR lines; BOM; comments; multi-line data).

    ``feed(data)`` returns the events completed by ``data``; ``end()`` returns
    an event left unterminated at the end of the body. Reads may split
    anywhere (inside a UTF-8 sequence, between CR and LF). An event whose raw
    text exceeds ``max_event_bytes`` sets ``failure`` (a ``ValueError``) as
    soon as it is seen, so one endless line never piles up in memory; the
    events before it are still returned, and every later ``feed`` raises it. Comment lines go to ``comments``
    (when ``keep_comments``). Invalid UTF-8 becomes U+FFFD, as in a browser.
    """

    __slots__ = (
        "_cr",
        "_parts",
        "_size",
        "_started",
        "comments",
        "failure",
        "keep_comments",
        "max_event_bytes",
    )

    def __init__(
        self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, *, keep_comments: bool = False
    ) -> None:
        self.max_event_bytes = max_event_bytes
        self.keep_comments = keep_comments
        self.comments: list[str] = []
        self._parts: list[bytes] = []  # the unterminated event so far
        self._size = 0
        self._cr = False  # the previous read ended in CR (maybe half of CRLF)
        self._started = False
        self.failure: ValueError | None = None

    def feed(self, data: bytes) -> list[SseEvent]:
        """The events ``data`` completes, up to an event past ``max_event_bytes`` (then ``failure``)."""
        if self.failure is not None:
            raise self.failure
        if not self._started:
            data = self._start(data)
        if self._cr or b"\r" in data:
            data = self._normalise(data)
        if self._parts:
            data = self._joined(data)
            if not data:
                return []  # no line ended: the event goes on
        cut = data.rfind(b"\n\n") + 2  # the end of the last whole event, or 1: none
        if 1 < cut <= self.max_event_bytes:  # no event in it can be past the limit
            # A read that ends with its last event (the usual) is decoded without a copy first
            # (a slice of a whole bytes object is that object).
            whole = whole_events(data[:cut].decode("utf-8", "replace"))
            if whole is not None:
                if cut < len(data):
                    self._hold(data[cut:])
                return whole
        return self._blocks(data)

    def _start(self, data: bytes) -> bytes:
        """The body's first bytes, without a byte order mark (an empty read starts nothing)."""
        self._started = bool(data)
        return data[3:] if data.startswith(b"\xef\xbb\xbf") else data

    def _joined(self, data: bytes) -> bytes:
        """The held start of an event and ``data`` as one; empty when ``data`` ends no line (then
        it is held too, or sets and raises ``failure`` past the limit)."""
        if b"\n" not in data:
            self._hold(data)
            if self.failure is not None:
                raise self.failure
            return b""
        parts = self._parts
        parts.append(data)
        data = b"".join(parts)
        parts.clear()
        self._size = 0
        return data

    def _blocks(self, data: bytes) -> list[SseEvent]:
        """The events of ``data`` (LF line ends) block by block; an unterminated tail is held."""
        events: list[SseEvent] = []
        for block in self._split(data):
            # The common events take no line parsing at all: one ``data: `` line, or one
            # ``event: `` line and one ``data: `` line (Anthropic, Responses).
            cut = block.find(b"\n")
            if cut < 0:
                if block.startswith(b"data: "):
                    events.append(("message", block[6:].decode("utf-8", "replace")))
                    continue
            elif (
                block.startswith(b"event: ")
                and block.startswith(b"\ndata: ", cut)
                and block.find(b"\n", cut + 1) < 0
            ):
                name = block[7:cut].decode("utf-8", "replace") or "message"
                events.append((name, block[cut + 7 :].decode("utf-8", "replace")))
                continue
            if block:
                self._parse(block, events)
        return events

    def _split(self, data: bytes) -> list[bytes]:
        """The whole events' blocks of ``data``, up to the first past ``max_event_bytes`` (which
        sets ``failure``); the unterminated tail is held."""
        blocks = data.split(b"\n\n")
        tail = blocks.pop()
        if tail:
            self._hold(tail)
        if len(data) > self.max_event_bytes:  # only then may a block be past the limit
            return self._within_limit(blocks)
        return blocks

    def _within_limit(self, blocks: list[bytes]) -> list[bytes]:
        """``blocks`` up to the first past ``max_event_bytes`` (which sets ``failure``)."""
        limit = self.max_event_bytes
        for at, block in enumerate(blocks):
            if len(block) > limit:
                self.failure = ValueError(
                    f"an SSE event of {len(block)} bytes exceeds the limit of {limit} bytes"
                )
                return blocks[:at]
        return blocks

    def end(self) -> list[SseEvent]:
        """The event left unterminated at the end of the body (its last line ends at EOF)."""
        data = b"".join(self._parts)
        self._parts.clear()
        self._size = 0
        self._cr = False
        events: list[SseEvent] = []
        if data.strip(b"\n"):
            self._parse(data.rstrip(b"\n"), events)
        return events

    def _hold(self, data: bytes) -> None:
        self._size += len(data)
        if self._size > self.max_event_bytes:
            self._parts.clear()
            size, self._size = self._size, 0
            self.failure = ValueError(
                f"an SSE event of more than {size} bytes exceeds the limit of {self.max_event_bytes} bytes"
            )
            return
        self._parts.append(data)

    def _normalise(self, data: bytes) -> bytes:
        if self._cr:
            self._cr = False
            if data.startswith(b"\n"):
                data = data[1:]  # the LF of a CRLF split across reads
        if data.endswith(b"\r"):
            self._cr = True  # may be half a CRLF: the line ends here either way
        return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

    def _parse(self, block: bytes, events: list[SseEvent]) -> None:
        name = "message"
        data: list[str] | None = None
        for raw in block.split(b"\n"):
            if not raw:
                if data is not None:  # a blank line inside the block ("\n\n\n" runs): dispatch
                    events.append((name, "\n".join(data)))
                name, data = "message", None
                continue
            line = raw.decode("utf-8", "replace")
            field, colon, value = line.partition(":")
            if not field:
                if self.keep_comments:
                    self.comments.append(value[1:] if value.startswith(" ") else value)
                continue
            if colon and value.startswith(" "):
                value = value[1:]
            if field == "data":
                if data is None:
                    data = [value]
                else:
                    data.append(value)
            elif field == "event":
                name = value or "message"
        if data is not None:
            events.append((name, "\n".join(data)))
