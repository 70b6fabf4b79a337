"""HTTP/1.1 as RFC 9112 frames it, for the relay: request and response heads, and where a body ends.

The relay forwards every read untouched, then asks a ``Body`` what of the
read was body (the parser gets the body de-chunked, still compressed, as
httpx's ``aiter_raw`` gave it) and whether the message ended there, so a
kept-alive connection knows when the next request may go. Heads are read
here too (``request_head``, ``Head``): a few compiled-pattern matches per
head, the grammar h11 reads (httpx's own parser, so the tap reads a head as
its client does), where h11's event machinery cost ~40 µs a head on the
forwarding path, before the request went out and before the first body byte
came back. Bodies by a countdown or a chunk-size scan (a few ``bytes.find``
per read).

Bytes that are not HTTP/1.1 raise, for the relay only (it answers 400 to a client, or drops both
connections and the call ends with the failure; no user sees the class)::

    Exception
     └── ProtocolFault        the bytes are not HTTP/1.1 as RFC 9112 frames it
"""

from __future__ import annotations

import re

__all__ = ["Body", "Head", "Message", "ProtocolFault", "head_end", "request_head"]

_HEAD_END = re.compile(rb"\n\r?\n")  # h11's own blank-line rule (a bare LF is tolerated)
_MAX_HEAD = 64 << 10  # bytes of a response head (h11's default bound is 16 KiB)
_MAX_LINE = 4 << 10  # bytes of a chunk-size line or a trailer line
# RFC 9112 §7.1: chunk-size = 1*HEXDIG, then BWS and extensions. Python's int(…, 16) also takes
# "0x190", "1_90", "+5", " 5", which every client rejects: the tap would record what nobody saw.
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;.*)?")
# RFC 9110 §5 / RFC 9112 §3-5, as h11 spells them: a field is token ":" OWS value OWS, a value's
# characters visible or obs-text (no NUL, no CR or LF alone); lines end with CRLF or a bare LF.
_TOKEN = rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+"
_FIELD = re.compile(rb"(" + _TOKEN + rb"):[ \t]*((?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?)[ \t]*\r?\n")
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([\x21-\x7e]+) HTTP/(1\.[01])\r?\n")
_STATUS_LINE = re.compile(rb"HTTP/([0-9]\.[0-9]) ([0-9]{3})(?: [^\x00\n\r\x0b\x0c]*)?\r?\n")
_FOLD = re.compile(rb"\r?\n[ \t]+")  # obs-fold: a line that goes on on the next (joined by a space)
_LENGTH = re.compile(rb"[0-9]{1,20}")


class ProtocolFault(Exception):
    """The bytes are not HTTP/1.1 as RFC 9112 frames it."""


class Message:
    """One parsed head: a request's (``method``, ``target``) or a response's (``status_code``).

    ``headers``: (name lowercased, value) as they came;
    ``raw``: the same with the names as sent (what is recorded); ``length`` its Content-Length,
    ``chunked`` whether it says ``Transfer-Encoding: chunked`` (which wins, RFC 9112 §6.3).
    """

    __slots__ = ("chunked", "headers", "http_version", "length", "method", "raw", "status_code", "target")

    def __init__(self, http_version: bytes, raw: list[tuple[bytes, bytes]]) -> None:
        self.http_version = http_version
        self.raw = raw
        self.headers = [(name.lower(), value) for name, value in raw]
        self.method = b""
        self.target = b""
        self.status_code = 0
        self.length: int | None = None
        self.chunked = False
        self._framing()

    def _framing(self) -> None:
        """Content-Length one number (repeats must agree), Transfer-Encoding only ``chunked``, once."""
        length: bytes | None = None
        codings = 0
        for name, value in self.headers:
            if name == b"content-length":
                values = {each.strip() for each in value.split(b",")}
                one = values.pop()
                if values or _LENGTH.fullmatch(one) is None:
                    raise ProtocolFault("a bad Content-Length")
                if length is not None and one != length:
                    raise ProtocolFault("conflicting Content-Length headers")
                length = one
            elif name == b"transfer-encoding":
                codings += 1
                if codings > 1 or value.lower() != b"chunked":
                    raise ProtocolFault("only one Transfer-Encoding: chunked is read")
        self.length = int(length) if length is not None else None
        self.chunked = codings == 1

    @property
    def connection(self) -> set[bytes]:
        """The ``Connection`` header's tokens, lowercased (``close``, ``keep-alive``, …)."""
        return {
            token.strip().lower()
            for name, value in self.headers
            if name == b"connection"
            for token in value.split(b",")
        }


