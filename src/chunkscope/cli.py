"""The ``chunkscope`` command.

Each subcommand is one function that adds its parser to the subparsers and
sets ``func`` (parsed args → exit status); ``SUBCOMMANDS`` lists them in the
order ``--help`` shows them. Adding a subcommand = writing that function and
appending it to the list.

``chunkscope serve [--port N] [--token-delay S]`` runs the local provider on
127.0.0.1 until Ctrl-C.

A subcommand's mistakes are reported in its own terms: a bad value gets one
line naming the flag (``--token-delay``), an unknown flag gets the subcommand's
usage (a subparser stores itself as ``subcommand_parser`` for that), never a traceback.
"""

from __future__ import annotations

import argparse
import math
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
from chunkscope._cli_tap import add_tap_parser
from chunkscope._cli_usage import add_usage_parser
from chunkscope._extras import MissingExtraError, as_missing_extra
from chunkscope._lab import UsageError, add_lab_parser, parse_port
from chunkscope.conformance_kit._cli import add_conformance_parser

__all__ = ["main", "serve", "add_serve_parser", "SUBCOMMANDS"]

SERVE_HELP = "run the local provider (OpenAI/DeepSeek and Anthropic wires) on 127.0.0.1 until Ctrl-C"


def serve(*, port: int = 0, token_delay: float = 0.0) -> int:
    """Serve the local provider until Ctrl-C or SIGTERM; print its URLs and scenarios first.

    A port outside 0..65535 or a delay that is not a finite number >= 0 prints one
    line naming the flag and returns 2; a port that cannot be listened on returns 1.
    """
    from chunkscope.provider import SCENARIOS, LocalProvider

    try:
        _check_serve_values(port, token_delay)
    except UsageError as exc:
        print(f"chunkscope serve: {exc}", file=sys.stderr)
        return 2
    provider = LocalProvider(port=port, token_delay=token_delay)
    try:
        provider.start()
    except OSError as exc:
        print(
            f"chunkscope serve: --port {port}: cannot listen on 127.0.0.1: {exc.strerror or exc}",
            file=sys.stderr,
        )
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


def _check_serve_values(port: int, token_delay: float) -> None:
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is not a port (1-65535, or 0 for any free port)")
    if not (math.isfinite(token_delay) and token_delay >= 0):
        raise UsageError(f"--token-delay {token_delay:g} must be a number of seconds >= 0")


def _parse_token_delay(text: str) -> float:
    try:
        delay = float(text)
    except ValueError:
        raise UsageError(f"--token-delay {text!r} is not a number of seconds") from None
    _check_serve_values(0, delay)
    return delay


def add_serve_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``chunkscope serve``."""
    parser = subparsers.add_parser("serve", help=SERVE_HELP, description=SERVE_HELP)
    # values are checked by the handler, not argparse: a bad one gets one line naming the flag
    parser.add_argument("--port", default="0", metavar="N", help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument(
        "--token-delay",
        default="0",
        metavar="S",
        help="seconds between streamed events (default 0)",
    )
    parser.set_defaults(func=_handle_serve, subcommand_parser=parser)


def _handle_serve(args: argparse.Namespace) -> int:
    try:
        port = parse_port(str(args.port))
        token_delay = _parse_token_delay(str(args.token_delay))
    except UsageError as exc:
        print(f"chunkscope serve: {exc}", file=sys.stderr)
        return 2
    return serve(port=port, token_delay=token_delay)


SUBCOMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    add_serve_parser,
    add_lab_parser,
    add_check_parser,
    add_record_parser,
    add_show_parser,
    add_usage_parser,
    add_conformance_parser,
    add_tap_parser,
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
    try:
        return func(args)
    except ModuleNotFoundError as exc:
        # an optional dependency: one line naming the extra, and exit 2 (set-up), never 1 (violations)
        missing = as_missing_extra(exc)
        if missing is None:
            raise
        words = sys.argv[1:] if argv is None else list(argv)
        command = next((word for word in words if not word.startswith("-")), "")
        line = MissingExtraError(missing.extra, missing.name or "?")  # the command names what needs it
        print(f"chunkscope {command}: {line}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
