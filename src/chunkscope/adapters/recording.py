"""Record any adapter's stream to a file, and replay it later with its timing.

The file format (header, ``{"t", "chunk"}`` and ``{"t", "error"}`` lines) and
its reader live in ``chunkscope.sources.recording``; these are the two
adapters on either side of it.
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

from chunkscope.protocol import AnyChunk, LlmError, LlmFailure
from chunkscope.sources.recording import (
    FORMAT_VERSION,
    Recording,
    RecordingFileError,
    aborted_finish,
    recording_header,
    recording_line,
)

from ._base import OPTIONAL_OPTIONS, GenerateOptions, LlmAdapter
from ._wrapping import WrappingAdapter
from .scripted import Sleep, pause_or_abort

__all__ = ["FORMAT_VERSION", "Recording", "RecordingAdapter", "RecordingFileError", "ReplayAdapter"]


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
        header = recording_header(
            provider=options.provider,
            model=options.model,
            adapter=type(self.inner).__name__,
            started=datetime.now(UTC).isoformat(timespec="milliseconds"),
        )
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
            finished = False
            try:
                # A consumer that stops early closes the inner stream (and its connection) too.
                async with _closing(self.inner.stream(options)) as inner:
                    async for chunk in inner:
                        body = chunk if isinstance(chunk, dict) else chunk.to_dict()
                        _write(handle, {"t": round(clock() - start, 6), "chunk": body})
                        finished = finished or body.get("type") == "finish"
                        yield chunk
            except (KeyboardInterrupt, asyncio.CancelledError) as exc:
                # Cut by Ctrl-C or a cancelled task: not a failure of the stream (no error line), but
                # the file says it was cut, so a checker does not blame the adapter for a missing finish.
                if not finished:
                    line = {"t": round(clock() - start, 6), "chunk": aborted_finish(type(exc).__name__)}
                    _write(handle, {**line, "synthesized": True})
                raise
            except Exception as exc:
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
    handle.write(recording_line(obj))  # whole line, or nothing
    handle.flush()


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
    accepts_images = True  # it sends nothing anywhere: the recording answers any content

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
        previous = 0.0
        for t, chunk in _schedule(recording):
            if scale is not None and t > previous:
                await pause_or_abort((t - previous) * scale, self._sleep, signal)
            previous = max(previous, t)
            if signal is not None:
                signal.throw_if_aborted()
            if chunk is not None:
                yield cast(AnyChunk, chunk)
        if recording.error is not None:
            raise LlmError.from_failure(recording.error)


def _schedule(recording: Recording) -> list[tuple[float, AnyChunk | dict[str, Any] | None]]:
    """The recorded chunks with their times, then (None) the recorded error at its time, if any."""
    schedule: list[tuple[float, AnyChunk | dict[str, Any] | None]] = list(recording.entries)
    if recording.error is not None:
        schedule.append((recording.error_t or 0.0, None))  # the error waits for its recorded time too
    return schedule
