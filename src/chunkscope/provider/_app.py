"""The local provider's ASGI app (starlette): routes, request reading, faults acted out.

Routes: ``POST /v1/chat/completions`` (also ``/chat/completions``, DeepSeek's
unversioned path), ``POST /v1/messages``, ``GET /v1/models`` (also
``/models``). Any API key is accepted and none is ever read or logged.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ._anthropic_wire import IN_STREAM_ERROR as ANTHROPIC_STREAM_ERROR
from ._anthropic_wire import anthropic_body, anthropic_stream
from ._openai_wire import IN_STREAM_ERROR as OPENAI_STREAM_ERROR
from ._openai_wire import Frame, openai_body, openai_stream
from ._scenarios import (
    SCENARIOS,
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

__all__ = ["ConnectionDropped", "ProviderState", "build_app"]

Wire = Literal["openai", "anthropic"]

_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
_BATCH_BYTES = 16_384  # with no delay between events, write up to this much at once


class ConnectionDropped(Exception):
    """Raised inside a response body to make the server cut the connection (``fault-drop``, shutdown)."""


class ProviderState:
    """What the routes share: the pause between events, the shutdown signal, an id counter."""

    def __init__(self, token_delay: float) -> None:
        self.token_delay = token_delay
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
        except asyncio.TimeoutError:
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


def _error(wire: Wire, status: int, message: str, type_: str, code: str | None = None) -> JSONResponse:
    if wire == "openai":
        body: dict[str, Any] = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    else:
        body = {"type": "error", "error": {"type": type_, "message": message}}
        if code is not None:
            body["error"]["code"] = code
    return JSONResponse(body, status_code=status)


async def _accept(request: Request, wire: Wire) -> tuple[dict[str, Any], Scenario, Script] | Response:
    """The request's body, scenario and script, or the answer that ends it early.

    Early answers: 400 for a body that is not a JSON object with a ``model``,
    404 for an unknown model, and the scenario's own status for an HTTP fault.
    """
    try:
        body = json.loads(await request.body())
    except ValueError:
        return _error(wire, 400, "the request body is not valid JSON", "invalid_request_error")
    if not isinstance(body, dict):
        return _error(wire, 400, "the request body must be a JSON object", "invalid_request_error")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return _error(wire, 400, "`model` is required: name one of GET /v1/models", "invalid_request_error")
    scenario = get_scenario(model)
    if scenario is None:
        message = f"The model `{model[:100]}` does not exist: GET /v1/models lists the scenarios"
        if wire == "openai":
            return _error(wire, 404, message, "invalid_request_error", "model_not_found")
        return _error(wire, 404, message, "not_found_error", "model_not_found")
    failed = _http_fault(scenario, wire)
    if failed is not None:
        return failed
    return body, scenario, scenario.script(_last_user_text(body))


def _last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message (string content, or its text parts joined)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(
                part["text"]
                for part in content
                if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
            )
        return ""
    return ""


# --- responses ---------------------------------------------------------------------


async def _frames_to_bytes(
    frames: Iterator[Frame], delay: float, state: ProviderState
) -> AsyncIterator[bytes]:
    """Send each event after a ``delay`` pause; with no delay, events go out in batches.

    A batch is only what is ready at once (a write can carry many events, as a
    busy real server's can); a pause, a stall or a drop always flushes first.
    """
    batch: list[str] = []
    size = 0
    sent = 0
    for frame in frames:
        if isinstance(frame, (Drop, Stall)):
            if batch:
                yield "".join(batch).encode()
                batch, size = [], 0
            if isinstance(frame, Drop):
                raise ConnectionDropped("fault-drop: the connection is dropped on purpose")
            if await state.pause(frame.seconds):
                raise ConnectionDropped("the provider is shutting down")
            continue
        if state.closing.is_set():
            raise ConnectionDropped("the provider is shutting down")
        if delay > 0:
            if sent and await state.pause(delay):
                raise ConnectionDropped("the provider is shutting down")
            yield frame.encode()
            sent += 1
            continue
        batch.append(frame)
        size += len(frame)
        if size >= _BATCH_BYTES:
            yield "".join(batch).encode()
            batch, size = [], 0
            await asyncio.sleep(0)  # a long stream without delay must not starve the others
    if batch:
        yield "".join(batch).encode()


def _sse(frames: Iterator[Frame], delay: float, state: ProviderState) -> StreamingResponse:
    return StreamingResponse(
        _frames_to_bytes(frames, delay, state), media_type="text/event-stream", headers=_SSE_HEADERS
    )


def _http_fault(scenario: Scenario, wire: Wire) -> Response | None:
    fault = scenario.http_fault
    if fault is None:
        return None
    body = fault.openai_body if wire == "openai" else fault.anthropic_body
    return JSONResponse(dict(body), status_code=fault.status, headers=dict(fault.headers))


def _whole_body(script: Script, wire: Wire, body: dict[str, Any], state: ProviderState) -> Response:
    """A non-streaming answer; a stream fault is acted out on the JSON body."""
    collected = collect_steps(script.steps)
    text = json.dumps(body, ensure_ascii=False)
    if isinstance(collected.fault, (Malformed, Truncate)):
        # Both end the body early: what arrives is JSON cut short.
        return Response(text[: len(text) // 2], media_type="application/json")
    if isinstance(collected.fault, StreamError):
        return JSONResponse(OPENAI_STREAM_ERROR if wire == "openai" else ANTHROPIC_STREAM_ERROR)
    if isinstance(collected.fault, Drop):
        frames: list[Frame] = [text[: len(text) // 2], Drop()]
        return StreamingResponse(_frames_to_bytes(iter(frames), 0.0, state), media_type="application/json")
    if collected.stall is not None:
        frames = [Stall(collected.stall), text]
        return StreamingResponse(_frames_to_bytes(iter(frames), 0.0, state), media_type="application/json")
    return Response(text, media_type="application/json")


def build_app(state: ProviderState) -> Starlette:
    """The starlette app serving every scenario of ``SCENARIOS``."""

    def delay_for(scenario: Scenario) -> float:
        return max(state.token_delay, scenario.delay)

    async def chat_completions(request: Request) -> Response:
        read = await _accept(request, "openai")
        if isinstance(read, Response):
            return read
        body, scenario, script = read
        model = body["model"]
        response_id = f"chatcmpl-chunkscope-{state.next_id():06d}"
        created = int(time.time())
        if body.get("stream") is True:
            options = body.get("stream_options")
            include_usage = isinstance(options, dict) and options.get("include_usage") is True
            frames = openai_stream(
                script, model=model, response_id=response_id, created=created, include_usage=include_usage
            )
            return _sse(frames, delay_for(scenario), state)
        whole = openai_body(script, model=model, response_id=response_id, created=created)
        return _whole_body(script, "openai", whole, state)

    async def messages(request: Request) -> Response:
        read = await _accept(request, "anthropic")
        if isinstance(read, Response):
            return read
        body, scenario, script = read
        model = body["model"]
        message_id = f"msg_chunkscope_{state.next_id():06d}"
        if body.get("stream") is True:
            frames = anthropic_stream(script, model=model, message_id=message_id)
            return _sse(frames, delay_for(scenario), state)
        whole = anthropic_body(script, model=model, message_id=message_id)
        return _whole_body(script, "anthropic", whole, state)

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
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/messages", messages, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/models", models, methods=["GET"]),
        ]
    )
