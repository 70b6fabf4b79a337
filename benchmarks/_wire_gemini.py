"""The Gemini wire's contenders for benchmarks/bench_adapters.py: floor, adapter, official SDK.

One ``streamGenerateContent`` stream as generativelanguage.googleapis.com frames it (CRLF
between events; every event a whole ``GenerateContentResponse`` with its ``usageMetadata``,
``modelVersion`` and ``responseId``): thought parts, then text parts, then two whole
``functionCall`` parts and the ``finishReason``. Parsed by

- the floor: split the bytes into events by hand (``\\r\\n\\r\\n``) and ``json.loads`` each payload;
- ``GeminiAdapter`` over an ``httpx.MockTransport`` serving the bytes;
- the official ``google-genai`` SDK (``client.aio.models.generate_content_stream``) over the
  same transport (``HttpOptions(async_client_args={"transport": …})``).

Run alone: ``python benchmarks/_wire_gemini.py [--events N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import httpx

from chunkscope.adapters import GeminiAdapter, GenerateOptions

MODEL = "gemini-2.5-flash"
_NEWLINE = "\r\n"


def _event(parts: list[dict[str, Any]], usage: dict[str, Any], finish: str | None = None) -> str:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    body = {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": MODEL,
        "responseId": "0sQtafSVLqm1nvgPj9CM8Q0",
    }
    return "data: " + json.dumps(body, separators=(",", ":")) + _NEWLINE + _NEWLINE


def build_stream(events: int) -> tuple[bytes, int]:
    """Gemini SSE bytes with ``events`` events; returns (bytes, event count)."""
    prompt = {"promptTokenCount": 1200, "totalTokenCount": 1200, "cachedContentTokenCount": 1024}
    thoughts = events * 4 // 10
    text = events - thoughts - 3
    parts = [_event([{"text": f" thought{i}", "thought": True}], prompt) for i in range(thoughts)]
    parts += [_event([{"text": f" word{i}"}], prompt) for i in range(text)]
    for call in range(2):
        args = {"items": [f"item{i}" for i in range(8)], "query": f"search {call}"}
        parts.append(_event([{"functionCall": {"name": "search", "args": args}}], prompt))
    usage = {
        "promptTokenCount": 1200,
        "cachedContentTokenCount": 1024,
        "candidatesTokenCount": events - thoughts,
        "thoughtsTokenCount": thoughts,
        "totalTokenCount": 1200 + events,
    }
    parts.append(_event([{"text": ""}], usage, finish="STOP"))
    return "".join(parts).encode(), len(parts)


def floor(raw: bytes) -> int:
    """The wire's framing by hand plus ``json.loads`` of every payload."""
    loads = json.loads
    n = 0
    for event in raw.decode().split("\r\n\r\n"):
        if event.startswith("data: "):
            loads(event[6:])
            n += 1
    return n


def floor_fast_json(raw: bytes) -> int:
    """The floor with the adapters' JSON parser (``pydantic_core.from_json``) for ``json.loads``:
    a reference row, not the floor (what the adapter costs over its own parser)."""
    from pydantic_core import from_json

    n = 0
    for event in raw.decode().split("\r\n\r\n"):
        if event.startswith("data: "):
            from_json(event[6:])
            n += 1
    return n


def _transport(raw: bytes) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=raw)

    return httpx.MockTransport(handler)


async def adapter(raw: bytes) -> int:
    async with (
        httpx.AsyncClient(transport=_transport(raw)) as http,
        GeminiAdapter("http://bench.test", "bench", http_client=http) as gemini,
    ):
        options = GenerateOptions("google", MODEL, [{"role": "user", "content": "benchmark"}])
        n = 0
        async for _ in gemini.stream(options):
            n += 1
        return n


async def sdk(raw: bytes) -> int:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(
        base_url="http://bench.test", async_client_args={"transport": _transport(raw)}
    )
    client = genai.Client(api_key="bench", http_options=options)
    n = 0
    async for _ in await client.aio.models.generate_content_stream(model=MODEL, contents="benchmark"):
        n += 1
    return n


def contenders(events: int, loop: asyncio.AbstractEventLoop) -> dict[str, Any]:
    """The rows bench_adapters.py prints for this wire (see common.md's contract)."""
    raw, count = build_stream(events)

    def run(coroutine: Callable[[bytes], Any]) -> Callable[[], int]:
        return lambda: int(loop.run_until_complete(coroutine(raw)))

    return {
        "events": count,
        "floor": ("gemini floor: CRLF framing + json.loads", lambda: floor(raw)),
        "adapter": ("GeminiAdapter (MockTransport)", run(adapter)),
        "sdk": ("google-genai generate_content_stream (MockTransport)", run(sdk)),
        "extra": [
            ("   floor with pydantic_core.from_json (the adapter's parser)", lambda: floor_fast_json(raw))
        ],
    }


def _best(rows: dict[str, Any], keys: tuple[str, ...], repeat: int) -> dict[str, float]:
    """The best time of each row over ``repeat`` rounds, the rows interleaved in each round (a
    shared machine's load then weighs on all of them alike)."""
    best = dict.fromkeys(keys, float("inf"))
    for _ in range(repeat):
        for key in keys:
            start = time.perf_counter()
            rows[key][1]()
            best[key] = min(best[key], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    loop = asyncio.new_event_loop()
    rows = contenders(args.events, loop)
    events = rows["events"]
    timings = _best(rows, ("floor", "adapter", "sdk"), args.repeat)
    for key in ("floor", "adapter", "sdk"):
        micro = timings[key] / events * 1e6
        print(f"{rows[key][0]:<60} {micro:8.2f} µs/event  {timings[key] / timings['floor']:6.2f}x floor")
    print(f"adapter / floor = {timings['adapter'] / timings['floor']:.2f} (target <= 1.3)")
    print(f"sdk / adapter   = {timings['sdk'] / timings['adapter']:.1f} (target >= 10)")
    loop.close()


if __name__ == "__main__":
    main()
