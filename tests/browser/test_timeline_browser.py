"""The timeline widget as a person sees it: real JupyterLab, real kernel, headless Chromium.

Each test writes a notebook, runs all its cells through JupyterLab and asserts on
the DOM contract of the widget (``div.cs-timeline`` and its parts).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from _browser_docs import docs_screenshot

if TYPE_CHECKING:
    from conftest import Lab

pytestmark = pytest.mark.browser


PRELUDE = """\
import asyncio, json, time
from pathlib import Path
import chunkscope as cs

async def stream_of(chunks, delay=0.0):
    for chunk in chunks:
        if delay:
            await asyncio.sleep(delay)  # spread the chunks over the time axis
        yield chunk

def options(model, text="Hi!"):
    return cs.GenerateOptions(provider="local", model=model, messages=[{"role": "user", "content": text}])

# camelCase chunk dicts, built short
def start(i, kind):
    return {"type": "block-start", "index": i, "blockType": kind}

def delta(i, text, kind="text"):
    return {"type": f"{kind}-delta", "index": i, "text": text}

def call(i, call_id, args, name=None):
    chunk = {"type": "tool-call-delta", "index": i, "id": call_id, "argumentsDelta": args}
    return {**chunk, "name": name} if name else chunk

def end(i, **block):
    return {"type": "block-end", "index": i, "block": block}

def usage(inp, out):
    return {"type": "usage", "usage": {"inputTokens": inp, "outputTokens": out}}

def finish(kind):
    return {"type": "finish", "reason": {"kind": kind}}
