"""Chunk scripts and a fixed clock shared by the usage tests (imported by name: unique on purpose)."""

from __future__ import annotations

from typing import Any


def text_chunks(
    text: str = "hi", usage: dict[str, int] | None = None, finish: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """A one-text-block stream with optional usage and a finish (stop by default)."""
    chunks: list[dict[str, Any]] = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
    ]
    if usage is not None:
        chunks.append({"type": "usage", "usage": usage})
    chunks.append({"type": "finish", "reason": finish or {"kind": "stop"}})
    return chunks


class StepClock:
    """A monotonic clock that advances ``step`` seconds each time it is read."""

    def __init__(self, step: float = 0.5) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        value = self.now
        self.now += self.step
        return value


def doc_examples(heading: str) -> list[str]:
    """The ```python blocks of the section ``heading`` (a ``## `` line) of docs/usage.md."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "usage.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end >= 0 else len(text)]
    return re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)


def run_doc_example(example: str, timeout: float = 60) -> None:
    """Run one docs/usage.md example as a script would: in a thread of its own (it may call
    ``asyncio.run``, which a running event loop refuses); fails on any exception it raises."""
    import threading

    errors: list[BaseException] = []

    def run() -> None:
        try:
            exec(compile(example, "docs/usage.md", "exec"), {"__name__": "docs_example"})
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "the example did not finish"
    if errors:
        raise errors[0]
