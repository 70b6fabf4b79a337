"""The ``chunkscope`` command.

Each subcommand is one function that adds its parser to the subparsers and
sets ``func`` (parsed args → exit status); ``SUBCOMMANDS`` lists them in the
order ``--help`` shows them. Adding a subcommand = writing that function and
appending it to the list.

``chunkscope serve [--port N] [--token-delay S]`` runs the local provider on
127.0.0.1 until Ctrl-C.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType

from chunkscope import __version__
from chunkscope._cli_check import add_check_parser
from chunkscope._cli_inputs import terse_errors
from chunkscope._cli_record import add_record_parser
from chunkscope._cli_show import add_show_parser
from chunkscope._cli_usage import add_usage_parser
from chunkscope._lab import add_lab_parser
from chunkscope.conformance._cli import add_conformance_parser

__all__ = ["main", "serve", "add_serve_parser", "SUBCOMMANDS"]

SERVE_HELP = "run the local provider (OpenAI/DeepSeek and Anthropic wires) on 127.0.0.1 until Ctrl-C"


def serve(*, port: int = 0, token_delay: float = 0.0) -> int:
    """Serve the local provider until Ctrl-C or SIGTERM; print its URLs and scenarios first."""
    from chunkscope.provider import SCENARIOS, LocalProvider

    try:
        provider = LocalProvider(port=port, token_delay=token_delay)
    except ValueError as exc:  # a port outside 0..65535, a negative delay
        print(f"chunkscope serve: {exc}", file=sys.stderr)
        return 2
    try:
        provider.start()
    except OSError as exc:
        print(f"chunkscope serve: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    # SIGTERM stops the server as cleanly as Ctrl-C does (signals can only be caught in the main thread).
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_sigterm) if in_main else None
    try:
        print(f"chunkscope local provider on {provider.url}")
        print(f"  OpenAI / DeepSeek base_url: {provider.base_url}")
        print(f"  Anthropic base_url:         {provider.url}")
        print(f"  models (scenarios, docs/scenarios.md): {', '.join(SCENARIOS)} (and long-<N>)")
        print("  any API key is accepted. Ctrl-C to stop.", flush=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
        provider.stop()
    return 0


def add_serve_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``chunkscope serve``."""
    parser = subparsers.add_parser("serve", help=SERVE_HELP, description=SERVE_HELP)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument(
        "--token-delay",
        type=float,
        default=0.0,
        metavar="S",
        help="seconds between streamed events (default 0)",
    )
    parser.set_defaults(func=lambda args: serve(port=args.port, token_delay=args.token_delay))


SUBCOMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    add_serve_parser,
    add_lab_parser,
    add_check_parser,
    add_record_parser,
    add_show_parser,
    add_usage_parser,
    add_conformance_parser,
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
    # `chunkscope frob`, `chunkscope --frob`: one line on stderr and exit 2, not the usage dump
    terse_errors(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``chunkscope`` command; returns its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
