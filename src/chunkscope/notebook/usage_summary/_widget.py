"""``UsageSummary``: the live summary a displayed ``UsageLog`` shows, as an anywidget.

The log tells the widget about every record and progress change (from
whichever thread recorded); the widget re-reads the log's running totals and
pushes them to the synced ``_state`` trait (JSON text) at most once per
``interval`` (1/30 s: a summary need not follow every display frame), with a timer so the last change is
never left behind. The displayed output's ``text/html`` is the escaped
static copy (``usage_html``), replaced when a batch finishes and on
``refresh()``, so a saved notebook shows the final numbers without
JavaScript.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import traitlets

from .._base import StaticCopyWidget
from ._static_html import usage_html, usage_state

__all__ = ["UsageSummary", "display_usage_log"]

_HERE = Path(__file__).parent
_INTERVAL = 1 / 30


class UsageSummary(StaticCopyWidget):
    """A live, compact summary of a ``UsageLog``: calls, errors by code, tokens, cache hit rate,
    cost so far, and the progress bar of a running ``batch``.

    ``clock`` and ``interval`` exist for tests; the defaults are
    ``time.perf_counter`` and 1/30 s.
    """

    _esm = _HERE / "usage_summary.js"
    _css = _HERE / "usage_summary.css"

    title = traitlets.Unicode("").tag(sync=True)
    _state = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        log: Any,
        *,
        title: str = "",
        clock: Callable[[], float] | None = None,
        interval: float = _INTERVAL,
        **kwargs: Any,
    ) -> None:
        super().__init__(title=title, **kwargs)
        self.usage_log = log
        self._clock: Callable[[], float] = clock or time.perf_counter
        self._interval = interval
        self._last = -float("inf")
        self._timer: asyncio.TimerHandle | None = None
        self._thread = threading.get_ident()
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._lock = threading.Lock()
        self.pushes = 0
        """How many states were pushed to the front end (tests read it)."""
        self._push()
        self._unsubscribe = log.subscribe(self._on_change)

    def close(self) -> None:
        """Stop following the log and close the widget."""
        self._unsubscribe()
        self._cancel_timer()
        super().close()

    # --- following the log ----------------------------------------------------------

    def _on_change(self, _log: Any) -> None:
        loop = self._loop
        if threading.get_ident() != self._thread and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._poke)
        else:
            self._poke()

    def _poke(self) -> None:
        progress = self.usage_log.progress
        if progress is not None and progress[0] >= progress[1]:
            self._push()  # the batch is done: show the final numbers now, and keep them
            self._update_display()
            return
        now = self._clock()
        wait = self._interval - (now - self._last)
        if wait <= 0:
            self._push()
        elif self._timer is None:
            loop = self._running_loop()
            if loop is None:
                self._push()  # no loop to wait on: never hold a change back
            else:
                self._timer = loop.call_later(wait, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._push()

    def _running_loop(self) -> asyncio.AbstractEventLoop | None:
        try:
            return asyncio.get_running_loop()
        except RuntimeError:
            return None

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _push(self) -> None:
        with self._lock:
            self._cancel_timer()
            self._last = self._clock()
            self._state = json.dumps(self.state(), ensure_ascii=False, allow_nan=False)
            self.pushes += 1

    def state(self) -> dict[str, Any]:
        """The summary as shown: ``usage_state(log)``."""
        return usage_state(self.usage_log, self.title)

    def refresh(self) -> None:
        """Push the current numbers and replace the saved static copy with them."""
        self._push()
        self._update_display()

    # --- static copies ----------------------------------------------------------------

    def static_html(self) -> str:
        """The summary as an escaped HTML fragment (no script)."""
        return usage_html(self.state())

    def _plain(self) -> str:
        s = self.state()
        return f"UsageSummary({s['calls']} calls, {s['attempts']} attempts, {s['errors']} errors)"


def display_usage_log(log: Any) -> bool:
    """IPython's display hook for a ``UsageLog``: show a live ``UsageSummary`` of it."""
    UsageSummary(log)._ipython_display_()
    return True
