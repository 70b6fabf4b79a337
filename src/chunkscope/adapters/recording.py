"""Record any adapter's stream to a file, and replay it later with its timing.

The file format (header, ``{"t", "chunk"}`` and ``{"t", "error"}`` lines) and
its reader live in ``chunkscope.sources.recording``; these are the two
adapters on either side of it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import math
import os
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from datetime import UTC, datetime
from typing import IO, Any, TypeVar, cast

from chunkscope.protocol import AnyChunk, LlmError, LlmFailure, StreamResult, Timings, collect
from chunkscope.sources.recording import (
    FORMAT_VERSION,
    Recording,
    RecordingFileError,
    aborted_finish,
    recording_header,
    recording_line,
)

from ._base import OPTIONAL_OPTIONS, GenerateOptions, LlmAdapter
from ._core.reader import WireReader
from ._wrapping import WrappingAdapter
from .scripted import Sleep, pause_or_abort

__all__ = [
    "FORMAT_VERSION",
    "Recording",
    "RecordingAdapter",
    "RecordingFileError",
    "ReplayAdapter",
    "recorded_reader",
    "recording_result",
    "recording_started",
    "replay_steps",
    "run_now",
]

_T = TypeVar("_T")


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
    The signal is honoured (``ABORTED``). A tap's recording, which holds the raw
    response reads, is read again through the wire's own reader (the one every
    adapter streams through), each read at its recorded time.
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
        for t, chunk in replay_steps(recording, f"the recording {os.path.basename(self.path)}"):
            if scale is not None and t > previous:
                await pause_or_abort((t - previous) * scale, self._sleep, signal)
            previous = max(previous, t)
            if signal is not None:
                signal.throw_if_aborted()
            if chunk is not None:
                yield cast(AnyChunk, chunk)


Step = tuple[float, AnyChunk | dict[str, Any] | None]
"""One step of a replay: a chunk at its recorded time, or (None) the recorded failure's time."""


def replay_steps(recording: Recording, label: str) -> Iterator[Step]:
    """The one replay of a recording: ``(t, chunk)`` for each chunk at its recorded time, then
    ``(t, None)`` at the time of a recorded failure, which is raised last (as ``LlmError``).

    A tap's recording (raw reads) is read again through its wire's reader, each read's chunks
    at its time, ending as the forwarding ended (a drop, an abort); any other recording gives
    the chunks it holds. ``ReplayAdapter`` paces these steps, ``recording_result`` collects them.
    """
    reader = recorded_reader(recording, label)
    if reader is not None:
        yield from _reread(recording, reader)
        return
    yield from recording.entries
    if recording.error is not None:
        yield recording.error_t or 0.0, None  # the error waits for its recorded time too
        raise LlmError.from_failure(recording.error)


def _reread(recording: Recording, reader: WireReader) -> Iterator[Step]:
    """A tap recording's raw reads through ``reader``, each read's chunks at its time."""
    t = 0.0
    for t, data in recording.reads:
        was_done = reader.done
        for chunk in reader.feed(data):
            yield t, chunk
        if reader.done and not was_done:
            for chunk in reader.final:
                yield t, chunk
    end = max(t, _recorded_total(recording))
    tail, error = reader.close(_forward_failure(recording))
    for chunk in tail:
        yield end, chunk
    if error is not None:
        yield end, None
        raise error


def _recorded_total(recording: Recording) -> float:
    """The recorded call's whole duration (the tap's ``total_s``), 0 when it has none."""
    recorded = recording.header.get("tap")
    timings = recorded.get("timings") if isinstance(recorded, dict) else None
    total = timings.get("total_s") if isinstance(timings, dict) else None
    if not isinstance(total, (int, float)) or isinstance(total, bool) or not math.isfinite(total):
        return 0.0
    return float(total)


def recording_result(
    recording: Recording, *, profile: str = "strict", label: str = "the recording"
) -> StreamResult:
    """A recording's ``StreamResult``, as its replay yields it (``replay_steps``), checked under
    ``profile`` and timed by the recorded times (``timings.started_at`` from its header)."""
    times: list[float] = []
    ends: list[float] = []

    def chunks() -> Iterator[AnyChunk | dict[str, Any]]:
        for t, chunk in replay_steps(recording, label):
            if chunk is None:
                ends.append(t)
            else:
                times.append(t)
                yield chunk

    result = run_now(collect(chunks(), profile=profile))
    result.timings = Timings.of_arrivals(
        times, total_s=max([*times, *ends], default=0.0), started_at=recording_started(recording.header)
    )
    return result


def recording_started(header: Mapping[str, Any]) -> float | None:
    """When a recorded call began (seconds since the epoch), from its header's ISO ``started``."""
    value = header.get("started")
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError):
        return None


def run_now(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine that never waits (``collect`` over chunks in memory) to its end, here.

    The one way chunkscope drives in-memory work to completion: unlike ``asyncio.run`` it works
    inside a running loop (a Jupyter cell) and starts no loop at all.
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        return cast(_T, done.value)
    coroutine.close()
    raise RuntimeError("the coroutine waited for something; run_now only drives in-memory work")


def recorded_reader(recording: Recording, label: str) -> WireReader | None:
    """The wire reader for a tap recording's raw reads, its head already read; None for a
    recording of chunks (``RecordingAdapter``'s) or of no wire chunkscope reads."""
    header = recording.header
    recorded = header.get("tap")
    provider = header.get("provider")
    if not recording.reads or not isinstance(recorded, dict) or not isinstance(provider, str):
        return None
    from .wires import WIRES  # the wire table loads every adapter: only for a tap recording

    wire = WIRES.get(provider)
    if wire is None:
        return None
    path = str(header.get("path") or "").partition("?")[0]
    reader = wire.reader(label, expect_stream=wire.asks_stream(path, _request_json(recorded)))
    pairs = recorded.get("response_headers")
    headers = {str(n).lower(): str(v) for n, v in pairs} if isinstance(pairs, list) else {}
    status = header.get("status")
    reader.head(status if isinstance(status, int) else 0, headers)
    return reader


def _request_json(recorded: dict[str, Any]) -> Any:
    """The recorded request body's JSON value, None when there is none (or it is not JSON)."""
    text = recorded.get("request_body")
    try:
        if isinstance(text, str):
            return json.loads(text)
        encoded = recorded.get("request_body_base64")
        return json.loads(base64.b64decode(encoded, validate=True)) if isinstance(encoded, str) else None
    except (ValueError, RecursionError, binascii.Error):
        return None


def _forward_failure(recording: Recording) -> LlmError | None:
    """How the recorded call's forwarding ended (a drop, an abort), None when it went well."""
    recorded = recording.header.get("tap")
    failure = recorded.get("forward_failure") if isinstance(recorded, dict) else None
    if not isinstance(failure, dict):
        return None
    try:
        return LlmError.from_failure(LlmFailure.model_validate(failure))
    except ValueError:  # pydantic's ValidationError: a hand-edited file; the reads still say most
        return None
