"""The timeline as static HTML: escaped, self-contained, no script, no network.

Saved notebooks carry it as the output's ``text/html`` (GitHub, nbviewer and
``nbconvert --to html`` show it without JavaScript); ``Timeline.to_html``
writes it as a page. It uses the same class names and data attributes as the
live widget (``timeline.js``), so one stylesheet and one set of test
hooks serve both. Every piece of text that came from a model, an adapter or a
user goes through ``html.escape``; nothing is ever inserted as markup.
"""

from __future__ import annotations

import json
import math
from functools import cache
from html import escape
from importlib import resources
from typing import Any

from ._records import decode_record
from ._view import ErrorInfo, Segment, TimelineView, derive

__all__ = [
    "render_fragment",
    "render_page",
    "timeline_css",
    "format_ms",
    "axis_ticks",
    "usage_text",
    "error_parts",
]

_KIND_MARK = {"text": "T", "reasoning": "R", "tool-call": "F"}
_JSON_EDGE = 20  # chunks shown at each end of a segment's JSON in the static page
_COMPACT_TEXT = 4000  # characters of a segment's text in the compact rendering
TEXT_WINDOW = 131_072
_JSON_LINE = 2_000  # characters of one chunk's JSON line in a windowed copy (a block-end holds all its text)
"""Characters of a segment's text (its last ones) in a notebook output's static copy, as on the page."""


@cache
def timeline_css() -> str:
    """The timeline stylesheet shipped with the package (``timeline.css``, beside this module)."""
    return resources.files(__package__).joinpath("timeline.css").read_text("utf-8")


def format_ms(ms: float) -> str:
    """A duration for people: ``0.4 ms``, ``212 ms``, ``1.84 s``."""
    if ms < 10:
        return f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.2f} s"


def axis_ticks(extent: float, axis: str) -> list[tuple[float, str]]:
    """Tick positions (fraction of the extent) and labels for an axis of ``extent``."""
    if extent <= 0:
        return [(0.0, "0")]
    raw = extent / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if axis == "chunk":
        step = max(1.0, round(step))
    ticks: list[tuple[float, str]] = []
    value = 0.0
    while value <= extent + 1e-9:
        if axis == "chunk":
            label = f"{int(value)}"
        else:
            label = "0" if value == 0 else format_ms(value) if value < 1000 else _format_s(value)
        ticks.append((value / extent, label))
        value += step
    return ticks


def _format_s(ms: float) -> str:
    text = f"{ms / 1000:.2f}".rstrip("0").rstrip(".")
    return f"{text} s"


def usage_text(usage: dict[str, Any]) -> str:
    """``in 100 · cache read 20 · out 50 · reasoning 12`` from a camelCase usage dict."""
    parts = [f"in {_count(usage.get('inputTokens'))}"]
    if usage.get("cacheReadTokens") is not None:
        parts.append(f"cache read {_count(usage.get('cacheReadTokens'))}")
    if usage.get("cacheWriteTokens") is not None:
        parts.append(f"cache write {_count(usage.get('cacheWriteTokens'))}")
    parts.append(f"out {_count(usage.get('outputTokens'))}")
    if usage.get("reasoningTokens") is not None:
        parts.append(f"reasoning {_count(usage.get('reasoningTokens'))}")
    return " · ".join(parts)


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def error_parts(error: ErrorInfo) -> list[str]:
    """The facts after the code on an error badge, in reading order."""
    parts = [error.message] if error.message else []
    if error.unmapped:
        parts.append("unmapped code: not in cs.ERROR_CODES")
    if error.status is not None:
        parts.append(f"HTTP {error.status}")
    if error.retry_after_ms is not None:
        parts.append(f"retry after {format_ms(float(error.retry_after_ms))}")
    if error.request_id:
        parts.append(f"request id {error.request_id}")
    if error.retryable is not None:
        parts.append("retryable" if error.retryable else "not retryable")
    return parts


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _pct(value: float) -> str:
    return f"{max(0.0, min(100.0, value * 100)):.3f}%"


