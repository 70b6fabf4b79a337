"""``chunkscope serve [--port N] [--token-delay S]``: the local provider on 127.0.0.1 until Ctrl-C.

Prints the provider's URL, each wire's base URL (from the wire table) and the
scenarios it answers. A port outside 0..65535 or a delay that is not a finite
number >= 0 gets one line naming the flag (exit 2); a port that cannot be
listened on, exit 1.
"""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType

from chunkscope._wires import WIRE_FACTS

from ._args import (
    CommandLineError,
    check_non_negative_seconds,
    check_port,
    non_negative_seconds,
    parse_port,
    report,
)

__all__ = ["SERVE_HELP", "add_serve_parser", "serve"]

# the wires are the table's, so the help names every wire the banner prints a base URL for
SERVE_HELP = "run the local provider on 127.0.0.1 until Ctrl-C; it speaks every wire: " + ", ".join(
    facts.label for facts in WIRE_FACTS.values()
)


def serve(*, port: int = 0, token_delay: float = 0.0) -> int:
    """Serve the local provider until Ctrl-C or SIGTERM; print its URLs and scenarios first.

    A port outside 0..65535 or a delay that is not a finite number >= 0 prints one
    line naming the flag and returns 2; a port that cannot be listened on returns 1.
    """
    from chunkscope.provider import LocalProvider

    try:
        check_port(port)
        check_non_negative_seconds(token_delay, flag="--token-delay")
    except CommandLineError as exc:
        return report("serve", exc)
    provider = LocalProvider(port=port, token_delay=token_delay)
    try:
        provider.start()
    except OSError as exc:
        return report("serve", f"--port {port}: cannot listen on 127.0.0.1: {exc.strerror or exc}", 1)

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    # SIGTERM stops the server as cleanly as Ctrl-C does (signals can only be caught in the main thread).
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_sigterm) if in_main else None
    try:
        _print_banner(provider.url)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
        provider.stop()
    return 0


def _print_banner(url: str) -> None:
    from chunkscope.provider import SCENARIOS

    print(f"chunkscope local provider on {url}")
    width = max(len(facts.label) for facts in WIRE_FACTS.values())
    for facts in WIRE_FACTS.values():  # each wire's base URL, from the wire table
        print(f"  {facts.label + ' base_url:':<{width + 10}} {facts.base_url(url)}")
    print(f"  models (scenarios, docs/scenarios.md): {', '.join(SCENARIOS)} (and long-<N>)")
    print("  any API key is accepted. Ctrl-C to stop.", flush=True)


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
        token_delay = non_negative_seconds(str(args.token_delay), flag="--token-delay")
    except CommandLineError as exc:
        return report("serve", exc)
    return serve(port=port, token_delay=token_delay)
