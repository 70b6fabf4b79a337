"""The shared timeline vectors, reproduced by ``timeline.js`` itself in headless Chromium.

The ES module is the text the widget ships to the page (``Timeline()._esm``: what
JupyterLab's anywidget imports from a blob URL); here a blank page imports it the same
way and runs its exported ``derive`` on every vector under ``tests/fixtures/timeline/``.
The Python derivation runs the same vectors in ``tests/notebook/test_timeline_vectors.py``.
No JupyterLab is needed: ``derive`` is a pure function of the state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chunkscope.notebook import Timeline
from chunkscope.notebook.timeline._records import coalesce

pytestmark = pytest.mark.browser

VECTORS = Path(__file__).resolve().parents[1] / "fixtures" / "timeline"


def test_timeline_js_gives_every_vectors_picture(chromium: Any) -> None:
    vectors = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(VECTORS.glob("*.json"))}
    assert len(vectors) >= 20
    # and each in the coalesced form batches carry to the page (runs of deltas): the same picture
    for name, v in list(vectors.items()):
        runs = coalesce(v["state"]["records"])
        if runs != v["state"]["records"]:
            vectors[f"{name} (coalesced)"] = {**v, "state": {**v["state"], "records": runs}}
    source = Timeline()._esm
    assert isinstance(source, str) and "export function derive" in source
    page = chromium.new_page()
    try:
        page.set_content("<!doctype html><title>vectors</title>")
        pictures: dict[str, Any] = page.evaluate(
            """async ([source, vectors]) => {
                const url = URL.createObjectURL(new Blob([source], {type: "text/javascript"}));
                const module = await import(url);
                const out = {};
                for (const [name, v] of Object.entries(vectors)) {
                    out[name] = module.derive(v.state, v.upto === undefined ? null : v.upto);
                }
                // JSON, so an undefined that should be null shows up as a difference
                return JSON.parse(JSON.stringify(out));
            }""",
            [source, vectors],
        )
    finally:
        page.close()
    differing = {name: pictures[name] for name, v in vectors.items() if pictures[name] != v["picture"]}
    for name, got in differing.items():
        print(f"--- {name}\n  expected {vectors[name]['picture']}\n  timeline.js {got}")
    assert not differing, f"timeline.js draws these vectors differently: {sorted(differing)}"