class _Geometry:
    """Where chunks sit on the chosen axis, as fractions of the track."""

    def __init__(self, view: TimelineView, axis: str) -> None:
        self.view = view
        self.axis = axis
        # at least 1 ms, so a stream that arrived all at once still gets a sensible axis
        self.extent = float(max(view.chunks, 1)) if axis == "chunk" else max(view.total_ms, 1.0)

    def span(self, seg: Segment) -> tuple[float, float]:
        # A block still open runs to the end of what arrived: it grows with the stream,
        # and one never closed visibly spans the rest of it.
        if self.axis == "chunk":
            right = self.view.chunks if not seg.closed else seg.last + 1
            left = seg.first / self.extent
            right_frac = right / self.extent
        else:
            right_t = self.view.total_ms if not seg.closed else seg.t_last
            left, right_frac = seg.t_first / self.extent, right_t / self.extent
        return left, max(right_frac - left, 0.004)

    def between(self, first: int, end: int) -> tuple[float, float]:
        """(left, width) of the span from record ``first`` to record ``end`` (its start; the end of all)."""
        if self.axis == "chunk":
            left, right = first / self.extent, end / self.extent
        else:
            left = self.view.time_of(first) / self.extent
            right = self.view.time_of(end if end < len(self.view.records) else None) / self.extent
        return left, max(right - left, 0.004)

    def at(self, position: int | None) -> float:
        if self.axis == "chunk":
            n = self.view.chunks if position is None else position + 0.5
            return n / self.extent
        return self.view.time_of(position) / self.extent


def _attrs(**values: Any) -> str:
    return "".join(f' {name.replace("_", "-")}="{escape(str(v), quote=True)}"' for name, v in values.items())


def render_fragment(
    state: dict[str, Any],
    *,
    axis: str = "time",
    compact: bool = False,
    include_css: bool = True,
    text_window: int | None = None,
) -> str:
    """The timeline of ``state`` as one escaped HTML fragment (inline ``<style>``, no script).

    ``compact`` drops the per-segment JSON and shortens long texts (for reprs);
    ``text_window`` keeps only a segment's last that many characters (the page's window).
    """
    view = derive(state)
    axis = "chunk" if axis == "chunk" else "time"
    geo = _Geometry(view, axis)
    out: list[str] = []
    if include_css:
        out.append(f"<style>{timeline_css()}</style>")
    out.append(
        f'<div class="cs-timeline cs-static"'
        f"{_attrs(data_state=view.status, data_chunks=view.chunks, data_deltas=view.deltas, data_axis=axis)}>"
    )
    out.append(_head(view, axis))
    out.append('<div class="cs-plot">')
    out.append(_axis_row(view, geo, axis))
    # an agent run's own rows (steps, retry waits, tool spans, outcome) sit among the blocks in record order
    rows: list[tuple[int, str]] = [
        (seg.first, _segment(seg, view, geo, compact, text_window)) for seg in view.segments
    ]
    rows += _agent_rows(view.records, geo)
    rows.sort(key=lambda row: row[0])
    out.extend(html for _, html in rows)
    if view.violations:
        out.append(_violation_marks(view, geo))
    out.append("</div>")  # cs-plot
    out.append(_badges(view))
    if view.violations:
        out.append(_violation_items(view.violations))
    out.append("</div>")
    return "".join(out)


def _axis_row(view: TimelineView, geo: _Geometry, axis: str) -> str:
    """The row of axis ticks: times, or chunk numbers on the chunk axis."""
    out = ['<div class="cs-row cs-axis"><span class="cs-lane-label"></span><div class="cs-track">']
    for frac, label in axis_ticks(geo.extent if axis == "time" else float(view.chunks), axis):
        out.append(f'<span class="cs-tick" style="left:{_pct(frac)}">{escape(label)}</span> ')
    out.append('</div><span class="cs-cap"></span></div>')
    return "".join(out)


def _violation_marks(view: TimelineView, geo: _Geometry) -> str:
    """The row of violation marks, each at its chunk (the end of the stream for a stream-wide one)."""
    out = ['<div class="cs-row cs-marks"><span class="cs-lane-label">violations</span><div class="cs-track">']
    for position, rule, severity, message in view.violations:
        where = "end of stream" if position is None else f"chunk {position}"
        out.append(
            f'<span class="cs-violation-mark" style="left:{_pct(geo.at(position))}"'
            f"{_attrs(data_rule=rule, data_position='end' if position is None else position)}"
            f"{_attrs(data_severity=severity, title=f'{where} · {rule}: {message}')}>!</span>"
        )
    out.append('</div><span class="cs-cap"></span></div>')
    return "".join(out)


