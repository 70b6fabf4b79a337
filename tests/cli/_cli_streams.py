"""Streams and files for the ``chunkscope`` subcommand tests: chunk logs and recordings, clean and broken."""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from pathlib import Path
from typing import Any

import chunkscope as cs

# the tutorial's exampleChunks: one text block, one tool call, usage, finish — clean under every profile
EXAMPLE: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "Hello"},
    {"type": "text-delta", "index": 0, "text": " world"},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hello world"}},
    {"type": "block-start", "index": 1, "blockType": "tool-call"},
    {"type": "tool-call-delta", "index": 1, "id": "call-1", "name": "bash", "argumentsDelta": '{"cmd":"ls"}'},
    {
        "type": "block-end",
        "index": 1,
        "block": {"type": "tool-call", "id": "call-1", "name": "bash", "arguments": '{"cmd":"ls"}'},
    },
    {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 50}},
    {"type": "finish", "reason": {"kind": "tool-calls"}},
]


def example() -> list[dict[str, Any]]:
    """A fresh copy of the clean example stream."""
    return copy.deepcopy(EXAMPLE)


def broken() -> list[dict[str, Any]]:
    """The example with usage moved after the finish: usage-before-finish at 8."""
    chunks = example()
    chunks.append(chunks.pop(7))
    return chunks


def write_log(path: Path, chunks: list[dict[str, Any]]) -> Path:
    """A chunk log: one JSON object per line (dicts as they are, so broken ones stay broken)."""
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in chunks), encoding="utf-8")
    return path


def write_recording(path: Path, chunks: list[dict[str, Any]], error: cs.LlmError | None = None) -> Path:
    """A recording of ``chunks`` (10 ms apart) made by ``RecordingAdapter`` itself, as ``record`` makes it."""
    ticks = itertools.count()
    recorder = cs.RecordingAdapter(
        cs.ScriptedAdapter(chunks, error=error), path, clock=lambda: next(ticks) * 0.01
    )
    options = cs.GenerateOptions(
        provider="scripted", model="script-1", messages=[{"role": "user", "content": "hi"}]
    )
    asyncio.run(cs.collect(recorder.stream(options)))
    return path


def write_session_log(path: Path, *, compress: bool = False) -> Path:
    """A DeepSeek Harness session log (the dsh module's writer): turn 1 step 1 the clean example;
    turn 2 step 1 a TRANSPORT failure after 2 chunks, then its retry (the example again)."""
    from chunkscope.usage import DshLogWriter

    failed = [*example()[:2], {"type": "finish", "reason": {"kind": "error", "failure": TRANSPORT}}]
    with DshLogWriter(path, compress=compress, session_id="sess-cli") as log:
        log.turn_start(1)
        log.step(1, 1, example())
        log.turn_end(1)
        log.turn_start(2)
        log.step(2, 1, example(), failed=[failed], model="deepseek-v4-pro")
        log.turn_end(2)
    return path


TRANSPORT = {"message": "DeepSeek API stream failed", "code": "TRANSPORT"}
