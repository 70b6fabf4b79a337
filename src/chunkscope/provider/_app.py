"""The local provider's ASGI app (starlette): routes, request reading, faults acted out.

Routes: each wire's POST routes from the provider's wire table (``wires/``:
``/v1/chat/completions`` and ``/chat/completions``, ``/v1/messages``), and
``GET /v1/models`` (also ``/models``). Any API key is accepted and none is ever read or logged.

Requests are read defensively: a body over ``max_request_bytes`` is a 413, a
body that is not JSON (or is nested too deeply to parse) a 400, a body that
does not arrive within ``request_timeout`` a 408 — each a JSON error in the
wire's shape, and the connection is closed. (A request whose head never
completes is dropped by the server: ``_server.py``.)
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ._cache import DEFAULT_CACHE_UNIT, PromptCache, key_partition
from ._scenarios import (
    SCENARIOS,
    CutBeforeUsage,
    Drop,
    Malformed,
    Scenario,
    Script,
    Stall,
    StreamError,
    Truncate,
    collect_steps,
    get_scenario,
)
from .wires import PROVIDER_WIRES, Frame, ProviderWire

__all__ = ["MAX_REQUEST_BYTES", "REQUEST_TIMEOUT", "ConnectionDropped", "ProviderState", "build_app"]

Wire = ProviderWire

_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
_BATCH_BYTES = 16_384  # with no delay between events, write up to this much at once

MAX_REQUEST_BYTES = 8 * 1024 * 1024
"""The largest request body the provider reads (8 MiB); a larger one is answered 413."""
REQUEST_TIMEOUT = 10.0
"""Seconds a client has to send a request's head, and again its body, before it is dropped."""


class ConnectionDropped(Exception):
    """Raised inside a response body to make the server cut the connection (``fault-drop``, shutdown)."""


class ProviderState:
    """What the routes share: the pause between events, the shutdown signal, an id counter, limits,
    the prompt cache."""

    def __init__(
        self,
        token_delay: float,
        *,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        request_timeout: float = REQUEST_TIMEOUT,
        prompt_cache: PromptCache | None = None,
    ) -> None:
        self.token_delay = token_delay
        self.prompt_cache = (
            prompt_cache if prompt_cache is not None else PromptCache(unit_tokens=DEFAULT_CACHE_UNIT)
        )
        self.max_request_bytes = max_request_bytes
        self.request_timeout = request_timeout
        self.closing = asyncio.Event()
        self._ids = itertools.count(1)

    def next_id(self) -> int:
        """A number no earlier response of this provider used (for response and message ids)."""
        return next(self._ids)

    async def pause(self, seconds: float) -> bool:
        """Wait ``seconds``; true when the provider is shutting down (the stream must end)."""
        if self.closing.is_set():
            return True
        if seconds < 1.0:
            await asyncio.sleep(seconds)
            return self.closing.is_set()
        try:
            await asyncio.wait_for(self.closing.wait(), seconds)
        except TimeoutError:
            return False
        return True


# --- uvicorn logs an intended drop as an application error; keep it quiet ---------


def _is_drop(exc: BaseException | None) -> bool:
    if isinstance(exc, ConnectionDropped):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_drop(e) for e in exc.exceptions)
    return False


class _QuietDrops(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and _is_drop(record.exc_info[1]))