def _head(view: TimelineView, axis: str) -> str:
    facts = [f'<span class="cs-title">{escape(view.title or "stream")}</span>']
    facts.append(f'<span class="cs-fact">chunks <b class="cs-fact-chunks">{view.chunk_count}</b></span>')
    if view.first_ms is not None:
        facts.append(f'<span class="cs-fact">first chunk <b>{escape(format_ms(view.first_ms))}</b></span>')
    if view.chunks:
        facts.append(f'<span class="cs-fact">total <b>{escape(format_ms(view.total_ms))}</b></span>')
    if view.max_gap_at is not None:
        facts.append(
            f'<span class="cs-fact">max gap <b>{escape(format_ms(view.max_gap_ms))}</b>'
            f" before chunk {view.max_gap_at}</span>"
        )
    count = len(view.violations)
    facts.append(
        f'<span class="cs-fact cs-fact-violations"{_attrs(data_count=count)}>violations <b>{count}</b></span>'
    )
    on_time, on_chunk = (' class="cs-on"', "") if axis == "time" else ("", ' class="cs-on"')
    facts.append(
        f'<span class="cs-axis-toggle"{_attrs(data_axis=axis)}>'
        f'<span{on_time} data-axis="time">time</span><span{on_chunk} data-axis="chunk">chunk #</span></span>'
    )
    return f'<div class="cs-head">{" ".join(facts)}</div>'


def _segment(seg: Segment, view: TimelineView, geo: _Geometry, compact: bool, window: int | None) -> str:
    left, width = geo.span(seg)
    kind = seg.kind
    cap = _segment_cap(seg, view)
    out = [
        f'<div class="cs-seg"{_attrs(data_kind=kind, data_index=seg.index, data_deltas=seg.deltas)}'
        f"{_attrs(data_started=str(seg.started).lower(), data_closed=str(seg.closed).lower())}>",
        '<div class="cs-row">',
        f'<span class="cs-lane-label"><span class="cs-kind-mark" aria-hidden="true">'
        f"{_KIND_MARK.get(kind, '?')}</span> #{seg.index} {escape(kind)}</span>",
        '<div class="cs-track">',
        f'<div class="cs-bar" style="left:{_pct(left)};width:{_pct(width)}"></div></div>',
        f'<span class="cs-cap">{escape(cap)}</span>',
        "</div>",
        f'<div class="cs-seg-text">{_segment_body(seg, compact, window)}</div>',
    ]
    if not compact:
        out.append(_segment_json(seg, view, None if window is None else _JSON_LINE))
    out.append("</div>")
    return "".join(out)


def _segment_cap(seg: Segment, view: TimelineView) -> str:
    """The words beside a block's bar: its deltas and chars (a tool call's name), and if still open."""
    if seg.kind == "tool-call":
        cap = f"{seg.name or '?'} · {_plural(seg.deltas, 'delta')}"
    else:
        cap = f"{_plural(seg.deltas, 'delta')} · {_plural(len(seg.text), 'char')}"
    if not seg.closed:
        cap += " · open" if view.status == "streaming" else " · never closed"
    return cap


def _segment_body(seg: Segment, compact: bool, window: int | None = None) -> str:
    """A block's text, escaped (shortened when ``compact``, its tail when ``window``); a tool call's
    name and id come first."""
    text = seg.text
    if compact and len(text) > _COMPACT_TEXT:
        text = text[:_COMPACT_TEXT] + f"… ({len(seg.text) - _COMPACT_TEXT:,} more chars)"
    elif window is not None and len(text) > window:
        note = f"({len(text) - window:,} earlier chars not shown here; to_html() writes them all) …"
        text = note + text[-window:]
    if seg.kind != "tool-call":
        return escape(text)
    return (
        f'<span class="cs-tool-name">{escape(seg.name or "")}</span> '
        f'<span class="cs-tool-id">{escape(seg.call_id or "")}</span> '
        f'<span class="cs-tool-args">{escape(text)}</span>'
    )


