"""The recording file format: what ``RecordingAdapter`` writes and ``ReplayAdapter`` replays.

A recording is JSONL, one object per line, flushed line by line so a crash
loses nothing already streamed (each line is serialized whole before it is
written, and text the wire sent with a lone surrogate is JSON-escaped, so
the file is always valid UTF-8 and replays identically)::

    {"recording": "chunkscope", "version": 2, "provider": "deepseek", "model": "text", ...}
    {"t": 0.0101, "read": "ZGF0YTogeyJpZCI6..."}   # the tap's only: one raw read, base64
    {"t": 0.0123, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}}
    ...
    {"t": 0.2501, "error": {"message": "...", "code": "TRANSPORT"}}   # only if the stream raised

``t`` is seconds since the request began; ``chunk`` is the chunk's JSON form
(exactly what the TypeScript harness writes); ``error`` is the
``LlmFailure`` of what the stream raised. A recording cut short (Ctrl-C, a
cancelled task) ends with an ``aborted`` finish chunk marked
``"synthesized": true``, so the file says it was cut rather than breaking the
protocol. ``RecordingAdapter``'s header holds request metadata only — never
an API key, a header or the messages.

The tap records more, as a proxy sees a call: its header adds the request's
headers with every credential redacted and its body with any credential
masked, the response's status and headers (redacted), and the tap's timing
points; ``read`` lines hold the response body exactly as forwarded (after
HTTP framing, before decompression; a credential masked), each at the time
it arrived, so the call can be parsed again as the tap parsed it. Version 2
added ``read`` lines; version 1 files read as before.
"""

from __future__ import annotations

import base64
import binascii
import math
import os
from typing import IO, Any

from pydantic import ValidationError

from chunkscope.protocol import AnyChunk, LlmFailure, parse_chunk

from ._errors import RecordingFileError
from ._json import json_line, json_lines

__all__ = [
    "FORMAT_VERSION",
    "READABLE_VERSIONS",
    "Recording",
    "RecordingFileError",
    "aborted_finish",
    "parse_or_keep",
    "read_line",
    "recording_header",
    "recording_line",
    "stored_time",
]

FORMAT_VERSION = 2
"""The recording format's version (the header's ``version``): 2 added the tap's ``read`` lines."""

READABLE_VERSIONS = (1, 2)
"""The versions this reader takes."""


def parse_or_keep(obj: Any) -> AnyChunk | dict[str, Any]:
    """``parse_chunk(obj)``; a dict that is not a chunk is kept as is, for a checker to report."""
    try:
        return parse_chunk(obj)
    except ValidationError:
        if isinstance(obj, dict):
            return obj  # a deliberately broken chunk (or one recorded broken): replayed unchanged
        raise


def recording_header(
    *, provider: str | None, model: str | None, adapter: str, started: str, **request: Any
) -> dict[str, Any]:
    """A recording's first line: the format and version, then what the call was (never a key)."""
    return {
        "recording": "chunkscope",
        "version": FORMAT_VERSION,
        "provider": provider,
        "model": model,
        "adapter": adapter,
        "started": started,
        **request,
    }


def stored_time(seconds: float) -> float:
    """``seconds`` to the microsecond, as a recording keeps a time: a live view that stamps its
    marks with it shows the same figures as a replay of its recording."""
    return round(seconds, 6)


def read_line(t: float, data: bytes) -> bytes:
    """One ``read`` line: the bytes of one response read, base64, at ``t`` seconds."""
    return recording_line({"t": stored_time(t), "read": base64.b64encode(data).decode("ascii")})


def recording_line(obj: dict[str, Any]) -> bytes:
    """One recording line, whole (NaN and unknown values as the adapter produced them, as text)."""
    return json_line(obj, allow_nan=True, default=str)


def aborted_finish(reason: str) -> dict[str, Any]:
    """The finish chunk that ends a recording cut short by ``reason`` (``KeyboardInterrupt``, …)."""
    failure = {"code": "ABORTED", "message": f"the recording was cut short ({reason})"}
    return {"type": "finish", "reason": {"kind": "aborted", "failure": failure}}


