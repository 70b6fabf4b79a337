"""The Bedrock ConverseStream row of ``bench_adapters.py``: the adapter, its floor and boto3.

One Claude-on-Bedrock-style stream (reasoning, then text, then two tool calls whose input
arrives in many fragments; ``messageStop``, then ``metadata``) as real
``application/vnd.amazon.eventstream`` bytes, every payload padded with ``p`` as Bedrock
pads it, is parsed by:

- **floor**: the wire's framing and ``json.loads``: every frame decoded by the adapter's own
  ``EventStreamDecoder`` (prelude, both CRC32s, headers) and its payload parsed;
- **adapter**: ``BedrockAdapter`` over an ``httpx.MockTransport`` serving the bytes (bearer
  key: no signing), every chunk consumed;
- **sdk**: boto3's ``bedrock-runtime`` ``converse_stream`` over the same bytes: a
  ``before-send`` hook answers the request with them (no network, no retries), and the
  returned ``EventStream`` is iterated to its end, so botocore's ``EventStreamBuffer``
  (framing, CRCs) and its rest-json event parsing (payload to the modeled dicts) run on every
  frame; the client is made once, outside the timing (its set-up is not per-stream cost);
- **extra**: botocore's ``EventStreamBuffer`` alone over the bytes (its framing without the
  event parsing), for reference.

Run alone: ``python benchmarks/_wire_bedrock.py [--events N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import struct
import time
import zlib
from collections.abc import Callable
from typing import Any

import httpx

from chunkscope.adapters import BedrockAdapter, GenerateOptions
from chunkscope.adapters.bedrock.framing import EventStreamDecoder

MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0"
_PAD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack("!H", len(raw_value)) + raw_value


def _frame(event_type: str, payload: dict[str, Any], n: int) -> bytes:
    headers = (
        _header(":event-type", event_type)
        + _header(":content-type", "application/json")
        + _header(":message-type", "event")
    )
    body = json.dumps({**payload, "p": _PAD[: 1 + n % len(_PAD)]}, separators=(",", ":")).encode()
    total = 16 + len(headers) + len(body)
    prelude = struct.pack("!II", total, len(headers))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack("!I", zlib.crc32(message))


def build_stream(events: int) -> tuple[bytes, int]:
    """ConverseStream bytes with about ``events`` content frames; returns (bytes, frame count)."""
    frames: list[bytes] = []

    def add(event_type: str, payload: dict[str, Any]) -> None:
        frames.append(_frame(event_type, payload, len(frames)))

    reasoning = events * 4 // 10
    text = events * 4 // 10
    per_call = (events - reasoning - text) // 2
    add("messageStart", {"role": "assistant"})
    for i in range(reasoning):
        add(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": f" thought{i}"}}},
        )
    add(
        "contentBlockDelta",
        {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "c2ln" * 40}}},
    )
    add("contentBlockStop", {"contentBlockIndex": 0})
    for i in range(text):
        add("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": f" word{i}"}})
    add("contentBlockStop", {"contentBlockIndex": 1})
    for call in range(2):
        index = 2 + call
        add(
            "contentBlockStart",
            {
                "contentBlockIndex": index,
                "start": {"toolUse": {"toolUseId": f"tooluse_{call}abcdefghij", "name": "get_weather"}},
            },
        )
        add("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": '{"city": "'}}})
        for i in range(per_call):
            add("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": f"x{i}"}}})
        add("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": '"}'}}})
        add("contentBlockStop", {"contentBlockIndex": index})
    add("messageStop", {"stopReason": "tool_use"})
    add(
        "metadata",
        {
            "usage": {"inputTokens": 120, "outputTokens": events, "totalTokens": 120 + events},
            "metrics": {"latencyMs": 900},
        },
    )
    return b"".join(frames), len(frames)


def floor(raw: bytes) -> int:
    """Frame decode (both CRCs, headers) + ``json.loads`` of every payload."""
    loads = json.loads
    n = 0
    for frame in EventStreamDecoder().feed(raw):
        loads(frame.payload)
        n += 1
    return n


async def adapter_alone(raw: bytes) -> int:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "application/vnd.amazon.eventstream"}, content=raw
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        adapter = BedrockAdapter(
            "https://bedrock-runtime.us-east-1.amazonaws.com", "bench-key", http_client=http
        )
        n = 0
        async for _ in adapter.stream(
            GenerateOptions("aws", MODEL, [{"role": "user", "content": "benchmark"}])
        ):
            n += 1
        return n


class _Raw:
    """What botocore reads a streamed body from: ``stream()`` yields the bytes."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def stream(self, amt: int = 1 << 16, decode_content: bool = True) -> Any:
        raw = self.raw
        for start in range(0, len(raw), amt):
            yield raw[start : start + amt]

    def read(self, amt: int | None = None) -> bytes:
        return self.raw

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