def _fields(head: bytes, at: int) -> list[tuple[bytes, bytes]]:
    """The fields of ``head`` from ``at`` to its blank line (``head`` ends with it)."""
    fields: list[tuple[bytes, bytes]] = []
    match = _FIELD.match
    while True:
        if head.startswith(b"\n", at) or head.startswith(b"\r\n", at):  # its blank line: the head's end
            return fields
        found = match(head, at)
        if found is None:
            raise ProtocolFault(f"a malformed header line {head[at : at + 40]!r}")
        fields.append((found.group(1), found.group(2)))
        at = found.end()


def _unfolded(head: bytes, line_end: int) -> bytes:
    """``head`` with obs-folds joined (h11 does the same); one right after the start line is refused."""
    if b"\n " not in head and b"\n\t" not in head:
        return head
    if head[line_end : line_end + 1] in (b" ", b"\t"):
        raise ProtocolFault("a continuation line at the start of the headers")
    return _FOLD.sub(b" ", head)


def head_end(buffer: bytes | bytearray, start: int = 0) -> int:
    """Where the head in ``buffer`` ends (past its blank line, looked for from ``start``), or -1."""
    found = _HEAD_END.search(buffer, start)
    return found.end() if found is not None else -1


def request_head(head: bytes) -> Message:
    """A request head (request line through its blank line), or ``ProtocolFault``: not HTTP/1.x,
    a malformed line, a bad framing, or HTTP/1.1 without exactly one Host."""
    line = _REQUEST_LINE.match(head)
    if line is None:
        raise ProtocolFault("a malformed request line")
    head = _unfolded(head, line.end())
    request = Message(line.group(3), _fields(head, line.end()))
    request.method = line.group(1)
    request.target = line.group(2)
    hosts = sum(1 for name, _ in request.headers if name == b"host")
    if hosts > 1 or (hosts == 0 and request.http_version == b"1.1"):
        raise ProtocolFault("HTTP/1.1 asks for exactly one Host header")
    return request


def _response_head(head: bytes) -> Message:
    line = _STATUS_LINE.match(head)
    if line is None:
        raise ProtocolFault("a malformed status line")
    head = _unfolded(head, line.end())
    response = Message(line.group(1), _fields(head, line.end()))
    response.status_code = int(line.group(2))
    return response


