"""The live timeline marks an error code outside the registry as unmapped, as its static copy does.

A blank Chromium page imports the ES module the widget ships (``Timeline()._esm``) and renders
it with a small stand-in for the widget model holding a finished state (``_state``) and the
registry's codes (``_codes``, the synced trait): no JupyterLab is needed to read one badge.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import chunkscope as cs
from chunkscope.notebook import Timeline
from chunkscope.notebook.timeline._state import state_from_result

pytestmark = pytest.mark.browser

_RENDER = """async ([source, state, codes]) => {
    const url = URL.createObjectURL(new Blob([source], {type: "text/javascript"}));
    const widget = (await import(url)).default;
    const values = {_state: state, _codes: codes, title: "t", axis: "time", layout: null};
    const model = {
        get: (name) => values[name], set: (name, v) => { values[name] = v; },
        on() {}, off() {}, send() {}, save_changes() {}, cid: "m" + Math.random(),
    };
    const el = document.createElement("div");
    document.body.append(el);
    widget.initialize?.({model});
    widget.render({model, el});
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    const badge = el.querySelector(".cs-badge.cs-error");
    return badge ? badge.textContent : null;
}"""


def _finished_with(code: str) -> str:
    """A finished state; collected in a thread of its own (Playwright's sync API holds this one's loop)."""
    chunks = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "partial"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "partial"}},
        {"type": "finish", "reason": {"kind": "error", "failure": {"code": code, "message": "stopped"}}},
    ]

    async def stream() -> Any:
        for chunk in chunks:
            yield chunk

    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(asyncio.run, cs.collect(stream())).result()
    return json.dumps(state_from_result(result, title="t"))


@pytest.mark.parametrize(
    ("code", "unmapped"), [("SOME_NEW_REASON", True), ("CONTENT_FILTER", False), ("HTTP_418", False)]
)
def test_the_live_badge_marks_a_code_the_registry_does_not_hold(
    chromium: Any, code: str, unmapped: bool
) -> None:
    timeline = Timeline()
    assert set(timeline._codes) == set(cs.ERROR_CODES) - {"HTTP_<status>", "<FINISH_REASON>"}
    state = _finished_with(code)
    page = chromium.new_page()
    try:
        page.set_content("<!doctype html><title>unmapped</title>")
        text = page.evaluate(_RENDER, [timeline._esm, state, list(timeline._codes)])
    finally:
        page.close()
    assert text is not None and code in text, text
    assert ("unmapped code: not in cs.ERROR_CODES" in text) is unmapped, text