"""

# reasoning, text, tool call, text: every kind, a text block twice
ALL_KINDS_CHUNKS = """\
chunks = [
    start(0, "reasoning"),
    delta(0, "The user wants ", "reasoning"),
    delta(0, "the weather; ", "reasoning"),
    delta(0, "call the tool.", "reasoning"),
    end(0, type="reasoning", text="The user wants the weather; call the tool."),
    start(1, "text"), delta(1, "Let me "), delta(1, "check."), end(1, type="text", text="Let me check."),
    start(2, "tool-call"),
    call(2, "call-1", '{"city": ', name="get_weather"),
    call(2, "call-1", '"Tokyo"}'),
    end(2, type="tool-call", id="call-1", name="get_weather", arguments='{"city": "Tokyo"}'),
    start(3, "text"), delta(3, "One moment."), end(3, type="text", text="One moment."),
    usage(20, 12),
    finish("tool-calls"),
]
result = await cs.show(stream_of(chunks, delay=0.02), title="reasoning → text → tool call")
assert result.ok and not result.violations, result.violations
"""


LIVE = ".cs-timeline:not(.cs-static)"  # the widget, not the static text/html rendering


def _timeline(lab: Lab, cell: int) -> Any:
    """The live timeline widget in the output of code cell number ``cell`` (0-based).

    The static ``text/html`` rendering the same output carries (``.cs-static``)
    can never stand in for the live widget.
    """
    timeline = lab.page.locator(".jp-CodeCell").nth(cell).locator(LIVE)
    timeline.first.wait_for(state="attached")
    assert timeline.count() == 1, f"code cell {cell} shows {timeline.count()} timelines, expected 1"
    return timeline.first


def _wait_state(lab: Lab, cell: int, state: str) -> Any:
    timeline = _timeline(lab, cell)
    lab.page.wait_for_function(
        "([el, state]) => el.dataset.state === state",
        arg=[timeline.element_handle(), state],
        timeout=30_000,
    )
    return timeline


def _segments(timeline: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = timeline.locator(".cs-seg").evaluate_all(
        """els => els.map(el => ({
            kind: el.dataset.kind,
            index: Number(el.dataset.index),
            deltas: Number(el.dataset.deltas),
            text: (el.querySelector('.cs-seg-text') || {}).textContent || '',
        }))"""
    )
    return sorted(rows, key=lambda row: row["index"])


def _read_json(lab: Lab, name: str) -> Any:
    return json.loads((lab.server.root / name).read_text())


def test_segments_of_each_kind_equal_the_blocks_of_the_stream(lab: Lab) -> None:
    lab.write_notebook(
        "kinds.ipynb",
        [
            PRELUDE,
            ALL_KINDS_CHUNKS,
            # the local provider over real HTTP, through the OpenAI-compatible adapter
            "with cs.LocalProvider() as provider:\n"
            "    adapter = cs.OpenAICompatAdapter(base_url=provider.base_url, api_key='sk-local')\n"
            "    result = await cs.show(adapter.stream(options('tool-call')))\n"
            "assert result.ok, result.error\n"
            "_ = Path('tool-call-blocks.json').write_text(json.dumps([b.type for b in result.blocks]))\n",
            "with cs.LocalProvider() as provider:\n"
            "    adapter = cs.OpenAICompatAdapter(base_url=provider.base_url, api_key='sk-local')\n"
            "    result = await cs.show(adapter.stream(options('reasoning-resume')))\n"
            "assert result.ok, result.error\n"
            "_ = Path('resume-blocks.json').write_text(json.dumps([b.type for b in result.blocks]))\n",
        ],
    )
    lab.open("kinds.ipynb")
    lab.run_all()

    scripted = _wait_state(lab, 1, "done")
    segments = _segments(scripted)
    assert [(s["kind"], s["index"], s["deltas"]) for s in segments] == [
        ("reasoning", 0, 3),
        ("text", 1, 2),
        ("tool-call", 2, 2),
        ("text", 3, 1),
    ]
    assert segments[0]["text"] == "The user wants the weather; call the tool."
    assert segments[1]["text"] == "Let me check."
    assert scripted.get_attribute("data-chunks") == "18"
    assert scripted.get_attribute("data-deltas") == "8"
    assert scripted.locator(".cs-finish").get_attribute("data-kind") == "tool-calls"
    usage = scripted.locator(".cs-usage").inner_text()
    assert "20" in usage and "12" in usage, usage
    assert scripted.locator(".cs-violation-mark").count() == 0
    assert scripted.locator(".cs-error").count() == 0

    for cell, blocks_file, expected in (
        (2, "tool-call-blocks.json", ["text", "tool-call"]),
        (3, "resume-blocks.json", ["reasoning", "text", "reasoning", "text"]),
    ):
        timeline = _wait_state(lab, cell, "done")
        blocks = _read_json(lab, blocks_file)
        assert blocks == expected, f"the adapter assembled {blocks}, docs/scenarios.md says {expected}"
        shown = [s["kind"] for s in _segments(timeline)]
        assert Counter(shown) == Counter(blocks), f"cell {cell}: segments {shown} != blocks {blocks}"
        assert shown == blocks

    tool_timeline = _timeline(lab, 2)
    assert tool_timeline.locator(".cs-finish").get_attribute("data-kind") == "tool-calls"
    lab.screenshot("timeline-tool-call.png", tool_timeline)
    docs_screenshot(lab.screenshot("timeline-scripted.png", scripted), "timeline.png")


def test_fault_scenarios_show_their_error_code_badge(lab: Lab) -> None:
    lab.write_notebook(
        "faults.ipynb",
        [
            PRELUDE,
            "with cs.LocalProvider() as provider:\n"
            "    adapter = cs.OpenAICompatAdapter(base_url=provider.base_url, api_key='sk-local')\n"
            "    result = await cs.show(adapter.stream(options('fault-429')))\n"
            "assert result.error_code == 'RATE_LIMIT', result.error\n",
            "with cs.LocalProvider() as provider:\n"
            "    adapter = cs.OpenAICompatAdapter(base_url=provider.base_url, api_key='sk-local')\n"
            "    result = await cs.show(adapter.stream(options('fault-drop')))\n"
            "assert result.error_code == 'TRANSPORT', result.error\n",
        ],
    )
    lab.open("faults.ipynb")
    lab.run_all()

    rate_limited = _wait_state(lab, 1, "error")
    badge = rate_limited.locator(".cs-error")
    assert badge.get_attribute("data-code") == "RATE_LIMIT"
    assert badge.is_visible()
    assert "RATE_LIMIT" in badge.inner_text()
    assert rate_limited.locator(".cs-seg").count() == 0  # a 429 sends no content

    dropped = _wait_state(lab, 2, "error")
    assert dropped.locator(".cs-error").get_attribute("data-code") == "TRANSPORT"
    partial = _segments(dropped)
    # the 3 text deltas sent before the drop stay on screen
    assert [(s["kind"], s["deltas"]) for s in partial] == [("text", 3)], partial
    lab.screenshot("timeline-fault-drop.png", dropped)


def test_scripted_invalid_stream_marks_each_violation_at_its_chunk(lab: Lab) -> None:
    lab.write_notebook(
        "broken.ipynb",
        [
            PRELUDE,
            "broken = [\n"
            "    start(0, 'text'), delta(0, 'Hello'),\n"
            "    start(1, 'tool-call'),\n"  # block 0 is still open
            "    call(1, 'call-1', '{\"cmd\": ', name='bash'),\n"  # JSON cut short
            "    end(1, type='tool-call', id='call-1', name='bash', arguments='{\"cmd\": '),\n"
            "    finish('stop'),\n"
            "    usage(1, 1),\n"  # after the finish
            "]\n"
            "expected = [(v.rule, v.position) for v in cs.check(broken)]\n"
            "_ = Path('violations.json').write_text(json.dumps(expected))\n"
            "result = await cs.show(stream_of(broken))\n"
            "shown = [(v.rule, v.position) for v in result.violations]\n"
            "assert sorted(shown, key=str) == sorted(expected, key=str), shown\n",
        ],
    )
    lab.open("broken.ipynb")
    lab.run_all()

    timeline = _wait_state(lab, 1, "done")
    expected = sorted(((rule, pos) for rule, pos in _read_json(lab, "violations.json")), key=str)
    rules = {rule for rule, _ in expected}
    # the checker's own verdict on this stream (docs/protocol.md §2), before the widget is judged
    assert {"no-interleave", "arguments-json", "block-pairing", "usage-before-finish"} <= rules, expected

    def position(value: str | None) -> int | None:
        return int(value) if value not in (None, "", "end") else None

    marks = timeline.locator(".cs-violation-mark").evaluate_all(
        "els => els.map(el => [el.dataset.rule, el.dataset.position])"
    )
    rows = timeline.locator("ul.cs-violations > li").evaluate_all(
        "els => els.map(el => [el.dataset.rule, el.dataset.position, el.textContent])"
    )
    # every violation at a chunk has its mark there (end-of-stream ones may have a mark at the end)
    at_chunks = [(rule, pos) for rule, pos in expected if pos is not None]
    marked = [(rule, position(pos)) for rule, pos in marks]
    assert sorted(((r, p) for r, p in marked if p is not None), key=str) == at_chunks, marks
    assert sorted((rule, position(pos)) for rule, pos, _ in rows) == sorted(expected, key=str)
    for rule, _, text in rows:
        assert rule in text, f"the row for {rule} does not name its rule id: {text!r}"
    docs_screenshot(lab.screenshot("timeline-violations.png", timeline), "violations.png")

    # clicking a mark shows the chunk it points at: block-start 1, which arrived while 0 was open.
    # On the time axis the marks of chunks that arrived within the same fraction of a millisecond
    # sit on top of each other (whichever is drawn last takes the click), so switch to the chunk
    # axis first, as a reader would: there each mark has its own chunk's slot.
    timeline.locator(".cs-axis-toggle").click()
    lab.page.wait_for_function(
        "el => el.dataset.axis === 'chunk'", arg=timeline.element_handle(), timeout=10_000
    )
    timeline.locator('.cs-violation-mark[data-rule="no-interleave"]').click()
    panel = timeline.locator(".cs-json")
    panel.wait_for(state="visible")
    shown = _json_objects(panel.inner_text())
    assert {"type": "block-start", "index": 1, "blockType": "tool-call"} in shown, shown


def test_model_output_is_rendered_as_text_and_runs_nothing(lab: Lab) -> None:
    payload = '<img src=x onerror="window.__cs_pwned=1"> and <script>window.__cs_pwned=2</script>'
    lab.write_notebook(
        "inert.ipynb",
        [
            PRELUDE,
            f"payload = {payload!r}\n"
            "bad_id, bad_name = 'call-<b>1</b>', '<img src=x onerror=\"window.__cs_pwned=3\">'\n"
            "args = json.dumps({'q': payload})\n"
            "chunks = [\n"
            "    start(0, 'reasoning'), delta(0, payload, 'reasoning'),\n"
            "    end(0, type='reasoning', text=payload),\n"
            "    start(1, 'tool-call'), call(1, bad_id, args, name=bad_name),\n"
            "    end(1, type='tool-call', id=bad_id, name=bad_name, arguments=args),\n"
            "    usage(1, 1), finish('tool-calls'),\n"
            "]\n"
            "await cs.show(stream_of(chunks))\n",
            # the same text as a real reply: the local provider's echo scenario
            "with cs.LocalProvider() as provider:\n"
            "    adapter = cs.OpenAICompatAdapter(base_url=provider.base_url, api_key='sk-local')\n"
            "    result = await cs.show(adapter.stream(options('echo', payload)))\n"
            "assert result.text == payload, result.text\n",
        ],
    )
    lab.open("inert.ipynb")
    lab.run_all()

    scripted = _wait_state(lab, 1, "done")
    echoed = _wait_state(lab, 2, "done")
    segments = _segments(scripted)
    assert segments[0]["text"] == payload, "the reasoning text is not shown verbatim as text"
    assert _segments(echoed)[0]["text"] == payload, "the echoed reply is not shown verbatim as text"
    for timeline in (scripted, echoed):
        assert timeline.locator("img, script").count() == 0, "model output became elements"
    # open the JSON panel too: a chunk's JSON is model output as well
    scripted.locator('.cs-seg[data-kind="tool-call"]').click()
    panel = scripted.locator(".cs-json")
    panel.wait_for(state="visible")
    shown = panel.inner_text()
    assert "call-<b>1</b>" in shown and "<img src=x" in shown, shown
    assert panel.locator("img, script, b").count() == 0
    lab.page.wait_for_timeout(500)  # give an onerror handler (if any were created) time to fire
    pwned = lab.page.evaluate("() => window.__cs_pwned")
    assert pwned is None, f"model output ran script: window.__cs_pwned = {pwned!r}"
    assert lab.page.evaluate("() => typeof window.__cs_pwned") == "undefined"


# deltas -> the bound (ms) from the kernel's last chunk to every delta on screen
ON_SCREEN_BOUND_MS = {10_000: 1000, 100_000: 1000}


@pytest.mark.parametrize("n", sorted(ON_SCREEN_BOUND_MS))
def test_many_deltas_are_on_screen_within_a_second_of_the_last_chunk(lab: Lab, n: int) -> None:
    bound_ms = ON_SCREEN_BOUND_MS[n]
    lab.write_notebook(
        f"deltas-{n}.ipynb",
        [
            PRELUDE,
            f"N = {n}\n"
            "words = [f'w{i} ' for i in range(N)]\n"
            "chunks = [cs.BlockStart(index=0, block_type='text')]\n"
            "chunks += [cs.TextDelta(index=0, text=w) for w in words]\n"
            "chunks += [cs.BlockEnd(index=0, block=cs.TextBlock(text=''.join(words))),\n"
            "           cs.Usage(usage=cs.TokenUsage(input_tokens=5, output_tokens=N)),\n"
            "           cs.Finish(reason=cs.FinishReason(kind='stop'))]\n",
            "async def paced():\n"
            "    for i, chunk in enumerate(chunks):\n"
            "        if i % 50 == 0:\n"
            "            await asyncio.sleep(0)  # like a network read: let the event loop run\n"
            "        yield chunk\n"
            "    # the consumer asked for more after taking the last chunk: the stream has ended\n"
            "    Path('stream-ended.json').write_text(json.dumps(time.time()))\n"
            "tl = cs.Timeline()\n"
            "display(tl)\n"
            "await tl.consume(paced())\n",
        ],
    )
    lab.open(f"deltas-{n}.ipynb")
    # record in the page the moment every delta is on screen (same machine clock as the kernel)
    lab.page.evaluate(
        """(n) => {
            window.__cs_all_rendered_at = null;
            const check = () => {
                if (window.__cs_all_rendered_at !== null) return;
                const el = document.querySelector('.cs-timeline:not(.cs-static)');
                if (!el || Number(el.dataset.deltas) !== n) return;
                let sum = 0;
                for (const seg of el.querySelectorAll('.cs-seg')) sum += Number(seg.dataset.deltas);
                if (sum !== n) return;
                window.__cs_all_rendered_at = Date.now();
                observer.disconnect();
            };
            const observer = new MutationObserver(check);
            observer.observe(document.body, {subtree: true, childList: true, attributes: true,
                                             attributeFilter: ['data-deltas']});
        }""",
        n,
    )
    lab.run_all()
    ended_at_ms = _read_json(lab, "stream-ended.json") * 1000.0
    lab.page.wait_for_function("() => window.__cs_all_rendered_at !== null", timeout=60_000)
    rendered_at_ms = lab.page.evaluate("() => window.__cs_all_rendered_at")
    lag_ms = rendered_at_ms - ended_at_ms
    print(f"{n:,} deltas: all on screen {lag_ms:.0f} ms after the last chunk left the kernel")
    (lab.artifacts / f"deltas-{n}-lag-ms.txt").write_text(f"{lag_ms:.0f}\n")

    timeline = _wait_state(lab, 2, "done")
    assert timeline.get_attribute("data-deltas") == str(n)
    segments = _segments(timeline)
    assert [(s["kind"], s["deltas"]) for s in segments] == [("text", n)], "deltas were dropped or split"
    assert timeline.get_attribute("data-chunks") == str(n + 4)
    assert lag_ms <= bound_ms, (
        f"the last of {n} deltas reached the page {lag_ms:.0f} ms after the stream ended"
    )


def test_clicking_a_segment_shows_its_json(lab: Lab) -> None:
    lab.write_notebook("click.ipynb", [PRELUDE, ALL_KINDS_CHUNKS])
    lab.open("click.ipynb")
    lab.run_all()

    timeline = _wait_state(lab, 1, "done")
    tool_call = timeline.locator('.cs-seg[data-kind="tool-call"]')
    tool_call.click()
    panel = timeline.locator(".cs-json")
    panel.wait_for(state="visible")
    text = panel.inner_text()
    assert "get_weather" in text and "call-1" in text, text
    shown = _json_objects(text)
    assert {"type": "block-start", "index": 2, "blockType": "tool-call"} in shown, text

    timeline.locator('.cs-seg[data-kind="reasoning"]').click()
    lab.page.wait_for_function(
        "el => el.textContent.includes('call the tool.')", arg=panel.element_handle(), timeout=10_000
    )
    lab.screenshot("timeline-json-panel.png", timeline)


def _json_objects(text: str) -> list[Any]:
    """Every JSON object in ``text`` (the panel shows captions and one chunk per line)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    at = text.find("{")
    while at != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            at = text.find("{", at + 1)
            continue
        found.append(value)
        at = text.find("{", end)
    return found


