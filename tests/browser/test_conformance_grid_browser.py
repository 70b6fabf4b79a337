"""The conformance grid as a person uses it: real JupyterLab, a red cell clicked, the timeline opened."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Lab

pytestmark = pytest.mark.browser

SKELETON = (Path(__file__).resolve().parents[1] / "conformance" / "skeleton.py").read_text(encoding="utf-8")

CELLS = [
    SKELETON.replace("from __future__ import annotations\n", ""),
    "%load_ext chunkscope\n"  # the notebook displays: import alone registers no formatter
    "from chunkscope.conformance_kit import run_conformance\n"
    'report = await run_conformance(make_skeleton, scenarios=["text", "fault-401"])\n'
    "report",
]


def test_a_red_cell_opens_the_cases_timeline_with_the_violation_marked(lab: Lab) -> None:
    lab.write_notebook("conformance_grid.ipynb", CELLS)
    lab.open("conformance_grid.ipynb")
    lab.run_all()
    output = lab.page.locator(".jp-CodeCell").nth(1)
    grid = output.locator(".cs-conformance:not(.cs-static) table.cs-grid")
    grid.wait_for(state="visible")
    rows = grid.locator("tbody tr")
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.case)") == ["text", "fault-401"]
    red = grid.locator('tr[data-case="text"] td.cs-fail[data-check="content"]')
    assert "Translate every content event" in (red.get_attribute("title") or "")
    red.click()
    timeline = output.locator(".cs-timeline:not(.cs-static)")
    timeline.wait_for(state="visible")
    marked = timeline.locator('ul.cs-violations > li[data-rule="conformance:content"]')
    marked.wait_for(state="attached")
    assert "got text '' instead of 'Hello! I am the chunkscope local provider.'" in marked.inner_text()
    assert timeline.locator('.cs-violation-mark[data-rule="finish-consistency"]').count() == 1
    assert grid.locator("tr.cs-selected").get_attribute("data-case") == "text"
    lab.screenshot("conformance-grid.png", output)
