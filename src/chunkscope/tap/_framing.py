"""Where one upstream response's body ends, and its bytes without the chunked framing.

The relay forwards every read untouched, then asks a ``Body`` what of the
read was body (the parser gets the body de-chunked, still compressed, as
httpx's ``aiter_raw`` gave it) and whether the response ended there, so a
kept-alive connection knows when the next request may go. The head is parsed
by h11 (rare, cost irrelevant); the body by a countdown or a chunk-size scan
(a few ``bytes.find`` per read), since h11's event loop costs ~12 µs per read
on the forwarding path and these cost ~1.

Bytes that are not HTTP/1.1 raise, for the relay only (it drops both connections and the call
ends with the failure; no user sees the class)::

    Exception
     └── ProtocolFault        the upstream's bytes are not HTTP/1.1 as RFC 9112 frames it
"""

from __future__ import annotations

import re

import h11

__all__ = ["Body", "Head", "ProtocolFault"]

_HEAD_END = re.compile(rb"\n\r?\n")  # h11's own blank-line rule (a bare LF is tolerated)
_MAX_HEAD = 64 << 10  # bytes of a response head (h11's default bound is 16 KiB)
_MAX_LINE = 4 << 10  # bytes of a chunk-size line or a trailer line
# RFC 9112 §7.1: chunk-size = 1*HEXDIG, then BWS and extensions. Python's int(…, 16) also takes
# "0x190", "1_90", "+5", " 5", which every client rejects: the tap would record what nobody saw.
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;.*)?")


class ProtocolFault(Exception):
    """The upstream's bytes are not HTTP/1.1 as RFC 9112 frames it."""


def _coded_body(codings: bytes) -> Body:
    """The framing a ``Transfer-Encoding`` list gives: chunked when chunked is the last coding,
    else a body whose length only the close tells."""
    if codings.rsplit(b",", 1)[-1].strip() != b"chunked":
        return Body("close")
    return Body("chunked")


class Head:
    """Collects one response head (skipping 1xx heads); ``feed`` → the rest of the read, or None."""

    def __init__(self, method: bytes) -> None:
        self.method = method
        self._buffer = bytearray()
        self._h11 = h11.Connection(h11.CLIENT)
        # h11 tracks the request it answers (HEAD has no body); the real one went out as bytes already.
        self._h11.send(h11.Request(method=method, target=b"/", headers=[(b"host", b"upstream")]))
        self._h11.send(h11.EndOfMessage())
        self.response: h11.Response | None = None

    def feed(self, data: bytes) -> bytes | None:
        """Bytes of the read past the final head once it is complete; None while it is not."""
        buffer = self._buffer
        buffer += data
        while True:
            found = _HEAD_END.search(buffer)
            if found is None:
                if len(buffer) > _MAX_HEAD:
                    raise ProtocolFault(f"a response head over {_MAX_HEAD} bytes")
                return None
            end = found.end()
            try:
                self._h11.receive_data(bytes(buffer[:end]))
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise ProtocolFault(f"a malformed response head: {exc}") from None
            del buffer[:end]
            if isinstance(event, h11.Response):
                self.response = event
                rest = bytes(buffer)
                buffer.clear()
                return rest
            if not isinstance(event, h11.InformationalResponse):  # pragma: no cover - h11 gives one of both
                raise ProtocolFault(f"an unexpected response event {type(event).__name__}")

    def body(self) -> Body:
        """The body's framing, from the final head (RFC 9112 §6.3)."""
        response = self.response
        assert response is not None
        status = response.status_code
        if self.method == b"HEAD" or status in (204, 304):
            return Body("none")
        headers = response.headers
        codings = b",".join(v for n, v in headers if n == b"transfer-encoding").lower()
        if codings:
            return _coded_body(codings)
        lengths = [v for n, v in headers if n == b"content-length"]
        if lengths:
            return Body("length", int(lengths[0]))  # h11 checked it is one valid number
        return Body("close")

    @property
    def closes(self) -> bool:
        """Both connections close after this response: ``Connection: close``, HTTP/1.0 without
        keep-alive, or a head with both Transfer-Encoding and Content-Length (RFC 9112 §6.1: the
        framing the client reads may not be the one the tap reads, so nothing may follow it)."""
        response = self.response
        assert response is not None
        names = {name for name, _ in response.headers}
        if b"transfer-encoding" in names and b"content-length" in names:
            return True
        tokens = {
            token.strip().lower()
            for name, value in response.headers
            if name == b"connection"
            for token in value.split(b",")
        }
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
