"""A tap call written as a recording: whole (a temporary file renamed into place) or not at all.

Besides what ``ReplayAdapter`` replays (the chunks at their times, the
error), a tap's recording keeps what the tap saw of the call: the request's
headers (credentials redacted) and body (a credential masked), the
response's status and headers, the timing points and every raw read at its
arrival time, so ``TapReplay`` parses the call again exactly as the tap did.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chunkscope.protocol import StreamResult
from chunkscope.sources.recording import read_line, recording_header, recording_line

from ._call import TapCall

__all__ = ["body_field", "write_recording"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def body_field(body: bytes) -> dict[str, str]:
    """The request body as a header field: its text when it is UTF-8 (JSON, mostly), else base64."""
    try:
        return {"request_body": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"request_body_base64": base64.b64encode(body).decode("ascii")}


def write_recording(folder: Path, call: TapCall, result: StreamResult) -> Path:
    """Write ``call`` as a recording ``ReplayAdapter`` and ``TapReplay`` replay; whole or not at all."""
    name = f"{call.id:05d}-{call.wire}-{_UNSAFE.sub('_', call.model or 'unknown')[:60]}.jsonl"
    path = folder / name
    tap: dict[str, Any] = {
        "request_headers": [list(pair) for pair in call.request_headers],
        **body_field(call.request_body),
        "response_headers": [list(pair) for pair in call.response_headers],
        "started_at": call.started_at,
        "streaming": call.streaming,
        "timings": asdict(call.timings),
        "forward_failure": None if call.forward_failure is None else call.forward_failure.failure.to_dict(),
    }
    header = recording_header(
        provider=call.wire,
        model=call.model,
        adapter="Tap",
        started=datetime.fromtimestamp(call.started_at, UTC).isoformat(timespec="milliseconds"),
        method=call.method,
        path=call.path,
        status=call.status,
        tap=tap,
    )
    lines = [recording_line(header)]
    lines += [read_line(t, data) for t, data in call.reads]
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
