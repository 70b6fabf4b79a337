"""Record any adapter's stream to a file, and replay it later with its timing.

A recording is JSONL, one object per line, flushed line by line so a crash
loses nothing already streamed (each line is serialized whole before it is
written, and text the wire sent with a lone surrogate is JSON-escaped, so
the file is always valid UTF-8 and replays identically)::

    {"recording": "chunkscope", "version": 1, "provider": "deepseek", "model": "text", ...}
    {"t": 0.0123, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}}
    ...
    {"t": 0.2501, "error": {"message": "...", "code": "TRANSPORT"}}   # only if the stream raised

``t`` is seconds since the request began; ``chunk`` is the chunk's JSON form
(exactly what the TypeScript harness writes); ``error`` is the
``LlmFailure`` of what the stream raised. The header holds request metadata
only — never an API key, a header or the messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import IO, Any, cast

from pydantic import ValidationError

from chunkscope.protocol._chunks import AnyChunk, LlmFailure
from chunkscope.protocol._errors import LlmError
from chunkscope.protocol._jsonl import ChunkFileError, json_line, json_lines

from ._base import OPTIONAL_OPTIONS, GenerateOptions, LlmAdapter
from ._wrapping import WrappingAdapter
from .scripted import Sleep, parse_or_keep, pause_or_abort

__all__ = ["FORMAT_VERSION", "Recording", "RecordingAdapter", "RecordingFileError", "ReplayAdapter"]

FORMAT_VERSION = 1
"""The recording format's version (the header's ``version``)."""


class RecordingFileError(ChunkFileError):
    """A recording file that cannot be replayed; ``path`` and ``line`` (1-based) say where.

    A ``ChunkFileError`` (and so a ``ValueError``): one ``except`` serves chunk files and recordings.
    """


class RecordingAdapter(WrappingAdapter):
    """Wraps ``inner``; every stream passes through unchanged and is written to ``path``.

    Each ``stream()`` call (re)writes ``path`` with one recording: a header
    line, one line per chunk as it passes (flushed at once, so the file can be
    read while the stream runs), and an ``error`` line if the inner stream
    raises — the error is then re-raised unchanged. ``clock`` (seconds,
    monotonic) is injectable for tests.
    """

    def __init__(
        self,
        inner: LlmAdapter,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        super().__init__(inner)
        self.path = os.fspath(path)
        self._clock = clock

    def __repr__(self) -> str:
        return f"RecordingAdapter({self.inner!r}, {self.path!r})"

    def _header(self, options: GenerateOptions) -> dict[str, Any]:
        header: dict[str, Any] = {
            "recording": "chunkscope",
            "version": FORMAT_VERSION,
            "provider": options.provider,
            "model": options.model,
            "adapter": type(self.inner).__name__,
            "started": datetime.now(UTC).isoformat(timespec="milliseconds"),
        }
        for name in ("reasoning_effort", "purpose", "temperature", "max_tokens"):
            value = getattr(options, name)
            if value is not None:
                header[name] = value
        return header

    async def stream(self, options: GenerateOptions) -> AsyncIterator[AnyChunk]:
        """The inner adapter's stream, recorded line by line."""
        clock = self._clock
        with open(self.path, "wb") as handle:
            start = clock()
            _write(handle, self._header(options))
            try:
                # A consumer that stops early closes the inner stream (and its connection) too.
                async with _closing(self.inner.stream(options)) as inner:
                    async for chunk in inner:
                        body = chunk if isinstance(chunk, dict) else chunk.to_dict()
                        _write(handle, {"t": round(clock() - start, 6), "chunk": body})
                        yield chunk
            except Exception as exc:  # task cancellation is not a failure of the stream: no error line
                failure = (
                    exc.failure
                    if isinstance(exc, LlmError)
                    else LlmFailure(message=f"{type(exc).__name__}: {exc}", code="UNKNOWN")
                )
                _write(handle, {"t": round(clock() - start, 6), "error": failure.to_dict()})
                raise


@contextlib.asynccontextmanager
async def _closing(stream: AsyncIterator[AnyChunk]) -> AsyncIterator[AsyncIterator[AnyChunk]]:
    try:
        yield stream
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


def _write(handle: IO[bytes], obj: dict[str, Any]) -> None:
    handle.write(json_line(obj, allow_nan=True, default=str))  # whole line, or nothing
    handle.flush()


