"""Hand-built DeepSeek / OpenAI chat-completions SSE bytes and a mock-transport harness.

Test helpers only: ``chunk(...)`` builds one ``chat.completion.chunk`` payload,
``sse(...)`` frames payloads as the wire does, ``MockServer`` answers every
request with given bytes through ``httpx.MockTransport`` and remembers the
requests it saw.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import httpx

from chunkscope.adapters._base import GenerateOptions
from chunkscope.adapters.openai_compat import OpenAICompatAdapter
from chunkscope.protocol import StreamResult, collect

API_KEY = "sk-test-DO-NOT-LEAK-1234567890"
BASE_URL = "http://mock.test/v1"


def chunk(
    *,
    content: str | None = None,
    reasoning: str | None = None,
    tools: list[dict[str, Any]] | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    no_choices: bool = False,
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` payload (only the keys given are set in the delta)."""
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    if tools is not None:
        delta["tool_calls"] = tools
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "deepseek-chat",
        "choices": [] if no_choices else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def tool(
    index: int, *, id: str | None = None, name: str | None = None, arguments: str | None = None
) -> dict[str, Any]:
    """One ``delta.tool_calls[i]`` fragment."""
    out: dict[str, Any] = {"index": index}
    function: dict[str, Any] = {}
    if id is not None:
        out["id"] = id
        out["type"] = "function"
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    if function:
        out["function"] = function
    return out


def usage(prompt: int = 10, completion: int = 5, **extra: Any) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        **extra,
    }


def sse(*payloads: dict[str, Any] | str, done: bool = True) -> bytes:
    """Frame payloads as ``data: <json>\\n\\n`` events, then ``data: [DONE]`` unless ``done=False``."""
    parts = [f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n" for p in payloads]
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


class MockServer:
    """Answers every request with ``status``/``headers``/``body`` (bytes or an async byte iterator)."""

    def __init__(
        self,
        body: bytes | Callable[[], AsyncIterator[bytes]] = b"",
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.body = body
        self.status = status
        self.headers = {"content-type": "text/event-stream", **(headers or {})}
        self.requests: list[httpx.Request] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = self.body
        if callable(body):
            return httpx.Response(self.status, headers=self.headers, content=body())
        return httpx.Response(self.status, headers=self.headers, content=body)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handler))

    def adapter(self, **kwargs: Any) -> OpenAICompatAdapter:
        kwargs.setdefault("idle_timeout", 5.0)
        return OpenAICompatAdapter(BASE_URL, API_KEY, http_client=self.client(), **kwargs)

    def json_body(self, n: int = -1) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.requests[n].content)
        return result


def options(model: str = "deepseek-chat", prompt: str = "hi", **kwargs: Any) -> GenerateOptions:
    return GenerateOptions("deepseek", model, [{"role": "user", "content": prompt}], **kwargs)


async def run(body: bytes, **kwargs: Any) -> StreamResult:
    """Stream ``body`` through a fresh adapter and collect it (strict profile)."""
    server = MockServer(body)
    adapter = server.adapter()
    try:
        return await collect(adapter.stream(options(**kwargs)))
    finally:
        await adapter.http_client.aclose()


def types_of(chunks: Iterable[Any]) -> list[str]:
    return [c.type for c in chunks]
