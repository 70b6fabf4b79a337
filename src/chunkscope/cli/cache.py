"""``chunkscope cache DIR``: the prompt-cache report of a tap's recordings, as a table.

One row per recorded call, as ``cs.cache_report`` gives it (and a notebook's ``cs.CacheView``
draws): what the provider read from cache, the prefix the request shared with an earlier one
of the same provider, model and key, the verdict, where the prefix first changed with a short
before / after, and the tokens missed (their cost with ``--prices``). Every text from a
recording is shown through ``printable``.

Exit status: 0 reported, 2 bad arguments or a recording that cannot be read.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from ._args import CommandLineError, report, terse_errors
from ._output import pipe_safe, printable
from .usage import _prices

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

__all__ = ["CACHE_HELP", "add_cache_parser", "run_cache"]

CACHE_HELP = "why a prompt cache missed: each recorded call's cache read beside the prefix it shared"

_VERDICT_STYLES = {"hit": "green", "miss-explained": "yellow", "miss-unexplained": "bold red"}


_HEADINGS = ("call", "model", "verdict", "cached", "shared", "prompt", "missed", "change", "before → after")
_COUNTS = ("cached_tokens", "shared_prefix_tokens", "prompt_tokens", "missed_tokens")


def render_cache(frame: pd.DataFrame) -> Any:
    """The report as a rich table: one row per call (every cell plain text, never markup)."""
    from rich.table import Table

    table = Table(title=f"prompt cache: {len(frame)} calls", title_justify="left")
    for heading in _HEADINGS:
        table.add_column(
            heading, justify="right" if heading in ("cached", "shared", "prompt", "missed") else "left"
        )
    for row in frame.astype(object).where(frame.notna(), None).to_dict("records"):
        table.add_row(*_cells(row))
    return table


def _cells(row: dict[str, Any]) -> list[Any]:
    from rich.text import Text

    verdict = row["verdict"] or "-"
    change = row["change_section"] or ""
    if row["change_field"]:
        change += f" · {row['change_field']}"
    excerpt = f"{row['before']} → {row['after']}" if row["before"] is not None else ""
    return [
        Text(printable(str(row["call_id"]))),
        Text(printable(str(row["model"] or "-"))),
        Text(verdict, style=_VERDICT_STYLES.get(verdict, "")),
        *(Text(_count(row[name])) for name in _COUNTS),
        Text(printable(change)),
        Text(printable(excerpt)),
    ]


def _count(value: Any) -> str:
    return "-" if value is None else f"{int(value):,}"


def run_cache(folder: str, *, prices: str | None = None, console: Console | None = None) -> int:
    """Print the cache report of the recordings in ``folder``; return the exit status."""
    try:
        table_of_prices = _prices(prices) if prices is not None else None
        if not os.path.exists(folder):
            raise CommandLineError(f"{folder}: no such folder or file")
    except CommandLineError as exc:
        return report("cache", printable(str(exc)))
    from chunkscope import cache_report
    from chunkscope.sources import SourceError

    try:
        frame = cache_report(folder, prices=table_of_prices)
    except SourceError as exc:
        return report("cache", printable(str(exc).splitlines()[0]))
    from rich.console import Console

    # piped or captured: wide enough that the excerpts are not cut to a column's width, unless the
    # caller says how wide its output is (COLUMNS, which rich reads: a notebook's output area)
    wide = None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 200
    (console or Console(highlight=False, width=wide)).print(render_cache(frame))
    return 0


def add_cache_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``chunkscope cache``."""
    parser = subparsers.add_parser(
        "cache",
        help=CACHE_HELP,
        description=CACHE_HELP
        + ". Exit status: 0 reported, 2 bad arguments or a recording that cannot be read.",
    )
    parser.add_argument(
        "folder", metavar="DIR", help="a folder of the tap's recordings (Tap(record=DIR)), or one"
    )
    parser.add_argument(
        "--prices",
        metavar="FILE",
        default=None,
        help="a PriceTable file (.toml or .json), or genai-prices, for the cost of each miss",
    )
    terse_errors(parser)
    parser.set_defaults(func=lambda args: pipe_safe(lambda: run_cache(args.folder, prices=args.prices)))
