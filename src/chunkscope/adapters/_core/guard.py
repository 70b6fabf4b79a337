"""The guard: idle timeout, total deadline and abort around every network await of one call.

Cancellation is told apart without ``Task.uncancel``: every network await (the send, each
read) runs as a task the guard owns, awaited through a future the guard resolves. An abort
or timeout resolves that future and cancels only the guard's own task; a ``CancelledError``
the consumer's task receives is therefore always the caller's, and passes through unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import httpx

from chunkscope.protocol import LlmError

from .._failures import bounded

__all__ = ["DRAIN_SECONDS"]

DRAIN_SECONDS = 0.25
"""How long the rest of a body is read, after the content is complete, to reuse the connection."""

# --- the guard ----------------------------------------------------------------------------------


class _Stopped(Exception):
    """The drain after a complete response ran out: the rest of the body is dropped."""


class _Guard:
    """Abort, idle timeout, total deadline and connection release for one request.

    ``run(coro, idle)`` awaits one network step as a task of its own; the
    guard ends it (abort, timeout, deadline) by resolving the future the
    consumer awaits and cancelling only that task. Between steps (the
    consumer holds a chunk) an abort releases the connection at once and is
    raised by ``check()``.
    """

    __slots__ = (
        "_closing",
        "_deadline",
        "_drain_until",
        "_loop",
        "_remove",
        "_task",
        "_waiter",
        "cause",
        "idle_timeout",
        "label",
        "response",
        "secrets",
        "signal",
    )

    def __init__(
        self,
        *,
        signal: Any,
        idle_timeout: float | None,
        total_timeout: float | None,
        label: str,
        secrets: tuple[str, ...],
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self.signal = signal
        self.idle_timeout = idle_timeout
        self.label = label
        self.secrets = secrets
        self.cause: LlmError | None = None
        self.response: httpx.Response | None = None
        self._task: asyncio.Task[Any] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._closing: asyncio.Task[None] | None = None
        self._drain_until: float | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._remove: Callable[[], None] | None = None
        if total_timeout is not None:
            self._deadline = self._loop.call_later(total_timeout, self._on_deadline, total_timeout)
        if signal is not None:
            self._remove = signal.add_callback(self._on_abort)

    # -- one network step --

    async def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Await ``coro`` as the guard's own task: its result, its error, or the guard's cause."""
        if self.cause is not None:
            coro.close()
            raise self.cause
        loop = self._loop
        task = loop.create_task(coro)
        waiter: asyncio.Future[None] = loop.create_future()
        task.add_done_callback(lambda t: _settle(waiter, t))
        limit = self.idle_timeout
        if self._drain_until is not None:
            left = max(0.0, self._drain_until - loop.time())
            limit = left if limit is None else min(limit, left)
        handle = loop.call_later(limit, self._on_idle, waiter) if limit is not None else None
        self._task, self._waiter = task, waiter
        try:
            await waiter  # a CancelledError here is the caller's: only the caller cancels this task
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            if handle is not None:
                handle.cancel()
            self._task = self._waiter = None
        if not task.done():
            task.cancel()  # the guard ended this step: wait for the read to let go of the connection
            await asyncio.wait((task,))
            if self.cause is None:
                raise _Stopped
            raise self.cause
        if self.cause is not None and task.cancelled():
            raise self.cause
        return task.result()

    def check(self) -> None:
        """Raise the abort or timeout ending the stream, if any (the signal's flag is read too)."""
        if self.cause is None:
            signal = self.signal
            if signal is None or not signal.aborted:
                return
            self.cause = self._aborted(signal.reason)
        raise self.cause

    def drain(self) -> None:
        """The content is complete: the rest of the body gets ``DRAIN_SECONDS`` in all, then is dropped."""
        self._drain_until = self._loop.time() + DRAIN_SECONDS

    async def close(self) -> None:
        """Release everything: timers, the abort callback, the response (idempotent)."""
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._remove is not None:
            self._remove()
            self._remove = None
        response, self.response = self.response, None
        closing, self._closing = self._closing, None
        if response is not None:
            await response.aclose()
        if closing is not None:
            await closing

    # -- ending (event-loop thread) --

    def _end(self, cause: LlmError | None) -> None:
        if self.cause is not None:
            return
        waiter = self._waiter
        if cause is None or (self._drain_until is not None and cause.code == "TIMEOUT"):
            # The content is complete: running out of time only costs the connection's reuse.
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            return
        self.cause = cause
        if waiter is not None:
            if not waiter.done():
                waiter.set_result(None)
            return
        response, self.response = self.response, None
        if response is not None:
            # The consumer holds a chunk: the connection is freed now, the cause raised at its next step.
            self._closing = self._loop.create_task(response.aclose())

    def _on_idle(self, waiter: asyncio.Future[None]) -> None:
        if waiter is not self._waiter or waiter.done():
            return
        if self._drain_until is not None:
            self._end(None)
            return
        what = f"{self.label} sent no bytes for {self.idle_timeout:g} s (idle timeout)"
        self._end(LlmError(what, "TIMEOUT"))

    def _on_deadline(self, seconds: float) -> None:
        self._deadline = None
        self._end(LlmError(f"{self.label} did not finish within {seconds:g} s (total timeout)", "TIMEOUT"))

    def _aborted(self, reason: Any) -> LlmError:
        text = f"{self.label} request aborted by the caller"
        if reason is not None:
            text += f" ({reason})"
        return LlmError(bounded(text, self.secrets), "ABORTED")

    def _on_abort(self, reason: Any) -> None:
        # Any thread may abort; the guard's state lives on its loop (a closed loop: long gone).
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._abort_now, reason)

    def _abort_now(self, reason: Any) -> None:
        if self.cause is None:
            self._end(self._aborted(reason))


def _settle(waiter: asyncio.Future[None], task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved here, so an abandoned step never logs "never retrieved"
    if not waiter.done():
        waiter.set_result(None)
