"""DeepSeek Harness session logs the reader and the frame tests share: the format's examples and a writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chunkscope.sources.dsh import DshLogWriter

LOGS = Path(__file__).parent / "sources" / "dsh_logs"
# The format description's example 5a, verbatim (packed layout).
EXAMPLE_5A = (LOGS / "example_5a.jsonl").read_text(encoding="utf-8")
# Example 5b (a failed attempt and its scheduled retry), followed by the retry's own chunks.
EXAMPLE_5B_AND_RETRY = (LOGS / "example_5b_and_retry.jsonl").read_text(encoding="utf-8")

REASONING_STREAM: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "reasoning"},
    *({"type": "reasoning-delta", "index": 0, "text": t} for t in ["The", " user", " greets."]),
    {"type": "block-start", "index": 1, "blockType": "text"},
    {"type": "text-delta", "index": 1, "text": "Hi"},
    {"type": "text-delta", "index": 1, "text": "!"},
    {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "The user greets."}},
    {"type": "block-end", "index": 1, "block": {"type": "text", "text": "Hi!"}},
    {
        "type": "usage",
        "usage": {"inputTokens": 120, "outputTokens": 9, "cacheReadTokens": 7680, "reasoningTokens": 4},
    },
    {"type": "finish", "reason": {"kind": "stop"}},
]

TOOL_STREAM: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "tool-call"},
    *(
        {"type": "tool-call-delta", "index": 0, "id": "call-1", "name": "read", "argumentsDelta": part}
        for part in ['{"pa', 'th":', '"a.txt', '"}']
    ),
    {
        "type": "block-end",
        "index": 0,
        "block": {"type": "tool-call", "id": "call-1", "name": "read", "arguments": '{"path":"a.txt"}'},
    },
    {"type": "usage", "usage": {"inputTokens": 50, "outputTokens": 12, "cacheWriteTokens": 64}},
    {"type": "finish", "reason": {"kind": "tool-calls"}},
]

FAILED_STREAM: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    *({"type": "text-delta", "index": 0, "text": t} for t in ["a", "b", "c", "d"]),
    {
        "type": "finish",
        "reason": {"kind": "error", "failure": {"message": "upstream 503", "code": "SERVER", "status": 503}},
    },
]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def write_session(path: Path, *, packed: bool = True, compress: bool = False, timed: bool = True) -> Path:
    """Three steps: a reasoning answer; a tool call after one failed attempt; a final answer."""
    with DshLogWriter(path, packed=packed, compress=compress, timed=timed) as log:
        log.turn_start(1)
        log.step(1, 1, REASONING_STREAM)
        log.turn_end(1)
        log.turn_start(2)
        log.step(2, 1, TOOL_STREAM, failed=[FAILED_STREAM], model="deepseek-v4-pro")
        log.event("tool/call", {"turn": 2, "step": 1, "callId": "call-1", "name": "read", "arguments": {}})
        log.step(2, 2, REASONING_STREAM, model="deepseek-v4-pro")
        log.turn_end(2)
    return path