class Recording:
    """A parsed recording: its header, ``(t, chunk)`` pairs, the recorded error (if any) and,
    from the tap, ``reads``: ``(t, bytes)`` of each raw response read."""

    __slots__ = ("entries", "error", "error_t", "header", "reads")

    def __init__(
        self,
        header: dict[str, Any],
        entries: list[tuple[float, AnyChunk | dict[str, Any]]],
        error: LlmFailure | None,
        error_t: float | None,
        reads: list[tuple[float, bytes]] | None = None,
    ) -> None:
        self.header = header
        self.entries = entries
        self.error = error
        self.error_t = error_t
        self.reads = reads if reads is not None else []

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Recording:
        """Parse a recording file; ``RecordingFileError`` names the bad line."""
        name = os.fspath(path)
        with open(name, "rb") as handle:
            return cls.read_stream(handle, name)

    @classmethod
    def read_stream(cls, handle: IO[bytes], name: str) -> Recording:
        """Parse a recording from an open binary stream (read once, front to back), named ``name``."""
        header: dict[str, Any] | None = None
        entries: list[tuple[float, AnyChunk | dict[str, Any]]] = []
        error: LlmFailure | None = None
        error_t: float | None = None
        reads: list[tuple[float, bytes]] = []
        # json_lines: invalid UTF-8, bad or too deeply nested JSON and huge lines are
        # RecordingFileErrors naming the line (and column).
        for number, obj in json_lines(handle, name=name, error=RecordingFileError, refuse_constants=False):
            where = f"{name}, line {number}"
            if not isinstance(obj, dict):
                raise RecordingFileError(f"{where}: not a JSON object", name, number)
            if header is None:
                header = _header(obj, name, number)
                continue
            t = _entry_time(obj, where, name, number)
            if "chunk" in obj:
                entries.append((t, _entry_chunk(obj, where, name, number)))
            elif "error" in obj:
                error, error_t = _entry_failure(obj, where, name, number), t
            elif "read" in obj:
                reads.append((t, _entry_read(obj, where, name, number)))
            else:
                raise RecordingFileError(f"{where}: neither 'chunk', 'error' nor 'read'", name, number)
        if header is None:
            raise RecordingFileError(f"{name}: empty recording (no header line)", name, 0)
        return cls(header, entries, error, error_t, reads)


def _entry_time(obj: dict[str, Any], where: str, name: str, number: int) -> float:
    t = obj.get("t")
    if not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t) or t < 0:
        raise RecordingFileError(f"{where}: 't' must be seconds >= 0", name, number)
    return float(t)


def _entry_chunk(obj: dict[str, Any], where: str, name: str, number: int) -> AnyChunk | dict[str, Any]:
    """The entry's chunk, parsed (or kept as a dict when it is not a valid chunk)."""
    if not isinstance(obj["chunk"], dict):
        raise RecordingFileError(f"{where}: 'chunk' is not a JSON object", name, number)
    return parse_or_keep(obj["chunk"])


def _entry_read(obj: dict[str, Any], where: str, name: str, number: int) -> bytes:
    data = obj["read"]
    if not isinstance(data, str):
        raise RecordingFileError(f"{where}: 'read' is not base64 text", name, number)
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise RecordingFileError(f"{where}: 'read' is not valid base64", name, number) from None


def _entry_failure(obj: dict[str, Any], where: str, name: str, number: int) -> LlmFailure:
    try:
        return LlmFailure.model_validate(obj["error"])
    except ValidationError as exc:
        raise RecordingFileError(
            f"{where}: 'error' is not a failure ({exc.error_count()} problems)",
            name,
            number,
        ) from exc


def _header(obj: dict[str, Any], name: str, number: int) -> dict[str, Any]:
    if obj.get("recording") != "chunkscope":
        raise RecordingFileError(
            f"{name}, line {number}: not a chunkscope recording (no header line)", name, number
        )
    if obj.get("version") not in READABLE_VERSIONS or isinstance(obj.get("version"), bool):
        raise RecordingFileError(
            f"{name}: recording format version {obj.get('version')!r} is not supported "
            f"(this chunkscope reads versions {', '.join(map(str, READABLE_VERSIONS))})",
            name,
            number,
        )
    return obj
