"""The live usage summary: throttled pushes, threads, escaped static copy, the display hook."""

from __future__ import annotations

import asyncio
import json
import threading
from html.parser import HTMLParser
from types import SimpleNamespace
from typing import Any

from IPython.core.formatters import DisplayFormatter

from chunkscope.notebook import UsageSummary, enable, usage_html, usage_state
from chunkscope.protocol import FinishReason, LlmError, StreamResult, TokenUsage
from chunkscope.usage import Price, PriceTable, UsageLog, summary


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def ok(inp: int = 10, out: int = 2, cached: int | None = None) -> StreamResult:
    return StreamResult(
        usage=TokenUsage(input_tokens=inp, output_tokens=out, cache_read_tokens=cached),
        finish=FinishReason(kind="stop"),
    )


def failed(code: str) -> StreamResult:
    return StreamResult(error=LlmError("x", code))


def shown(widget: UsageSummary) -> dict[str, Any]:
    return json.loads(widget._state)


async def test_changes_are_pushed_at_most_once_per_interval_and_the_last_one_is_not_lost() -> None:
    log = UsageLog()
    clock = FakeClock()
    widget = UsageSummary(log, clock=clock, interval=10.0)  # long: only the timer can flush
    assert widget.pushes == 1 and shown(widget)["calls"] == 0
    clock.now = 20.0
    log.record(ok(), provider="p", model="m")  # first change after a quiet spell: at once
    assert widget.pushes == 2 and shown(widget)["calls"] == 1
    for _ in range(50):
        log.record(ok(), provider="p", model="m")
    assert widget.pushes == 2  # throttled
    assert widget._timer is not None  # …but due
    widget._timer._run()  # what the loop does when the interval has passed
    assert widget.pushes == 3 and shown(widget)["calls"] == 51
    widget.close()


async def test_records_from_another_thread_reach_the_widget_through_its_loop() -> None:
    log = UsageLog()
    widget = UsageSummary(log, interval=0.0)
    thread = threading.Thread(target=lambda: [log.record(ok(), provider="p", model="m") for _ in range(20)])
    thread.start()
    thread.join()
    for _ in range(25):
        await asyncio.sleep(0)  # the loop runs the callbacks the thread scheduled
    assert shown(widget)["calls"] == 20
    widget.close()


async def test_the_end_of_a_batch_is_pushed_at_once_with_the_summarys_numbers() -> None:
    log = UsageLog(prices=PriceTable([Price("p", "m", cache_miss_input=1, cache_hit_input=0.5, output=2)]))
    widget = UsageSummary(log, clock=FakeClock(), interval=1e9)
    log.set_progress(0, 4)
    log.record(ok(100, 5, 300), provider="p", model="m")
    log.record(failed("RATE_LIMIT"), provider="p", model="m", call_id="r", attempt=1, final=False)
    log.record(ok(10, 1), provider="p", model="m", call_id="r", attempt=2)
    log.record(failed("SERVER"), provider="p", model="m")
    log.set_progress(4, 4)
    state = shown(widget)
    table = summary(log.to_frame(), by=[]).loc["all"]
    assert state["progress"] == [4, 4]
    assert (state["calls"], state["attempts"], state["errors"]) == (table["calls"], table["attempts"], 2)
    assert state["tokens"]["input"] == table["input_tokens"] == 110
    assert state["tokens"]["cacheRead"] == table["cache_read_tokens"] == 300
    assert state["cacheHitRate"] == float(table["cache_hit_rate"])
    assert abs(state["cost"] - float(table["cost"])) < 1e-12
    assert state["currency"] == "USD"
    assert dict(state["errorsByCode"]) == {"RATE_LIMIT": table["errors_RATE_LIMIT"], "SERVER": 1}
    widget.close()


class Texts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_static_copy_escapes_codes_and_titles() -> None:
    log = UsageLog()
    log.record(failed("<img src=x onerror=alert(1)>"), provider="p", model="m")
    html = usage_html(usage_state(log, title="<script>alert(1)</script>"))
    parsed = Texts()
    parsed.feed(html)
    assert "script" not in parsed.tags and "img" not in parsed.tags
    assert "<script>alert(1)</script>" in "".join(parsed.text)
    assert "<img src=x onerror=alert(1)>" in "".join(parsed.text)
    assert 'class="cs-usage cs-static"' in html and 'data-calls="1"' in html


def test_a_displayed_usage_log_shows_the_live_summary_with_its_static_copy() -> None:
    import chunkscope  # resolved, the class's __module__ is its public path: the hook still finds it

    assert chunkscope.UsageLog.__module__ == "chunkscope"
    shell = SimpleNamespace(display_formatter=DisplayFormatter())
    assert enable(shell)
    log = UsageLog()
    log.record(ok(), provider="p", model="m")
    shown_objects: list[Any] = []
    import IPython.display as display_module

    original = display_module.display
    display_module.display = lambda *args, **kwargs: shown_objects.append((args, kwargs))  # type: ignore[assignment]
    try:
        assert shell.display_formatter.ipython_display_formatter(log) is True
    finally:
        display_module.display = original  # type: ignore[assignment]
    (data,), kwargs = shown_objects[0]
    assert "application/vnd.jupyter.widget-view+json" in data
    assert 'data-calls="1"' in data["text/html"]
    assert kwargs["display_id"]
