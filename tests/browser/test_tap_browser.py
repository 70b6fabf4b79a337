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
