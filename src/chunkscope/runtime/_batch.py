"""``batch``: many calls with bounded concurrency, every attempt logged, results in request order.

It runs any adapter or runtime and records into any ``UsageSink`` (``protocol``): a
``UsageLog`` (the usage layer) also shows the batch's progress, through its
``set_progress`` / ``clear_progress`` — found by name, so this layer needs no pandas.

A cancelled batch (``task.cancel()``, ``asyncio.timeout``, Ctrl-C under
``asyncio.run``) keeps what finished: the ``CancelledError`` it raises carries
``results`` (request order, None for the calls that had not finished), which
``partial_results(error)`` finds also under the ``TimeoutError`` a timeout
raises from it.
"""

from __future__ import annotations

import asyncio
import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from chunkscope.adapters import GenerateOptions
from chunkscope.protocol import LlmError, StreamResult, UsageSink, collect

__all__ = ["BatchProgressWarning", "Streamer", "batch", "partial_results"]


class BatchProgressWarning(RuntimeWarning):
    """``batch``'s ``progress`` callback raised: it is warned about once and not called again."""


class Streamer(Protocol):
    """Anything ``batch`` can run: an ``LlmAdapter``, an ``LlmRuntime``, a wrapped adapter."""

    def stream(self, options: GenerateOptions) -> Any: ...


def _options(request: GenerateOptions | Mapping[str, Any]) -> GenerateOptions:
    if isinstance(request, GenerateOptions):
        return request
    if isinstance(request, Mapping):
        return GenerateOptions(**dict(request))
    kind = type(request).__name__
    raise TypeError(f"a batch request is GenerateOptions or a dict of its fields, not {kind}")


async def batch(
    target: Streamer,
    requests: Iterable[GenerateOptions | Mapping[str, Any]],
    *,
    concurrency: int = 4,
    log: UsageSink | None = None,
    tags: Mapping[str, str] | None = None,
    profile: str = "strict",
    record: bool = True,
    progress: Callable[[int, int], object] | None = None,
) -> list[StreamResult]:
    """Run every request through ``target.stream(options)``, at most ``concurrency`` at a time.

    Returns the ``StreamResult``s in request order. A failing call does not
    stop the batch: its error is in its result (and its row). Each call is
    recorded in ``log`` (any ``UsageSink``; a ``UsageLog`` makes rows of them) under the
    request's provider and model; pass ``record=False`` when ``target`` already
    records its own attempts to that log (a runtime given ``log=``, whose
    retries become rows). Progress goes to ``log.set_progress(done, total)``
    when the log has it — a displayed ``UsageLog`` shows it as a progress bar — and to
    ``progress``; a
    ``progress`` callback that raises is reported once (``BatchProgressWarning``)
    and not called again, and the batch goes on. Requests are
    ``GenerateOptions`` or dicts of its fields; ``concurrency`` is an int >= 1.

    Cancelled, the batch cancels its running calls (each is recorded as
    ``ABORTED``), clears ``log.progress`` (no batch is running) and re-raises
    the ``CancelledError`` with ``results`` on it: the finished results in
    request order, None where a call had not finished (``partial_results``).
    """
    concurrency = _concurrency(concurrency)
    options = [_options(request) for request in requests]
    total = len(options)
    # A UsageLog shows progress; any other sink (an OpenTelemetry sink, a test's list) need not.
    set_progress = getattr(log, "set_progress", None)
    clear_progress = getattr(log, "clear_progress", None)
    results: list[StreamResult | None] = [None] * total
    done = 0
    next_index = 0
    callback = progress

    def report() -> None:
        nonlocal callback
        if set_progress is not None:
            set_progress(done, total)
        if callback is not None:
            try:
                callback(done, total)
            except Exception as exc:
                callback = None  # one warning, not one per call
                warnings.warn(
                    f"batch: the progress callback raised {type(exc).__name__}: {exc}; "
                    "it is not called again (the batch goes on)",
                    BatchProgressWarning,
                    stacklevel=2,
                )

    async def run_one(index: int) -> StreamResult:
        request = options[index]
        recorder = log if record else None
        try:
            stream = target.stream(request)
        except LlmError as exc:  # a target that refuses before returning a stream
            stream = _raising(exc)
        except Exception as exc:
            stream = _raising(LlmError(f"stream() raised {type(exc).__name__}: {exc}", "UNKNOWN", cause=exc))
        return await collect(
            stream, profile=profile, log=recorder, provider=request.provider, model=request.model, tags=tags
        )

    async def worker() -> None:
        nonlocal done, next_index
        while next_index < total:
            index = next_index
            next_index += 1
            results[index] = await run_one(index)
            done += 1
            report()

    report()
    workers = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, total))]
    try:
        await asyncio.gather(*workers)
    except BaseException as exc:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        if isinstance(exc, asyncio.CancelledError):
            # The same exception object reaches whoever awaits the batch's task (and is the
            # __cause__ of the TimeoutError of asyncio.timeout / wait_for): the results ride on it.
            exc.results = list(results)  # type: ignore[attr-defined]
            if clear_progress is not None:
                clear_progress()
        raise
    return [result for result in results if result is not None]


def partial_results(error: BaseException) -> list[StreamResult | None] | None:
    """The results a cancelled ``batch`` kept (request order, None for unfinished calls), found on
    ``error`` or on the exceptions it was raised from (a timeout's ``TimeoutError``); else None."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = getattr(current, "results", None)
        if isinstance(current, asyncio.CancelledError) and isinstance(found, list):
            return found
        current = current.__cause__ or current.__context__
    return None


def _concurrency(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        shown = repr(value) if isinstance(value, (float, str)) else type(value).__name__
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            shown += " (pass an int)"
        raise TypeError(f"batch: concurrency must be an int >= 1, not {shown}")
    if value < 1:
        raise ValueError(f"batch: concurrency must be an int >= 1, not {value}")
    return value


async def _raising(error: LlmError) -> Any:
    raise error
    yield  # pragma: no cover - makes this an async generator
