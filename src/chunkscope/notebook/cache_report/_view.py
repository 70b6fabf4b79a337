"""``CacheView``: ``cs.cache_report``'s frame as a table a person reads at a glance.

One row per call: its verdict, a bar of the prompt (the prefix shared with an earlier request,
then the new part) over a bar of what the provider reported read from cache, the counts and the
section that changed. Clicking a row opens the change as a diff (before and after, the common
start plain and the rest marked). Every text of a request is escaped: it is text, never HTML.
"""

from __future__ import annotations

from html import escape
from typing import Any

import pandas as pd

from chunkscope.usage import cache_report

__all__ = ["CacheView", "cache_html"]

_CSS = """
.cs-cache{font:12px/1.4 system-ui,sans-serif;max-width:980px}
.cs-cache summary{display:grid;grid-template-columns:6em 8em 10em 1fr 13em 11em;gap:.6em;
 align-items:center;cursor:pointer;padding:3px 4px;border-bottom:1px solid #e3e3e3;list-style:none}
.cs-cache summary::-webkit-details-marker{display:none}
.cs-cache details[open] summary{background:#f3f6fb}
.cs-cache .cs-cache-head{font-weight:600;cursor:default}
.cs-cache .cs-cache-bars{display:flex;flex-direction:column;gap:2px}
.cs-cache .cs-cache-bar{display:flex;height:9px;background:#f1f1f1}
.cs-cache .cs-cache-shared{background:#6b8fc7}.cs-cache .cs-cache-new{background:#e8a23a}
.cs-cache .cs-cache-cached{background:#3c9a5f}
.cs-cache .cs-v-hit{color:#2d7a4a}.cs-cache .cs-v-miss-explained{color:#9a6a10}
.cs-cache .cs-v-miss-unexplained{color:#b3261e;font-weight:600}
.cs-cache .cs-cache-diff{padding:6px 10px 10px 2em;border-bottom:1px solid #e3e3e3}
.cs-cache pre{margin:2px 0;white-space:pre-wrap;word-break:break-all}
.cs-cache del{background:#fde2e1;text-decoration:none}.cs-cache ins{background:#dcf5e3;text-decoration:none}
.cs-cache .cs-cache-legend span{display:inline-block;width:10px;height:9px;margin:0 3px 0 10px}
"""


def _count(value: Any) -> str:
    return "-" if value is None or value is pd.NA or pd.isna(value) else f"{int(value):,}"


def _text(value: Any) -> str:
    return (
        "" if value is None or value is pd.NA or (isinstance(value, float) and pd.isna(value)) else str(value)
    )


def _width(value: Any, scale: float) -> float:
    return 0.0 if not _count(value)[0].isdigit() else max(0.0, min(100.0, int(value) * scale))


def _bars(row: dict[str, Any], scale: float) -> str:
    shared, new, cached = (
        _width(row.get(name), scale) for name in ("shared_prefix_tokens", "new_tokens", "cached_tokens")
    )
    return (
        '<span class="cs-cache-bars">'
        f'<span class="cs-cache-bar"><span class="cs-cache-shared" style="width:{shared:.2f}%"></span>'
        f'<span class="cs-cache-new" style="width:{new:.2f}%"></span></span>'
        f'<span class="cs-cache-bar"><span class="cs-cache-cached" style="width:{cached:.2f}%"></span></span>'
        "</span>"
    )


def _diff(before: str, after: str) -> str:
    """The two excerpts, their common start and end plain, what differs marked (deleted, inserted)."""
    same = 0
    while same < min(len(before), len(after)) and before[same] == after[same]:
        same += 1
    tail = 0
    while tail < min(len(before), len(after)) - same and before[-1 - tail] == after[-1 - tail]:
        tail += 1

    def marked(text: str, tag: str) -> str:
        middle, end = text[same : len(text) - tail], text[len(text) - tail :]
        return f"{escape(text[:same])}<{tag}>{escape(middle)}</{tag}>{escape(end)}"

    return f"<pre>before: {marked(before, 'del')}</pre><pre>after:  {marked(after, 'ins')}</pre>"


