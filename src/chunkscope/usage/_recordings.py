"""Folders of ``RecordingAdapter`` recordings as a usage frame, one row per file."""

from __future__ import annotations

import os
from collections.abc import Coroutine, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, cast

import pandas as pd

from chunkscope.protocol import LlmError, Timings, collect
from chunkscope.sources.recording import Recording

from ._log import UsageLog

__all__ = ["parse_started", "read_recordings", "run_now"]

_T = TypeVar("_T")


def read_recordings(folder: str | os.PathLike[str], pattern: str = "*.jsonl") -> pd.DataFrame:
    """One usage frame from a folder of ``RecordingAdapter`` recordings (one row per file).

    Provider, model and start time come from each recording's header, the
    timings from its ``t`` stamps, an ``error`` line becomes the row's error;
    ``call_id`` is the file name without its suffix. A file that is not a
    recording raises ``RecordingFileError`` naming the file and line.
    """
    log = UsageLog()
    for path in sorted(Path(folder).glob(pattern)):
        _record_recording(log, Recording.read(path), path.stem)
    return log.to_frame()


def _record_recording(log: UsageLog, recording: Recording, call_id: str) -> None:
    error = LlmError.from_failure(recording.error) if recording.error is not None else None
    chunks = [chunk for _, chunk in recording.entries]
    result = run_now(collect(_with_error(chunks, error) if error is not None else chunks))
    times = [t for t, _ in recording.entries]
    ends = [*times, recording.error_t] if recording.error_t is not None else times
    result.timings = Timings.of_arrivals(
        times, total_s=max(ends) if ends else 0.0, started_at=parse_started(recording.header.get("started"))
    )
    header = recording.header
    log.record(
        result,
        provider=str(header.get("provider") or "unknown"),
        model=str(header.get("model") or "unknown"),
        call_id=call_id,
    )


def run_now(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine that never waits (``collect`` over chunks in memory) to its end, here.

    Unlike ``asyncio.run`` this works inside a running loop (a Jupyter cell).
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        return cast(_T, done.value)
    coroutine.close()
    raise RuntimeError("the coroutine waited for something; run_now only drives in-memory work")


def _with_error(chunks: Iterable[Any], error: LlmError) -> Any:
    async def stream() -> Any:
        for chunk in chunks:
            yield chunk
        raise error

    return stream()


def parse_started(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None
