"""``LocalProvider``: the scenario app served by uvicorn on loopback, in a thread of its own.

The server runs its own event loop in a background thread, so it works the
same from a script, from async code and inside a Jupyter kernel (whose main
thread already runs a loop). The socket is bound in the caller's thread before
the server starts, so a port clash raises at ``start()`` and ``url`` is known
at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import threading
import time
from types import TracebackType

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ._app import MAX_REQUEST_BYTES, REQUEST_TIMEOUT, ProviderState, build_app, install_log_filter
from ._cache import DEFAULT_CACHE_MIN, DEFAULT_CACHE_UNIT, PromptCache
from ._recorder import ReceivedRequest, RequestLog

__all__ = ["LocalProvider"]

_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 10.0


def _loopback(host: str) -> tuple[str, socket.AddressFamily]:
    """The address to bind for ``host``; a ``ValueError`` for anything but loopback."""
    if host == "localhost":
        return "127.0.0.1", socket.AF_INET
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise ValueError(
            f"LocalProvider only listens on a loopback address (127.0.0.1, ::1, localhost), not {host!r}"
        )
    return str(address), socket.AF_INET6 if address.version == 6 else socket.AF_INET


class _HeadDeadline(H11Protocol):
    """uvicorn's h11 protocol, plus a deadline for each request's head.

    uvicorn's keep-alive timer stops at the first byte a client sends, so a
    client that sends half a request line or half its headers and goes quiet
    would hold its connection forever. Here a timer runs from the connection's
    start and from each response's end until a complete request head arrives;
    when it fires, the connection is closed. (The body has its own deadline in
    the app.) ``head_timeout`` is set per provider on a subclass.
    """

    head_timeout: float = REQUEST_TIMEOUT
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        if self.cycle is not before:  # a complete request head arrived
            self._cancel_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_head_timer()  # the next request's head, if the client keeps the connection

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_expired)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_expired(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()


class LocalProvider:
    """A real HTTP server on loopback that answers as the real servers of every wire do.

    ``with LocalProvider() as provider:`` (or ``async with``, or
    ``start()``/``stop()``) serves on ``host`` (loopback only: anything else
    raises ``ValueError``) and ``port`` (0: a free port). ``provider.url`` is
    the root and ``provider.base_url`` is ``url + "/v1"``; a wire's adapter and
    official SDK take ``WIRE_FACTS[name].base_url(provider.url)``, one of the two
    (``chunkscope serve`` prints each). The request's ``model`` picks a scenario of
    ``SCENARIOS`` (``docs/scenarios.md``); ``token_delay`` is the pause in
    seconds between streamed events for every scenario. Any API key is
    accepted and none is logged. ``requests`` lists what was received
    (credential headers redacted), for tests and the conformance kit.
    ``stop()`` ends streams still open (a stalled one included) and returns
    within a second or so.

    Hostile clients are bounded: a request body over ``max_request_bytes``
    (default 8 MiB) is answered 413, a body that is not JSON or is nested too
    deeply 400, and a client that takes longer than ``request_timeout``
    seconds (default 10) to send a request's head, or its body, is dropped
    (408 for a slow body).

    The provider models a prompt cache, DeepSeek's way (``prompt_cache=True``, the default): a
    request's prompt tokens are its serialized prompt's characters / 4, and its cached tokens
    the longest prefix, in whole units of ``cache_unit`` tokens (default 64), that an earlier
    request of the same model and key sent; ``clear_cache()`` forgets every prefix (as a
    provider's cache expiring). A prompt under ``cache_min`` tokens (default 1,024) is not
    cached and keeps its scenario's usage.
    ``docs/scenarios.md`` describes the model.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        token_delay: float = 0.0,
        *,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        request_timeout: float = REQUEST_TIMEOUT,
        prompt_cache: bool = True,
        cache_unit: int = DEFAULT_CACHE_UNIT,
        cache_min: int = DEFAULT_CACHE_MIN,
    ) -> None:
        self.prompt_cache = PromptCache(
            enabled=bool(prompt_cache), unit_tokens=cache_unit, min_tokens=cache_min
        )
        """The prompt cache every request reads and fills (``clear_cache()`` empties it)."""
        self._bind_host, self._family = _loopback(host)
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0..65535, not {port}")
        if token_delay < 0:
            raise ValueError(f"token_delay must be >= 0 seconds, not {token_delay}")
        self.host = host
        self.port = port
        self.token_delay = float(token_delay)
        if max_request_bytes < 1 or not request_timeout > 0:
            raise ValueError("max_request_bytes and request_timeout must be positive")
        self.max_request_bytes = max_request_bytes
        self.request_timeout = float(request_timeout)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._state: ProviderState | None = None
        self._bound_port: int | None = None
        self._lock = threading.Lock()
        self.request_log = RequestLog()
        """Every request received (headers without secrets, JSON body, how it ended)."""

    def clear_cache(self) -> None:
        """Forget every cached prompt prefix: the next request of any prompt is a cache miss."""
        self.prompt_cache.clear()

    # --- addresses -------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True between a successful ``start()`` and ``stop()``."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, the server's root (Anthropic SDK ``base_url``)."""
        if self._bound_port is None:
            raise RuntimeError(
                "the LocalProvider is not running: use `with LocalProvider() as p:` or `start()`"
            )
        host = f"[{self._bind_host}]" if self._family == socket.AF_INET6 else self._bind_host
        return f"http://{host}:{self._bound_port}"

    @property
    def base_url(self) -> str:
        """``url + "/v1"`` (OpenAI SDK ``base_url``)."""
        return self.url + "/v1"

    @property
    def requests(self) -> list[ReceivedRequest]:
        """The requests received so far (the last 1000), oldest first; credentials never stored."""
        return self.request_log.snapshot()

    def __repr__(self) -> str:
        where = self.url if self._bound_port is not None else "not running"
        return f"<LocalProvider {where} token_delay={self.token_delay}>"

    # --- lifecycle --------------------------------------------------------------

    def start(self) -> LocalProvider:
        """Bind, start serving in a background thread, return once requests are answered."""
        with self._lock:
            if self.running:
                return self
            # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP;
            # without it a stream's first body write waits out the client's delayed ACK (~40 ms).
            sock = socket.socket(self._family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((self._bind_host, self.port))
            except OSError:
                sock.close()
                raise
            sock.set_inheritable(True)
            install_log_filter()
            state = ProviderState(
                self.token_delay,
                max_request_bytes=self.max_request_bytes,
                request_timeout=self.request_timeout,
                prompt_cache=self.prompt_cache,
            )
            protocol = type("_ProviderH11", (_HeadDeadline,), {"head_timeout": self.request_timeout})
            config = uvicorn.Config(
                self.request_log.wrap(build_app(state)),
                log_config=None,
                log_level="warning",
                access_log=False,
                lifespan="off",
                loop="asyncio",
                http=protocol,
                ws="none",
                timeout_graceful_shutdown=1,
            )
            server = uvicorn.Server(config)
            failure: list[BaseException] = []

            def run() -> None:
                async def serve() -> None:
                    self._loop = asyncio.get_running_loop()
                    await server.serve(sockets=[sock])

                try:
                    asyncio.run(serve())
                except BaseException as exc:  # reported to start()
                    failure.append(exc)

            thread = threading.Thread(target=run, name="chunkscope-local-provider", daemon=True)
            thread.start()
            deadline = time.monotonic() + _START_TIMEOUT
            while not server.started:
                if not thread.is_alive() or time.monotonic() > deadline:
                    server.should_exit = True
                    thread.join(_STOP_TIMEOUT)
                    sock.close()
                    cause = failure[0] if failure else None
                    raise RuntimeError("the LocalProvider's server did not start") from cause
                time.sleep(0.002)
            self._server, self._thread, self._state = server, thread, state
            self._bound_port = sock.getsockname()[1]
            return self

    def stop(self) -> None:
        """End open streams, stop the server and join its thread (idempotent)."""
        with self._lock:
            server, thread, state, loop = self._server, self._thread, self._state, self._loop
            self._server = self._thread = self._state = self._loop = None
            self._bound_port = None
            if server is None or thread is None:
                return
            if state is not None and loop is not None and not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop closed in between
                    loop.call_soon_threadsafe(state.closing.set)
            server.should_exit = True
            thread.join(_STOP_TIMEOUT)
            if thread.is_alive():
                server.force_exit = True
                thread.join(_STOP_TIMEOUT)

    def __enter__(self) -> LocalProvider:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> LocalProvider:
        # In a thread, so the caller's event loop keeps running while the server starts.
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)
