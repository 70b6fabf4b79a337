"""What saved notebooks and HTML exports show: the final state and its static, escaped rendering."""

from __future__ import annotations

import json
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from nb_helpers import (
    BROKEN,
    CLEAN,
    FakeClock,
    delta,
    end,
    finish,
    paced,
    start,
    stream_of,
    timeline_with_capture,
)

from chunkscope.notebook import Timeline, render_fragment
from chunkscope.protocol._errors import LlmError

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


class Elements(HTMLParser):
    """Collects (tag, attrs) of every element, and all text, of an HTML string."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def with_class(self, name: str) -> list[dict[str, str | None]]:
        return [a for _, a in self.elements if name in (a.get("class") or "").split()]


async def finished(chunks: list[Any], **kwargs: Any) -> Timeline:
    clock = FakeClock()
    timeline, _ = timeline_with_capture(clock, **kwargs)
    await timeline.consume(paced(chunks, clock, step=0.01))
    return timeline


async def test_final_state_is_synced_and_renders_one_segment_per_block() -> None:
    timeline = await finished(CLEAN, title="clean")
    state = json.loads(timeline.get_state()["_state"])  # the synced trait a saved notebook keeps
    assert state == timeline.state()
    assert state["status"] == "done" and len(state["records"]) == len(CLEAN)

    page = Elements(timeline.static_html())
    root = page.with_class("cs-timeline")
    assert len(root) == 1
    assert (root[0]["data-state"], root[0]["data-chunks"], root[0]["data-deltas"]) == ("done", "14", "6")
    segments = page.with_class("cs-seg")
    assert Counter(s["data-kind"] for s in segments) == Counter(b.type for b in timeline.result.blocks)  # type: ignore[union-attr]
    assert [(s["data-index"], s["data-deltas"]) for s in segments] == [("0", "2"), ("1", "2"), ("2", "2")]
    assert page.with_class("cs-usage") and page.with_class("cs-finish")[0]["data-kind"] == "tool-calls"
    assert not page.with_class("cs-error") and not page.with_class("cs-violation-mark")
    text = "".join(page.text)
    assert "Hello world" in text and "Think first." in text
    assert "get_weather" in text and '{"city": "Tokyo"}' in text


async def test_violations_render_as_marks_and_list_items_at_their_chunks() -> None:
    timeline = await finished(BROKEN)
    result = timeline.result
    assert result is not None
    page = Elements(timeline.static_html())
    expected = [(v.rule, "end" if v.position is None else str(v.position)) for v in result.violations]
    marks = page.with_class("cs-violation-mark")
    items = [a for tag, a in page.elements if tag == "li" and "data-rule" in a]
    assert [(m["data-rule"], m["data-position"]) for m in marks] == expected
    assert [(i["data-rule"], i["data-position"]) for i in items] == expected
    assert len(page.with_class("cs-violations")) == 1
    boundaries = [(s["data-index"], s["data-started"], s["data-closed"]) for s in page.with_class("cs-seg")]
    assert boundaries == [("0", "true", "false"), ("1", "true", "true")]  # block 0 never closed


async def test_an_error_badge_shows_code_status_retry_after_and_request_id() -> None:
    error = LlmError("slow down", "RATE_LIMIT", status=429, retry_after_ms=2000, request_id="req-42")

    async def failing() -> Any:
        yield start(0, "text")
        yield delta(0, "kept")
        raise error

    timeline, _ = timeline_with_capture(FakeClock())
    await timeline.consume(failing())
    html = timeline.static_html()
    page = Elements(html)
    badge = page.with_class("cs-error")
    assert [b["data-code"] for b in badge] == ["RATE_LIMIT"]
    assert page.with_class("cs-timeline")[0]["data-state"] == "error"
    text = "".join(page.text)
    for fact in ("RATE_LIMIT", "slow down", "HTTP 429", "retry after 2.00 s", "request id req-42", "kept"):
        assert fact in text


async def test_an_error_finish_shows_its_failure_code() -> None:
    chunks = [
        start(0, "text"),
        delta(0, "no"),
        end(0, type="text", text="no"),
        finish("error", message="blocked", code="CONTENT_FILTER"),
    ]
    timeline = await finished(chunks)
    page = Elements(timeline.static_html())
    assert [b["data-code"] for b in page.with_class("cs-error")] == ["CONTENT_FILTER"]
    assert page.with_class("cs-finish")[0]["data-kind"] == "error"
    assert page.with_class("cs-timeline")[0]["data-state"] == "error"


HOSTILE = [
    "<script>alert('text')</script>",
    '<img src=x onerror="alert(1)">',
    "</div></pre><svg onload=alert(2)>",
]


async def test_static_html_escapes_everything_the_model_or_adapter_wrote() -> None:
    chunks = [
        start(0, "text"),
        *(delta(0, h) for h in HOSTILE),
        end(0, type="text", text="".join(HOSTILE)),
        start(1, "tool-call"),
        {
            "type": "tool-call-delta",
            "index": 1,
            "id": "<b>id</b>",
            "name": "<img src=y onerror=alert(3)>",
            "argumentsDelta": '{"x": "<script>bad()</script>"}',
        },
        end(
            1,
            type="tool-call",
            id="<b>id</b>",
            name="<img src=y onerror=alert(3)>",
            arguments='{"x": "<script>bad()</script>"}',
        ),
        finish("error", message="<script>alert(4)</script>", code="X<script>"),
    ]
    error = LlmError("<img src=z onerror=alert(5)>", "TRANSPORT", request_id="<script>r</script>")

    async def failing() -> Any:
        for c in chunks:
            yield c
        raise error

    timeline, _ = timeline_with_capture(FakeClock(), title="<script>title</script>")
    await timeline.consume(failing())
    for html in (timeline.static_html(), render_fragment(timeline.state(), compact=True)):
        lowered = html.lower()
        assert "<script" not in lowered
        assert "<img" not in lowered and "<svg" not in lowered and "<b>id</b>" not in lowered
        assert not re.search(r"<[^>]*\son\w+\s*=", lowered), "no element may carry an event handler"
        text = "".join(Elements(html).text)
        for payload in HOSTILE:
            assert payload in text  # shown, as text


async def test_to_html_writes_a_self_contained_page(tmp_path: Path) -> None:
    timeline = await finished(CLEAN, title="saved")
    path = timeline.to_html(tmp_path / "timeline.html")
    html = path.read_text("utf-8")
    assert html.startswith("<!doctype html>")
    assert "<style>" in html and ".cs-timeline" in html  # the stylesheet is inline
    lowered = html.lower()
    assert "<script" not in lowered
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", lowered), "no network reference"
    assert "@import" not in lowered and "url(" not in lowered
    page = Elements(html)
    assert len(page.with_class("cs-seg")) == 3
    assert "saved" in "".join(page.text)


async def test_the_mimebundle_has_the_widget_view_static_html_and_plain_text() -> None:
    timeline = await finished(CLEAN, title="bundle")
    data, _ = timeline._repr_mimebundle_()
    assert data[WIDGET_MIME]["model_id"] == timeline.model_id
    assert 'class="cs-timeline' in data["text/html"]
    assert Elements(data["text/html"]).with_class("cs-timeline")[0]["data-state"] == "done"
    assert data["text/plain"].startswith("Timeline('bundle': done; 14 chunks")


def test_a_timeline_displayed_before_its_run_shows_an_empty_streaming_state() -> None:
    timeline = Timeline()
    data, _ = timeline._repr_mimebundle_()
    root = Elements(data["text/html"]).with_class("cs-timeline")[0]
    assert (root["data-state"], root["data-chunks"]) == ("streaming", "0")


async def test_display_under_an_id_is_updated_with_the_final_html(monkeypatch: pytest.MonkeyPatch) -> None:
    import IPython.display

    shown: list[tuple[str, dict[str, Any], str]] = []
    monkeypatch.setattr(
        IPython.display, "display", lambda data, **kw: shown.append(("display", data, kw["display_id"]))
    )
    monkeypatch.setattr(
        IPython.display, "update_display", lambda data, **kw: shown.append(("update", data, kw["display_id"]))
    )
    timeline, _ = timeline_with_capture(FakeClock())
    timeline._ipython_display_()
    await timeline.consume(stream_of(CLEAN))
    assert [kind for kind, _, _ in shown] == ["display", "update"]
    assert shown[0][2] == shown[1][2]
    final = Elements(shown[1][1]["text/html"]).with_class("cs-timeline")[0]
    assert (final["data-state"], final["data-chunks"]) == ("done", str(len(CLEAN)))
    assert WIDGET_MIME in shown[1][1]


async def test_show_displays_a_timeline_and_returns_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    import IPython.display

    from chunkscope.notebook import show

    displayed: list[Any] = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: displayed.append(obj))
    monkeypatch.setattr(Timeline, "send", lambda self, content, buffers=None: None)
    result = await show(stream_of(CLEAN), title="shown")
    assert result.ok and result.text == "Hello world"
    assert isinstance(displayed[0], Timeline) and displayed[0].result is result
    assert displayed[0].title == "shown"


async def test_show_of_a_path_draws_each_stream_the_file_holds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import IPython.display

    import chunkscope as cs

    displayed: list[Any] = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: displayed.append(obj))
    monkeypatch.setattr(Timeline, "send", lambda self, content, buffers=None: None)
    path = tmp_path / "log.jsonl"
    cs.write_chunks(path, CLEAN)
    (result,) = await cs.show(path)
    assert result.ok and result.text == "Hello world"
    assert [timeline.title for timeline in displayed] == [str(path)]
    with pytest.raises(cs.SourceError):
        await cs.show(tmp_path / "missing.jsonl")


def test_an_error_badge_marks_a_code_outside_the_registry_as_unmapped() -> None:
    from chunkscope.notebook.timeline._static_html import error_parts
    from chunkscope.notebook.timeline._view import ErrorInfo

    assert "unmapped code: not in cs.ERROR_CODES" in error_parts(ErrorInfo("SOME_NEW_REASON", "stopped"))
    assert not any("unmapped" in p for p in error_parts(ErrorInfo("CONTENT_FILTER", "stopped")))
    assert not any("unmapped" in p for p in error_parts(ErrorInfo("HTTP_404", "not found")))
    # codes the TypeScript reference raises itself are registered: its logs show them as known
    for code in ("PI_AI_ERROR", "UNKNOWN_MODEL", "INVALID_MODEL_CONTEXT", "INSUFFICIENT_SYSTEM_RESOURCE"):
        assert not any("unmapped" in p for p in error_parts(ErrorInfo(code, "failed"))), code


async def test_the_outputs_static_copy_holds_a_long_segments_last_131072_chars_and_to_html_all(
    tmp_path: Path,
) -> None:
    words = [f"w{i:06d} " for i in range(25_000)]  # 200,000 chars
    timeline = Timeline()
    await timeline.consume([{"type": "text-delta", "index": 0, "text": w} for w in words])
    text = "".join(words)
    copy = timeline.static_html()
    assert text[-131_072:] in copy and text[: len(text) - 131_072] not in copy
    assert "68,928 earlier chars not shown here" in copy
    page = timeline.to_html(tmp_path / "all.html").read_text(encoding="utf-8")
    assert text in page


async def test_the_outputs_static_copy_cuts_a_block_ends_json_line_and_to_html_keeps_it_whole(
    tmp_path: Path,
) -> None:
    # a block-end carries its block's whole text: at a million deltas, megabytes in one JSON line that
    # JupyterLab would decode and parse (its table of contents reads every text/html output) at once
    words = [f"w{i:06d} " for i in range(25_000)]  # 200,000 chars
    text = "".join(words)
    chunks: list[dict[str, object]] = [{"type": "block-start", "index": 0, "blockType": "text"}]
    chunks += [{"type": "text-delta", "index": 0, "text": w} for w in words]
    chunks.append({"type": "block-end", "index": 0, "block": {"type": "text", "text": text}})
    timeline = Timeline()
    await timeline.consume(chunks)
    copy = timeline.static_html()
    assert len(copy) < 131_072 + 30_000, len(copy)
    assert text[-131_072:] in copy  # the text's window is all there
    assert "more chars; to_html() writes them all)" in copy
    page = timeline.to_html(tmp_path / "all.html").read_text(encoding="utf-8")
    assert page.count(text) == 2  # the segment's text and the block-end's JSON, whole