def boto3_client(raw: bytes) -> Any:
    """A boto3 ``bedrock-runtime`` client whose every ConverseStream is answered with ``raw``."""
    import boto3
    from botocore.awsrequest import AWSResponse
    from botocore.config import Config

    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"max_attempts": 1}),
    )

    def answer(request: Any, **kwargs: Any) -> Any:
        headers = {"content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": "bench"}
        return AWSResponse(request.url, 200, headers, _Raw(raw))

    client.meta.events.register("before-send.bedrock-runtime.ConverseStream", answer)
    return client


def boto3_stream(client: Any) -> int:
    response = client.converse_stream(
        modelId=MODEL, messages=[{"role": "user", "content": [{"text": "benchmark"}]}]
    )
    n = 0
    for _ in response["stream"]:
        n += 1
    return n


def botocore_framing(raw: bytes) -> int:
    from botocore.eventstream import EventStreamBuffer

    buffer = EventStreamBuffer()
    n = 0
    for start in range(0, len(raw), 1 << 16):  # the reads boto3 makes (urllib3's 64 KiB)
        buffer.add_data(raw[start : start + (1 << 16)])
        n += sum(1 for _ in buffer)
    return n


def contenders(events: int, loop: asyncio.AbstractEventLoop) -> dict[str, Any]:
    """The Bedrock rows: ``events`` (frames in the stream), floor, adapter, sdk and extra."""
    raw, frames = build_stream(events)
    client = boto3_client(raw)
    return {
        "events": frames,
        "floor": ("Bedrock floor: frame decode (CRCs) + json.loads", lambda: floor(raw)),
        "adapter": ("BedrockAdapter, mock transport", lambda: loop.run_until_complete(adapter_alone(raw))),
        "sdk": ("boto3 converse_stream, stubbed response", lambda: boto3_stream(client)),
        "extra": [("   botocore EventStreamBuffer framing only", lambda: botocore_framing(raw))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    loop = asyncio.new_event_loop()
    rows = contenders(args.events, loop)
    named: list[tuple[str, Callable[[], Any]]] = [rows["floor"], rows["adapter"], rows["sdk"], *rows["extra"]]
    best = {name: math.inf for name, _ in named}
    try:
        for _ in range(args.repeat):
            for name, fn in named:
                gc.collect()
                start = time.perf_counter()
                fn()
                best[name] = min(best[name], time.perf_counter() - start)
    finally:
        loop.close()
    events = rows["events"]
    base = best[rows["floor"][0]]
    width = max(len(name) for name in best)
    print(f"{events} frames; best of {args.repeat} rounds")
    print(f"{'contender':<{width}}  µs/event  x floor")
    for name, t in best.items():
        print(f"{name:<{width}}  {t / events * 1e6:8.2f}  {t / base:6.2f}")
    adapter, sdk = best[rows["adapter"][0]], best[rows["sdk"][0]]
    print(f"adapter / floor = {adapter / base:.2f}  (target: at most 1.3)")
    print(f"boto3 / adapter = {sdk / adapter:.1f}  (target: at least 10)")


if __name__ == "__main__":
    main()
