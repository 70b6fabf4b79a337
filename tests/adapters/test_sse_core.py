"""The shared SSE core: a new wire is a request builder plus a pure translator, and gets the
credential handling, guard, limits, redirects and failure mapping without writing any of it."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from chunkscope.adapters import AbortController, GenerateOptions, OpenAICompatAdapter
from chunkscope.adapters._blocks import REASONING, TEXT, BlockWriter
from chunkscope.adapters._core import SseAdapter, SseEvent
from chunkscope.protocol import (
    AnyChunk,
    FinishReason,
    LlmError,
    StreamResult,
    TokenUsage,
    check,
    collect,
)

KEY = "sk-toy-wire-key-0123456"


class ToyTranslator:
    """A whole wire written only against the block writer: it maps the toy's lines, nothing else.

    ``data: <text>`` is text, ``data: ~<text>`` reasoning, ``data: @<name> <json>`` a whole
    tool call without an id, ``data: STOP`` the finish (one output token per line); indexes,
    ids, block order and the closing chunks are the writer's.
    """

    def __init__(self) -> None:
        self.done = False
        self.request_id: str | None = None
        self.blocks = BlockWriter("toy-")
        self.lines = 0

    def feed(self, event: SseEvent) -> list[AnyChunk]:
        data = event[1]
        self.lines += 1
        if data == "STOP":
            self.done = True
            usage = TokenUsage(input_tokens=1, output_tokens=self.lines)
            self.blocks.finish(FinishReason(kind="stop"), usage)
        elif data.startswith("~"):
            self.blocks.text(REASONING, data[1:])
        elif data.startswith("@"):
            name, _, arguments = data[1:].partition(" ")
            self.blocks.open_tool(None, name)
            self.blocks.tool_call(fragment=arguments)
        else:
            self.blocks.text(TEXT, data)
        return self.blocks.take()

    def end(self) -> list[AnyChunk]:
        if not self.done:
            raise LlmError("toy stream ended without STOP", "STREAM_CLOSED")
        return []

    def salvage(self) -> list[AnyChunk]:
        return self.blocks.take()


class ToyAdapter(SseAdapter):
    provider = "toy"
    path = "/toy/stream"
    api_name = "toy API"
    default_api_key_env = "TOY_API_KEY"

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        return {"model": options.model}

    def wire_headers(self, key: str) -> dict[str, str]:
        return {"x-toy-key": key}

    def translator(self, secrets: tuple[str, ...]) -> ToyTranslator:
        return ToyTranslator()


def toy(body: bytes | Any, status: int = 200, **kwargs: Any) -> tuple[ToyAdapter, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        content = body() if callable(body) else body
        return httpx.Response(status, headers={"content-type": "text/event-stream"}, content=content)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return ToyAdapter("http://toy.test", KEY, http_client=client, **kwargs), seen


def options(signal: Any = None) -> GenerateOptions:
    return GenerateOptions("toy", "m", [{"role": "user", "content": "hi"}], signal=signal)


async def test_a_third_wire_streams_with_only_a_request_builder_and_a_translator() -> None:
    adapter, seen = toy(b"data: Hel\n\ndata: lo\n\ndata: STOP\n\n")
    result: StreamResult = await collect(adapter.stream(options()))
    assert result.error is None and result.text == "Hello"
    [request] = seen
    assert str(request.url) == "http://toy.test/toy/stream"
    assert request.headers["x-toy-key"] == KEY
    assert request.headers["user-agent"].startswith("chunkscope/")
    assert KEY not in repr(adapter) and KEY not in repr(vars(adapter))
    fresh = ToyAdapter("http://toy.test", KEY)  # (a caller's httpx client cannot be pickled)
    assert KEY.encode() not in pickle.dumps(fresh)
    assert repr(pickle.loads(pickle.dumps(fresh))).count("$TOY_API_KEY") == 1  # the other side reads its env


async def test_a_translator_on_the_block_writer_gets_strict_output_from_any_order() -> None:
    # Reasoning resumes after text and a tool call: each run is its own block, numbered in
    # order, never interleaved; the id-less call gets a made-up id; usage, then the finish.
    lines = ["~plan", "Hi", "@add {}", "~more", "~ still", "STOP"]
    adapter, _ = toy("".join(f"data: {line}\n\n" for line in lines).encode())
    chunks = [c async for c in adapter.stream(options())]
    assert check(chunks, "strict") == []
    assert [(c.type, getattr(c, "index", None)) for c in chunks] == [
        ("block-start", 0), ("reasoning-delta", 0), ("block-end", 0),
        ("block-start", 1), ("text-delta", 1), ("block-end", 1),
        ("block-start", 2), ("tool-call-delta", 2), ("block-end", 2),
        ("block-start", 3), ("reasoning-delta", 3), ("reasoning-delta", 3), ("block-end", 3),
        ("usage", None), ("finish", None),
    ]  # fmt: skip
    result: StreamResult = await collect(adapter.stream(options()))
    assert result.text == "Hi" and result.reasoning == "planmore still"
    [call] = result.tool_calls
    assert (call.id, call.name, call.arguments) == ("toy-2", "add", "{}")
    assert result.usage is not None and result.usage.output_tokens == len(lines)


async def test_the_third_wire_gets_failure_mapping_limits_and_abort_from_the_core() -> None:
    adapter, _ = toy(b'{"error": {"message": "slow down"}}', status=429)
    with pytest.raises(LlmError) as info:
        [c async for c in adapter.stream(options())]
    assert info.value.code == "RATE_LIMIT"

    adapter, _ = toy(b"data: " + b"x" * 5000 + b"\n\n", max_event_bytes=100)
    with pytest.raises(LlmError) as info:
        [c async for c in adapter.stream(options())]
    assert info.value.code == "MALFORMED_RESPONSE"

    async def stall() -> AsyncIterator[bytes]:
        yield b"data: a\n\n"
        await asyncio.Event().wait()
        yield b""

    controller = AbortController()
    adapter, _ = toy(stall)
    got: list[AnyChunk] = []
    with pytest.raises(LlmError) as info:
        async for chunk in adapter.stream(options(controller.signal)):
            got.append(chunk)
            asyncio.get_running_loop().call_later(0.01, controller.abort)
    assert info.value.code == "ABORTED" and [c.type for c in got] == ["block-start", "text-delta"]


def test_both_real_adapters_are_sse_adapters() -> None:
    from chunkscope.adapters import AnthropicAdapter

    assert issubclass(OpenAICompatAdapter, SseAdapter) and issubclass(AnthropicAdapter, SseAdapter)