def _segment_json(seg: Segment, view: TimelineView, line_chars: int | None = None) -> str:
    numbers = seg.chunk_numbers
    shown = numbers if len(numbers) <= 2 * _JSON_EDGE else numbers[:_JSON_EDGE] + numbers[-_JSON_EDGE:]
    lines = []
    for i, n in enumerate(shown):
        if len(numbers) > 2 * _JSON_EDGE and i == _JSON_EDGE:
            lines.append(f"… {len(numbers) - 2 * _JSON_EDGE} more chunks …")
        record = view.records[n]
        chunk_json = json.dumps(decode_record(record), ensure_ascii=False)
        if line_chars is not None and len(chunk_json) > line_chars:
            # a notebook output's copy: a block-end's JSON holds the block's whole text (megabytes)
            more = len(chunk_json) - line_chars
            chunk_json = f"{chunk_json[:line_chars]}… ({more:,} more chars; to_html() writes them all)"
        lines.append(f"#{n} +{format_ms(float(record[0]))} {chunk_json}")
    return (
        '<details class="cs-seg-chunks"><summary>chunks as JSON</summary>'
        f'<pre class="cs-json">{escape(chr(10).join(lines))}</pre></details>'
    )


def _badges(view: TimelineView) -> str:
    out = ['<div class="cs-badges">']
    if view.usage is not None:
        out.append(f'<span class="cs-badge cs-usage"><b>usage</b> {escape(usage_text(view.usage))}</span>')
    if view.finish is not None:
        kind = str(view.finish.get("kind"))
        out.append(
            f'<span class="cs-badge cs-finish"{_attrs(data_kind=kind)}><b>finish</b> {escape(kind)}</span>'
        )
    if view.error is not None:
        error = view.error
        label = "LlmError" if error.source == "raised" else "failure"
        out.append(
            f'<span class="cs-badge cs-error"{_attrs(data_code=error.code)}>'
            f'<b>{label} <span class="cs-error-code">{escape(error.code)}</span></b> '
            f"{escape(' · '.join(error_parts(error)))}</span>"
        )
        for cause in error.causes:
            out.append(f'<span class="cs-badge cs-cause">caused by {escape(cause)}</span>')
    if view.status != "streaming" and view.records and view.error is not None:
        out.append(
            f'<span class="cs-badge cs-partial">partial output kept: {view.chunk_count} chunks, '
            f"{view.deltas} deltas</span>"
        )
    out.append("</div>")
    return out[0] + " ".join(out[1:-1]) + out[-1]  # spaces keep it readable without the stylesheet


def _violation_items(violations: list[list[Any]]) -> str:
    out = ['<ul class="cs-violations">']
    for position, rule, severity, message in violations:
        where = "end of stream" if position is None else f"chunk {position}"
        out.append(
            f"<li{_attrs(data_rule=rule, data_position='end' if position is None else position)}"
            f"{_attrs(data_severity=severity)}>"
            f'<span class="cs-pos">{escape(where)}</span> '
            f'<code class="cs-rule">{escape(str(rule))}</code> '
            f'<span class="cs-severity">{escape(str(severity))}</span> '
            f'<span class="cs-msg">{escape(str(message))}</span></li>'
        )
    out.append("</ul>")
    return "".join(out)


def render_page(state: dict[str, Any], *, axis: str = "time") -> str:
    """A complete, self-contained HTML page of the timeline (inline CSS, no script, no network)."""
    title = escape(str(state.get("title") or "chunkscope timeline"))
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta http-equiv="Content-Security-Policy"'
        " content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        f"<title>{title} — chunkscope</title>\n"
        '</head><body class="cs-page">\n'
        f"{render_fragment(state, axis=axis)}\n"
        "</body></html>\n"
    )


def _agent_row(
    cls: str, label: str, bar: tuple[float, float] | None, cap: str, text: str, **attrs: Any
) -> str:
    track = (
        f'<div class="cs-bar" style="left:{_pct(bar[0])};width:{_pct(bar[1])}"></div>'
        if bar is not None
        else ""
    )
    return (
        f'<div class="{cls}"{_attrs(**attrs)}><div class="cs-row">'
        f'<span class="cs-lane-label">{escape(label)}</span>'
        f'<div class="cs-track">{track}</div><span class="cs-cap">{escape(cap)}</span></div>'
        f'<div class="cs-seg-text">{escape(text)}</div></div>'
    )


