"""``TapTable``: the live table of a ``Tap``'s calls, as an anywidget.

A daemon thread looks at the tap every ``interval`` seconds (default 0.1)
and pushes the rows (``TapCall.row()``: wire, model, status, time to first
token, duration, chunks, usage, violations, error code) to the synced
``_state`` trait as JSON whenever they changed, so calls appear and finish
in place while they stream. ``close()`` stops the thread. The displayed
output's ``text/html`` is an escaped static table, refreshed once the rows hold
still (at most every second while they change), so a saved notebook shows the
calls without JavaScript. What reaches the page is bounded by the interval and
``last``, never by the number of calls: at most ten state pushes of at most
``last`` rows a second and one static copy; the page rewrites only the rows
that changed.

Clicking a row sends ``{"type": "open", "id": n}``; the widget answers by
showing that call's ``Timeline`` in ``detail`` (an ``Output`` displayed
under the table), live while the call streams: ``call_timeline`` feeds it
``TapCall.follow()``, whose chunks the tap hands to the
kernel's event loop with ``call_soon_threadsafe``. Each chunk is placed at
the time its read reached the tap.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from html import escape
from pathlib import Path
from typing import Any

import ipywidgets
import traitlets

from .._base import StaticCopyWidget
from ..timeline._widget import Timeline

__all__ = ["TapTable", "display_tap", "call_timeline"]

_HERE = Path(__file__).parent
_STATIC_COPY_EVERY = 1.0  # seconds between two replacements of the static copy while rows change

COLUMNS = (
    ("id", "#"),
    ("wire", "wire"),
    ("model", "model"),
    ("status", "status"),
    ("ttft_ms", "TTFT ms"),
    ("duration_ms", "duration ms"),
    ("chunks", "chunks"),
    ("input_tokens", "in"),
    ("output_tokens", "out"),
    ("violations", "violations"),
    ("code", "code"),
)
"""(row key, header) of each column, in order: the JS table and the static copy share them."""


class TapTable(StaticCopyWidget):
    """The live table of ``tap.calls`` (the last ``last`` of them), growing as calls arrive.

    ``tap``: a running ``Tap``, or a ``TapReplay`` of recorded calls (anything with ``calls`` and
    ``where``)."""

    _esm = _HERE / "tap_table.js"
    _css = _HERE / "tap_table.css"

    _state = traitlets.Unicode("").tag(sync=True)

    def __init__(self, tap: Any, *, interval: float = 0.1, last: int = 200, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tap = tap
        self._interval = interval
        self._last = last
        self._stop = threading.Event()
        self.pushes = 0
        """How many states were pushed to the front end (tests read it)."""
        self.detail = ipywidgets.Output()
        """Where a clicked call's timeline is shown (displayed under the table)."""
        self.timeline: Timeline | None = None
        """The timeline of the call last opened (``open_call(id)`` or a click)."""
        self._feed: asyncio.Task[Any] | None = None
        self.on_msg(self._on_front_end_msg)
        self._push()
        self._thread = threading.Thread(target=self._follow, name="chunkscope-tap-table", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop following the tap and close the widget."""
        self._stop.set()
        super().close()

    def open_call(self, call_id: int) -> Timeline | None:
        """Show call ``call_id``'s timeline in ``detail`` (live if it still streams); None if unknown.

        Runs in the kernel's event loop (a click's message arrives there): the
        timeline is fed by a task of that loop.
        """
        call = next((c for c in list(self.tap.calls) if c.id == call_id), None)
        if call is None:
            return None
        if self._feed is not None and not self._feed.done():
            self._feed.cancel()  # one call at a time: the last one clicked
        timeline = call_timeline(call)
        self.timeline = timeline
        self._show(timeline)
        self._feed = asyncio.get_running_loop().create_task(self._follow_call(timeline, call))
        return timeline

    async def show_call(self, call_id: int) -> Any:
        """Open call ``call_id``'s timeline (as a click does) and wait until it is drawn to the end;
        its ``StreamResult``, or None for an unknown id."""
        if self.open_call(call_id) is None or self._feed is None:
            return None
        return await self._feed

    def _ipython_display_(self) -> None:
        # The table, then under it the place where a clicked call's timeline appears.
        from IPython.display import display

        super()._ipython_display_()
        display(self.detail)  # type: ignore[no-untyped-call]

    def _show(self, timeline: Timeline) -> None:
        # The bundle itself (the widget view beside its static copy), set as the Output's one output:
        # no display machinery needed, and a saved notebook keeps the static timeline.
        data, metadata = timeline._repr_mimebundle_()
        self.detail.outputs = ({"output_type": "display_data", "data": data, "metadata": metadata},)

    async def _follow_call(self, timeline: Timeline, call: Any) -> Any:
        result = await feed_timeline(timeline, call)
        if self.timeline is timeline:
            self._show(timeline)  # the finished static copy
        return result

    def _on_front_end_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "open" and isinstance(content.get("id"), int):
            self.open_call(content["id"])

    def rows(self) -> list[dict[str, Any]]:
        """The rows shown: the latest calls, oldest first."""
        return [call.row() for call in list(self.tap.calls)[-self._last :]]

    def state(self) -> dict[str, Any]:
        """What the front end draws: the columns, the rows, where the tap listens."""
        return {"columns": [list(c) for c in COLUMNS], "rows": self.rows(), "where": self.tap.where}

    def _push(self) -> bool:
        text = json.dumps(self.state(), ensure_ascii=False, allow_nan=False, default=str)
        if text == self._state:
            return False
        self._state = text
        self.pushes += 1
        return True

    def _follow(self) -> None:
        copied_at = -float("inf")
        stale = False  # the static copy is behind the rows
        while not self._stop.wait(self._interval):
            try:
                changed = self._push()
                stale = stale or changed
                now = time.monotonic()
                # The static copy (for a saved notebook) is replaced once the rows hold still, and
                # while calls keep coming at most every _STATIC_COPY_EVERY: a replaced output is
                # drawn again by the page, a second table to build each push.
                if stale and (not changed or now - copied_at >= _STATIC_COPY_EVERY):
                    self._update_display()
                    copied_at = now
                    stale = False
            except Exception:  # a display hiccup must not end the table's updates
                continue

    # --- static copies ---------------------------------------------------------------

    def static_html(self) -> str:
        """The table as an escaped HTML fragment (no script)."""
        state = self.state()
        head = "".join(f"<th>{escape(label)}</th>" for _, label in COLUMNS)
        body = []
        for row in state["rows"]:
            cells = "".join(
                f"<td>{escape('' if row[key] is None else str(row[key]))}</td>" for key, _ in COLUMNS
            )
            css = ' class="cs-tap-failed"' if row["code"] else ""
            body.append(f"<tr{css}>{cells}</tr>")
        return (
            f'<div class="cs-tap-table"><div>chunkscope tap {escape(state["where"])}</div>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        )

    def _plain(self) -> str:
        rows = self.rows()
        failed = sum(1 for row in rows if row["code"])
        return f"TapTable({len(rows)} calls, {failed} failed)"


def display_tap(tap: Any) -> bool:
    """IPython's display hook for a ``Tap``: show a live ``TapTable`` of it (and its timeline place)."""
    TapTable(tap)._ipython_display_()
    return True


