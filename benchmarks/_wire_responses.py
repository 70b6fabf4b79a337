"""The OpenAI Responses wire's rows for ``bench_adapters.py``: floor, adapter and SDK over the same bytes.

The stream is a text reply as OpenAI sends it: ``response.created``, ``response.in_progress``,
a message item with one ``output_text`` part, one ``response.output_text.delta`` per token,
the ``….done`` events and ``response.completed`` with the usage. The floor is the wire's
framing (split on blank lines, the ``data:`` line) plus ``json.loads`` of every payload;
the adapter and the ``openai`` SDK (``responses.create(stream=True)``) read the same bytes
through an in-memory transport.

Run alone: ``python benchmarks/_wire_responses.py [--events N]``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import time
from collections.abc import Callable
from typing import Any

import httpx

from chunkscope.adapters import GenerateOptions
from chunkscope.adapters.openai_responses import OpenAIResponsesAdapter

MODEL = "gpt-5-mini"
BASE_URL = "http://bench.test/v1"


def build_stream(events: int) -> tuple[bytes, int]:
    """A Responses text stream of about ``events`` events, and its exact event count."""
    parts: list[str] = []

    def event(kind: str, **fields: Any) -> None:
        payload = {"type": kind, **fields, "sequence_number": len(parts)}
        parts.append(f"event: {kind}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n")

    response = {
        "id": "resp_bench",
        "object": "response",
        "status": "in_progress",
        "model": MODEL,
        "output": [],
    }
    event("response.created", response=response)
    event("response.in_progress", response=response)
    item = {"id": "msg_bench", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    event("response.output_item.added", output_index=0, item=item)
    part = {"type": "output_text", "annotations": [], "text": ""}
    event("response.content_part.added", item_id="msg_bench", output_index=0, content_index=0, part=part)
    words = [f" word{i}" for i in range(max(1, events - 8))]
    for word in words:
        event(
            "response.output_text.delta",
            item_id="msg_bench",
            output_index=0,
            content_index=0,
            delta=word,
            logprobs=[],
        )
    text = "".join(words)
    event(
        "response.output_text.done",
        item_id="msg_bench",
        output_index=0,
        content_index=0,
        text=text,
        logprobs=[],
    )
    whole = {**part, "text": text}
    event("response.content_part.done", item_id="msg_bench", output_index=0, content_index=0, part=whole)
    done = {**item, "status": "completed", "content": [whole]}
    event("response.output_item.done", output_index=0, item=done)
    usage = {
        "input_tokens": 9,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": len(words),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 9 + len(words),
    }
    event(
        "response.completed", response={**response, "status": "completed", "output": [done], "usage": usage}
    )
    return "".join(parts).encode(), len(parts)


def floor(raw: bytes) -> int:
    """The framing (events split on blank lines, the ``data:`` line) and ``json.loads`` of each."""
    loads = json.loads
    n = 0
    for block in raw.decode().split("\n\n"):
        at = block.find("data: ")
        if at >= 0:
            loads(block[at + 6 :])
            n += 1
    return n


def floor_fast_json(raw: bytes) -> int:
    """The floor with the adapters' JSON parser (``pydantic_core.from_json``) for ``json.loads``:
    a reference row, not the floor (what the adapter costs over its own parser)."""
    from pydantic_core import from_json

    n = 0
    for block in raw.decode().split("\n\n"):
        at = block.find("data: ")
        if at >= 0:
            from_json(block[at + 6 :])
            n += 1
    return n


def _mock_client(raw: bytes) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=raw)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def adapter(raw: bytes) -> int:
    async with _mock_client(raw) as http:
        built = OpenAIResponsesAdapter(BASE_URL, "bench", http_client=http)
        options = GenerateOptions("openai", MODEL, [{"role": "user", "content": "benchmark"}])
        n = 0
        async for _ in built.stream(options):
            n += 1
        return n


async def sdk(raw: bytes) -> int:
    from openai import AsyncOpenAI

    async with _mock_client(raw) as http:
        client = AsyncOpenAI(base_url=BASE_URL, api_key="bench", http_client=http)
        stream = await client.responses.create(model=MODEL, input="benchmark", stream=True)
        n = 0
        async for _ in stream:
            n += 1
        return n


def contenders(events: int, loop: asyncio.AbstractEventLoop) -> dict[str, Any]:
    """This wire's rows for ``bench_adapters.wire_rows``: the event count, floor, adapter, SDK."""
    raw, count = build_stream(events)
    return {
        "events": count,
        "floor": ("responses floor: split + json.loads", lambda: floor(raw)),
        "adapter": ("OpenAIResponsesAdapter, mock transport", lambda: loop.run_until_complete(adapter(raw))),
        "sdk": (
            "openai SDK responses.create(stream=True), mock transport",
            lambda: loop.run_until_complete(sdk(raw)),
        ),
        "extra": [
            ("   floor with pydantic_core.from_json (the adapter's parser)", lambda: floor_fast_json(raw))
        ],
    }


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    loop = asyncio.new_event_loop()
    try:
        rows = contenders(args.events, loop)
        named: list[tuple[str, Callable[[], Any]]] = [rows["floor"], rows["adapter"], rows["sdk"]]
        best = {name: math.inf for name, _ in named}
        for _ in range(args.repeat):
            for name, fn in named:
                gc.collect()
                start = time.perf_counter()
                fn()
                best[name] = min(best[name], time.perf_counter() - start)
    finally:
        loop.close()
    per_event = {name: t / rows["events"] * 1e6 for name, t in best.items()}
    floor_us, adapter_us, sdk_us = (per_event[rows[k][0]] for k in ("floor", "adapter", "sdk"))
    for name, t in per_event.items():
        print(f"{name:<60} {t:8.2f} µs/event  {t / floor_us:6.2f} x floor")
    print(f"adapter / floor = {adapter_us / floor_us:.2f}  (target: at most 1.3)")
    print(f"SDK / adapter   = {sdk_us / adapter_us:.1f}  (target: at least 10)")


if __name__ == "__main__":
    main()