def _agent_rows(records: list[list[Any]], geo: _Geometry) -> list[tuple[int, str]]:
    """An agent run's steps, retry waits, tool spans and outcome, each at its record position (escaped)."""
    rows: list[tuple[int, str]] = []
    calls: dict[str, tuple[int, dict[str, Any]]] = {}
    waiting: tuple[int, dict[str, Any]] | None = None
    for n, record in enumerate(records):
        if waiting is not None:  # a retry wait ends where the next record (the new attempt) begins
            start, ev = waiting
            waiting = None
            rows.append((start, _retry_row(ev, geo.between(start, n))))
        if record[1] != "a" or not isinstance(record[2], dict):
            continue
        ev = record[2]
        kind = ev.get("type")
        if kind == "retry":
            waiting = (n, ev)
        elif kind == "tool-call":
            calls[str(ev.get("id"))] = (n, ev)
        elif kind == "tool-result" and str(ev.get("id")) in calls:
            start, call = calls.pop(str(ev.get("id")))
            rows.append((start, _tool_row(call, ev, geo.between(start, n))))
        else:
            html = _event_row(kind, ev)
            if html is not None:
                rows.append((n, html))
    return rows + _unfinished_rows(waiting, calls, geo, len(records))


def _unfinished_rows(
    waiting: tuple[int, dict[str, Any]] | None,
    calls: dict[str, tuple[int, dict[str, Any]]],
    geo: _Geometry,
    end: int,
) -> list[tuple[int, str]]:
    """A retry wait and the tool calls still running when the picture was taken, reaching to ``end``."""
    rows: list[tuple[int, str]] = []
    if waiting is not None:
        rows.append((waiting[0], _retry_row(waiting[1], geo.between(waiting[0], end))))
    for start, call in calls.values():
        rows.append((start, _tool_row(call, None, geo.between(start, end))))
    return rows


def _event_row(kind: Any, ev: dict[str, Any]) -> str | None:
    """The one-line rows of an agent run: a step's start, discarded output, the run's outcome."""
    if kind == "step-start":
        step = ev.get("step")
        return f'<div class="cs-step"{_attrs(data_step=step)}>step {escape(str(step))}</div>'
    if kind == "discarded":
        text = f"partial output of attempt {ev.get('attempt')} discarded ({ev.get('chunks')} chunks)"
        return f'<div class="cs-discarded">{escape(text)}</div>'
    if kind == "loop-end":
        code = f" · {ev.get('code')}" if ev.get("code") else ""
        text = f"run {ev.get('outcome')}{code} · {ev.get('steps')} steps"
        return f'<div class="cs-outcome"{_attrs(data_outcome=ev.get("outcome"))}>{escape(text)}</div>'
    return None


def _tool_row(call: dict[str, Any], result: dict[str, Any] | None, bar: tuple[float, float]) -> str:
    """A tool call's span: finished (``result``, its tool-result event) or still running (None)."""
    signature = f"{call.get('name')}({call.get('arguments') or ''})"
    if result is None:
        state, cap, text = "running", "running", signature
    else:
        state = "error" if result.get("isError") else "ok"
        cap = f"{format_ms(float(result.get('durationMs') or 0))} · {state}"
        text = f"{signature} → {result.get('content')}"
    name = call.get("name")
    return _agent_row("cs-tool-span", f"tool {name}", bar, cap, text, data_tool=name, data_state=state)


def _retry_row(ev: dict[str, Any], bar: tuple[float, float]) -> str:
    status = f" (HTTP {ev.get('status')})" if ev.get("status") is not None else ""
    text = f"attempt {ev.get('attempt')} failed: {ev.get('code')}{status} {ev.get('message') or ''}"
    cap = f"wait {format_ms(float(ev.get('delayMs') or 0))} · {ev.get('code')}"
    return _agent_row("cs-retry", f"retry {ev.get('retry')}", bar, cap, text, data_code=ev.get("code"))
