"""The conformance grid widget in Python: its picture, the opened case's timeline, its displays."""

from __future__ import annotations

import json
import types
from typing import Any

import pytest
from skeleton import make_skeleton

import chunkscope as cs
from chunkscope.conformance_kit import ConformanceReport
from chunkscope.notebook.conformance_grid._display import _display, enable_grid
from chunkscope.notebook.conformance_grid._static_html import grid_html
from chunkscope.notebook.conformance_grid._widget import ConformanceGrid, case_state, grid_state


@pytest.fixture(scope="module")
def report() -> ConformanceReport:
    return cs.conformance(make_skeleton, scenarios=["text", "fault-401", "refuse-unsupported-options"])


@pytest.fixture(scope="module")
def skeleton_report() -> ConformanceReport:
    """The skeleton adapter over the whole matrix (only the slow test asks for it)."""
    return cs.conformance(make_skeleton, wire="openai")


def test_the_grid_has_a_row_per_case_a_column_per_check_and_none_where_a_check_does_not_apply(
    report: ConformanceReport,
) -> None:
    state = grid_state(report)
    assert [row["name"] for row in state["rows"]] == ["text", "fault-401", "refuse-unsupported-options"]
    ids = [c["id"] for c in state["checks"]]
    assert ids == report.checks
    text = dict(zip(ids, state["rows"][0]["cells"], strict=True))
    assert text["content"] == {"passed": False, "sentence": report.case("text").check("content").sentence}  # type: ignore[union-attr]
    assert text["dsh"]["passed"] is True and text["refusal"] is None
    assert state["ok"] is False and state["headline"] == report.headline()


def test_opening_a_case_loads_its_stream_with_every_failed_check_marked(report: ConformanceReport) -> None:
    grid = ConformanceGrid(report)
    assert grid.timeline.layout.display == "none"  # nothing opened yet
    timeline = grid.show_case("text")
    assert grid.selected == "text" and timeline.layout.display is None
    state = json.loads(timeline._state)
    assert state["title"] == "text (openai wire)"
    rules = [v[1] for v in state["violations"]]
    assert "finish-consistency" in rules  # the strict violation, at its chunk
    assert {"conformance:content", "conformance:usage", "conformance:request"} <= set(rules)
    assert "conformance:strict" not in rules  # not twice
    first_run = state["run"]
    grid.show_case("fault-401")
    again = json.loads(timeline._state)
    assert again["run"] == first_run + 1 and again["error"]["code"] == "PROVIDER_HTTP_ERROR"
    assert [v[1] for v in again["violations"]] == ["conformance:outcome", "conformance:request"]
    with pytest.raises(KeyError, match="no case 'nope'"):
        grid.show_case("nope")


def test_a_click_from_the_front_end_is_a_change_of_selected(report: ConformanceReport) -> None:
    grid = ConformanceGrid(report)
    grid.selected = "refuse-unsupported-options"  # what the ES module's model.set does
    assert "conformance:refusal" in grid.timeline._state


def test_case_state_points_a_failure_at_its_chunk_when_it_has_one(report: ConformanceReport) -> None:
    state = case_state(report.case("text"), "openai")
    assert state["status"] == "done" and len(state["records"]) == 1
    assert all(v[0] is None for v in state["violations"] if v[1].startswith("conformance:"))


def test_the_display_carries_the_widget_and_a_static_grid_for_saved_notebooks(
    report: ConformanceReport, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: list[dict[str, Any]] = []
    monkeypatch.setattr("IPython.display.display", lambda data, **kw: shown.append(data))
    ConformanceGrid(report)._ipython_display_()
    (data,) = shown
    assert "application/vnd.jupyter.widget-view+json" in data
    assert 'class="cs-conformance cs-static"' in data["text/html"]
    assert data["text/plain"].startswith("ConformanceGrid(HttpAdapter does not conform")


def test_a_displayed_report_becomes_the_grid_in_a_kernel(report: ConformanceReport) -> None:
    from IPython.core.formatters import DisplayFormatter

    formatters = DisplayFormatter()
    shell = types.SimpleNamespace(display_formatter=formatters)
    import chunkscope  # resolved, the class's __module__ is its public path: the hook still finds it

    assert chunkscope.ConformanceReport.__module__ == "chunkscope"
    assert enable_grid(shell) is True
    assert formatters.ipython_display_formatter.lookup(report) is _display


def test_every_fresh_shell_gets_the_grid(report: ConformanceReport) -> None:
    """Shells come and go (a test per shell, a restarted kernel): each new one gets the printers,
    even when it reuses the memory, and so the id(), of one that is gone."""
    from IPython.core.formatters import DisplayFormatter

    missing = 0
    for _ in range(200):
        formatters = DisplayFormatter()
        assert enable_grid(types.SimpleNamespace(display_formatter=formatters)) is True
        missing += formatters.formatters["text/html"](report) is None
    assert missing == 0


@pytest.mark.slow  # the whole matrix: a few seconds of real provider time
def test_the_static_grid_escapes_what_it_shows(skeleton_report: ConformanceReport) -> None:
    from IPython.core.formatters import DisplayFormatter

    html = grid_html(skeleton_report)
    assert html.count("<tr data-case=") == len(skeleton_report.cases)
    assert html.count('class="cs-fail"') == len(skeleton_report.failures)
    assert "<script" not in html
    # what a kernel shows as the report's text/html (the conformance layer knows no HTML)
    formatters = DisplayFormatter()
    enable_grid(types.SimpleNamespace(display_formatter=formatters))
    assert formatters.formatters["text/html"](skeleton_report) == html