def test_timeline_renders_in_notebook_7(lab: Lab) -> None:
    lab.write_notebook("nb7.ipynb", [PRELUDE, ALL_KINDS_CHUNKS])
    lab.open("nb7.ipynb", app="notebook")
    lab.run_all()

    timeline = _wait_state(lab, 1, "done")
    kinds = [s["kind"] for s in _segments(timeline)]
    assert kinds == ["reasoning", "text", "tool-call", "text"]
    assert timeline.is_visible()


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_a_saved_notebook_shows_its_finished_timeline_when_reopened(lab: Lab) -> None:
    """`chunkscope lab` saves widget state, so a saved run's timeline survives a reopen."""
    lab.write_notebook("saved.ipynb", [PRELUDE, ALL_KINDS_CHUNKS])
    lab.open("saved.ipynb")
    lab.run_all()
    _wait_state(lab, 1, "done")
    lab.save()

    saved = lab.read_saved("saved.ipynb")
    state = saved["metadata"].get("widgets", {}).get(WIDGET_STATE)
    assert state is not None, f"no widget state in the saved notebook: {sorted(saved['metadata'])}"
    views = [
        output["data"][WIDGET_VIEW]["model_id"]
        for output in saved["cells"][1]["outputs"]
        if WIDGET_VIEW in output.get("data", {})
    ]
    assert len(views) == 1, saved["cells"][1]["outputs"]
    assert views[0] in state["state"], "the timeline's model is not among the saved widget models"

    # reopen from disk in a fresh page and workspace, without running anything: the old
    # kernel is gone (the new one never ran a cell), so only the saved state can bring the widget back
    lab.reopen("saved.ipynb")
    timeline = _wait_state(lab, 1, "done")
    segments = _segments(timeline)
    assert [(s["kind"], s["index"], s["deltas"]) for s in segments] == [
        ("reasoning", 0, 3),
        ("text", 1, 2),
        ("tool-call", 2, 2),
        ("text", 3, 1),
    ]
    assert timeline.locator(".cs-finish").get_attribute("data-kind") == "tool-calls"
    outputs = lab.page.locator(".jp-CodeCell").nth(1).locator(".jp-OutputArea").inner_text()
    assert "model not found" not in outputs, outputs
    assert lab.page.get_by_text("model not found").count() == 0
    lab.screenshot("timeline-reopened.png", timeline)
