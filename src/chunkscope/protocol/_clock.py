"""The wire's own moments of one stream: when its first byte and its first event arrived.

Chunks tell when output arrived (``Timings.chunk_times``); they cannot tell when the server's
first byte came, or its first event when that event made no chunk (a role-only delta, a
``message_start``). Only the adapter reading the wire sees those, and it is a layer above
the code that times a stream (``collect``, the timeline, the usage log's wrapper). So the
timer opens ``marking(clock, start)`` around its read, and the adapter, running in the same
task, marks the moments on ``current_marks()`` — no argument threaded through every layer
in between, no reach upward. Outside a timer, ``current_marks()`` is None and nothing is marked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["WireMarks", "current_marks", "marking"]


class WireMarks:
    """The first byte and first event of one stream, in seconds since its timer started."""

    __slots__ = ("_clock", "_start", "first_byte_s", "first_event_s")

    def __init__(self, clock: Callable[[], float], start: float) -> None:
        self._clock = clock
        self._start = start
        self.first_byte_s: float | None = None
        self.first_event_s: float | None = None

    def byte(self) -> None:
        """The body's first byte arrived (later calls change nothing)."""
        if self.first_byte_s is None:
            self.first_byte_s = self._clock() - self._start

    def event(self) -> None:
        """The wire's first event was read whole (later calls change nothing)."""
        if self.first_event_s is None:
            self.first_event_s = self._clock() - self._start
            if self.first_byte_s is None:
                self.first_byte_s = self.first_event_s


_CURRENT: ContextVar[WireMarks | None] = ContextVar("chunkscope_wire_marks", default=None)


def current_marks() -> WireMarks | None:
    """The marks of the stream being timed in this task, or None when nothing times it."""
    return _CURRENT.get()


@contextlib.contextmanager
def marking(clock: Callable[[], float], start: float) -> Iterator[WireMarks]:
    """Time one stream: adapters read in this block mark its first byte and event."""
    marks = WireMarks(clock, start)
    token = _CURRENT.set(marks)
    try:
        yield marks
    finally:
        # A coroutine dropped unfinished is closed wherever it is collected, in another context:
        # there is nothing of this one to restore there.
        with contextlib.suppress(ValueError):
            _CURRENT.reset(token)
