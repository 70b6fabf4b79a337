"""What the live usage summary shows, as plain JSON data, and its static, escaped HTML copy.

``usage_state(log)`` is read from the log's running totals (no frame is built
while a batch runs); ``usage_html(state)`` is the ``text/html`` a saved
notebook shows without JavaScript. ``usage_summary.js`` draws the same state
with the same class names. Needs no widget library.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

__all__ = ["USAGE_STATE_VERSION", "usage_css", "usage_html", "usage_state"]

USAGE_STATE_VERSION = 1
_HERE = Path(__file__).parent

TOKEN_KINDS = (
    ("input", "input_tokens", "input (uncached)"),
    ("cacheRead", "cache_read_tokens", "cache read"),
    ("cacheWrite", "cache_write_tokens", "cache write"),
    ("output", "output_tokens", "output"),
    ("reasoning", "reasoning_tokens", "of which reasoning"),
)


def usage_state(log: Any, title: str = "") -> dict[str, Any]:
    """The summary of ``log`` (a ``UsageLog``) as the widget's JSON state.

    Its numbers are those of ``summary(log.to_frame(), by=[])``: calls,
    attempts, errors (total and by code), token sums by kind, cache hit rate,
    cost so far; plus the running batch's progress.
    """
    totals = log.totals()
    progress = log.progress
    by_code = sorted(totals["errors_by_code"].items(), key=lambda item: (-item[1], item[0]))
    return {
        "v": USAGE_STATE_VERSION,
        "title": title,
        "calls": totals["calls"],
        "attempts": totals["attempts"],
        "errors": totals["errors"],
        "errorsByCode": [[code, n] for code, n in by_code],
        "tokens": {key: totals[column] for key, column, _ in TOKEN_KINDS},
        "billedInput": totals["billed_input_tokens"],
        "cacheHitRate": totals["cache_hit_rate"],
        "cost": totals["cost"],
        "currency": totals.get("currency"),
        "unpriced": totals["unpriced_attempts"],
        "progress": list(progress) if progress is not None else None,
    }


def usage_css() -> str:
    """The usage summary's stylesheet (``usage_summary.css``, beside this module)."""
    return (_HERE / "usage_summary.css").read_text(encoding="utf-8")


def format_count(n: int | None) -> str:
    """``n`` with thousands separators; "-" for a count no attempt reported (unknown, not 0)."""
    return "-" if n is None else f"{n:,}"


def _count(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def format_rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.1f}%"


def format_cost(cost: float | None, currency: str | None) -> str:
    if cost is None:
        return "-"
    return f"{cost:.6f} {currency}" if currency else f"{cost:.6f}"


def usage_html(state: dict[str, Any], *, include_css: bool = True) -> str:
    """``state`` as one escaped HTML fragment (inline ``<style>``, no script)."""
    out: list[str] = []
    if include_css:
        out.append(f"<style>{usage_css()}</style>")
    progress = state.get("progress")
    done, total = (progress[0], progress[1]) if progress else (None, None)
    attrs = f' data-calls="{int(state["calls"])}" data-errors="{int(state["errors"])}"'
    if done is not None:
        attrs += f' data-done="{int(done)}" data-total="{int(total or 0)}"'
    out.append(f'<div class="cs-usage cs-static"{attrs}>')
    title = state.get("title") or "Token usage"
    out.append(f'<div class="cs-usage-head"><span class="cs-usage-title">{escape(str(title))}</span></div>')
    if done is not None:
        out.append(_progress_html(done, total))
    out.append(_stats_html(state))
    out.append(_tokens_html(state.get("tokens") or {}))
    out.append(_codes_html(state.get("errorsByCode") or []))
    if state.get("unpriced"):
        out.append(f'<div class="cs-usage-note">{int(state["unpriced"])} attempts of unpriced models</div>')
    out.append("</div>")
    return "".join(out)


def _progress_html(done: int, total: int | None) -> str:
    pct = 100.0 * done / total if total else 100.0
    return (
        '<div class="cs-usage-progress">'
        f'<div class="cs-usage-bar"><div class="cs-usage-fill" style="width:{pct:.1f}%"></div></div>'
        f'<span class="cs-usage-progress-text">{int(done)} / {int(total or 0)} calls</span></div>'
    )


def _stats_html(state: dict[str, Any]) -> str:
    stats = [
        ("calls", "calls", format_count(state["calls"])),
        ("attempts", "attempts", format_count(state["attempts"])),
        ("errors", "errors", format_count(state["errors"])),
        ("cacheHitRate", "cache hit rate", format_rate(state.get("cacheHitRate"))),
        ("cost", "cost so far", format_cost(state.get("cost"), state.get("currency"))),
    ]
    out = ['<div class="cs-usage-stats">']
    for field, label, value in stats:
        out.append(
            f'<div class="cs-usage-stat"><span class="cs-usage-label">{escape(label)}</span>'
            f'<span class="cs-usage-value" data-field="{field}">{escape(value)}</span></div>'
        )
    out.append("</div>")
    return "".join(out)


def _tokens_html(tokens: dict[str, Any]) -> str:
    out = ['<div class="cs-usage-tokens">']
    for key, _, label in TOKEN_KINDS:
        out.append(
            f'<span class="cs-usage-token" data-kind="{key}">'
            f'<span class="cs-usage-label">{escape(label)}</span> '
            f'<span class="cs-usage-value" data-field="tokens.{key}">'
            f"{escape(format_count(_count(tokens.get(key))))}</span></span>"
        )
    out.append("</div>")
    return "".join(out)


def _codes_html(codes: list[Any]) -> str:
    if not codes:
        return ""
    out = ['<div class="cs-usage-errors">']
    for code, n in codes:
        out.append(
            f'<span class="cs-usage-code" data-code="{escape(str(code))}">{escape(str(code))} '
            f"<b>{int(n)}</b></span>"
        )
    out.append("</div>")
    return "".join(out)
