"""A displayed ``Tap`` is a live table of its calls (``TapTable``), with an escaped static copy."""

from __future__ import annotations

import json
import time

import httpx

import chunkscope as cs
from chunkscope.notebook.tap_table._widget import TapTable

KEY = "sk-tap-table-0f3a9c2e71"


def _post(tap: cs.Tap, model: str) -> None:
    body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    httpx.post(f"{tap.base_url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer {KEY}"})


def test_the_table_grows_live_as_calls_arrive_and_shows_fault_codes() -> None:
    with cs.LocalProvider() as provider, cs.Tap(upstream=provider.url) as tap:
        table = TapTable(tap, interval=0.02)
        try:
            assert json.loads(table._state)["rows"] == []
            _post(tap, "text")
            _post(tap, "fault-429")
            assert all(call.wait(5) for call in tap.calls)
            deadline = time.monotonic() + 5
            rows: list[dict[str, object]] = []
            while time.monotonic() < deadline:  # no refresh(): the follower thread pushes by itself
                rows = json.loads(table._state)["rows"]
                if len(rows) == 2 and all(row["done"] for row in rows):
                    break
                time.sleep(0.02)
            assert [row["model"] for row in rows] == ["text", "fault-429"]
            assert rows[0]["code"] is None and rows[0]["chunks"] > 0 and rows[0]["ttft_ms"] is not None
            assert rows[1]["code"] == "RATE_LIMIT" and rows[1]["status"] == 429
            html = table.static_html()
            assert "RATE_LIMIT" in html and "cs-tap-failed" in html and "<script" not in html
            for text in (table._state, html, repr(table)):
                assert KEY not in text
            assert repr(table) == "TapTable(2 calls, 1 failed)"
        finally:
            table.close()
    pushes = table.pushes
    time.sleep(0.1)
    assert table.pushes == pushes  # closed: it stopped following


def test_a_displayed_tap_shows_the_table() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from chunkscope.notebook import _reprs

    shell = InteractiveShell.instance()
    _reprs.enable(shell)
    formatter = shell.display_formatter.ipython_display_formatter
    with cs.LocalProvider() as provider, cs.Tap(upstream=provider.url) as tap:
        assert formatter.lookup(tap) is _reprs._display_tap


async def _open_while_streaming(tap: cs.Tap, table: TapTable, model: str) -> tuple[object, list[int]]:
    """Start a ``model`` call from a thread, click its row once it is on the table, follow it to the end.

    Returns the call and how many records the timeline had each time the call was seen still running.
    """
    import asyncio
    import threading

    client = threading.Thread(target=_post, args=(tap, model))
    client.start()
    try:
        while not tap.calls or not tap.calls[-1].chunks:
            await asyncio.sleep(0.005)
        call = tap.calls[-1]
        table._on_front_end_msg(table, {"type": "open", "id": call.id}, [])  # what a click sends
        assert table._feed is not None and table.timeline is not None
        live: list[int] = []
        while not table._feed.done():
            if not call.done:
                live.append(len(table.timeline._records))
            await asyncio.sleep(0.01)
        return call, live
    finally:
        await asyncio.to_thread(client.join, 10)


async def test_clicking_a_row_opens_the_calls_timeline_live_while_it_streams() -> None:
    with cs.LocalProvider() as provider, cs.Tap(upstream=provider.url) as tap:
        table = TapTable(tap, interval=0.02)
        try:
            call, live = await _open_while_streaming(tap, table, "slow-tokens")
            timeline = table.timeline
            assert timeline is not None and timeline.result is not None
            # live: the timeline grew while the call still streamed, not only at its end
            assert any(0 < n < len(call.chunks) for n in live), live
            assert len(timeline.result.chunks) == len(call.chunks)  # none missed, none twice
            assert [c.type for c in timeline.result.chunks] == [c.type for c in call.chunks]
            # each chunk sits at the time its read reached the tap (not when the kernel drew it)
            times = [record[0] for record in timeline._records]
            assert times == [round(t * 1000, 3) for t in call.chunk_times]
            assert timeline.result.error is None and timeline._end is not None
            assert timeline._end["status"] == "done"
            assert (
                table.detail.outputs
                and "application/vnd.jupyter.widget-view+json" in (table.detail.outputs[0]["data"])
            )
        finally:
            table.close()


async def test_a_finished_faults_timeline_shows_its_code() -> None:
    with cs.LocalProvider() as provider, cs.Tap(upstream=provider.url) as tap:
        table = TapTable(tap, interval=0.02)
        try:
            _post(tap, "fault-429")
            assert tap.calls[-1].wait(5)
            table.open_call(tap.calls[-1].id)
            assert table._feed is not None
            result = await table._feed
            assert result.error_code == "RATE_LIMIT"
            assert table.timeline is not None and table.timeline._end is not None
            assert table.timeline._end["status"] == "error"
            assert table.open_call(10_000) is None  # an unknown id (a stale click) opens nothing
        finally:
            table.close()
