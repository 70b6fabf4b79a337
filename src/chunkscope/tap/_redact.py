"""Credentials out of everything the tap keeps: request headers, query strings, response bytes.

The tap forwards credentials untouched (the upstream needs them) but never
stores one: header values of ``authorization``, ``x-api-key``,
``x-goog-api-key``, ``api-key``, ``cookie``/``set-cookie`` and SigV4's
``X-Amz-*`` signature parts are replaced by ``REDACTED``; query parameters
of the same names too; and each secret value the request carried is masked
wherever it reappears in the response bytes kept, also when it is split
across reads (``ByteMask``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from urllib.parse import parse_qsl, urlencode

from chunkscope._wires import WIRE_FACTS

__all__ = [
    "REDACTED",
    "ByteMask",
    "is_credential",
    "key_fingerprint",
    "mask_text",
    "redact_headers",
    "redact_query",
    "secrets_of",
]

REDACTED = "REDACTED"

_CREDENTIAL_HEADERS = frozenset(
    {
        # what no wire names but any client may send: a proxy's key, Azure's, a session's
        "proxy-authorization",
        "api-key",
        "cookie",
        "set-cookie",
        # each wire's own, from the wire table
        *(header for facts in WIRE_FACTS.values() for header in facts.credential_headers),
    }
)
_CREDENTIAL_PARAMS = frozenset(
    {
        "key",
        "api_key",
        "api-key",
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
        "sig",
        "signature",
        "token",
        "access_token",
    }
)

MIN_SECRET_CHARS = 8
"""Shorter values are not masked inside bodies (a one-letter key would mask every such letter)."""


def is_credential(name: str) -> bool:
    """True for a header whose value is a credential (case-insensitive)."""
    return name.lower() in _CREDENTIAL_HEADERS


def redact_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers with every credential value replaced by ``REDACTED`` (order and names kept)."""
    return [(name, REDACTED if is_credential(name) else value) for name, value in headers]


def redact_query(query: str) -> str:
    """A query string with credential parameters (``key=``, SigV4 parts, …) replaced by ``REDACTED``."""
    if not query:
        return query
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(name.lower() in _CREDENTIAL_PARAMS for name, _ in pairs):
        return query
    return urlencode([(n, REDACTED if n.lower() in _CREDENTIAL_PARAMS else v) for n, v in pairs])


def secrets_of(headers: Iterable[tuple[str, str]], query: str = "") -> tuple[str, ...]:
    """Every secret value a request carries (whole header values and their token parts), longest first."""
    found: set[str] = set()
    for name, value in headers:
        if is_credential(name):
            found.update(_header_secrets(value))
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name.lower() in _CREDENTIAL_PARAMS:
            found.add(value)
    return tuple(sorted((s for s in found if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True))


def key_fingerprint(headers: Iterable[tuple[str, str]], query: str = "") -> str | None:
    """A short hash naming the request's key (``key-`` and 12 hex digits), never the key; None without one.

    The first credential header's token (SigV4: its access key id, the signature changes per
    request), else a credential query parameter. Calls of one key share it: the prompt-cache
    report groups by it.
    """
    found = ""
    for name, value in headers:
        if is_credential(name) and value.strip():
            text = value.strip()
            if "Credential=" in text:
                found = text.split("Credential=", 1)[1].split("/", 1)[0]
            else:
                found = text.partition(" ")[2].strip() or text
            break
    else:
        found = next((v for n, v in parse_qsl(query) if n.lower() in _CREDENTIAL_PARAMS), "")
    if not found:
        return None
    return "key-" + hashlib.sha256(found.encode("utf-8", "replace")).hexdigest()[:12]


def _header_secrets(value: str) -> set[str]:
    """A credential header's value whole, its token after the scheme, and each ``name=value`` part's value."""
    found = {value.strip()}
    _, _, token = value.strip().partition(" ")
    if token:
        found.add(token.strip())
    for part in value.replace(",", ";").split(";"):  # cookie pairs, SigV4's Credential=/Signature=
        _, eq, item = part.strip().partition("=")
        if eq and item:
            found.add(item.strip())
    return found


class ByteMask:
    """Masks secrets in a stream of reads kept as ``bytearray``s, also across read boundaries.

    ``push(data)`` returns ``data`` as a ``bytearray`` with every secret
    occurrence that ends in it overwritten by ``*`` — including the part of an
    occurrence that began in earlier reads (those ``bytearray``s are masked in
    place). Lengths never change, so read sizes and timings stay true.
    """

    __slots__ = ("_keep", "_reads", "_secrets")

    def __init__(self, secrets: Sequence[str]) -> None:
        self._secrets = [s.encode() for s in secrets if s]
        self._keep = max((len(s) for s in self._secrets), default=0)
        self._reads: list[bytearray] = []  # the latest reads covering the last ``_keep`` bytes

    @property
    def longest(self) -> int:
        """The longest secret's length in bytes: a read followed by this many is masked for good."""
        return self._keep

    def push(self, data: bytes) -> bytearray:
        read = bytearray(data)
        if not self._secrets:
            return read
        self._reads.append(read)
        # Keep only the earlier reads an occurrence ending in ``read`` can start in.
        reads = self._reads
        while len(reads) > 2 and sum(len(r) for r in reads[1:-1]) >= self._keep - 1:
            reads.pop(0)
        window = b"".join(self._reads)
        hits: list[tuple[int, int]] = []
        for secret in self._secrets:
            start = window.find(secret)
            while start != -1:
                hits.append((start, start + len(secret)))
                start = window.find(secret, start + 1)
        for begin, end in hits:
            self._mask(begin, end)
        return read

    def _mask(self, begin: int, end: int) -> None:
        offset = 0
        for read in self._reads:
            lo, hi = max(begin - offset, 0), min(end - offset, len(read))
            if lo < hi:
                read[lo:hi] = b"*" * (hi - lo)
            offset += len(read)


def mask_text(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret replaced by ``REDACTED``."""
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, REDACTED)
    return text
