"""``ScriptedAdapter``: a full adapter that plays a fixed list of chunks.

For teaching, tests and reproducing a bug: it yields exactly what it was
given — including deliberately broken sequences, so a checker has something
to find — optionally pausing before each chunk and ending with a scripted
``LlmError``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, cast

from chunkscope.protocol import AnyChunk, ChunkLike, LlmError
from chunkscope.sources.recording import parse_or_keep

from ._base import OPTIONAL_OPTIONS, AbortSignal, GenerateOptions, LlmAdapter, ModelInfo

__all__ = ["ScriptedAdapter", "Sleep", "parse_or_keep", "pause_or_abort"]

Sleep = Callable[[float], Awaitable[Any]]
"""An ``asyncio.sleep``-like coroutine function (inject a fake one in tests)."""


class ScriptedAdapter(LlmAdapter):
    """Plays ``chunks`` on every ``stream()`` call.

    ``chunks`` are chunk models or camelCase dicts. A dict is parsed once, at
    construction; one that does not parse is kept and yielded *unchanged*
    (a plain ``dict``), so a consumer's checker reports it under the
    ``schema`` rule — the point of scripting a broken stream. ``delay`` is the
    pause before each chunk: one number for all, or one per chunk. ``error``,
    if given, is raised after the last chunk. ``sleep`` replaces
    ``asyncio.sleep`` (tests inject a fake clock). ``models`` publishes model
    metadata (reasoning efforts are checked against it like any adapter's).

    Every ``GenerateOptions`` field is accepted and recorded in ``calls`` (the
    options of each ``stream()`` call, in order) for tests to inspect. The
    signal is honoured: an abort, during a pause or between chunks, raises
    ``LlmError`` ``ABORTED``.
    """

    provider = "scripted"
    supported_options = frozenset(OPTIONAL_OPTIONS)
    accepts_images = True  # it sends nothing anywhere: a script answers any content

    def __init__(
        self,
        chunks: Iterable[ChunkLike | dict[str, Any]],
        delay: float | Sequence[float] = 0.0,
        *,
        error: LlmError | None = None,
        sleep: Sleep = asyncio.sleep,
        models: Sequence[ModelInfo] = (),
    ) -> None:
        self.chunks: list[AnyChunk | dict[str, Any]] = [parse_or_keep(c) for c in chunks]
        if isinstance(delay, (int, float)):
            if delay < 0:
                raise ValueError("delay must be >= 0")
            self.delays: list[float] = [float(delay)] * len(self.chunks)
        else:
            self.delays = [float(d) for d in delay]
            if len(self.delays) != len(self.chunks) or any(d < 0 for d in self.delays):
                raise ValueError(
                    f"delay needs one non-negative pause per chunk: {len(self.chunks)} chunks, "
                    f"{len(self.delays)} delays"
                )
        if error is not None and not isinstance(error, LlmError):
            raise TypeError("error must be an LlmError (the stream raises it after the last chunk)")
        self.error = error
        self._sleep = sleep
        self._models = tuple(models)
        self.calls: list[GenerateOptions] = []

    def __repr__(self) -> str:
        tail = f", error={self.error.code!r}" if self.error is not None else ""
        return f"ScriptedAdapter({len(self.chunks)} chunks{tail})"

    def models(self) -> list[ModelInfo]:
        return list(self._models)

    async def stream(self, options: GenerateOptions) -> AsyncIterator[AnyChunk]:
        """Yield the script (pausing as configured), then raise ``error`` if one was scripted."""
        options = self.prepare(options)
        self.calls.append(options)
        signal = options.signal
        for chunk, pause in zip(self.chunks, self.delays, strict=True):
            if pause > 0:
                await pause_or_abort(pause, self._sleep, signal)
            if signal is not None:
                signal.throw_if_aborted()
            yield cast(AnyChunk, chunk)
        if signal is not None:
            signal.throw_if_aborted()
        if self.error is not None:
            # The same instance each call, without the tracebacks of earlier raises piling up on it.
            raise self.error.with_traceback(None)


async def pause_or_abort(seconds: float, sleep: Sleep, signal: AbortSignal | None) -> None:
    """``await sleep(seconds)``, cut short by ``signal`` (then raise ``LlmError`` ``ABORTED``)."""
    if signal is None:
        await sleep(seconds)
        return
    signal.throw_if_aborted()
    sleeper = asyncio.ensure_future(sleep(seconds))
    waiter = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait((sleeper, waiter), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sleeper, waiter):
            if not task.done():
                task.cancel()
        # Reap the losers so no "task was destroyed but it is pending" warning escapes.
        await asyncio.gather(sleeper, waiter, return_exceptions=True)
    signal.throw_if_aborted()
    if not sleeper.cancelled() and sleeper.exception() is not None:
        raise cast(BaseException, sleeper.exception())
