"""The ``chunkscope`` command: one module per subcommand, this one runs them.

``chunkscope <command> ...`` dispatches to the subcommand's module in this
package — ``serve``, ``lab``, ``check``, ``record``, ``show``, ``usage``,
``conformance``, ``tap``, ``cache`` — which share ``_args`` (the one error type,
:class:`~chunkscope.cli._args.CommandLineError`, ports, seconds, folders,
plural wording, one-line argparse errors), ``_inputs`` (the recorded streams
a file holds, read through ``chunkscope.sources``) and ``_output`` (text made
safe for a terminal, a quiet ``| head``); ``_render`` is ``show``'s rich picture.

How a subcommand joins: write ``cli/<name>.py`` with an
``add_<name>_parser(subparsers)`` that adds its parser, sets ``func`` (parsed
args → exit status: 0 fine, 1 "found something", 2 bad input) and, if its
handler checks values itself, ``subcommand_parser=parser``; then append that
function to :data:`SUBCOMMANDS` below (the order ``--help`` shows). Nothing
else: unknown flags, one-line argparse errors and a missing extra's message are
handled here for every subcommand. The layer rule: this package may import
every layer; nothing imports it.

Ctrl-C is handled here for every subcommand too: one line (``chunkscope <command>: interrupted``)
and exit 130, as a shell reports an interrupted command; a subcommand that has more to say
(``record``: where the partial output is) catches it itself.

A subcommand's mistakes are reported in its own terms: a bad value gets one
line naming the flag (``--token-delay``), an unknown flag gets the subcommand's
usage (a subparser stores itself as ``subcommand_parser`` for that), never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from chunkscope import __version__
from chunkscope._extras import MissingExtraError, as_missing_extra

from ._args import terse_errors
from .cache import add_cache_parser
from .check import add_check_parser
from .conformance import add_conformance_parser
from .lab import add_lab_parser
from .record import add_record_parser
from .serve import add_serve_parser, serve
from .show import add_show_parser
from .tap import add_tap_parser
from .usage import add_usage_parser

__all__ = ["SUBCOMMANDS", "build_parser", "main", "serve"]

SUBCOMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    add_serve_parser,
    add_lab_parser,
    add_check_parser,
    add_record_parser,
    add_show_parser,
    add_usage_parser,
    add_conformance_parser,
    add_tap_parser,
    add_cache_parser,
]
"""Every subcommand's registration function, in ``--help`` order."""


def build_parser() -> argparse.ArgumentParser:
    """The ``chunkscope`` argument parser with every subcommand of ``SUBCOMMANDS``."""
    parser = argparse.ArgumentParser(
        prog="chunkscope",
        description="Make the StreamChunk protocol of LLM adapters visible and trustworthy.",
    )
    parser.add_argument("--version", action="version", version=f"chunkscope {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for register in SUBCOMMANDS:
        register(subparsers)
    for subcommand in subparsers.choices.values():
        if subcommand.get_default("subcommand_parser") is None:
            # `chunkscope check --bogus`, `conformance --wire grpc`: one line in the subcommand's name
            terse_errors(subcommand)
            subcommand.set_defaults(subcommand_parser=subcommand)
    # `chunkscope frob`, `chunkscope --frob`: one line on stderr and exit 2, not the usage dump
    terse_errors(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``chunkscope`` command; returns its exit status."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # argparse would blame the top-level command; the subcommand's usage is what helps
        owner: argparse.ArgumentParser = getattr(args, "subcommand_parser", None) or parser
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    words = sys.argv[1:] if argv is None else list(argv)
    command = next((word for word in words if not word.startswith("-")), "")
    return _run(func, args, command)


def _run(func: Callable[[argparse.Namespace], int], args: argparse.Namespace, command: str) -> int:
    """A subcommand's exit status; Ctrl-C and a missing extra are one line on stderr."""
    try:
        return func(args)
    except KeyboardInterrupt:
        # Ctrl-C wherever a subcommand waits (a FIFO with no writer, stdin): one line, the shell's 130
        print(f"chunkscope {command}: interrupted", file=sys.stderr)
        return 130
    except ModuleNotFoundError as exc:
        # an optional dependency: one line naming the extra, and exit 2 (set-up), never 1 (violations)
        missing = as_missing_extra(exc)
        if missing is None:
            raise
        line = MissingExtraError(missing.extra, missing.name or "?")  # the command names what needs it
        print(f"chunkscope {command}: {line}", file=sys.stderr)
        return 2