def _detail(row: dict[str, Any]) -> str:
    section = _text(row.get("change_section"))
    lines = []
    if section and section != "(first call)":
        field = _text(row.get("change_field"))
        where = f"{section}, field {field}" if field else section
        lines.append(f"<div>first change: <b>{escape(where)}</b></div>")
        lines.append(_diff(_text(row.get("before")), _text(row.get("after"))))
    elif section:
        lines.append("<div>the first request of this provider, model and key: nothing to share yet</div>")
    else:
        lines.append("<div>no change: this request extends or repeats an earlier one</div>")
    cost = _text(row.get("miss_cost"))
    lines.append(
        f"<div>missed {_count(row.get('missed_tokens'))} tokens"
        + (f", costing {escape(cost)} {escape(_text(row.get('currency')))}" if cost else "")
        + f"; estimate ±{_count(row.get('estimate_tolerance'))} tokens</div>"
    )
    rules = _text(row.get("rules"))
    if rules:
        lines.append(f"<div>rules that could apply: {escape(rules)}</div>")
    return "".join(lines)


def cache_html(report: pd.DataFrame) -> str:
    """``report`` (``cs.cache_report``'s frame) as escaped HTML, with its stylesheet."""
    rows = report.to_dict("records")
    largest = max([int(r["prompt_tokens"]) for r in rows if _count(r.get("prompt_tokens")) != "-"] or [1])
    scale = 100.0 / max(largest, 1)
    out = [
        f"<style>{_CSS}</style><div class='cs-cache'>",
        '<div class="cs-cache-legend">'
        '<span class="cs-cache-shared"></span>shared prefix (estimated)'
        '<span class="cs-cache-new"></span>new'
        '<span class="cs-cache-cached"></span>reported cached</div>',
        '<details><summary class="cs-cache-head"><span>call</span><span>model</span><span>verdict</span>'
        "<span>prompt</span><span>cached / shared / prompt</span><span>first change</span>"
        "</summary></details>",
    ]
    for row in rows:
        verdict = _text(row.get("verdict")) or "unknown"
        out.append(
            "<details><summary>"
            f"<span>{escape(_text(row.get('call_id')))}</span>"
            f"<span>{escape(_text(row.get('model')))}</span>"
            f'<span class="cs-v-{escape(verdict)}">{escape(verdict)}</span>'
            f"{_bars(row, scale)}"
            f"<span>{_count(row.get('cached_tokens'))} / {_count(row.get('shared_prefix_tokens'))}"
            f" / {_count(row.get('prompt_tokens'))}</span>"
            f"<span>{escape(_text(row.get('change_section')))}</span>"
            f'</summary><div class="cs-cache-diff">{_detail(row)}</div></details>'
        )
    out.append("</div>")
    return "".join(out)


class CacheView:
    """A prompt-cache report displayed: ``CacheView(calls)`` or ``CacheView(cs.cache_report(calls))``.

    ``calls`` is anything ``cs.cache_report`` takes (a ``Tap``, ``TapReplay``, recordings
    folder, calls); ``prices`` is passed on to it. ``frame`` is the report; a notebook shows
    one row per call with a bar of shared prefix / new / reported cached, and clicking a row
    opens its first change as a diff.
    """

    def __init__(self, calls: Any, *, prices: Any = None) -> None:
        self.frame: pd.DataFrame = (
            calls if isinstance(calls, pd.DataFrame) else cache_report(calls, prices=prices)
        )

    def _repr_html_(self) -> str:
        return cache_html(self.frame)

    def __repr__(self) -> str:
        verdicts = self.frame["verdict"].value_counts().to_dict() if len(self.frame) else {}
        return f"<CacheView calls={len(self.frame)} {verdicts}>"
