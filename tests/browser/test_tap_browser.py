"""A displayed tap as a person sees it: a live table of calls, and a clicked call's live timeline.

A notebook starts a tap in front of a local provider; a client (httpx) streams through it from a
thread. The table shows the calls as they arrive (a 429 with its code badge); clicking the streaming
call's row opens its timeline under the table, which streams and then finishes. The model's text is
an ``<img onerror>`` payload: it stays text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from _browser_docs import docs_screenshot

if TYPE_CHECKING:
    from conftest import Lab

pytestmark = pytest.mark.browser

PAYLOAD = '<img src=x onerror="window.__cs_pwned=1">'

SETUP = """\
import threading
import httpx
import chunkscope as cs
%load_ext chunkscope

provider = cs.LocalProvider(token_delay=0.2).start()  # the echo call streams for a few seconds
tap = cs.Tap(upstream=provider.url).start()

def post(model, prompt="hi"):
    body = {"model": model, "stream": True, "messages": [{"role": "user", "content": prompt}]}
    headers = {"authorization": "Bearer sk-local"}
    with httpx.stream("POST", f"{tap.base_url}/v1/chat/completions", json=body, headers=headers) as r:
        for _ in r.iter_raw():
            pass

tap
"""

CLIENTS = f"""\
post("fault-429")
payload = {PAYLOAD!r}
client = threading.Thread(target=post, args=("echo", " ".join([payload] * 3 + ["word"] * 20)))
client.start()
"""

LIVE_TIMELINE = ".cs-timeline:not(.cs-static)"


def test_the_tap_table_grows_and_a_clicked_row_opens_the_calls_live_timeline(lab: Lab) -> None:
    lab.write_notebook("tap.ipynb", [SETUP, CLIENTS])
    lab.open("tap.ipynb")
    lab.run_all()

    cell = lab.page.locator(".jp-CodeCell").nth(0)
    table = cell.locator(".cs-tap-table").first
    table.wait_for(state="attached")
    rows = table.locator("tbody tr")
    lab.page.wait_for_function(
        "el => el.querySelectorAll('tbody tr').length === 2", arg=table.element_handle()
    )
    badge = rows.nth(0).locator(".cs-tap-badge")
    assert badge.text_content() == "RATE_LIMIT"
    streaming = rows.nth(1)
    assert streaming.get_attribute("class") == "cs-tap-running", "the echo call already ended"

    streaming.click()
    timeline = cell.locator(LIVE_TIMELINE).first
    timeline.wait_for(state="attached", timeout=10_000)
    states = [timeline.get_attribute("data-state")]
    # (once finished the kernel shows the final copy: a new view of the same timeline)
    done = cell.locator(f'{LIVE_TIMELINE}[data-state="done"]').first
    done.wait_for(state="attached", timeout=30_000)
    assert states[0] == "streaming", states  # opened while the call still streamed, then finished
    assert int(done.get_attribute("data-chunks") or 0) > 20
    # the table's row finished too, without a code
    lab.page.wait_for_function(
        "el => !el.querySelectorAll('tbody tr')[1].className", arg=table.element_handle(), timeout=10_000
    )
    assert rows.nth(1).locator(".cs-tap-badge").count() == 0

    # the model's text is text: no element made of it, no handler ran
    assert cell.locator("img, script").count() == 0
    lab.page.wait_for_timeout(300)
    assert lab.page.evaluate("() => window.__cs_pwned") is None

    shot = lab.screenshot("tap-table.png", table)
    docs_screenshot(shot, "tap-table.png")


MANY_SETUP = """\
import threading
import httpx
import chunkscope as cs
%load_ext chunkscope

provider = cs.LocalProvider().start()
tap = cs.Tap(upstream=provider.url).start()
tap
"""

MANY_CALLS = """\
def post_many(k):
    body = {"model": "text", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client() as client:
        for _ in range(k):
            with client.stream("POST", f"{tap.base_url}/v1/chat/completions", json=body,
                               headers={"authorization": "Bearer sk-local"}) as r:
                for _ in r.iter_raw():
                    pass
threads = [threading.Thread(target=post_many, args=(150,)) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
"""

# what reaches the page for the table (its state pushes, the output's static copy), its long tasks
WATCH_TABLE = """() => {
    const w = window.__cs_table = {pushes: [], copies: 0, largest: 0, longtasks: []};
    new PerformanceObserver((list) => {
        for (const e of list.getEntries()) w.longtasks.push(e.duration);
    }).observe({type: 'longtask'});
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    kernel.anyMessage.connect((_, args) => {
        const m = args.msg;
        const type = m.header.msg_type;
        if (args.direction !== 'recv' || (type !== 'comm_msg' && type !== 'update_display_data')) return;
        w.largest = Math.max(w.largest, JSON.stringify(m.content).length);
        if (type === 'update_display_data') w.copies += 1;
        else w.pushes.push(performance.now());
    });
}"""


def test_six_hundred_calls_reach_the_tap_table_in_bounded_pushes_and_it_keeps_the_last_200(lab: Lab) -> None:
    lab.write_notebook("tap-many.ipynb", [MANY_SETUP, MANY_CALLS])
    lab.open("tap-many.ipynb")
    lab.page.evaluate(WATCH_TABLE)
    lab.run_all()
    table = lab.page.locator(".jp-CodeCell").nth(0).locator(".cs-tap-table").first
    lab.page.wait_for_function(
        """el => {
            const rows = el.querySelectorAll('tbody tr');
            return rows.length && rows[rows.length - 1].dataset.callId === '600'
                && !rows[rows.length - 1].className;
        }""",
        arg=table.element_handle(),
        timeout=30_000,
    )
    lab.page.wait_for_timeout(500)  # the last static copy
    ids = table.locator("tbody tr").evaluate_all("rows => rows.map(r => Number(r.dataset.callId))")
    assert ids == list(range(401, 601))  # the last 200 calls, however many the tap saw
    w = lab.page.evaluate("() => window.__cs_table")
    seconds = (w["pushes"][-1] - w["pushes"][0]) / 1000
    # a push at most every 0.1 s (never one a call), a static copy at most every second
    assert len(w["pushes"]) <= 12 * seconds + 5 and len(w["pushes"]) < 600 / 4, (len(w["pushes"]), seconds)
    assert w["copies"] <= seconds + 3, (w["copies"], seconds)
    assert w["largest"] < 64_000, w["largest"]  # 200 rows at most, not every call
    assert max(w["longtasks"], default=0) <= 100, w["longtasks"]
