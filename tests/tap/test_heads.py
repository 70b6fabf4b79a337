"""The tap reads request and response heads as its clients' parser does: h11 (httpx's) is the judge.

The tap forwards a request only once it read it whole, and rewrites its head from what it read:
a head it reads differently from the client's own parser is a smuggling hole (a second request
hidden in the first) or a call recorded as nobody saw it. Every head drawn here — good ones and
broken ones, bare LFs, folded lines, odd framings — is read by both, and both must agree on
whether it is HTTP at all and, when it is, on everything the tap acts on.
"""

from __future__ import annotations

import itertools

import h11
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope.tap._framing import Head, ProtocolFault, request_head

THOROUGH = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_METHODS = [b"POST", b"GET", b"HEAD", b"M-SEARCH", b"P@ST", b"", b"PO ST"]
_TARGETS = [b"/v1/chat/completions", b"/x?key=a&b=%20", b"*", b"/\xc3\xa9", b"/a\tb", b"/a\x7fb"]
_VERSIONS = [b"HTTP/1.1", b"HTTP/1.0", b"HTTP/1.2", b"HTTP/2.0", b"http/1.1", b"HTTP/1.1 ", b"HTTP/11"]
_NAMES = [b"Host", b"Content-Length", b"Transfer-Encoding", b"Authorization", b"X-Y", b"Connection"]
_VALUES = [
    b"x",
    b"5",
    b"5, 5",
    b"5,6",
    b"05",
    b"+5",
    b"0x5",
    b"",
    b"chunked",
    b"Chunked",
    b"gzip, chunked",
    b"chunked ",
    b"Bearer sk-a b",
    b"a\x00b",
    b"a\rb",
    b"caf\xc3\xa9",
    b"\x01",
    b"1" * 21,
]
_BROKEN_LINES = [b"no colon", b"X : y", b" folded on", b"\tfolded on", b"B@d: x", b": empty name"]


@st.composite
def _lines(draw: st.DrawFn) -> list[bytes]:
    lines = []
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(_BROKEN_LINES)))
        else:
            space = draw(st.sampled_from([b"", b" ", b"  ", b"\t"]))
            tail = draw(st.sampled_from([b"", b" ", b"\t "]))
            lines.append(draw(st.sampled_from(_NAMES)) + b":" + space + draw(st.sampled_from(_VALUES)) + tail)
    return lines


def _joined(start: bytes, lines: list[bytes], ends: list[bytes]) -> bytes:
    out = start + ends[0]
    for at, line in enumerate(lines):
        out += line + ends[(at + 1) % len(ends)]
    return out + ends[-1]


@st.composite
def request_heads(draw: st.DrawFn) -> bytes:
    line = b" ".join(
        (draw(st.sampled_from(_METHODS)), draw(st.sampled_from(_TARGETS)), draw(st.sampled_from(_VERSIONS)))
    )
    lines = draw(_lines())
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), b"Host: api.example.com")
    ends = draw(st.lists(st.sampled_from([b"\r\n", b"\n"]), min_size=1, max_size=3))
    return _joined(line, lines, ends)