class Head:
    """Collects one response head (skipping 1xx heads); ``feed`` → the rest of the read, or None."""

    __slots__ = ("_buffer", "method", "response")

    def __init__(self, method: bytes) -> None:
        self.method = method
        self._buffer = bytearray()  # a head cut by the reads, so far
        self.response: Message | None = None

    def feed(self, data: bytes) -> bytes | None:
        """Bytes of the read past the final head once it is complete; None while it is not."""
        buffer: bytes | bytearray = data
        start = 0
        if self._buffer:  # appended to, and searched from where the last read left off (a blank
            start = len(self._buffer) - 2  # line cut by the read is found whole): linear in the head
            self._buffer += data
            buffer = self._buffer
        while True:
            end = head_end(buffer, start)
            if end < 0:
                if len(buffer) > _MAX_HEAD:
                    raise ProtocolFault(f"a response head over {_MAX_HEAD} bytes")
                if buffer is not self._buffer:
                    self._buffer = bytearray(buffer)
                return None
            try:
                response = _response_head(bytes(buffer[:end]))
            except ProtocolFault as exc:
                raise ProtocolFault(f"a malformed response head: {exc}") from None
            buffer, start = bytes(buffer[end:]), 0
            if not 100 <= response.status_code < 200:
                self.response = response
                self._buffer = bytearray()
                return buffer

    def body(self) -> Body:
        """The body's framing, from the final head (RFC 9112 §6.3)."""
        response = self.response
        assert response is not None
        if self.method == b"HEAD" or response.status_code in (204, 304):
            return Body("none")
        if response.chunked:
            return Body("chunked")
        if response.length is not None:
            return Body("length", response.length)
        return Body("close")

    @property
    def closes(self) -> bool:
        """Both connections close after this response: ``Connection: close``, HTTP/1.0 without
        keep-alive, or a head with both Transfer-Encoding and Content-Length (RFC 9112 §6.1: the
        framing the client reads may not be the one the tap reads, so nothing may follow it)."""
        response = self.response
        assert response is not None
        if response.chunked and response.length is not None:
            return True
        tokens = response.connection
        if response.http_version == b"1.0":
            return b"keep-alive" not in tokens
        return b"close" in tokens


class Body:
    """One response body's framing: ``feed(read)`` → the body bytes it holds; ``done`` once it ended.

    ``kind``: ``"length"`` (a countdown), ``"chunked"`` (de-chunked here),
    ``"close"`` (it ends when the upstream closes), ``"none"`` (no body).
    ``extra``: bytes the upstream sent past the body's end (a broken upstream).
    """

    def __init__(self, kind: str, length: int = 0) -> None:
        self.kind = kind
        self.left = length  # length: body bytes to come; chunked: bytes of the current chunk to come
        self.done = kind == "none" or (kind == "length" and length == 0)
        self.extra = b""
        self._state = 0  # chunked: 0 size line, 1 data, 2 the CRLF after data, 3 trailer lines
        self._line = b""  # a chunk-size or trailer line cut by a read

    def feed(self, data: bytes) -> bytes:
        if self.done:
            self.extra += data
            return b""
        kind = self.kind
        if kind == "chunked":
            return self._chunked(data)
        if kind == "length":
            left = self.left
            if len(data) < left:
                self.left = left - len(data)
                return data
            self.left = 0
            self.done = True
            self.extra = data[left:]
            return data[:left] if len(data) > left else data
        return data  # close-delimited

    def _chunked(self, data: bytes) -> bytes:
        parts: list[bytes] = []
        at, size = 0, len(data)
        while at < size:
            state = self._state
            if state == 1:  # chunk data
                take = min(self.left, size - at)
                parts.append(data[at : at + take] if take < size else data)
                at += take
                self.left -= take
                if self.left == 0:
                    self._state = 2
                continue
            line_end = data.find(b"\n", at)
            if line_end < 0:
                self._line += data[at:]
                if len(self._line) > _MAX_LINE:
                    raise ProtocolFault("a chunk-size or trailer line too long")
                break
            line = self._line + data[at:line_end] if self._line else data[at:line_end]
            self._line = b""
            at = line_end + 1
            if self._ends_at(state, line.rstrip(b"\r")):
                self.done = True
                self.extra = data[at:]
                break
        if len(parts) == 1:
            return parts[0]
        return b"".join(parts)

    def _ends_at(self, state: int, line: bytes) -> bool:
        """Take one chunk-size, CRLF or trailer line; True for the blank line that ends the body."""
        if state == 0:
            hexdigits = _CHUNK_SIZE.fullmatch(line)  # RFC 9112: HEXDIG only (no 0x, _, sign or space)
            if hexdigits is None:
                raise ProtocolFault(f"a bad chunk size line {line[:40]!r}")
            self.left = int(hexdigits.group(1), 16)
            self._state = 1 if self.left else 3
            return False
        if state == 2:
            if line:
                raise ProtocolFault("chunk data longer than its size")
            self._state = 0
            return False
        return not line  # state 3: trailer lines until a blank one
