"""HTTP plumbing every wire adapter shares: credentials, URLs, the client slot, headers.

Failures are classified in ``_failures`` (one table); the stream guard and
the adapter loop live in ``_core/``.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Mapping

import httpx

from chunkscope.protocol import LlmError

from ._base import attribution_headers
from ._failures import redact

__all__ = [
    "ClientSlot",
    "endpoint_url",
    "merge_headers",
    "public_url",
    "redact",
    "resolve_api_key",
]

# --- credentials --------------------------------------------------------------

_HEADER_SAFE_KEY = re.compile(r"[\x21-\x7e]+")


def resolve_api_key(api_key: str | None, env_var: str | tuple[str, ...] | None, *, label: str) -> str:
    """The API key to send: ``api_key``, else the first of the ``env_var`` variables set, trimmed.

    Raises ``LlmError`` ``MISSING_CREDENTIAL`` when neither gives a non-blank
    key, ``INVALID_CREDENTIAL`` when the key holds characters an HTTP header
    cannot carry verbatim (non-ASCII, control characters, CR/LF, inner
    spaces). The key itself never appears in the message.
    """
    names = (env_var,) if isinstance(env_var, str) else (env_var or ())
    raw, source = (api_key, "the api_key argument") if api_key is not None else _key_from_env(names)
    if raw is None or not raw.strip():
        where = f"pass api_key=... or set {' or '.join(names)}" if names else "pass api_key=..."
        raise LlmError(f"no API key for {label}: {where}", "MISSING_CREDENTIAL")
    key = raw.strip()
    if _HEADER_SAFE_KEY.fullmatch(key) is None:
        raise LlmError(
            f"the API key from {source} for {label} contains characters an HTTP header cannot carry "
            "(non-ASCII, spaces or control characters such as a line break); check how it was copied",
            "INVALID_CREDENTIAL",
        )
    return key


def _key_from_env(names: tuple[str, ...]) -> tuple[str | None, str]:
    """The first of ``names`` set to a non-blank value (else the last one's value), and where it came from."""
    raw: str | None = None
    source = "the api_key argument"
    for name in names:
        raw = os.environ.get(name)
        source = f"the {name} environment variable"
        if raw is not None and raw.strip():
            break
    return raw, source


def public_url(url: str) -> str:
    """``url`` as it may appear in a repr or a message: without user info, query or fragment.

    Those are where a credential hides in a URL (``https://user:key@host``, ``?api-key=…``).
    """
    try:
        return str(httpx.URL(url).copy_with(username=None, password=None, query=None, fragment=None))
    except (httpx.InvalidURL, TypeError, ValueError):
        return "<unparsable URL>"


def endpoint_url(base_url: str, path: str, query: str = "") -> str:
    """``path`` appended to ``base_url``'s path; a query in ``base_url`` (``?api-version=…``) is
    kept, and ``query`` (already encoded) follows it."""
    url = httpx.URL(base_url)
    url = url.copy_with(path=url.path.rstrip("/") + path)
    if query:
        own = url.query
        url = url.copy_with(query=own + b"&" + query.encode() if own else query.encode())
    return str(url)


# --- the client ---------------------------------------------------------------


class ClientSlot:
    """The ``httpx.AsyncClient`` an adapter streams with.

    A caller's client is used as given and never closed. Otherwise the slot
    makes one on first use (with ``timeout()``) and a new one whenever the
    running event loop changes (another ``asyncio.run``, another notebook
    helper), since a pool's connections belong to the loop that opened them;
    ``aclose()`` closes the one it made.
    """

    __slots__ = ("_given", "_loop", "_own", "_timeout")

    def __init__(self, given: httpx.AsyncClient | None, timeout: Callable[[], httpx.Timeout]) -> None:
        self._given = given
        self._timeout = timeout
        self._own: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def current(self) -> httpx.AsyncClient | None:
        """The caller's client, or the one made for the latest loop (None before any)."""
        return self._given if self._given is not None else self._own

    def get(self) -> httpx.AsyncClient:
        """The client to send with on the running loop (call from inside it)."""
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        if self._own is None or self._loop is not loop or self._own.is_closed:
            self._own = httpx.AsyncClient(timeout=self._timeout())
            self._loop = loop
        return self._own

    async def aclose(self) -> None:
        """Close the client the slot made (a caller's stays open). Idempotent."""
        client, self._own = self._own, None
        # A client made on another (perhaps closed) loop cannot be closed from this one: it is dropped.
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()


# --- headers ------------------------------------------------------------------

_HTTPX_DEFAULT_UA = "python-httpx/"


def merge_headers(client: httpx.AsyncClient | None, *layers: Mapping[str, str] | None) -> dict[str, str]:
    """Request headers: attribution first, then ``layers`` in order (later wins, case-insensitive).

    A ``User-Agent`` may be replaced (by a layer, or by the caller's own
    client default) but never suppressed: an empty value keeps the previous one.
    """
    merged: dict[str, str] = {}
    names: dict[str, str] = {}

    def put(name: str, value: str) -> None:
        low = name.lower()
        if low == "user-agent" and not value.strip():
            return
        old = names.pop(low, None)
        if old is not None:
            del merged[old]
        names[low] = name
        merged[name] = value

    for name, value in attribution_headers().items():
        put(name, value)
    if client is not None:
        # A client built with its own User-Agent is the caller replacing ours.
        client_ua = client.headers.get("user-agent")
        if client_ua and not client_ua.startswith(_HTTPX_DEFAULT_UA):
            put("User-Agent", client_ua)
    for layer in layers:
        if layer:
            for name, value in layer.items():
                put(name, value)
    return merged
