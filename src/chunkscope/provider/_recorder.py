"""What the local provider received: one record per HTTP request, secrets removed.

``RequestLog`` wraps the ASGI app. Per request it keeps the method, path, the
headers (credential headers replaced by ``<redacted>`` before anything is
stored), the JSON body (or ``None``), the client's address (one TCP
connection = one client port), the status answered, and how the exchange
ended: ``complete`` (the whole response was sent), ``disconnected`` (the
client closed the connection before the response was complete — what an
abort that releases its connection looks like from here) or ``failed`` (the
server cut it: ``fault-drop``, shutdown). A later request from the same
client port means the earlier connection went back to the client's pool and
was reused.

The conformance kit reads these records to judge the request an adapter sent
and whether an aborted stream gave its connection back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ReceivedRequest", "RequestLog", "SECRET_HEADERS", "REDACTED"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "x-goog-api-key",
        "x-amz-security-token",  # an AWS session token (SigV4)
    }
)
"""Headers whose value is never stored (only the fact that they were sent)."""

REDACTED = "<redacted>"

_BODY_LIMIT = 1 << 20  # a recorded body is kept up to 1 MiB; the app reads (and limits) the rest itself
_DEFAULT_KEEP = 1000
MAX_WRITES = 4096  # body write times kept per request (a long stream keeps its first ones)

Outcome = Literal["complete", "disconnected", "failed"]


@dataclass
class ReceivedRequest:
    """One request as the provider received it (mutable only inside the provider)."""

    number: int
    """1, 2, 3, … in arrival order, over the provider's life."""
    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names; credential headers (``SECRET_HEADERS``) hold ``<redacted>``."""
    client: tuple[str, int] | None
    """The client's (host, port): one TCP connection."""
    started: float
    """``time.monotonic()`` when the request arrived."""
    body: Any = None
    """The parsed JSON body; None when it was empty, not JSON or over 1 MiB."""
    status: int | None = None
    ended: float | None = None
    """``time.monotonic()`` when the exchange ended (see ``outcome``), None while it runs."""
    outcome: Outcome | None = None
    writes: list[float] = field(default_factory=list)
    """``time.monotonic()`` as each non-empty body write went out, the first ``MAX_WRITES``:
    the ground truth a client's first-byte and first-token timings are measured against."""
    path_params: dict[str, str] = field(default_factory=dict)
    """The route's path parameters (Bedrock's ``{model}``), known once the body was read."""
    _done: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)

    @property
    def model(self) -> str | None:
        """The body's ``model``, else the route's ``{model}`` path parameter, if any."""
        body = self.body
        value = body.get("model") if isinstance(body, dict) else None
        if value is None:
            value = self.path_params.get("model")
        return value if isinstance(value, str) else None

    def wait_ended(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds until the exchange ended; True when it has."""
        return self._done.wait(timeout)


class RequestLog:
    """The records of the last ``keep`` requests, safe to read from any thread."""

    def __init__(self, keep: int = _DEFAULT_KEEP) -> None:
        self._lock = threading.Lock()
        self._items: deque[ReceivedRequest] = deque(maxlen=keep)
        self._count = 0

    @property
    def count(self) -> int:
        """How many requests arrived so far (including ones no longer kept)."""
        return self._count

    def snapshot(self, since: int = 0) -> list[ReceivedRequest]:
        """The kept records whose ``number`` is greater than ``since``, oldest first."""
        with self._lock:
            return [item for item in self._items if item.number > since]

    def clear(self) -> None:
        """Forget every record kept so far (numbering continues)."""
        with self._lock:
            self._items.clear()

    def _open(self, scope: Scope) -> ReceivedRequest:
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers", ()):
            name = raw_name.decode("latin-1").lower()
            value = REDACTED if name in SECRET_HEADERS else raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        client = scope.get("client")
        with self._lock:
            self._count += 1
            record = ReceivedRequest(
                number=self._count,
                method=str(scope.get("method", "")),
                path=str(scope.get("path", "")),
                headers=headers,
                client=(str(client[0]), int(client[1])) if client else None,
                started=time.monotonic(),
            )
            self._items.append(record)
        return record

    @staticmethod
    def _end(record: ReceivedRequest, outcome: Outcome) -> None:
        if record.outcome is None:
            record.outcome = outcome
            record.ended = time.monotonic()
            record._done.set()

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """``app`` with every HTTP request recorded here."""

        async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope.get("type") != "http":
                await app(scope, receive, send)
                return
            record = self._open(scope)
            body = bytearray()
            body_read = asyncio.Event()
            responded = False

            async def receive_recorded() -> Message:
                message = await receive()
                if message.get("type") == "http.request" and not body_read.is_set():
                    if len(body) <= _BODY_LIMIT:
                        body.extend(message.get("body", b""))
                    if not message.get("more_body", False):
                        record.body = _parse(body)
                        _keep_path_params(record, scope)  # routing ran before the app read the body
                        body_read.set()
                elif message.get("type") == "http.disconnect" and not responded:
                    self._end(record, "disconnected")
                return message

            async def send_recorded(message: Message) -> None:
                nonlocal responded
                if message.get("type") == "http.response.start":
                    record.status = int(message.get("status", 0))
                    _keep_path_params(record, scope)  # an answer sent before the body was read
                if message.get("body") and len(record.writes) < MAX_WRITES:
                    record.writes.append(time.monotonic())  # as it goes out: no client sees it earlier
                await send(message)
                if message.get("type") == "http.response.body" and not message.get("more_body", False):
                    responded = True
                    self._end(record, "complete")

            async def watch() -> None:
                # After the body, the only message left is the disconnect: it tells a client that
                # closed its connection mid-response (at once, even while the app is paused).
                await body_read.wait()
                while not responded and record.outcome is None:
                    message = await receive()
                    if message.get("type") == "http.disconnect":
                        if not responded:
                            self._end(record, "disconnected")
                        return

            watcher = asyncio.ensure_future(watch())
            try:
                await app(scope, receive_recorded, send_recorded)
            except BaseException:
                self._end(record, "failed")
                raise
            finally:
                watcher.cancel()
                with contextlib.suppress(BaseException):
                    await watcher
                if not responded:
                    self._end(record, "failed")

        return recorded


def _keep_path_params(record: ReceivedRequest, scope: Scope) -> None:
    """The route's path parameters (the router put them in the scope when it matched)."""
    params = scope.get("path_params")
    if isinstance(params, dict):
        record.path_params = {str(k): str(v) for k, v in params.items()}


def _parse(body: bytes | bytearray) -> Any:
    if not body or len(body) > _BODY_LIMIT:
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None
