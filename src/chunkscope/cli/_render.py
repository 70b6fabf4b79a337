"""The picture ``chunkscope show`` draws, with rich: lanes, usage, finish, violations, error code.

The terminal twin of the notebook timeline: one lane per block, in the
notebook's Okabe-Ito colours (text blue, reasoning purple, tool call orange),
each also marked by a letter (``T``/``R``/``F``, as on the timeline) and a bar
pattern, so colour is never the only cue; below them the violation marks, then
usage, the finish, the violations with their chunk positions and rule ids, and
the error code. The axis is time (ms since the request) for a recording and
chunk number for a chunk log, which has no clock.

Every string from the file (model text, messages, ids) reaches the terminal as
``rich.text.Text`` — never parsed as markup — with control characters escaped.
Loaded only when ``show`` draws, so other subcommands never import rich.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from chunkscope import ERROR_CODES, ToolCallBlock

from ._output import printable

if TYPE_CHECKING:
    from chunkscope import StreamResult
    from chunkscope.sources import LoadedStream

__all__ = ["COLORS", "MAX_ROWS", "render"]

COLORS: dict[str, str] = {
    "text": "#0072b2",
    "reasoning": "#cc79a7",
    "tool-call": "#e69f00",
    "usage": "#009e73",
    "error": "#d55e00",
}
"""The notebook timeline's palette (``notebook/timeline/timeline.css``), by kind."""

_MARK = {"text": "T", "reasoning": "R", "tool-call": "F"}
_PATTERN = {"text": "█", "reasoning": "▒", "tool-call": "▓"}
_PREVIEW = 60
MAX_ROWS = 100
"""At most this many lanes and violation rows are drawn; the rest are counted ("… N more")."""
_BLOCK_WIDTH = 16  # "F tool-call (open)" shortened: the letter, the kind and whether it closed


@dataclass
class _Lane:
    index: int
    kind: str
    first: int
    last: int
    closed: bool = False


def _field(chunk: Any, name: str) -> Any:
    return chunk.get(name) if isinstance(chunk, dict) else getattr(chunk, name, None)


_DELTA_KINDS = {"text-delta": "text", "reasoning-delta": "reasoning", "tool-call-delta": "tool-call"}


def _block_kind(chunk: Any, kind: str) -> Any:
    """The kind of block a chunk belongs to (``text``, ``reasoning``, ``tool-call``); None if none."""
    if kind == "block-start":
        return _field(chunk, "block_type") or _field(chunk, "blockType")
    if kind == "block-end":
        block = _field(chunk, "block")
        return _field(block, "type") if block is not None else None
    return _DELTA_KINDS.get(kind)


def _lanes(chunks: list[Any]) -> list[_Lane]:
    """One lane per block index, in first-seen order, spanning its first to its last chunk."""
    lanes: dict[int, _Lane] = {}
    for position, chunk in enumerate(chunks):
        index = _field(chunk, "index")
        kind = _field(chunk, "type")
        if not isinstance(index, int) or isinstance(index, bool) or not isinstance(kind, str):
            continue
        block_kind = _block_kind(chunk, kind)
        if not isinstance(block_kind, str):
            continue
        lane = lanes.get(index)
        if lane is None:
            lane = lanes[index] = _Lane(index, block_kind, position, position)
        lane.last = position
        lane.closed = lane.closed or kind == "block-end"
    return list(lanes.values())


def _axis(stream: LoadedStream, result: StreamResult) -> tuple[list[float], str]:
    """Each chunk's place on the axis, and the axis's unit."""
    if stream.times is not None and len(stream.times) == len(result.chunks):
        return [t * 1000.0 for t in stream.times], "ms"
    return [float(p) for p in range(len(result.chunks))], "chunk"


def _bar(start: float, end: float, span: float, width: int, char: str, style: str) -> Text:
    left = int(start / span * (width - 1)) if span > 0 else 0
    right = int(end / span * (width - 1)) if span > 0 else 0
    bar = Text(" " * left)
    bar.append(char * max(1, right - left + 1), style=style)
    bar.append(" " * max(0, width - right - 1))
    return bar


def _contents(lanes: list[_Lane], result: StreamResult) -> dict[int, Text]:
    """Each lane's assembled content, shortened: the n-th lane of a kind is the n-th block of that kind
    (the assembler keeps first-seen order)."""
    out: dict[int, Text] = {}
    for kind in {lane.kind for lane in lanes}:
        blocks = [block for block in result.blocks if block.type == kind]
        for lane, block in zip([lane for lane in lanes if lane.kind == kind], blocks, strict=False):
            if isinstance(block, ToolCallBlock):
                text = f"{block.name}({block.arguments})"
            else:
                text = repr(getattr(block, "text", ""))
            shown = text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"
            out[lane.index] = Text(printable(shown))
    return out


def _facts(stream: LoadedStream, result: StreamResult, span: float, unit: str) -> Text:
    """The line under the title: provider, model and adapter when the file names them, chunks, axis."""
    facts = Text()
    if stream.kind in ("recording", "dsh"):  # a session log names them per attempt
        header = stream.header
        for name in ("provider", "model", "adapter"):
            if isinstance(header.get(name), str):
                facts.append(f"{name} ", style="dim").append(printable(header[name])).append("  ")
    facts.append("chunks ", style="dim").append(str(len(result.chunks))).append("  ")
    facts.append("axis ", style="dim").append(
        f"0-{span:.0f} {unit}" if unit == "ms" else f"0-{max(0, len(result.chunks) - 1)} chunk"
    )
    return facts


