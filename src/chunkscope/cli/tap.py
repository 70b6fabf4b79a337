"""``chunkscope tap --upstream URL``: the tap in a terminal, a live table of calls until Ctrl-C.

Options: ``--port N`` (default a free one), ``--host H`` (default 127.0.0.1;
anything else listens on the network and says so loudly), ``--wire
auto|<a wire's name>``, ``--record DIR`` (one recording per call),
``--usage FILE.parquet`` (the usage frame, written at exit); the limits
``--keep-bytes N``, ``--max-head-bytes N``, ``--head-timeout S``,
``--body-timeout S``, ``--max-connections N`` (docs/tap.md). On a terminal
the table updates in place (rich); piped, one line per finished call.
Ctrl-C (or SIGTERM) stops the tap cleanly: open streams end, every
recording is complete and the usage file written before it exits 0.
Exit 2: a bad value (one line naming the flag), a port that cannot be listened on, or a
recordings folder another user owns or can write to.

``chunkscope tap --replay DIR`` shows recorded calls in the same table instead
(parsed again from their raw reads, as the tap parsed them); ``--live``
replays them at their original timing. Exit 2: a file that is not a recording.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

from chunkscope._wires import WIRE_FACTS

from ._args import positive_count, positive_seconds, terse_errors

if TYPE_CHECKING:
    from chunkscope.tap import Tap, TapCall, TapReplay

__all__ = ["TAP_HELP", "add_tap_parser", "run_tap"]

TAP_HELP = "a reverse proxy in front of a real provider: see, check and record any app's streams live"


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.0f} ms"


def call_row(call: TapCall) -> list[str]:
    """One call as table cells: id, wire, model, status, TTFT, duration, chunks, usage, violations, code."""
    row = call.row()
    tokens = row["input_tokens"] is not None
    return [
        str(row["id"]),
        row["wire"] or "-",
        (row["model"] or "-")[:40],
        str(row["status"] or "…"),
        _ms(row["ttft_ms"]),
        _ms(row["duration_ms"]) if row["done"] else "streaming",
        str(row["chunks"]),
        f"{row['input_tokens']}/{row['output_tokens']}" if tokens else "",
        str(row["violations"] or ""),
        row["code"] or ("ok" if row["done"] else ""),
    ]


_COLUMNS = ["#", "wire", "model", "status", "TTFT", "duration", "chunks", "in/out", "violations", "code"]


def _table(tap: Tap | TapReplay, last: int = 30) -> Any:
    from rich.table import Table

    table = Table(title=f"chunkscope tap {tap.where}", expand=False)
    for name in _COLUMNS:
        table.add_column(name, no_wrap=True)
    for call in tap.calls[-last:]:
        cells = call_row(call)
        style = "red" if call.done and call.error_code else None
        table.add_row(*cells, style=style)
    return table


def _print_done(tap: Tap | TapReplay, shown: int) -> int:
    """Print a line for each finished call with an id above ``shown``, in order; the last id printed."""
    for call in list(tap.calls):
        if call.id <= shown:
            continue
        if not call.done:
            break
        print("  ".join(call_row(call)), flush=True)
        shown = call.id
    return shown


def _raise_file_limit() -> None:
    """The soft file limit up to the hard one (as Go's runtime does): this process exists to hold
    connections, two descriptors each, and a desktop's soft 1,024 would cap them at 480."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1 << 16 if hard == resource.RLIM_INFINITY else min(hard, 1 << 16)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def run_tap(
    *,
    upstream: str,
    port: int = 0,
    host: str = "127.0.0.1",
    wire: str = "auto",
    record: str | None = None,
    usage: str | None = None,
    live: bool | None = None,
    limits: dict[str, Any] | None = None,
) -> int:
    """Run the tap until Ctrl-C or SIGTERM; 0 after a clean stop, 2 for a bad value or port.

    ``limits``: ``Tap``'s keyword arguments ``keep_bytes``, ``max_head_bytes``, ``head_timeout``,
    ``body_timeout``, ``max_connections``."""
    tap = _started_tap(upstream=upstream, host=host, port=port, wire=wire, record=record, limits=limits)
    if tap is None:
        return 2

    live = sys.stdout.isatty() if live is None else live
    shown = [0]  # how many finished calls are printed (kept when Ctrl-C ends the watch)
    try:
        with _sigterm_as_interrupt():
            _watch(tap, record, live, shown)
    except KeyboardInterrupt:
        pass
    finally:
        tap.stop()  # open streams end; every call finishes and its recording is written
        if usage:
            tap.usage.to_parquet(usage)
    if not live:
        _print_done(tap, shown[0])  # the calls that ended since the last look, the aborted ones too
    failed = sum(1 for call in tap.calls if call.error_code)
    print(
        f"chunkscope tap: {len(tap.calls)} calls, {failed} failed" + (f"; usage in {usage}" if usage else "")
    )
    return 0


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops the watch as Ctrl-C does (in the main thread, where a handler can be set)."""

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _started_tap(
    *, upstream: str, host: str, port: int, wire: str, record: str | None, limits: dict[str, Any] | None
) -> Tap | None:
    """The tap, listening; None once a bad value or port is reported (one line on stderr)."""
    from chunkscope.tap import Tap, TapExposedWarning

    _raise_file_limit()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TapExposedWarning)
        try:
            tap = Tap(upstream=upstream, host=host, port=port, wire=wire, record=record, **(limits or {}))
        except ValueError as exc:
            print(f"chunkscope tap: {exc}", file=sys.stderr)
            return None
    for warning in caught:
        print(f"chunkscope tap: WARNING: {warning.message}", file=sys.stderr, flush=True)
    # A full collection runs in whichever thread allocates and holds the GIL throughout: over the
    # ~90k objects the imports leave, it stalled every stream by ~50 ms. This process exists to run
    # the tap, so they are frozen (never walked; only cyclic garbage among them would stay). A
    # library must not change its host's collector: in Python, a notebook may do the same itself.
    gc.freeze()
    try:
        tap.start()
    except PermissionError as exc:  # the recordings folder: another user's, or writable by others
        print(f"chunkscope tap: --record {record}: {exc}", file=sys.stderr)
        return None
    except OSError as exc:
        print(
            f"chunkscope tap: --port {port}: cannot listen on {host}: {exc.strerror or exc}", file=sys.stderr
        )
        return None
    return tap


def _watch(tap: Tap, record: str | None, live: bool, shown: list[int]) -> None:
    """Say where the tap listens, then show its calls until Ctrl-C: a live table, or a line per call."""
    stop = threading.Event()
    print(f"chunkscope tap on {tap.base_url} → {tap.upstream}", flush=True)
    print("  point a client's base URL here (plus the path prefix it expects, e.g. /v1). Ctrl-C to stop.")
    if record:
        print(f"  recording every call into {record}", flush=True)
    if live:
        from rich.live import Live

        with Live(_table(tap), refresh_per_second=4) as screen:
            while not stop.wait(0.25):
                screen.update(_table(tap))
    else:
        while not stop.wait(0.1):
            shown[0] = _print_done(tap, shown[0])


def run_replay(*, source: str, live: bool = False, screen: bool | None = None) -> int:
    """Show the calls recorded in ``source`` in the tap's table; 0, or 2 for a file that is not one."""
    from chunkscope.sources import SourceError
    from chunkscope.tap import TapReplay

    try:
        replay = TapReplay(source, live=live)
    except (SourceError, OSError) as exc:
        print(f"chunkscope tap: --replay {source}: {exc}", file=sys.stderr)
        return 2
    screen = sys.stdout.isatty() if screen is None else screen
    shown = 0
    try:
        if screen:
            from rich.live import Live

            with Live(_table(replay), refresh_per_second=4) as view:
                while not replay.wait(0.25):
                    view.update(_table(replay))
                view.update(_table(replay))
        else:
            print(f"chunkscope tap: {replay.where}", flush=True)
            while not replay.wait(0.1):
                shown = _print_done(replay, shown)
            shown = _print_done(replay, shown)
    except KeyboardInterrupt:
        replay.close()
    failed = sum(1 for call in replay.calls if call.error_code)
    print(f"chunkscope tap: {len(replay.calls)} calls replayed, {failed} failed")
    return 0


