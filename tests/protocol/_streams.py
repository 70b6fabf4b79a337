"""Small chunk builders for the protocol tests (camelCase dicts, as an adapter author writes them)."""

from __future__ import annotations

from typing import Any

SEED_CHUNKS: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "サンプル"},
    {"type": "text-delta", "index": 0, "text": " 教程"},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "サンプル 教程"}},
    {"type": "block-start", "index": 1, "blockType": "tool-call"},
    {
        "type": "tool-call-delta",
        "index": 1,
        "id": "call-123",
        "name": "bash",
        "argumentsDelta": '{"command":"echo サンプル"}',
    },
    {
        "type": "block-end",
        "index": 1,
        "block": {
            "type": "tool-call",
            "id": "call-123",
            "name": "bash",
            "arguments": '{"command":"echo サンプル"}',
        },
    },
    {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 50}},
    {"type": "finish", "reason": {"kind": "stop"}},
]
"""The protocol's example stream (``exampleChunks``, docs/protocol.md), verbatim: the smallest whole one."""


def start(index: int, kind: str = "text") -> dict[str, Any]:
    return {"type": "block-start", "index": index, "blockType": kind}


def text(index: int, value: str) -> dict[str, Any]:
    return {"type": "text-delta", "index": index, "text": value}


def reasoning(index: int, value: str) -> dict[str, Any]:
    return {"type": "reasoning-delta", "index": index, "text": value}


def tool(index: int, arguments: str, call_id: str = "call_1", name: str | None = "bash") -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "tool-call-delta",
        "index": index,
        "id": call_id,
        "argumentsDelta": arguments,
    }
    if name is not None:
        out["name"] = name
    return out


def end_text(index: int, value: str, kind: str = "text") -> dict[str, Any]:
    return {"type": "block-end", "index": index, "block": {"type": kind, "text": value}}


def end_tool(index: int, arguments: str, call_id: str = "call_1", name: str = "bash") -> dict[str, Any]:
    return {
        "type": "block-end",
        "index": index,
        "block": {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments},
    }


def usage(inp: int = 10, out: int = 5, **extra: int) -> dict[str, Any]:
    return {"type": "usage", "usage": {"inputTokens": inp, "outputTokens": out, **extra}}


def finish(kind: str = "stop", code: str | None = None) -> dict[str, Any]:
    reason: dict[str, Any] = {"kind": kind}
    if code is not None:
        reason["failure"] = {"message": "it failed", "code": code}
    return {"type": "finish", "reason": reason}


def text_block(index: int, value: str) -> list[dict[str, Any]]:
    """A complete text block: start, one delta, end."""
    return [start(index), text(index, value), end_text(index, value)]
