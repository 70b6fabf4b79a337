"""The SSE framing reads whole reads of common-shape events exactly as line by line.

``SseDecoder`` (and Gemini's ``CrlfSseDecoder``) read a read whose events all have a common
shape (one ``data: `` line, or an ``event: `` line and a ``data: `` line) in a few whole-text
passes (``whole_events``); any other read goes through the line parser. Both must give the
events a plain reading of the framing gives, however the body is cut into reads: the
reference below is that plain reading (decode, lines on CRLF/CR/LF, fields, blank lines).
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope.adapters._core import SseDecoder
from chunkscope.adapters._core.framing import whole_events
from chunkscope.adapters.gemini._framing import CrlfSseDecoder

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def reference(raw: bytes) -> list[tuple[str, str]]:
    """The events of a whole body, read line by line (what the decoders document)."""
    text = raw.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    events: list[tuple[str, str]] = []
    name, data = "message", None
    for line in re.split("\r\n|\r|\n", text):
        if not line:
            if data is not None:
                events.append((name, "\n".join(data)))
            name, data = "message", None
            continue
        field, colon, value = line.partition(":")
        if not field:
            continue  # a comment
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data = [value] if data is None else [*data, value]
        elif field == "event":
            name = value or "message"
    if data is not None:  # the last event, unterminated at the end of the body
        events.append((name, "\n".join(data)))
    return events


def read(decoder: SseDecoder, raw: bytes, cuts: list[int]) -> list[tuple[str, str]]:
    points = {c % (len(raw) + 1) for c in cuts}
    if raw.startswith(b"\xef\xbb\xbf"):  # a BOM is looked for in the first read only: not cut
        points = {3 if 0 < p < 3 else p for p in points}
    out: list[tuple[str, str]] = []
    last = 0
    for point in [*sorted(points), len(raw)]:
        out += decoder.feed(raw[last:point])
        last = point
    return out + decoder.end()


_payload = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=12)
_name = st.sampled_from(["", "message", "response.output_text.delta", "ping", "é"])
_odd = st.sampled_from(
    [
        b"",
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b": keep-alive\n\n",
        b"data:x\n\n",
        b"event: \n",
        b"data: \n",
        b"id: 7\n",
        b"\xef\xbb\xbf",
        b"\xff",
        b"\xc3",
        b"\xe2\x82",
        b"data: [DONE]\n\n",
    ]
)


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """A body of common-shape events (LF or CRLF), maybe with one odd piece put anywhere."""
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    named = draw(st.booleans())
    parts = []
    for payload in draw(st.lists(_payload, max_size=8)):
        head = f"event: {draw(_name)}{newline}" if named else ""
        parts.append(f"{head}data: {payload}{newline}{newline}".encode())
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), draw(_odd))
    raw = b"".join(parts)
    if draw(st.booleans()):
        raw = raw[: draw(st.integers(0, len(raw)))]  # the body may end anywhere
    return raw


@SETTINGS
@given(raw=streams(), cuts=st.lists(st.integers(0, 400), max_size=4))
def test_every_read_of_common_shape_events_gives_the_line_by_line_events(raw: bytes, cuts: list[int]) -> None:
    expected = reference(raw)
    assert read(SseDecoder(), raw, cuts) == expected
    assert read(CrlfSseDecoder(), raw, cuts) == expected


@SETTINGS
@given(
    pieces=st.lists(
        st.sampled_from([b"data: ", b"event: e", b"a", b"\n", b"\r\n", b"\r", b"\n\n", b": c", b"\xc3"]),
        max_size=16,
    ),
    cuts=st.lists(st.integers(0, 100), max_size=4),
)
def test_any_mix_of_lines_gives_the_line_by_line_events(pieces: list[bytes], cuts: list[int]) -> None:
    raw = b"".join(pieces)
    expected = reference(raw)
    assert read(SseDecoder(), raw, cuts) == expected
    assert read(CrlfSseDecoder(), raw, cuts) == expected


def test_the_whole_read_path_takes_only_the_shapes_it_can_read() -> None:
    assert whole_events("data: a\n\ndata: b\n\n") == [("message", "a"), ("message", "b")]
    assert whole_events("data: \n\n") == [("message", "")]
    assert whole_events("event: x\ndata: a\n\nevent: y\ndata: b\n\n") == [("x", "a"), ("y", "b")]
    assert whole_events("data: a\r\n\r\ndata: b\r\n\r\n", "\r\n") == [("message", "a"), ("message", "b")]
    for text in (
        "data: a\ndata: b\n\n",  # two data lines: one event, joined by the line parser
        "data: a\n\n\ndata: b\n\n",  # a blank line more
        "data: a\n\n: ping\n\ndata: b\n\n",  # a comment
        "event: \ndata: a\n\n",  # the default name
        "data: a\n\nevent: x\ndata: b\n\n",  # shapes mixed
        "event: x\ndata: a\n\ndata: b\n\n",
        "event: x\ndata: a\nid: 1\nevent: y\ndata: b\n\n",  # one event (y: "a\nb"), no blank line
        "data: a\rb\r\n\r\ndata: c\r\n\r\n",  # a lone CR inside a CRLF read
    ):
        newline = "\r\n" if "\r\n" in text else "\n"
        assert whole_events(text, newline) is None, text


def test_an_event_past_the_limit_in_a_whole_read_still_fails() -> None:
    decoder = SseDecoder(max_event_bytes=64)
    events = decoder.feed(b"data: short\n\n" + b"data: " + b"x" * 100 + b"\n\n")
    assert events == [("message", "short")]
    assert decoder.failure is not None
