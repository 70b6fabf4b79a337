"""Helpers for the notebook layer's tests: a fake clock, captured widget messages, chunk builders."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from chunkscope.notebook import Timeline
from chunkscope.notebook.timeline._records import expand


class FakeClock:
    """A monotonic clock that moves only when told (seconds)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Captured:
    """Every custom message a Timeline sent, as the front end would receive it (JSON round trip)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    buffers: list[bytes] = field(default_factory=list)  # each message's first buffer (b"": none)

    def __call__(self, content: dict[str, Any], buffers: Any = None) -> None:
        text = json.dumps(content, ensure_ascii=False)
        raw = [bytes(b) for b in buffers or ()]
        self.sizes.append(len(text.encode("utf-8")) + sum(len(b) for b in raw))
        self.buffers.append(raw[0] if raw else b"")
        self.messages.append(received(json.loads(text), raw))

    @property
    def batches(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["type"] == "batch"]

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes)


def received(content: dict[str, Any], buffers: list[bytes]) -> dict[str, Any]:
    """A message as the front end reads it: a batch's records (its first buffer, coalesced runs
    expanded to one record per chunk) back in ``r``, the records as they travelled in ``wire``."""
    if buffers and content.get("type") in ("batch", "resync"):
        wire = json.loads(buffers[0].decode("utf-8"))
        return {**content, "r": expand(wire), "wire": wire}
    return content


def timeline_with_capture(clock: FakeClock | None = None, **kwargs: Any) -> tuple[Timeline, Captured]:
    captured = Captured()
    timeline = Timeline(clock=clock, **kwargs)
    timeline.send = captured  # type: ignore[method-assign]
    return timeline, captured


async def paced(chunks: Iterable[Any], clock: FakeClock, step: float = 0.001) -> AsyncIterator[Any]:
    """Yield ``chunks``, moving the fake clock ``step`` seconds before each one."""
    for chunk in chunks:
        clock.advance(step)
        yield chunk


async def stream_of(chunks: Iterable[Any]) -> AsyncIterator[Any]:
    for chunk in chunks:
        yield chunk


def start(i: int, kind: str) -> dict[str, Any]:
    return {"type": "block-start", "index": i, "blockType": kind}


def delta(i: int, text: str, kind: str = "text") -> dict[str, Any]:
    return {"type": f"{kind}-delta", "index": i, "text": text}


def call(i: int, call_id: str, args: str, name: str | None = None) -> dict[str, Any]:
    chunk = {"type": "tool-call-delta", "index": i, "id": call_id, "argumentsDelta": args}
    return {**chunk, "name": name} if name else chunk


def end(i: int, **block: Any) -> dict[str, Any]:
    return {"type": "block-end", "index": i, "block": block}


def usage(inp: int, out: int) -> dict[str, Any]:
    return {"type": "usage", "usage": {"inputTokens": inp, "outputTokens": out}}


def finish(kind: str, **failure: Any) -> dict[str, Any]:
    reason: dict[str, Any] = {"kind": kind}
    if failure:
        reason["failure"] = failure
    return {"type": "finish", "reason": reason}


def text_stream(n: int, piece: str = "tok ") -> list[dict[str, Any]]:
    """A clean stream of one text block of ``n`` deltas."""
    return [
        start(0, "text"),
        *(delta(0, piece) for _ in range(n)),
        end(0, type="text", text=piece * n),
        usage(10, n),
        finish("stop"),
    ]


CLEAN = [
    start(0, "reasoning"),
    delta(0, "Think ", "reasoning"),
    delta(0, "first.", "reasoning"),
    end(0, type="reasoning", text="Think first."),
    start(1, "text"),
    delta(1, "Hello "),
    delta(1, "world"),
    end(1, type="text", text="Hello world"),
    start(2, "tool-call"),
    call(2, "call-1", '{"city": ', name="get_weather"),
    call(2, "call-1", '"Tokyo"}'),
    end(2, type="tool-call", id="call-1", name="get_weather", arguments='{"city": "Tokyo"}'),
    usage(20, 12),
    finish("tool-calls"),
]

# block 1 starts while block 0 is open (no-interleave), and block 0 is never closed (block-pairing)
BROKEN = [
    start(0, "text"),
    delta(0, "Hi"),
    start(1, "tool-call"),
    call(1, "c1", "{}", name="bash"),
    end(1, type="tool-call", id="c1", name="bash", arguments="{}"),
    usage(100, 50),
    finish("stop"),
]
