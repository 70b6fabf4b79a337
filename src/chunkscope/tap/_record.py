"""A tap call written as a recording: whole (a temporary file renamed into place) or not at all."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

from chunkscope.protocol import StreamResult
from chunkscope.sources.recording import recording_header, recording_line

from ._call import TapCall

__all__ = ["write_recording"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def write_recording(folder: Path, call: TapCall, result: StreamResult) -> Path:
    """Write ``call`` as a recording ``ReplayAdapter`` replays; whole (temp file + rename) or not at all."""
    name = f"{call.id:05d}-{call.wire}-{_UNSAFE.sub('_', call.model or 'unknown')[:60]}.jsonl"
    path = folder / name
    header = recording_header(
        provider=call.wire,
        model=call.model,
        adapter="Tap",
        started=datetime.fromtimestamp(call.started_at, UTC).isoformat(timespec="milliseconds"),
        method=call.method,
        path=call.path,
        status=call.status,
    )
    lines = [recording_line(header)]
    for t, chunk in zip(result.timings.chunk_times, result.chunks, strict=False):
        body = chunk if isinstance(chunk, dict) else chunk.to_dict()
        lines.append(recording_line({"t": round(t, 6), "chunk": body}))
    if result.error is not None:
        t = call.timings.total_s or 0.0
        lines.append(recording_line({"t": round(t, 6), "error": result.error.failure.to_dict()}))
    temporary = path.with_suffix(".jsonl.part")
    temporary.write_bytes(b"".join(lines))
    os.replace(temporary, path)
    return path
