"""Inline diagnostics for any notebook front end: HTML and plain-text reprs.

``LlmError`` (code, message, HTTP status, retry-after, request id, cause
chain), violations (a table, one row per violation) and ``StreamResult`` (a
compact static timeline with usage and finish). The protocol layer knows
nothing of notebooks, so ``enable()`` registers these with IPython's display
formatters; importing ``chunkscope.notebook`` calls it. Everything here is
static, escaped HTML: no script, no network.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from html import escape
from typing import Any

from chunkscope.protocol import ERROR_CODES, LlmError, StreamResult, Violation

from ._shells import first_registration
from .timeline._state import cause_lines, error_state, state_from_result
from .timeline._static_html import error_parts, format_ms, render_fragment, timeline_css
from .timeline._view import ErrorInfo, error_info

__all__ = [
    "ViolationList",
    "enable",
    "error_html",
    "error_text",
    "violations_html",
    "violations_text",
    "result_html",
    "cause_lines",
]


def _error_info(exc: LlmError) -> ErrorInfo:
    info = error_info(error_state(exc))  # the badge the timeline draws for the same error
    assert info is not None  # an error dict always gives a badge
    return info


def error_text(exc: LlmError) -> str:
    """A readable multi-line description: code and facts, then the cause chain."""
    lines = [f"LlmError [{exc.code}] " + " · ".join(error_parts(_error_info(exc)))]
    lines.extend(f"  caused by {line}" for line in cause_lines(exc))
    if exc.violations:
        lines.append(violations_text(exc.violations, indent="  "))
    return "\n".join(lines)


def error_html(exc: LlmError) -> str:
    """The error as a badge, its code's meaning, and the cause chain (escaped HTML)."""
    info = _error_info(exc)
    registered = ERROR_CODES.get(exc.code)
    out = [
        f"<style>{timeline_css()}</style>",
        f'<div class="cs-repr cs-llm-error" data-code="{escape(exc.code, quote=True)}">',
        f'<span class="cs-badge cs-error" data-code="{escape(exc.code, quote=True)}">'
        f'<b>LlmError <span class="cs-error-code">{escape(exc.code)}</span></b> '
        f"{escape(' · '.join(error_parts(info)))}</span>",
    ]
    if registered is not None:
        out.append(f'<div class="cs-chain">{escape(registered.description)}</div>')
    causes = cause_lines(exc)
    if causes:
        out.append('<ol class="cs-chain">')
        out.extend(f"<li>caused by {escape(line)}</li>" for line in causes)
        out.append("</ol>")
    if exc.violations:
        out.append(_violation_table(exc.violations))
    out.append("</div>")
    return "".join(out)


