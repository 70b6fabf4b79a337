"""``ConformanceGrid``: the conformance report as a grid, and the opened case's ``Timeline``.

Scenarios down, checks across, green/red cells (grey where a check does not
apply; every cell's title is its sentence). Clicking a row sets ``selected``;
Python then loads that case's stream into the ``Timeline`` below the grid,
with the strict violations at their chunks and every failed check marked as a
``conformance:<check>`` violation (at its chunk when it has one, else at the
end of the stream). ``display(grid)`` shows both (an ipywidgets ``VBox``); its
``text/html`` is the static grid, for saved notebooks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets
import traitlets

from chunkscope.conformance_kit import CHECKS, CaseResult, ConformanceReport
from chunkscope.protocol import StreamResult

from .._base import with_static_copy
from ..timeline._records import encode_violation
from ..timeline._state import state_from_result
from ..timeline._view import STATE_VERSION
from ..timeline._widget import Timeline
from ._static_html import grid_html

__all__ = ["ConformanceGrid", "case_state", "grid_state"]

_HERE = Path(__file__).parent


def grid_state(report: ConformanceReport) -> dict[str, Any]:
    """The grid's picture as JSON data: headline, columns, and one row per case."""
    checks = report.checks
    rows = []
    for case in report.cases:
        cells: list[dict[str, Any] | None] = []
        for name in checks:
            cell = case.check(name)
            cells.append(None if cell is None else {"passed": cell.passed, "sentence": cell.sentence})
        rows.append({"name": case.name, "description": case.description, "ok": case.ok, "cells": cells})
    return {
        "headline": report.headline(),
        "ok": report.ok,
        "wire": report.wire,
        "checks": [{"id": name, "title": CHECKS[name]} for name in checks],
        "rows": rows,
    }


def case_state(case: CaseResult, wire: str) -> dict[str, Any]:
    """The timeline state of ``case``'s stream, its failed checks marked as violations."""
    title = f"{case.name} ({wire} wire)"
    result = case.result if case.result is not None else StreamResult()
    state = state_from_result(result, title=title)
    if case.result is None:
        state.update({"v": STATE_VERSION, "status": "error"})
    for check in case.failures:
        if check.check == "strict" and case.result is not None and case.result.violations:
            continue  # the strict violations are already there, each at its chunk
        state["violations"].append(
            encode_violation(check.position, f"conformance:{check.check}", "error", check.sentence)
        )
    return state


class ConformanceGrid(anywidget.AnyWidget):
    """The interactive grid of a ``ConformanceReport``; ``timeline`` shows the selected case."""

    _esm = _HERE / "conformance_grid.js"
    _css = _HERE / "conformance_grid.css"

    _grid = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    """The name of the case whose timeline is shown ("" for none); a click on a row sets it."""

    def __init__(self, report: ConformanceReport, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.report = report
        self.timeline = Timeline(title="click a row of the grid to see its stream")
        self.timeline.layout.display = "none"
        self._grid = json.dumps(grid_state(report), ensure_ascii=False)
        self.observe(self._on_selected, names="selected")

    def show_case(self, name: str) -> Timeline:
        """Show case ``name``'s timeline (as a click on its row does) and return the timeline."""
        self.report.case(name)  # KeyError naming the cases, for a typo
        if self.selected == name:
            self._load(name)
        self.selected = name
        return self.timeline

    def _on_selected(self, change: dict[str, Any]) -> None:
        name = change.get("new") or ""
        if name:
            self._load(name)

    def _load(self, name: str) -> None:
        try:
            case = self.report.case(name)
        except KeyError:
            return
        timeline = self.timeline
        # A new run number makes the front end replace the picture instead of merging into it.
        timeline._run += 1
        state = {**case_state(case, self.report.wire), "run": timeline._run}
        timeline._final = state
        timeline.title = state["title"]
        timeline._state = json.dumps(state, ensure_ascii=False, allow_nan=False)
        timeline.layout.display = None

    def static_html(self) -> str:
        """The grid as escaped static HTML (what a saved notebook shows)."""
        return grid_html(self.report)

    def view(self) -> ipywidgets.VBox:
        """The grid above the timeline of the selected case."""
        return ipywidgets.VBox([self, self.timeline])

    def __repr__(self) -> str:
        return f"ConformanceGrid({self.report.headline()})"

    def _ipython_display_(self) -> None:
        from IPython.display import display

        box = self.view()
        data, metadata = with_static_copy(box._repr_mimebundle_(), self.static_html(), repr(self))
        display(data, raw=True, metadata=metadata)  # type: ignore[no-untyped-call]


def display_report(report: ConformanceReport) -> None:
    """Display ``report`` as an interactive grid (the IPython display hook for reports)."""
    ConformanceGrid(report)._ipython_display_()