@st.composite
def response_heads(draw: st.DrawFn) -> bytes:
    version = draw(st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/1.1", b"HTTP/2", b"HTTPS/1.1"]))
    status = draw(st.sampled_from([b"200", b"204", b"404", b"100", b"20", b"2000", b"abc"]))
    reason = draw(st.sampled_from([b" OK", b"", b" ", b" Not\tFound", b" caf\xc3\xa9", b" a\x00b"]))
    ends = draw(st.lists(st.sampled_from([b"\r\n", b"\n"]), min_size=1, max_size=3))
    return _joined(version + b" " + status + reason, draw(_lines()), ends)


def _h11_request(head: bytes) -> h11.Request | None:
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(head)
    try:
        event = conn.next_event()
    except h11.RemoteProtocolError:
        return None
    assert isinstance(event, h11.Request), event  # the head ends with its blank line: never NEED_DATA
    return event


def _framing(headers: list[tuple[bytes, bytes]]) -> tuple[int | None, bool]:
    """(Content-Length, chunked) as h11 normalized them (one length kept, the coding lowercased)."""
    length = next((int(v) for n, v in headers if n == b"content-length"), None)
    return length, any(n == b"transfer-encoding" for n, _ in headers)


@THOROUGH
@given(request_heads())
def test_a_request_head_is_read_as_h11_reads_it(head: bytes) -> None:
    expected = _h11_request(head)
    if expected is not None and expected.http_version not in (b"1.0", b"1.1"):
        expected = None  # the tap speaks HTTP/1.0 and 1.1 only: it forwards the version it read
    try:
        got = request_head(head)
    except ProtocolFault:
        assert expected is None, f"h11 reads {head!r} as {expected!r}"
        return
    assert expected is not None, f"the tap reads {head!r}, h11 refuses it"
    assert (got.method, got.target, got.http_version) == (
        expected.method,
        expected.target,
        expected.http_version,
    )
    framing = (b"content-length", b"transfer-encoding")  # h11 merges repeats, lowercases the coding
    assert [(n, v) for n, v in got.headers if n not in framing] == [
        (n, v) for n, v in expected.headers if n not in framing
    ]
    assert (got.length, got.chunked) == _framing(list(expected.headers))


def _h11_response(head: bytes, method: bytes) -> h11.Response | None:
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method=method, target=b"/", headers=[(b"host", b"upstream")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(head)
    try:
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Response):
                return event
            if event is h11.NEED_DATA:  # only 1xx heads: no final one yet
                return None
    except h11.RemoteProtocolError:
        return None


@THOROUGH
@given(st.lists(response_heads(), min_size=1, max_size=2), st.sampled_from([b"POST", b"HEAD"]))
def test_a_response_head_is_read_as_httpx_reads_it(heads: list[bytes], method: bytes) -> None:
    """Also after 1xx heads; a head the client cannot read breaks the call in the tap too."""
    head = b"".join(heads)
    expected = _h11_response(head, method)
    reader = Head(method)
    try:
        rest = reader.feed(head)
    except ProtocolFault:
        assert expected is None, f"httpx reads {head!r} as {expected!r}"
        return
    if rest is None:
        assert expected is None
        return
    assert expected is not None, f"the tap reads {head!r}, httpx refuses it"
    response = reader.response
    assert response is not None
    assert (response.status_code, response.http_version) == (expected.status_code, expected.http_version)
    assert (response.length, response.chunked) == _framing(list(expected.headers))


@pytest.mark.parametrize(
    "head",
    [
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\n Host: x\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
        b"POST / HTTP/1.1\r\nX: a\rb\r\nHost: x\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\n",
    ],
    ids=["two-lengths", "two-codings", "not-only-chunked", "fold-first", "two-hosts", "bare-cr", "no-host"],
)
def test_heads_that_frame_a_body_two_ways_or_name_no_host_are_refused(head: bytes) -> None:
    with pytest.raises(ProtocolFault):
        request_head(head)
    assert _h11_request(head) is None


def test_a_folded_header_is_joined_as_h11_joins_it() -> None:
    head = b"POST /v1 HTTP/1.1\r\nHost: x\r\nX-Long: one\r\n  two\r\n\tthree\r\nContent-Length: 2\r\n\r\n"
    got = request_head(head)
    assert (b"x-long", b"one two three") in got.headers and got.length == 2
    assert (b"x-long", b"one two three") in list(_h11_request(head).headers)  # type: ignore[union-attr]


def _read_in(pieces: list[bytes]) -> tuple[object, ...]:
    """What ``Head`` makes of a response arriving in these reads: refused, or the bytes past the
    head (None: no final head yet) with the response's status, headers and length."""
    reader = Head(b"POST")
    rest: bytes | None = None
    try:
        for n, piece in enumerate(pieces):
            rest = reader.feed(piece)
            if rest is not None:
                rest += b"".join(pieces[n + 1 :])  # the body's bytes, past the head
                break
    except ProtocolFault:
        return ("refused",)
    response = reader.response
    return ("read", rest) if response is None else ("read", rest, response.status_code, response.headers)


@given(
    st.lists(response_heads(), min_size=1, max_size=2),
    st.binary(max_size=20),
    st.lists(st.integers(min_value=0, max_value=400), max_size=6),
)
def test_a_response_head_cut_into_reads_anywhere_reads_as_it_does_in_one(
    heads: list[bytes], tail: bytes, cuts: list[int]
) -> None:
    """The reads of a head, however the upstream's writes were cut (a blank line split too), give
    the response and the bytes past it that the whole head in one read gives: cut once at every
    byte, and at a few places at once."""
    whole = b"".join(heads) + tail
    expected = _read_in([whole])
    for at in range(1, len(whole)):
        assert _read_in([whole[:at], whole[at:]]) == expected, at
    bounds = sorted({min(cut, len(whole)) for cut in cuts} | {0, len(whole)})
    assert _read_in([whole[a:b] for a, b in itertools.pairwise(bounds)]) == expected