def _violation_table(violations: Iterable[Violation]) -> str:
    rows = [
        '<table class="cs-vtable"><thead><tr><th>chunk</th><th>rule</th><th>severity</th>'
        "<th>message</th></tr></thead><tbody>"
    ]
    for v in violations:
        position = "end" if v.position is None else str(v.position)
        rows.append(
            f'<tr class="cs-violation" data-rule="{escape(v.rule, quote=True)}" data-position="{position}">'
            f"<td>{'end of stream' if v.position is None else position}</td>"
            f'<td class="cs-rule">{escape(v.rule)}</td><td>{escape(v.severity)}</td>'
            f"<td>{escape(v.message)}</td></tr>"
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def violations_html(violations: Iterable[Violation]) -> str:
    """Violations as a table, one row per violation (escaped HTML)."""
    items = list(violations)
    summary = f"{len(items)} violation{'s' if len(items) != 1 else ''}"
    return (
        f"<style>{timeline_css()}</style>"
        f'<div class="cs-repr cs-violation-list"><div class="cs-chain">{summary}</div>'
        f"{_violation_table(items)}</div>"
    )


def violations_text(violations: Iterable[Violation], *, indent: str = "") -> str:
    """One line per violation: ``chunk 2: no-interleave: block-start 1 arrived …``."""
    items = list(violations)
    if not items:
        return f"{indent}no violations"
    return "\n".join(f"{indent}{v}" for v in items)


def result_html(result: StreamResult, *, title: str = "StreamResult") -> str:
    """A compact static timeline of ``result`` with its usage and finish (escaped HTML)."""
    total = format_ms(result.timings.total_s * 1000)
    facts = [f"ok={result.ok}", f"{len(result.blocks)} blocks", f"total {total}"]
    body = render_fragment(state_from_result(result, title=title), compact=True)
    return (
        f'<div class="cs-repr cs-stream-result" data-ok="{str(result.ok).lower()}">{body}'
        f'<div class="cs-chain">{escape(" · ".join(facts))}</div></div>'
    )


class ViolationList(list[Violation]):
    """A list of violations that displays as a table in a notebook (and as lines in text)."""

    def _repr_html_(self) -> str:
        return violations_html(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(f"{len(self)} violations" if cycle else violations_text(self))


def _is_violation_list(obj: Any) -> bool:
    return bool(obj) and type(obj[0]) is Violation and all(isinstance(v, Violation) for v in obj)


def enable(ip: Any = None) -> bool:
    """Register the reprs with IPython's formatters; False when not under IPython.

    Idempotent. Lists print as before unless every item is a ``Violation``.
    """
    if ip is None:
        if "IPython" not in sys.modules:  # no shell can be running; do not pay for importing IPython
            return False
        from IPython.core.getipython import get_ipython

        ip = get_ipython()  # type: ignore[no-untyped-call,unused-ignore]  # typed in IPython 9
    if ip is None:
        return False
    if not first_registration(ip, "reprs"):
        return True
    formatters = ip.display_formatter.formatters
    html = formatters["text/html"]
    plain = formatters["text/plain"]
    html.for_type(LlmError, error_html)
    html.for_type(StreamResult, lambda result: result_html(result))
    html.for_type(Violation, lambda v: violations_html([v]))
    previous_html = html.for_type(list, None) if list in html.type_printers else None

    def list_html(obj: list[Any]) -> str | None:
        if _is_violation_list(obj):
            return violations_html(obj)
        return previous_html(obj) if previous_html is not None else None

    html.for_type(list, list_html)
    plain.for_type(LlmError, lambda exc, p, cycle: p.text(error_text(exc)))
    previous_plain = plain.for_type(list)  # IPython's own list printer unless someone replaced it

    def list_pretty(obj: list[Any], p: Any, cycle: bool) -> None:
        if not cycle and _is_violation_list(obj):
            p.text(violations_text(obj))
        else:
            previous_plain(obj, p, cycle)

    plain.for_type(list, list_pretty)
    # A displayed UsageLog shows its live summary; by name, so nothing loads until one is displayed.
    # Under both names a class goes by: its public path once `cs.UsageLog` resolved, its module's before.
    hooks = ip.display_formatter.ipython_display_formatter
    for module in ("chunkscope", "chunkscope.usage._log"):
        hooks.for_type_by_name(module, "UsageLog", _display_usage_log)
    # A displayed Tap shows its live table of calls (the tap layer knows nothing of notebooks).
    for module in ("chunkscope", "chunkscope.tap._proxy"):
        hooks.for_type_by_name(module, "Tap", _display_tap)
    for module in ("chunkscope", "chunkscope.tap._replay"):  # recorded calls in the same table
        hooks.for_type_by_name(module, "TapReplay", _display_tap)
    return True


def _display_tap(tap: Any) -> bool:
    from .tap_table._widget import display_tap  # loads anywidget only when a tap is displayed

    return display_tap(tap)


def _display_usage_log(log: Any) -> bool:
    from .usage_summary._widget import display_usage_log  # loads anywidget only when a log is displayed

    return display_usage_log(log)
