"""batch() under cancellation and bad arguments (issue 15 §3): nothing finished is lost, clear errors."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest
from usage_helpers import text_chunks

from chunkscope.adapters import GenerateOptions
from chunkscope.runtime import BatchProgressWarning, batch, partial_results
from chunkscope.usage import UsageLog


class Held:
    """Calls whose model starts with "hold" wait until released; the others answer at once."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = 0

    def stream(self, options: GenerateOptions) -> AsyncIterator[Any]:
        return self._stream(options)

    async def _stream(self, options: GenerateOptions) -> AsyncIterator[Any]:
        self.started += 1
        if options.model.startswith("hold"):
            await self.release.wait()
        for chunk in text_chunks(options.model, {"inputTokens": 1, "outputTokens": 1}):
            yield chunk


def req(model: str) -> dict[str, Any]:
    return {"provider": "held", "model": model, "messages": [{"role": "user", "content": "x"}]}


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


MODELS = ["a", "b", "hold-1", "c", "hold-2", "d", "e"]


async def test_a_cancelled_batch_keeps_its_finished_results_and_clears_progress() -> None:
    target, log = Held(), UsageLog()
    seen: list[tuple[int, int]] = []
    task = asyncio.ensure_future(
        batch(target, [req(m) for m in MODELS], concurrency=2, log=log, progress=lambda *p: seen.append(p))
    )
    await settle()  # a, b, then both workers wait on hold-1 and hold-2 ... c gets no worker
    assert log.progress is not None and log.progress[0] == 3
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as caught:
        await task
    results = partial_results(caught.value)
    assert results is not None and len(results) == len(MODELS)
    assert [r.text if r is not None else None for r in results] == ["a", "b", None, "c", None, None, None]
    assert log.progress is None  # no batch is running into the log any more
    frame = log.to_frame()
    finished = frame[frame["error_code"].isna()]
    aborted = frame[frame["error_code"] == "ABORTED"]
    assert sorted(finished["model"].astype(str)) == ["a", "b", "c"]
    assert sorted(aborted["model"].astype(str)) == ["hold-1", "hold-2"]  # the running calls, recorded
    assert seen[-1] == (3, 7)


async def test_a_batch_under_a_timeout_keeps_its_results_on_the_timeout_error() -> None:
    target, log = Held(), UsageLog()
    loop = asyncio.get_running_loop()

    async def expire(deadline: asyncio.Timeout) -> None:
        await settle()  # "a" has finished, "hold" waits
        deadline.reschedule(loop.time())  # the deadline is now: no real waiting

    with pytest.raises(TimeoutError) as caught:
        async with asyncio.timeout(None) as deadline:
            expiring = asyncio.ensure_future(expire(deadline))
            await batch(target, [req(m) for m in ["a", "hold", "b"]], concurrency=1, log=log)
    await expiring
    results = partial_results(caught.value)
    assert results is not None
    assert [r.text if r is not None else None for r in results] == ["a", None, None]
    assert log.progress is None
    assert partial_results(ValueError("unrelated")) is None


@pytest.mark.parametrize(
    ("value", "error", "text"),
    [
        (1.5, TypeError, "concurrency must be an int >= 1, not 1.5"),
        (float("nan"), TypeError, "concurrency must be an int >= 1, not nan"),
        ("4", TypeError, "concurrency must be an int >= 1, not '4'"),
        (4.0, TypeError, r"not 4.0 \(pass an int\)"),
        (True, TypeError, "concurrency"),
        (0, ValueError, "concurrency must be an int >= 1, not 0"),
        (-3, ValueError, "concurrency"),
    ],
)
async def test_a_bad_concurrency_is_named(value: object, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        await batch(Held(), [req("a")], concurrency=value)  # type: ignore[arg-type]


async def test_a_raising_progress_callback_is_warned_once_and_the_batch_goes_on() -> None:
    calls: list[tuple[int, int]] = []

    def broken(done: int, total: int) -> None:
        calls.append((done, total))
        raise ValueError("the display went away")

    log = UsageLog()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = await batch(Held(), [req(m) for m in "abcde"], log=log, progress=broken)
    assert [r.text for r in results] == list("abcde")
    assert len(log) == 5 and log.progress == (5, 5)
    assert calls == [(0, 5)]  # not called again after it raised
    mine = [w for w in caught if issubclass(w.category, BatchProgressWarning)]
    assert len(mine) == 1 and "ValueError: the display went away" in str(mine[0].message)
