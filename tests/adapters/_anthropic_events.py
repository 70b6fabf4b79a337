"""Builders of Anthropic Messages stream events, shared by the Anthropic adapter tests.

Each builder returns ``(event_name, data)`` as the wire sends it; ``sse_body``
renders a list of them as an SSE response body. ``abort_once_live`` aborts a
live stream and measures how fast it ends.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from chunkscope.adapters._base import AbortController, AbortSignal
from chunkscope.protocol import AnyChunk, LlmError

Event = tuple[str, dict[str, Any]]


def message_start(
    input_tokens: int = 12,
    *,
    cache_read: int | None = None,
    cache_write: int | None = None,
    output_tokens: int = 1,
) -> Event:
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if cache_write is not None:
        usage["cache_creation_input_tokens"] = cache_write
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "model": "test-model",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
    )


def text_start(index: int, text: str = "") -> Event:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": text}},
    )


def thinking_start(index: int) -> Event:
    return (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
    )


def tool_start(index: int, call_id: str = "toolu_1", name: str = "get_weather", **extra: Any) -> Event:
    block: dict[str, Any] = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    block.update(extra)
    return ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


def _delta(index: int, delta: dict[str, Any]) -> Event:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def text_delta(index: int, text: str) -> Event:
    return _delta(index, {"type": "text_delta", "text": text})


def thinking_delta(index: int, text: str) -> Event:
    return _delta(index, {"type": "thinking_delta", "thinking": text})


def signature_delta(index: int, signature: str) -> Event:
    return _delta(index, {"type": "signature_delta", "signature": signature})


def json_delta(index: int, partial: str) -> Event:
    return _delta(index, {"type": "input_json_delta", "partial_json": partial})


def block_stop(index: int) -> Event:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def message_delta(stop_reason: str | None = "end_turn", output_tokens: int = 5, **usage: Any) -> Event:
    return (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens, **usage},
        },
    )


def message_stop() -> Event:
    return ("message_stop", {"type": "message_stop"})


def ping() -> Event:
    return ("ping", {"type": "ping"})


def error(error_type: str, message: str) -> Event:
    return ("error", {"type": "error", "error": {"type": error_type, "message": message}})


def text_reply(*pieces: str, stop_reason: str = "end_turn", output_tokens: int = 5) -> list[Event]:
    """A whole stream: one text block of ``pieces``."""
    return [
        message_start(),
        text_start(0),
        *(text_delta(0, p) for p in pieces),
        block_stop(0),
        message_delta(stop_reason, output_tokens),
        message_stop(),
    ]


def sse_body(events: list[Event]) -> bytes:
    """Render events as an SSE body (``event:`` / ``data:`` pairs)."""
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


async def abort_once_live(
    stream: Callable[[AbortSignal], AsyncIterator[AnyChunk]], *, live_after: int = 3
) -> tuple[LlmError, float]:
    """Consume ``stream(signal)`` in a task and abort once ``live_after`` chunks arrived.

    Returns the ``LlmError`` the stream raised and the seconds from the abort to
    that raise; fails the test when the stream ends without raising one.
    """
    controller = AbortController()
    live = asyncio.Event()
    count = 0

    async def consume() -> None:
        nonlocal count
        async for _chunk in stream(controller.signal):
            count += 1
            if count == live_after:
                live.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(live.wait(), 10)
    started = time.perf_counter()
    controller.abort("user pressed stop")
    try:
        await task
    except LlmError as error:
        return error, time.perf_counter() - started
    raise AssertionError("the stream ended without raising after the abort")