class Recording:
    """A parsed recording: its header, ``(t, chunk)`` pairs, and the recorded error (if any)."""

    __slots__ = ("entries", "error", "error_t", "header")

    def __init__(
        self,
        header: dict[str, Any],
        entries: list[tuple[float, AnyChunk | dict[str, Any]]],
        error: LlmFailure | None,
        error_t: float | None,
    ) -> None:
        self.header = header
        self.entries = entries
        self.error = error
        self.error_t = error_t

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Recording:
        """Parse a recording file; ``RecordingFileError`` names the bad line."""
        name = os.fspath(path)
        header: dict[str, Any] | None = None
        entries: list[tuple[float, AnyChunk | dict[str, Any]]] = []
        error: LlmFailure | None = None
        error_t: float | None = None
        # json_lines: invalid UTF-8, bad or too deeply nested JSON and huge lines are
        # RecordingFileErrors naming the line (and column).
        for number, obj in json_lines(name, error=RecordingFileError, refuse_constants=False):
            where = f"{name}, line {number}"
            if not isinstance(obj, dict):
                raise RecordingFileError(f"{where}: not a JSON object", name, number)
            if header is None:
                if obj.get("recording") != "chunkscope":
                    raise RecordingFileError(
                        f"{where}: not a chunkscope recording (no header line)", name, number
                    )
                if obj.get("version") != FORMAT_VERSION:
                    raise RecordingFileError(
                        f"{name}: recording format version {obj.get('version')!r} is not supported "
                        f"(this chunkscope reads version {FORMAT_VERSION})",
                        name,
                        number,
                    )
                header = obj
                continue
            t = obj.get("t")
            if not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t) or t < 0:
                raise RecordingFileError(f"{where}: 't' must be seconds >= 0", name, number)
            if "chunk" in obj:
                if not isinstance(obj["chunk"], dict):
                    raise RecordingFileError(f"{where}: 'chunk' is not a JSON object", name, number)
                entries.append((float(t), parse_or_keep(obj["chunk"])))
            elif "error" in obj:
                try:
                    error = LlmFailure.model_validate(obj["error"])
                except ValidationError as exc:
                    raise RecordingFileError(
                        f"{where}: 'error' is not a failure ({exc.error_count()} problems)",
                        name,
                        number,
                    ) from exc
                error_t = float(t)
            else:
                raise RecordingFileError(f"{where}: neither 'chunk' nor 'error'", name, number)
        if header is None:
            raise RecordingFileError(f"{name}: empty recording (no header line)", name, 0)
        return cls(header, entries, error, error_t)


class ReplayAdapter(LlmAdapter):
    """Replays a recording with its original timing, scaled by ``speed``.

    ``speed=2`` plays twice as fast; ``speed=None`` or ``math.inf`` replays
    instantly. A recorded error is raised at the end as ``LlmError`` (same
    code, message, status, retry delay and request id). The file is read at
    each ``stream()`` call; the options' model and provider are not checked
    against it. ``sleep`` replaces ``asyncio.sleep`` (tests inject a fake).
    The signal is honoured (``ABORTED``).
    """

    provider = "replay"
    supported_options = frozenset(OPTIONAL_OPTIONS)

    def __init__(
        self,
        path: str | os.PathLike[str],
        speed: float | None = 1.0,
        *,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if speed is not None and not speed > 0:
            raise ValueError("speed must be > 0 (or None / math.inf for instant replay)")
        self.path = os.fspath(path)
        self.speed = speed
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"ReplayAdapter({self.path!r}, speed={self.speed!r})"

    def read(self) -> Recording:
        """The parsed recording."""
        return Recording.read(self.path)

    async def stream(self, options: GenerateOptions) -> AsyncIterator[AnyChunk]:
        """Yield the recorded chunks at their recorded times; raise the recorded error last."""
        options = self.prepare(options)
        recording = Recording.read(self.path)
        signal = options.signal
        scale = None if self.speed is None or math.isinf(self.speed) else 1.0 / self.speed
        schedule: list[tuple[float, AnyChunk | dict[str, Any] | None]] = list(recording.entries)
        if recording.error is not None:
            schedule.append((recording.error_t or 0.0, None))  # the error waits for its recorded time too
        previous = 0.0
        for t, chunk in schedule:
            if scale is not None and t > previous:
                await pause_or_abort((t - previous) * scale, self._sleep, signal)
            previous = max(previous, t)
            if signal is not None:
                signal.throw_if_aborted()
            if chunk is not None:
                yield cast(AnyChunk, chunk)
        if recording.error is not None:
            raise LlmError.from_failure(recording.error)
