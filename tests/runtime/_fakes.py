"""Test doubles for the runtime tests: a scripted multi-call adapter and a fake sleep."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from chunkscope.adapters import OPTIONAL_OPTIONS, GenerateOptions, LlmAdapter, ModelInfo
from chunkscope.protocol import AnyChunk, LlmError, parse_chunk


def text_reply(text: str, *, usage: tuple[int, int] = (10, 5)) -> list[dict[str, Any]]:
    """A complete text answer."""
    return [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "usage": {"inputTokens": usage[0], "outputTokens": usage[1]}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


def tool_reply(*calls: tuple[str, str, str], usage: tuple[int, int] = (10, 5)) -> list[dict[str, Any]]:
    """A step asking for tool calls ``(id, name, arguments_json)``."""
    out: list[dict[str, Any]] = []
    for i, (cid, name, args) in enumerate(calls):
        out += [
            {"type": "block-start", "index": i, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": i, "id": cid, "name": name, "argumentsDelta": args},
            {
                "type": "block-end",
                "index": i,
                "block": {"type": "tool-call", "id": cid, "name": name, "arguments": args},
            },
        ]
    out += [
        {"type": "usage", "usage": {"inputTokens": usage[0], "outputTokens": usage[1]}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ]
    return out


class Call:
    """One scripted call: chunks, then optionally an exception (any, to test defects)."""

    def __init__(
        self, chunks: Sequence[dict[str, Any]] = (), error: BaseException | None = None, hang: bool = False
    ) -> None:
        self.chunks = [parse_chunk(c) for c in chunks]
        self.error = error
        self.hang = hang


class SequenceAdapter(LlmAdapter):
    """Plays ``calls[i]`` on the i-th ``stream()`` call (the last one repeats); counts calls."""

    provider = "seq"
    supported_options = frozenset(OPTIONAL_OPTIONS)

    def __init__(
        self,
        calls: Sequence[Call],
        *,
        models: Sequence[ModelInfo] = (),
        supported: frozenset[str] | None = None,
    ) -> None:
        self.script = list(calls)
        self.calls: list[GenerateOptions] = []
        self._models = list(models)
        if supported is not None:
            self.supported_options = supported  # type: ignore[misc]

    def models(self) -> list[ModelInfo]:
        return list(self._models)

    async def stream(self, options: GenerateOptions) -> AsyncIterator[AnyChunk]:
        options = self.prepare(options)
        self.calls.append(options)
        call = self.script[min(len(self.calls) - 1, len(self.script) - 1)]
        for chunk in call.chunks:
            yield chunk
        if call.hang:
            await asyncio.Event().wait()  # stalls until cancelled
        if call.error is not None:
            raise call.error


def llm_error(code: str, **kw: Any) -> LlmError:
    return LlmError(f"{code.lower()} failure", code, **kw)


class FakeSleep:
    """An ``asyncio.sleep`` stand-in that records the waits and returns at once (or never)."""

    def __init__(self, *, block: bool = False) -> None:
        self.waits: list[float] = []
        self.block = block

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        if self.block:
            await asyncio.Event().wait()
        await asyncio.sleep(0)
