"""The conformance grid as static HTML: escaped, script-free, for saved notebooks and pages.

Scenarios down, checks across, a title on every cell (its sentence). It is the
``text/html`` a displayed ``ConformanceReport`` carries (registered for the
type by ``_display``) and the static copy beside the live ``ConformanceGrid``.
"""

from __future__ import annotations

from html import escape

from chunkscope.conformance_kit import CHECKS, ConformanceReport

__all__ = ["GRID_CSS", "grid_html"]

GRID_CSS = """
.cs-grid{font:12px/1.4 system-ui,sans-serif;border-collapse:collapse;margin:4px 0}
.cs-grid th,.cs-grid td{border:1px solid #ddd;padding:2px 6px;text-align:center}
.cs-grid th.cs-case,.cs-grid td.cs-case{text-align:left;font-family:ui-monospace,monospace}
.cs-grid td.cs-pass{background:#d9f2dd;color:#1b5e20}
.cs-grid td.cs-fail{background:#f8d4d4;color:#b71c1c;font-weight:600}
.cs-grid td.cs-na{background:#f4f4f4;color:#aaa}
.cs-grid-head{font:600 13px system-ui,sans-serif;margin:4px 0}
.cs-grid-head.cs-ok{color:#1b5e20}.cs-grid-head.cs-bad{color:#b71c1c}
"""


def grid_html(report: ConformanceReport, *, static: bool = True) -> str:
    """The grid as escaped, script-free HTML: scenarios down, checks across, a title on every cell."""
    checks = report.checks
    head = "".join(f'<th title="{escape(CHECKS[c])}">{escape(c)}</th>' for c in checks)
    rows = []
    for case in report.cases:
        cells = []
        for name in checks:
            cell = case.check(name)
            if cell is None:
                cells.append('<td class="cs-na" title="does not apply">·</td>')
            else:
                cls, mark = ("cs-pass", "✓") if cell.passed else ("cs-fail", "✗")
                title = escape(cell.sentence)
                cells.append(f'<td class="{cls}" data-check="{escape(name)}" title="{title}">{mark}</td>')
        rows.append(
            f'<tr data-case="{escape(case.name)}"><td class="cs-case" title="{escape(case.description)}">'
            f"{escape(case.name)}</td>{''.join(cells)}</tr>"
        )
    verdict = "cs-ok" if report.ok else "cs-bad"
    static_class = " cs-static" if static else ""
    return (
        f"<style>{GRID_CSS}</style>"
        f'<div class="cs-conformance{static_class}">'
        f'<div class="cs-grid-head {verdict}">{escape(report.headline())}</div>'
        f'<table class="cs-grid"><thead><tr><th class="cs-case">case</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
