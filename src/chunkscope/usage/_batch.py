"""``batch``: many calls with bounded concurrency, every attempt logged, results in request order."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from chunkscope.adapters import GenerateOptions
from chunkscope.protocol import LlmError, StreamResult, collect

from ._log import UsageLog

__all__ = ["Streamer", "batch"]


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
    log: UsageLog | None = None,
    tags: Mapping[str, str] | None = None,
    profile: str = "strict",
    record: bool = True,
    progress: Callable[[int, int], object] | None = None,
) -> list[StreamResult]:
    """Run every request through ``target.stream(options)``, at most ``concurrency`` at a time.

    Returns the ``StreamResult``s in request order. A failing call does not
    stop the batch: its error is in its result (and its row). Each call is
    recorded in ``log`` under the request's provider and model (a fresh log
    when none is given); pass ``record=False`` when ``target`` already
    records its own attempts to that log (a runtime given ``log=``, whose
    retries become rows). Progress goes to ``log.set_progress(done, total)``
    — a displayed log shows it as a progress bar — and to ``progress``.
    Requests are ``GenerateOptions`` or dicts of its fields.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    options = [_options(request) for request in requests]
    total = len(options)
    sink = log if log is not None else UsageLog()
    results: list[StreamResult | None] = [None] * total
    done = 0
    next_index = 0

    def report() -> None:
        sink.set_progress(done, total)
        if progress is not None:
            progress(done, total)

    async def run_one(index: int) -> StreamResult:
        request = options[index]
        recorder = sink if record else None
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
    except BaseException:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
    return [result for result in results if result is not None]


async def _raising(error: LlmError) -> Any:
    raise error
    yield  # pragma: no cover - makes this an async generator
