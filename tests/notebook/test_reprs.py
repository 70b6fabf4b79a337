"""Inline diagnostics in any notebook front end: reprs of LlmError, violation lists and StreamResult."""

from __future__ import annotations

from html.parser import HTMLParser
from types import SimpleNamespace
from typing import Any

import pytest
from IPython.core.formatters import DisplayFormatter
from nb_helpers import BROKEN, CLEAN, stream_of

from chunkscope.notebook import ViolationList, enable, error_html, error_text, result_html, violations_html
from chunkscope.protocol import check, collect
from chunkscope.protocol._errors import LlmError


class Rows(HTMLParser):
    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: list[dict[str, str | None]] = []
        self.tags: list[str] = []
        self.classes: list[str] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.classes.extend((dict(attrs).get("class") or "").split())
        if tag == "tr" and dict(attrs).get("data-rule"):
            self.rows.append(dict(attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def chained_error() -> LlmError:
    try:
        try:
            raise ConnectionResetError("connection reset by peer")
        except ConnectionResetError as low:
            raise OSError("socket closed") from low
    except OSError as mid:
        return LlmError(
            "peer closed the stream",
            "TRANSPORT",
            status=503,
            retry_after_ms=1500,
            request_id="req-7",
            cause=mid,
        )


def test_llm_error_html_shows_code_status_and_the_cause_chain() -> None:
    html = error_html(chained_error())
    parsed = Rows(html)
    text = "".join(parsed.text)
    assert "cs-error" in parsed.classes
    assert 'data-code="TRANSPORT"' in html
    for fact in ("TRANSPORT", "peer closed the stream", "HTTP 503", "retry after 1.50 s", "request id req-7"):
        assert fact in text
    assert text.index("OSError: socket closed") < text.index("ConnectionResetError: connection reset by peer")
    assert "script" not in parsed.tags


def test_llm_error_plain_text_reads_as_lines() -> None:
    text = error_text(chained_error())
    lines = text.splitlines()
    assert lines[0].startswith("LlmError [TRANSPORT] peer closed the stream · HTTP 503")
    assert lines[1:] == [
        "  caused by OSError: socket closed",
        "  caused by ConnectionResetError: connection reset by peer",
    ]


def test_an_llm_error_message_is_escaped() -> None:
    html = error_html(LlmError("<img src=x onerror=alert(1)>", "UNKNOWN"))
    assert "<img" not in html and "&lt;img" in html


def test_violation_list_renders_one_table_row_per_violation() -> None:
    violations = check(BROKEN)
    assert len(violations) >= 2
    for html in (violations_html(violations), ViolationList(violations)._repr_html_()):
        rows = Rows(html).rows
        assert [(r["data-rule"], r["data-position"]) for r in rows] == [
            (v.rule, "end" if v.position is None else str(v.position)) for v in violations
        ]


def test_violation_list_plain_text_has_a_line_per_violation() -> None:
    violations = ViolationList(check(BROKEN))
    printed: list[str] = []
    violations._repr_pretty_(SimpleNamespace(text=printed.append), False)
    assert printed[0].splitlines() == [str(v) for v in violations]


async def test_stream_result_html_is_a_compact_timeline_with_usage_and_finish() -> None:
    result = await collect(stream_of(CLEAN))
    html = result_html(result)
    parsed = Rows(html)
    assert parsed.classes.count("cs-seg") == 3
    assert "cs-usage" in parsed.classes and "cs-finish" in parsed.classes
    assert "cs-json" not in parsed.classes  # compact: no per-chunk JSON
    assert "Hello world" in "".join(parsed.text)
    assert 'data-ok="true"' in html


@pytest.fixture
def formatter() -> DisplayFormatter:
    shell = SimpleNamespace(display_formatter=DisplayFormatter())
    assert enable(shell)
    assert enable(shell)  # idempotent
    return shell.display_formatter


def test_every_fresh_shell_gets_the_reprs() -> None:
    """A new shell that reuses the memory, and so the id(), of one that is gone still gets them."""
    error = chained_error()
    missing = 0
    for _ in range(200):
        shell = SimpleNamespace(display_formatter=DisplayFormatter())
        assert enable(shell)
        missing += "text/html" not in formats(shell.display_formatter, error)
    assert missing == 0


def formats(formatter: DisplayFormatter, obj: Any) -> dict[str, Any]:
    data, _ = formatter.format(obj)
    return data


async def test_enable_registers_html_reprs_with_ipython(formatter: DisplayFormatter) -> None:
    violations = check(BROKEN)
    result = await collect(stream_of(BROKEN))
    error = chained_error()

    assert 'data-code="TRANSPORT"' in formats(formatter, error)["text/html"]
    assert formats(formatter, error)["text/plain"].startswith("LlmError [TRANSPORT]")
    assert len(Rows(formats(formatter, violations)["text/html"]).rows) == len(violations)
    assert formats(formatter, violations)["text/plain"].splitlines() == [str(v) for v in violations]
    assert len(Rows(formats(formatter, violations[0])["text/html"]).rows) == 1
    assert "cs-timeline" in formats(formatter, result)["text/html"]


def test_other_lists_print_as_before(formatter: DisplayFormatter) -> None:
    data = formats(formatter, [1, 2, 3])
    assert data["text/plain"] == "[1, 2, 3]"
    assert "text/html" not in data
    assert formats(formatter, [])["text/plain"] == "[]"
