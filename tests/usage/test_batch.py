"""batch(): bounded concurrency, results in request order, past failures, progress, every call logged."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from usage_helpers import text_chunks

import chunkscope as cs
from chunkscope.adapters import GenerateOptions, OpenAICompatAdapter
from chunkscope.protocol import LlmError
from chunkscope.provider import LocalProvider
from chunkscope.runtime import batch
from chunkscope.usage import UsageLog, summary


class Gate:
    """A target whose streams wait for the test to release them; counts how many run at once."""

    def __init__(self) -> None:
        self.running = 0
        self.peak = 0
        self.release = asyncio.Event()

    def stream(self, options: GenerateOptions) -> AsyncIterator[Any]:
        if options.model == "refuse":
            raise LlmError("refused before any I/O", "UNSUPPORTED_OPTION")
        return self._stream(options)

    async def _stream(self, options: GenerateOptions) -> AsyncIterator[Any]:
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await self.release.wait()
            if options.model.startswith("fail"):
                raise LlmError("boom", "SERVER")
            for chunk in text_chunks(options.model, {"inputTokens": 1, "outputTokens": 1}):
                yield chunk
        finally:
            self.running -= 1


def req(model: str) -> dict[str, Any]:
    return {"provider": "gate", "model": model, "messages": [{"role": "user", "content": "x"}]}


async def test_batch_bounds_concurrency_keeps_request_order_and_goes_on_past_failures() -> None:
    gate = Gate()
    log = UsageLog()
    seen: list[tuple[int, int]] = []
    models = ["a", "fail-1", "b", "refuse", "c", "fail-2", "d"]
    task = asyncio.ensure_future(
        batch(
            gate, [req(m) for m in models], concurrency=3, log=log, progress=lambda d, t: seen.append((d, t))
        )
    )
    for _ in range(5):
        await asyncio.sleep(0)
    assert gate.running == 3  # no more than the bound, and the bound is used
    gate.release.set()
    results = await task
    assert gate.peak == 3
    assert [r.text for r in results] == ["a", "", "b", "", "c", "", "d"]
    assert [r.error_code for r in results] == [
        None,
        "SERVER",
        None,
        "UNSUPPORTED_OPTION",
        None,
        "SERVER",
        None,
    ]
    assert seen[0] == (0, 7) and seen[-1] == (7, 7) and len(seen) == 8
    assert log.progress == (7, 7)
    frame = log.to_frame()
    assert sorted(frame["model"].astype(str)) == sorted(models)
    assert (frame["error_code"].notna()).sum() == 3
    refused = frame[frame["model"] == "refuse"].iloc[0]
    assert refused["phase"] == "before-first-chunk"


async def test_batch_against_the_local_provider_logs_a_row_per_call(provider: LocalProvider) -> None:
    log = UsageLog()
    models = ["text", "fault-500", "cache-hit", "fault-drop", "reasoning"] * 2
    requests = [GenerateOptions("deepseek", m, [{"role": "user", "content": "hi"}]) for m in models]
    async with OpenAICompatAdapter(provider.base_url, "sk-x", idle_timeout=20.0) as adapter:
        results = await cs.batch(adapter, requests, concurrency=4, log=log)
    assert [r.error_code for r in results] == [None, "SERVER", None, "TRANSPORT", None] * 2
    table = summary(log.to_frame(), by=[])
    assert table.loc["all", "calls"] == 10 and table.loc["all", "errors"] == 4
    assert table.loc["all", "cache_read_tokens"] == 2 * 7680


async def test_batch_rejects_a_bad_bound_and_bad_requests() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        await batch(Gate(), [req("a")], concurrency=0)
    with pytest.raises(TypeError, match="GenerateOptions"):
        await batch(Gate(), ["not a request"])  # type: ignore[list-item]


async def test_cancelling_a_batch_cancels_its_calls() -> None:
    gate = Gate()
    task = asyncio.ensure_future(batch(gate, [req("a"), req("b")], concurrency=2))
    for _ in range(5):
        await asyncio.sleep(0)
    assert gate.running == 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gate.running == 0
