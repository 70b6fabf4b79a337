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