class _TapClock:
    """A ``Timeline`` clock on the tap's time: a chunk already parsed is placed at its arrival, a
    live one (and the timer's look between chunks) at the present moment of the call."""

    def __init__(self, call: Any) -> None:
        self._origin = call.clock_start
        self.at: float | None = 0.0  # the time to report, None: the present

    def __call__(self) -> float:
        return self.at if self.at is not None else time.perf_counter() - self._origin


def call_timeline(call: Any) -> Timeline:
    """An empty ``Timeline`` titled for ``call`` (a ``TapCall``), with a clock on the call's time."""
    title = f"#{call.id} {call.wire or 'raw'} {call.model or ''} {call.path.partition('?')[0]}".strip()
    return Timeline(title, clock=_TapClock(call))


async def feed_timeline(timeline: Timeline, call: Any) -> Any:
    """Draw ``call`` on ``timeline`` (from ``call_timeline``) as it streams; return the ``StreamResult``."""
    clock = timeline._clock
    assert isinstance(clock, _TapClock)

    async def chunks() -> Any:
        try:
            async for t, chunk in call.follow():
                clock.at = t  # the timeline reads its clock once per chunk, right after it is yielded
                yield chunk
                clock.at = None  # between chunks its timer sees the present, so a pause still flushes
        finally:
            clock.at = call.timings.total_s if call.timings.total_s is not None else None

    return await timeline.consume(chunks())
