"""A notebook executed headless (nbclient) keeps the finished timeline: widget state and static HTML."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.notebook

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

CELL = """\
import chunkscope as cs

async def stream_of(chunks):
    for chunk in chunks:
        yield chunk

chunks = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "Saved <script>alert(1)</script>"},
    {"type": "text-delta", "index": 0, "text": " and kept"},
    {"type": "block-end", "index": 0,
     "block": {"type": "text", "text": "Saved <script>alert(1)</script> and kept"}},
    {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 2}},
    {"type": "finish", "reason": {"kind": "stop"}},
]
result = await cs.show(stream_of(chunks), title="saved run")
assert result.ok, result
"""


class Roots(HTMLParser):
    def __init__(self, html: str) -> None:
        super().__init__()
        self.roots: list[dict[str, str | None]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if "cs-timeline" in (dict(attrs).get("class") or "").split():
            self.roots.append(dict(attrs))


def test_an_executed_notebook_stores_the_final_timeline_state_and_html() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()

    outputs = nb.cells[0].outputs
    displays = [o for o in outputs if o.output_type == "display_data"]
    assert len(displays) == 1, outputs
    data: dict[str, Any] = displays[0].data
    assert WIDGET_VIEW in data
    roots = Roots(data["text/html"]).roots
    assert [(r["data-state"], r["data-chunks"], r["data-deltas"]) for r in roots] == [("done", "6", "2")]
    assert "<script" not in data["text/html"].lower()
    assert "&lt;script&gt;" in data["text/html"]

    model_id = data[WIDGET_VIEW]["model_id"]
    state = nb.metadata["widgets"][WIDGET_STATE]["state"][model_id]["state"]
    final = json.loads(state["_state"])
    assert final["status"] == "done"
    assert len(final["records"]) == 6
    assert state["title"] == "saved run"
    assert "export default" in state["_esm"]  # the front end travels with the notebook