def _lane_table(unit: str, end_label: str, lane_width: int, width: int) -> Table:
    table = Table(box=None, show_header=True, header_style="dim", pad_edge=False, expand=False)
    # fixed widths: the bars keep their scale whatever the content; the content column takes the rest
    table.add_column("#", justify="right", no_wrap=True, min_width=2)
    table.add_column("block", no_wrap=True, width=_BLOCK_WIDTH)
    table.add_column("chunks", justify="right", no_wrap=True, width=9)
    table.add_column(
        f"0 {unit}".ljust(lane_width - len(end_label)) + end_label, no_wrap=True, width=lane_width
    )
    content_width = max(8, width - 4 - 2 - _BLOCK_WIDTH - 9 - lane_width - 4 - 2)
    table.add_column("content", overflow="ellipsis", no_wrap=True, max_width=content_width)
    return table


def _violation_marks(result: StreamResult, places: list[float], span: float, lane_width: int) -> Text:
    """A ``!`` under the lanes at each violation's chunk (a violation at the end: the last chunk)."""
    columns: set[int] = set()
    for violation in result.violations:
        at = violation.position if violation.position is not None else len(result.chunks) - 1
        if 0 <= at < len(places):
            columns.add(int(places[at] / span * (lane_width - 1)) if span > 0 else 0)
    marks = Text()
    for column in range(lane_width):
        hit = column in columns
        marks.append("!" if hit else " ", style=f"bold {COLORS['error']}" if hit else "")
    return marks


def _lanes_of(result: StreamResult, places: list[float], span: float, unit: str, width: int) -> Table:
    """The lanes: one row per block (at most ``MAX_ROWS``), then the violation marks."""
    lane_width = max(10, min(50, width - 64))
    end_label = f"{span:.0f}" if unit == "ms" else str(max(0, len(result.chunks) - 1))
    lanes = _lane_table(unit, end_label, lane_width, width)
    found = _lanes(result.chunks)
    contents = _contents(found, result)
    for lane in found[:MAX_ROWS]:
        color = COLORS.get(lane.kind, "default")
        label = Text(_MARK.get(lane.kind, "?") + " ", style=f"bold {color}")
        label.append(printable(lane.kind)[:10] + ("" if lane.closed else " open"))
        bar = _bar(
            places[lane.first], places[lane.last], span, lane_width, _PATTERN.get(lane.kind, "░"), color
        )
        content = contents.get(lane.index, Text(""))
        lanes.add_row(str(lane.index), label, f"{lane.first}-{lane.last}", bar, content)
    if len(found) > MAX_ROWS:
        lanes.add_row("", Text(f"… {len(found) - MAX_ROWS} more", style="dim"), "", "", "")
    if result.violations:
        marks = _violation_marks(result, places, span, lane_width)
        lanes.add_row("", Text("! violation", style=COLORS["error"]), "", marks, "")
    return lanes


def render(stream: LoadedStream, result: StreamResult, *, width: int = 100) -> RenderableType:
    """The picture of one stream: a panel of lanes, then usage, finish, violations and error."""
    places, unit = _axis(stream, result)
    span = max(places) if places else 0.0
    title = Text(printable(stream.name), style="bold")
    parts: list[RenderableType] = [
        _facts(stream, result, span, unit),
        _lanes_of(result, places, span, unit, width),
        _usage_line(result),
        _finish_line(result),
    ]
    if result.violations:
        parts.append(_violation_table(result))
    if result.error is not None:
        parts.append(_error_line(result))
    return Panel(Group(*parts), title=title, title_align="left", width=width)


def _usage_line(result: StreamResult) -> Text:
    line = Text("usage   ", style="dim")
    usage = result.usage
    if usage is None:
        return line.append("none", style=COLORS["error"])
    for name, value in (
        ("in", usage.input_tokens),
        ("out", usage.output_tokens),
        ("cache read", usage.cache_read_tokens),
        ("cache write", usage.cache_write_tokens),
        ("reasoning", usage.reasoning_tokens),
    ):
        if value:
            line.append(f"{name} ", style="dim").append(str(value), style=f"bold {COLORS['usage']}").append(
                "  "
            )
    return line


def _finish_line(result: StreamResult) -> Text:
    line = Text("finish  ", style="dim")
    finish = result.finish
    if finish is None:
        return line.append(
            "none" + (" (the stream raised)" if result.error is not None else ""), style=COLORS["error"]
        )
    line.append(finish.kind, style="bold" if finish.ok else f"bold {COLORS['error']}")
    if finish.failure is not None:
        line.append(f"  {printable(finish.failure.code)}", style=f"bold {COLORS['error']}")
        line.append(f"  {printable(finish.failure.message)}")
    return line


def _violation_table(result: StreamResult) -> Table:
    table = Table(title=None, box=None, show_header=True, header_style="dim", pad_edge=False)
    table.add_column("chunk", justify="right")
    table.add_column("severity")
    table.add_column("rule", no_wrap=True)
    table.add_column("message")
    for v in result.violations[:MAX_ROWS]:
        style = COLORS["error"] if v.severity == "error" else "yellow"
        table.add_row(
            "end" if v.position is None else str(v.position),
            Text(v.severity, style=style),
            Text(v.rule, style=f"bold {style}"),
            Text(printable(v.message)),
        )
    if len(result.violations) > MAX_ROWS:
        more = len(result.violations) - MAX_ROWS
        table.add_row("", "", Text(f"… {more} more", style="dim"), Text("chunkscope check lists them all"))
    return table


def _error_line(result: StreamResult) -> Text:
    error = result.error
    assert error is not None
    line = Text("error   ", style="dim")
    line.append(printable(error.code), style=f"bold {COLORS['error']}")
    known = ERROR_CODES.get(error.code)
    if known is not None:
        line.append(" (retryable)" if known.retryable else " (not retryable)", style="dim")
    line.append(f"  {printable(error.message)}")
    return line
