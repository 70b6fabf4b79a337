"""``chunkscope show FILE``: a recorded stream drawn in the terminal, with rich (``cli._render``).

One lane per block in the notebook timeline's colours, usage, finish, the
violations with their chunk positions and rule ids, and the error code; see
``cli._render`` for the picture. rich loads only when a file is drawn.

Exit status: 0 drawn (whatever the stream did; ``check`` is the judge), 2 bad
arguments or a file that cannot be read.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ._args import PROFILE_CHOICES, CommandLineError, report, terse_errors
from ._inputs import analyze, load_streams
from ._output import pipe_safe, printable

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["SHOW_HELP", "add_show_parser", "run_show"]

SHOW_HELP = (
    "draw a recorded stream (chunk log, recording or session log) in the terminal: lanes, usage, finish, "
    "violations"
)


def run_show(
    path: str, *, profile: str = "strict", width: int | None = None, console: Console | None = None
) -> int:
    """Draw every stream in ``path``; return the exit status (2 when it cannot be read)."""
    try:
        drawn = [(stream, analyze(stream, profile)) for stream in load_streams(path)]
    except CommandLineError as exc:
        return report("show", printable(str(exc)))
    except RecursionError:  # a stream nested too deeply for the assembler
        return report("show", f"{printable(path)}: JSON nested too deeply")
    from rich.console import Console

    from ._render import render

    out = console or Console(width=width, highlight=False)
    for stream, result in drawn:
        out.print(render(stream, result, width=width or out.width))
    return 0


MIN_WIDTH = 40
"""The narrowest picture ``show`` draws (its lanes and labels need that many columns)."""


def _width(text: str) -> int:
    # ArgumentTypeError: argparse shows this sentence, not "invalid _width value" (the function's name)
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of columns") from None
    if value < MIN_WIDTH:
        raise argparse.ArgumentTypeError(f"{value} columns is too narrow (at least {MIN_WIDTH})")
    return value


def add_show_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``chunkscope show``."""
    parser = subparsers.add_parser("show", help=SHOW_HELP, description=SHOW_HELP)
    parser.add_argument(
        "file",
        metavar="FILE",
        help="a chunk log (JSONL), a recording or a session log (.jsonl / .jsonl.zstd)",
    )
    parser.add_argument(
        "--profile", choices=PROFILE_CHOICES, default="strict", help="rule profile (default strict)"
    )
    parser.add_argument(
        "--width",
        type=_width,
        default=None,
        metavar="N",
        help=f"columns, at least {MIN_WIDTH} (default: the terminal's)",
    )
    terse_errors(parser)
    parser.set_defaults(
        func=lambda args: pipe_safe(lambda: run_show(args.file, profile=args.profile, width=args.width))
    )