def add_tap_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``chunkscope tap``."""
    parser = subparsers.add_parser("tap", help=TAP_HELP, description=TAP_HELP)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--upstream", metavar="URL", help="the provider to forward to")
    source.add_argument(
        "--replay", metavar="DIR", help="show the calls recorded in DIR (by --record) instead of tapping"
    )
    parser.add_argument("--live", action="store_true", help="with --replay: replay at the original timing")
    parser.add_argument("--port", default="0", metavar="N", help="port to listen on (default: a free one)")
    parser.add_argument(
        "--host", default="127.0.0.1", metavar="H", help="address to listen on (default 127.0.0.1 only)"
    )
    parser.add_argument(
        "--wire",
        default="auto",
        metavar="WIRE",
        help=f"auto (from the request path), or one of {', '.join(WIRE_FACTS)}",
    )
    parser.add_argument("--record", default=None, metavar="DIR", help="write each call as a recording")
    parser.add_argument("--usage", default=None, metavar="FILE.parquet", help="write the usage frame at exit")
    parser.add_argument(
        "--keep-bytes",
        type=positive_count,
        default=None,
        metavar="N",
        help="bytes the listed calls keep in memory (default 64 MiB; recordings keep everything)",
    )
    parser.add_argument(
        "--max-head-bytes", type=positive_count, default=None, metavar="N", help="request head size (64 KiB)"
    )
    parser.add_argument(
        "--head-timeout",
        type=positive_seconds,
        default=None,
        metavar="S",
        help="seconds for a request head (20)",
    )
    parser.add_argument(
        "--body-timeout",
        type=positive_seconds,
        default=None,
        metavar="S",
        help="seconds for a request body after its head (60)",
    )
    parser.add_argument(
        "--max-connections",
        type=positive_count,
        default=None,
        metavar="N",
        help="client connections at once, 503 beyond (default: what the file limit allows)",
    )
    terse_errors(parser)  # a bad value: one line naming the flag, as every subcommand's
    parser.set_defaults(func=_handle_tap, subcommand_parser=parser)


_LIMITS = ("keep_bytes", "max_head_bytes", "head_timeout", "body_timeout", "max_connections")


def _handle_tap(args: argparse.Namespace) -> int:
    if args.replay is not None:
        return run_replay(source=args.replay, live=args.live)
    text = str(args.port)
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        print(
            f"chunkscope tap: --port {text} is not a port (1-65535, or 0 for any free port)", file=sys.stderr
        )
        return 2
    return run_tap(
        upstream=args.upstream,
        port=int(text),
        host=args.host,
        wire=args.wire,
        record=args.record,
        usage=args.usage,
        limits={name: getattr(args, name) for name in _LIMITS if getattr(args, name) is not None},
    )
