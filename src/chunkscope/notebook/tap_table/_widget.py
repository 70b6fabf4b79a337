"""``TapTable``: the live table of a ``Tap``'s calls, as an anywidget.

A daemon thread looks at the tap every ``interval`` seconds (default 0.1)
and pushes the rows (``TapCall.row()``: wire, model, status, time to first
token, duration, chunks, usage, violations, error code) to the synced
``_state`` trait as JSON whenever they changed, so calls appear and finish
in place while they stream. ``close()`` stops the thread. The displayed
output's ``text/html`` is an escaped static table, refreshed when the rows
change, so a saved notebook shows the calls without JavaScript.
"""

from __future__ import annotations

import json
import threading
from html import escape
from pathlib import Path
from typing import Any

import traitlets

from .._base import StaticCopyWidget

__all__ = ["TapTable", "display_tap"]

_HERE = Path(__file__).parent

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
    """The live table of ``tap.calls`` (the last ``last`` of them), growing as calls arrive."""

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
        self._push()
        self._thread = threading.Thread(target=self._follow, name="chunkscope-tap-table", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop following the tap and close the widget."""
        self._stop.set()
        super().close()

    def rows(self) -> list[dict[str, Any]]:
        """The rows shown: the latest calls, oldest first."""
        return [call.row() for call in list(self.tap.calls)[-self._last :]]

    def state(self) -> dict[str, Any]:
        """What the front end draws: the columns, the rows, where the tap listens."""
        try:
            where = f"{self.tap.base_url} → {self.tap.upstream}"
        except RuntimeError:
            where = f"(stopped) → {self.tap.upstream}"
        return {"columns": [list(c) for c in COLUMNS], "rows": self.rows(), "where": where}

    def _push(self) -> bool:
        text = json.dumps(self.state(), ensure_ascii=False, allow_nan=False, default=str)
        if text == self._state:
            return False
        self._state = text
        self.pushes += 1
        return True

    def _follow(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                if self._push():
                    self._update_display()
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
    """IPython's display hook for a ``Tap``: show a live ``TapTable`` of it."""
    TapTable(tap)._ipython_display_()
    return True