def install_log_filter() -> None:
    """Silence uvicorn's traceback for connections the provider drops on purpose (idempotent)."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietDrops) for f in logger.filters):
        logger.addFilter(_QuietDrops())


# --- request reading -----------------------------------------------------------------


def _error(
    wire: Wire, status: int, message: str, type_: str, code: str | None = None, *, close: bool = False
) -> JSONResponse:
    body = wire.error_body(message, type_, code)
    headers = dict(wire.error_headers(status, type_))
    if close:  # the request body was left unread, so the connection cannot serve another request
        headers["connection"] = "close"
    return JSONResponse(body, status_code=status, headers=headers or None)


async def _read_body(request: Request, wire: Wire, state: ProviderState) -> bytes | Response:
    """The whole request body, or the 413 / 408 answer when it is too large or too slow."""
    limit = state.max_request_bytes
    too_large = f"the request body is larger than this provider's limit of {limit:,} bytes"
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return _error(wire, 413, too_large, "invalid_request_error", "request_too_large", close=True)

    async def read() -> bytes | None:
        parts: list[bytes] = []
        size = 0
        async for part in request.stream():
            size += len(part)
            if size > limit:
                return None
            parts.append(part)
        return b"".join(parts)

    try:
        body = await asyncio.wait_for(read(), state.request_timeout)
    except TimeoutError:
        message = f"the request body did not arrive within {state.request_timeout:g} s"
        return _error(wire, 408, message, "invalid_request_error", "request_timeout", close=True)
    if body is None:
        return _error(wire, 413, too_large, "invalid_request_error", "request_too_large", close=True)
    return body


async def _accept(
    request: Request, wire: Wire, state: ProviderState
) -> tuple[dict[str, Any], Scenario, Script] | Response:
    """The request's body, scenario and script, or the answer that ends it early.

    Early answers: 413 / 408 for a body too large or too slow (``_read_body``),
    400 for a body that is not a JSON object with a ``model`` (nesting too deep
    to parse included), 404 for an unknown model, and the scenario's own status
    for an HTTP fault.
    """
    raw = await _read_body(request, wire, state)
    if isinstance(raw, Response):
        return raw
    try:
        body = json.loads(raw)
    except ValueError:  # UnicodeDecodeError included
        return _error(wire, 400, "the request body is not valid JSON", "invalid_request_error")
    except RecursionError:
        message = "the request body is JSON nested too deeply to read"
        return _error(wire, 400, message, "invalid_request_error")
    if not isinstance(body, dict):
        return _error(wire, 400, "the request body must be a JSON object", "invalid_request_error")
    model = wire.model_of(request.path_params, body)
    if not isinstance(model, str) or not model:
        return _error(wire, 400, "`model` is required: name one of GET /v1/models", "invalid_request_error")
    scenario = get_scenario(model)
    if scenario is None:
        message = f"The model `{model[:100]}` does not exist: GET /v1/models lists the scenarios"
        return _error(wire, 404, message, wire.not_found_type, "model_not_found")
    failed = _http_fault(scenario, wire)
    if failed is not None:
        return failed
    return body, scenario, scenario.script(*wire.conversation(body))


# --- responses ---------------------------------------------------------------------


async def _frames_to_bytes(
    frames: Iterator[Frame], delay: float, state: ProviderState
) -> AsyncIterator[bytes]:
    """Send each event after a ``delay`` pause; with no delay, events go out in batches.

    A batch is only what is ready at once (a write can carry many events, as a
    busy real server's can); a pause, a stall or a drop always flushes first.
    """
    if delay > 0:
        async for data in _paced(frames, delay, state):
            yield data
        return
    batch: list[bytes] = []
    size = 0
    for frame in frames:
        if isinstance(frame, (Drop, Stall)):
            if batch:
                yield b"".join(batch)
                batch, size = [], 0
            await _act_fault(frame, state)
            continue
        _refuse_if_closing(state)
        data = frame if isinstance(frame, bytes) else frame.encode()
        batch.append(data)
        size += len(data)
        if size >= _BATCH_BYTES:
            yield b"".join(batch)
            batch, size = [], 0
            await asyncio.sleep(0)  # a long stream without delay must not starve the others
    if batch:
        yield b"".join(batch)


async def _paced(frames: Iterator[Frame], delay: float, state: ProviderState) -> AsyncIterator[bytes]:
    """One event per write, ``delay`` seconds apart (none before the first)."""
    sent = 0
    for frame in frames:
        if isinstance(frame, (Drop, Stall)):
            await _act_fault(frame, state)
            continue
        _refuse_if_closing(state)
        if sent and await state.pause(delay):
            raise ConnectionDropped("the provider is shutting down")
        yield frame if isinstance(frame, bytes) else frame.encode()
        sent += 1


async def _act_fault(frame: Drop | Stall, state: ProviderState) -> None:
    """A drop ends the connection; a stall pauses (and ends it if the provider shuts down)."""
    if isinstance(frame, Drop):
        raise ConnectionDropped("fault-drop: the connection is dropped on purpose")
    if await state.pause(frame.seconds):
        raise ConnectionDropped("the provider is shutting down")


def _refuse_if_closing(state: ProviderState) -> None:
    if state.closing.is_set():
        raise ConnectionDropped("the provider is shutting down")


def _sse(
    frames: Iterator[Frame], delay: float, state: ProviderState, media_type: str = "text/event-stream"
) -> StreamingResponse:
    return StreamingResponse(
        _frames_to_bytes(frames, delay, state), media_type=media_type, headers=_SSE_HEADERS
    )


def _http_fault(scenario: Scenario, wire: Wire) -> Response | None:
    fault = scenario.http_fault
    if fault is None:
        return None
    body = wire.fault_body(fault)
    headers = {**wire.error_headers(fault.status, ""), **fault.headers}
    return JSONResponse(dict(body), status_code=fault.status, headers=headers)


def _whole_body(script: Script, wire: Wire, body: dict[str, Any], state: ProviderState) -> Response:
    """A non-streaming answer; a stream fault is acted out on the JSON body."""
    collected = collect_steps(script.steps)
    text = json.dumps(body, ensure_ascii=False)
    if isinstance(collected.fault, (Malformed, Truncate, CutBeforeUsage)):
        # Both end the body early: what arrives is JSON cut short.
        return Response(text[: len(text) // 2], media_type="application/json")
    if isinstance(collected.fault, StreamError):
        return JSONResponse(dict(wire.in_stream_error))
    if isinstance(collected.fault, Drop):
        frames: list[Frame] = [text[: len(text) // 2], Drop()]
        return StreamingResponse(_frames_to_bytes(iter(frames), 0.0, state), media_type="application/json")
    if collected.stall is not None:
        frames = [Stall(collected.stall), text]
        return StreamingResponse(_frames_to_bytes(iter(frames), 0.0, state), media_type="application/json")
    return Response(text, media_type="application/json")


def _cached(request: Request, wire: Wire, body: dict[str, Any], script: Script, cache: PromptCache) -> Script:
    """The script with the prompt cache's usage (per model and key: ``_cache.py``)."""
    if not cache.enabled:
        return script
    model = str(wire.model_of(request.path_params, body))
    key = key_partition(wire.facts, request.headers.items(), request.query_params.get("key"))
    return cache.apply(wire.facts, f"{model}\0{key}", body, script)


def build_app(state: ProviderState) -> Starlette:
    """The starlette app serving every scenario of ``SCENARIOS``."""

    def delay_for(scenario: Scenario) -> float:
        return max(state.token_delay, scenario.delay)

    def answer(wire: ProviderWire) -> Callable[[Request], Awaitable[Response]]:
        async def respond(request: Request) -> Response:
            read = await _accept(request, wire, state)
            if isinstance(read, Response):
                return read
            body, scenario, script = read
            script = _cached(request, wire, body, script, state.prompt_cache)
            if scenario.first_byte_delay and await state.pause(scenario.first_byte_delay):
                raise ConnectionDropped("the provider is shutting down")
            number, created = state.next_id(), int(time.time())
            if wire.streamed(request.url.path, body):
                frames = wire.stream(script, body, number, created)
                return _sse(frames, delay_for(scenario), state, wire.media_type)
            return _whole_body(script, wire, wire.whole(script, body, number, created), state)

        return respond

    async def models(request: Request) -> Response:
        # The OpenAI list format, with the fields Anthropic's model list has too.
        data = [
            {
                "id": name,
                "object": "model",
                "created": 0,
                "owned_by": "chunkscope",
                "type": "model",
                "display_name": name,
                "created_at": "1970-01-01T00:00:00Z",
            }
            for name in SCENARIOS
        ]
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "has_more": False,
                "first_id": data[0]["id"],
                "last_id": data[-1]["id"],
            }
        )

    return Starlette(
        routes=[
            *(
                Route(path, answer(wire), methods=["POST"])
                for wire in PROVIDER_WIRES.values()
                for path in wire.routes
            ),
            Route("/v1/models", models, methods=["GET"]),
            Route("/models", models, methods=["GET"]),
        ]
    )
