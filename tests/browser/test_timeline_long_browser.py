"""Long streams in real JupyterLab: what reaches the page follows the screen, a million deltas stay usable.

``benchmarks/bench_timeline.py`` measures the times; these tests pin what a user relies on:
a 100,000-delta stream reaches the page in a bounded number of messages and bytes close to
its text, and the replay slider and the axis switch of a finished 1,000,000-delta timeline
answer at once, with no long task (``PerformanceObserver`` ``longtask``) over 100 ms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import Lab

pytestmark = pytest.mark.browser

STREAM = """\
import asyncio
import chunkscope as cs
N = {n}
words = [f'w{{i}} ' for i in range(N)]
chunks = [cs.BlockStart(index=0, block_type='text')]
chunks += [cs.TextDelta(index=0, text=w) for w in words]
TEXT = ''.join(words)
# the block-end holds the whole text, as an adapter's does
chunks += [cs.BlockEnd(index=0, block=cs.TextBlock(text=TEXT)),
           cs.Finish(reason=cs.FinishReason(kind='stop'))]
async def paced():
    for i, chunk in enumerate(chunks):
        if i % 50 == 0:
            await asyncio.sleep(0)  # like a network read: let the event loop run
        yield chunk
"""

RUN = "tl = cs.Timeline()\ndisplay(tl)\nresult = await tl.consume(paced())\n"

# the page counts the comm messages (and their bytes) it receives, and its long tasks
WATCH = """() => {
    const w = window.__cs_watch = {
        messages: 0, bytes: 0, finalBytes: 0, longtasks: [], sentMax: 0, kernelAxis: null};
    new PerformanceObserver((list) => {
        for (const e of list.getEntries()) w.longtasks.push(e.duration);
    }).observe({type: 'longtask'});
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    kernel.anyMessage.connect((_, args) => {
        const m = args.msg;
        if (args.direction === 'send') {  // what the page sends the kernel: small, never the state back
            let bytes = JSON.stringify(m.content).length;
            for (const b of m.buffers || []) bytes += b.byteLength;
            w.sentMax = Math.max(w.sentMax, bytes);
        }
        if (args.direction !== 'recv' || m.header.msg_type !== 'comm_msg') return;
        const data = m.content.data || {};
        if (data.state && data.state.axis) w.kernelAxis = data.state.axis;  // the kernel's trait changed
        if (data.method !== 'custom') return;  // the timeline's own messages (not the widget's state sync)
        w.messages += 1;
        let bytes = JSON.stringify(m.content).length;
        for (const b of m.buffers || []) bytes += b.byteLength;
        // the batches drawn live, apart from the final records a saved notebook keeps
        if ((data.content || {}).type === 'records') w.finalBytes += bytes;
        else w.bytes += bytes;
    });
}"""


def _live(lab: Lab) -> Any:
    timeline = lab.page.locator(".jp-CodeCell").nth(1).locator(".cs-timeline:not(.cs-static)")
    timeline.first.wait_for(state="attached")
    lab.page.wait_for_function(
        "el => el.dataset.state === 'done'", arg=timeline.first.element_handle(), timeout=60_000
    )
    return timeline.first


def test_a_100000_delta_stream_reaches_the_page_in_few_messages_about_the_size_of_its_text(lab: Lab) -> None:
    n = 100_000
    lab.write_notebook("long-100k.ipynb", [STREAM.format(n=n), RUN])
    lab.open("long-100k.ipynb")
    lab.page.evaluate(WATCH)
    lab.run_all()
    timeline = _live(lab)
    assert timeline.get_attribute("data-deltas") == str(n)
    watch = lab.page.evaluate("() => window.__cs_watch")
    text_chars = sum(len(f"w{i} ") for i in range(n))
    # at most one batch a display frame over the stream's second or so, never one per delta
    assert 2 <= watch["messages"] <= 150, watch["messages"]
    # each delta's text, length and arrival step: not a JSON record per delta (~3.9x the text), nor
    # the block-end's copy of the whole text (the page draws the block from its deltas)
    assert watch["bytes"] <= 2.2 * text_chars, (watch["bytes"], text_chars)
    # and the final records once, deltas coalesced, for the saved notebook: about the text again
    assert watch["finalBytes"] <= 1.7 * text_chars, (watch["finalBytes"], text_chars)
    seg = timeline.locator(".cs-seg")
    assert seg.get_attribute("data-deltas") == str(n)
    shown = seg.locator(".cs-seg-text").text_content() or ""
    assert len(shown) == 131_072 and shown.endswith(f"w{n - 1} ")  # the window: the text's tail
    hidden = int(seg.get_attribute("data-hidden-chars") or 0)
    assert hidden == text_chars - 131_072
    # the box follows the text to its end (blocks out of sight are laid out only once scrolled to:
    # scrolled to the top, the first one shows its text, not an empty placeholder)
    box = seg.locator(".cs-seg-text").element_handle()
    lab.page.wait_for_function("(box) => box.scrollTop + box.clientHeight >= box.scrollHeight - 4", arg=box)
    lab.page.evaluate("(box) => { box.scrollTop = 0; }", box)
    lab.page.wait_for_function(
        """(box) => {
            const first = box.querySelector('.cs-text-block');
            const range = document.createRange();
            range.selectNodeContents(first);
            return box.scrollTop === 0 && range.getClientRects().length > 20;  // its lines, laid out
        }""",
        arg=box,
    )
    # the block-end's JSON says what was left out of it
    seg.locator(".cs-bar").click()
    last_line = (timeline.locator(".cs-json").text_content() or "").splitlines()[-1]
    assert last_line.endswith(f"(the block's text: {text_chars - 2_000:,} more chars, drawn from its deltas)")
    seg.locator(".cs-show-earlier").click()  # the text before the window, one window at a time
    lab.page.wait_for_function(
        f"el => Number(el.dataset.hiddenChars) === {hidden - 131_072}", arg=seg.element_handle()
    )


@pytest.mark.slow
def test_the_replay_slider_and_axis_switch_of_a_1000000_delta_timeline_answer_without_long_tasks(
    lab: Lab,
) -> None:
    n = 1_000_000
    lab.write_notebook("long-1m.ipynb", [STREAM.format(n=n), RUN])
    lab.open("long-1m.ipynb")
    lab.page.evaluate(WATCH)
    lab.run_all()
    timeline = _live(lab)
    assert timeline.get_attribute("data-chunks") == str(n + 3)
    lab.page.wait_for_timeout(1000)  # the final state and static copy have arrived
    lab.page.evaluate("() => { window.__cs_watch.longtasks = []; }")

    # drag the slider back to the middle, then forward again: each frame drawn whole, quickly
    answers = lab.page.evaluate(
        """async (el) => {
            const scrub = el.querySelector('.cs-scrub');
            const frame = () => new Promise(requestAnimationFrame);
            const out = [];
            for (const value of [Math.floor(Number(scrub.max) / 2), 1000, Number(scrub.max) - 10]) {
                const t0 = performance.now();
                scrub.value = String(value);
                scrub.dispatchEvent(new Event('input', {bubbles: true}));
                while (Number(el.dataset.chunks) !== value) await frame();
                out.push([value, performance.now() - t0, Number(el.querySelector('.cs-seg').dataset.deltas)]);
            }
            const t0 = performance.now();
            el.querySelector('.cs-axis-toggle').click();
            while (el.dataset.axis !== 'chunk') await frame();
            out.push(['axis', performance.now() - t0, 0]);
            return out;
        }""",
        timeline.element_handle(),
    )
    for value, ms, deltas in answers[:3]:
        assert ms < 1000, f"the slider took {ms:.0f} ms to show chunk {value}"
        assert deltas == value - 1  # chunk 0 is the block-start: every delta before the frame, no more
    assert answers[3][1] < 500, f"the axis switch took {answers[3][1]:.0f} ms"
    # the switch reached the kernel's ``axis`` as a small message (a sync of every attribute the page
    # set sent the joined final records back, over the server's limit: the connection dropped)
    lab.page.wait_for_function("() => window.__cs_watch.kernelAxis === 'chunk'", timeout=10_000)
    assert lab.page.evaluate("() => window.__cs_watch.sentMax") < 10_000
    assert timeline.get_attribute("data-scrub") == str(n - 7)
    longtasks = lab.page.evaluate("() => window.__cs_watch.longtasks")
    assert max(longtasks, default=0) <= 100, f"the page stopped answering for {max(longtasks):.0f} ms"
