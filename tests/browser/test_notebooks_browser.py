"""Each tutorial notebook as a newcomer meets it: opened in JupyterLab, Run All, read on screen.

For every notebook in ``notebooks/``: every cell runs (its own asserts hold), no
cell shows an error output, and what the notebook is about is on the page — its
timelines finished (done or error), and in 02 the conformance grids (red, then
green), in 03 the live usage summary with the batch's numbers and the session
log's timelines, in 04 the agent run with its steps, retry and tool span, in 06 the
prompt-cache views (the timestamp's miss opened on its diff) and the cadence report. One
screenshot per notebook lands in ``test-artifacts/``; the usage summary's is
also the README's ``docs/usage-summary.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _browser_docs import docs_screenshot

import chunkscope as cs

if TYPE_CHECKING:
    from conftest import Lab

pytestmark = pytest.mark.browser

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
LIVE = ".cs-timeline:not(.cs-static)"  # the widget, not the static text/html rendering
ERROR_OUTPUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]'


def run_notebook(lab: Lab, name: str) -> Any:
    """Open ``notebooks/<name>`` in JupyterLab, run every cell, check no error is shown; the page."""
    lab.open(lab.copy_notebook(NOTEBOOKS / name))
    lab.run_all()  # fails with the traceback of any cell that raised (a cell's assert included)
    page = lab.page
    assert page.locator(ERROR_OUTPUT).count() == 0
    assert page.locator(".jp-Cell .jp-InputPrompt").count() > 0
    return page


def finished_timelines(page: Any) -> dict[str, tuple[str, str | None]]:
    """title -> (state, error badge code) of every live timeline shown on the page; all must be finished.

    (A conformance grid's own timeline stays hidden until a row is clicked: it is not counted.)
    """
    live = page.locator(LIVE)
    rows = live.evaluate_all(
        """els => els.filter(el => el.getClientRects().length > 0).map(el => [
            el.querySelector('.cs-title')?.textContent ?? '',
            el.dataset.state,
            el.querySelector('.cs-error')?.dataset.code ?? null,
        ])"""
    )
    states = {state for _, state, _ in rows}
    assert states <= {"done", "error"}, states
    return {title: (state, code) for title, state, code in rows}


def test_notebook_01_protocol_runs_with_its_timelines_on_screen(lab: Lab) -> None:
    page = run_notebook(lab, "01-streamchunk-protocol.ipynb")
    timelines = finished_timelines(page)
    assert len(timelines) >= 19, f"only {len(timelines)} timelines rendered"
    assert page.locator(LIVE).first.get_attribute("data-chunks") == "9"  # the protocol's example stream
    assert timelines["local provider · fault-drop"][1] == "TRANSPORT"
    assert timelines["self-test 1 · the minimal text block"] == ("done", None)
    assert page.locator(LIVE).first.is_visible()
    lab.screenshot("notebook-01-streamchunk-protocol.png")


def test_notebook_02_adapter_runs_with_fault_badges_and_the_conformance_grids(lab: Lab) -> None:
    page = run_notebook(lab, "02-debug-an-adapter.ipynb")
    codes = {title: code for title, (_, code) in finished_timelines(page).items()}
    assert codes["HttpAdapter (the skeleton) · text"] is None
    for name, scenario in cs.SCENARIOS.items():
        if scenario.fault:  # every fault, through both adapters, with its code on the badge
            expected = scenario.expected_codes["openai"]  # type: ignore[index]
            for adapter in ("RealAdapter", "OpenAICompatAdapter"):
                assert codes[f"{adapter} · {name}"] == expected, (adapter, name)
    assert codes["RealAdapter · aborted after 3 words"] == "ABORTED"
    assert codes["replayed at the original timing"] is None

    # the conformance kit: step 3's grid red, step 4's green, both drawn as tables on the page
    grids = page.locator(".cs-conformance:not(.cs-static)")
    assert grids.count() == 2
    red, green = grids.nth(0), grids.nth(1)
    assert "cs-bad" in (red.locator(".cs-grid-head").get_attribute("class") or "")
    assert red.locator(".cs-grid-head").inner_text().startswith("RealAdapter does not conform")
    assert red.locator("td.cs-fail").count() == 13
    assert red.locator('tr[data-case="abort"] td.cs-fail[data-check="abort"]').count() == 1
    assert "cs-ok" in (green.locator(".cs-grid-head").get_attribute("class") or "")
    assert green.locator(".cs-grid-head").inner_text().startswith("ConformingAdapter conforms")
    assert green.locator("td.cs-fail").count() == 0
    assert green.locator("tbody tr").count() == red.locator("tbody tr").count() >= 30
    green.scroll_into_view_if_needed()
    assert green.locator("table.cs-grid").is_visible()
    lab.screenshot("notebook-02-debug-an-adapter.png")
    lab.screenshot("notebook-02-conformance-red.png", red)
    lab.screenshot("notebook-02-conformance-green.png", green)


def test_notebook_03_usage_runs_with_the_live_summary_and_the_session_log(lab: Lab) -> None:
    page = run_notebook(lab, "03-token-usage.ipynb")
    summary = page.locator(".cs-usage.cs-live")
    assert summary.count() >= 1
    widget = summary.first
    widget.scroll_into_view_if_needed()
    assert widget.is_visible()
    # the batch: 28 attempts of 7 scenarios, 4 of them each failing 3 ways
    assert widget.get_attribute("data-calls") == "28"
    assert widget.get_attribute("data-errors") == "12"
    assert widget.get_attribute("data-done") == widget.get_attribute("data-total") == "28"
    assert "Token usage" in widget.inner_text()

    timelines = finished_timelines(page)
    session = {title: code for title, (_, code) in timelines.items() if title.startswith("sess-1 · ")}
    assert session == {
        "sess-1 · turn 1 step 1 attempt 1": None,
        "sess-1 · turn 2 step 1 attempt 1": "RATE_LIMIT",
        "sess-1 · turn 2 step 1 attempt 2": None,
    }
    assert any(
        "DataFrame with 4 partitions" in text for text in page.locator(".jp-OutputArea").all_inner_texts()
    )
    lab.screenshot("notebook-03-token-usage.png")
    docs_screenshot(lab.screenshot("notebook-03-usage-summary.png", widget), "usage-summary.png")


def test_notebook_04_agent_loop_runs_with_the_agent_run_on_screen(lab: Lab) -> None:
    page = run_notebook(lab, "04-agent-loop.ipynb")
    finished_timelines(page)
    runs = page.locator(LIVE).filter(has=page.locator(".cs-step"))
    assert runs.count() >= 2, "the agent runs are not drawn"
    ok_run = runs.filter(has=page.locator(".cs-retry")).first
    assert ok_run.locator(".cs-retry").first.get_attribute("data-code") == "RATE_LIMIT"
    assert ok_run.locator(".cs-tool-span").count() >= 1
    assert ok_run.locator(".cs-step").count() >= 2
    codes = runs.evaluate_all("els => els.map(el => el.querySelector('.cs-error')?.dataset.code ?? null)")
    assert "AUTH" in codes  # the failed run keeps its code on screen
    ok_run.scroll_into_view_if_needed()
    assert ok_run.is_visible()
    lab.screenshot("notebook-04-agent-loop.png")


def test_notebook_05_tap_runs_with_the_table_and_a_calls_timeline_on_screen(lab: Lab) -> None:
    page = run_notebook(lab, "05-tap-any-app.ipynb")
    table = page.locator(".jp-CodeCell").nth(0).locator(".cs-tap-table").first
    table.wait_for(state="attached")
    page.wait_for_function(
        "el => el.querySelectorAll('tbody tr:not(.cs-tap-running)').length === 3", arg=table.element_handle()
    )
    assert table.locator(".cs-tap-badge").all_text_contents() == ["RATE_LIMIT"]
    shown = finished_timelines(page)
    opened = [state for title, (state, _) in shown.items() if title.startswith("#1 openai reasoning")]
    assert opened == ["done"], shown
    # the recordings replayed in the same table: the same three calls, the same badge
    replayed = page.locator(".cs-tap-table").nth(1)
    replayed.wait_for(state="attached")
    page.wait_for_function(
        "el => el.querySelectorAll('tbody tr:not(.cs-tap-running)').length === 3",
        arg=replayed.element_handle(),
    )
    assert replayed.locator(".cs-tap-badge").all_text_contents() == ["RATE_LIMIT"]
    assert "replay of 3 recorded calls" in replayed.inner_text()
    lab.screenshot("notebook-05-tap-any-app.png")


def test_notebook_06_cache_and_cadence_runs_with_the_miss_opened_and_the_stall_on_screen(lab: Lab) -> None:
    page = run_notebook(lab, "06-cache-and-cadence.ipynb")
    views = page.locator(".cs-cache")
    assert views.count() == 3  # the timestamp's miss, the fix, the cleared cache
    verdicts = [view.locator("summary [class^='cs-v-']").all_text_contents() for view in views.all()]
    assert verdicts == [
        ["miss-explained", "hit", "miss-explained", "hit"],
        ["miss-explained", "hit", "hit", "hit"],
        ["miss-explained", "hit", "hit", "hit", "miss-unexplained"],
    ]
    # clicking the third call opens its first change: the minute in the system prompt
    changed = views.first.locator("details").nth(3)  # after the heading row
    changed.locator("summary").click()
    diff = changed.locator(".cs-cache-diff")
    diff.wait_for(state="visible")
    assert "first change: system, field content" in diff.inner_text()
    assert diff.locator("del").all_text_contents() == ["0"]  # 09:00, then 09:01
    assert diff.locator("ins").all_text_contents() == ["1"]
    lab.screenshot("notebook-06-cache-report.png", views.first)
    # the cadence report: the suggestion with its reasoning, the one stall, the plot
    report = page.locator(".cs-cadence")
    assert "Suggested idle timeout" in report.inner_text() and "stall-recovers" in report.inner_text()
    assert page.locator(".jp-OutputArea-output img").count() >= 1
    report.scroll_into_view_if_needed()
    lab.screenshot("notebook-06-cache-and-cadence.png")
