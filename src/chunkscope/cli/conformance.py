"""``chunkscope conformance module:factory [--wire W] [--junit FILE] [--case NAME] [--timeout S]``.

Prints the report's summary (one line per failed check, with what to fix)
and exits 0 only when the adapter conforms on every case; 1 when it does
not; 2, with one line and no traceback, when the run cannot start (a bad
``module:factory``, a factory that raises, a bad flag value) or the JUnit
file cannot be written. The run itself is ``chunkscope.conformance_kit``'s.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from chunkscope._wires import DEFAULT_WIRE, WIRE_FACTS

from ._args import positive_seconds, report

if TYPE_CHECKING:
    from chunkscope.conformance_kit import ConformanceReport

__all__ = ["CONFORMANCE_HELP", "add_conformance_parser", "run_command"]

CONFORMANCE_HELP = "run an adapter through the local provider's scenario matrix; exit 0 only when it conforms"


def _run(
    target: str, *, wire: str, cases: list[str] | None, timeout: float, total_timeout: float
) -> ConformanceReport:
    """``target``'s report over ``cases`` (None: all); ``ConformanceError`` when it cannot run."""
    # Imported here: `chunkscope --help` and the other commands must not load the adapters.
    from chunkscope.conformance_kit import ConformanceError, case_names, conformance, load_factory

    factory = load_factory(target)
    known = case_names(wire) if cases else []
    unknown = [c for c in cases or () if c not in known]
    if unknown:
        raise ConformanceError(f"unknown case(s) {unknown}; the {wire} cases are {', '.join(known)}")
    return conformance(factory, wire=wire, scenarios=cases, timeout=timeout, total_timeout=total_timeout)


def run_command(
    target: str,
    *,
    wire: str = DEFAULT_WIRE,
    junit: str | None = None,
    cases: list[str] | None = None,
    timeout: float = 40.0,
    total_timeout: float = 300.0,
) -> int:
    """What ``chunkscope conformance`` does; returns the exit status."""
    from chunkscope.conformance_kit import ConformanceError

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: the caller's folder is importable
    try:
        outcome = _run(target, wire=wire, cases=cases, timeout=timeout, total_timeout=total_timeout)
    except ConformanceError as exc:
        return report("conformance", exc)
    except KeyboardInterrupt:  # the cases run on daemon threads: nothing is left to wait for
        return report("conformance", "interrupted; no report", 130)
    print(outcome.summary())
    if junit:
        try:
            path = outcome.to_junit(junit)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            return report("conformance", f"--junit {junit}: cannot write the XML: {reason}")
        print(f"JUnit XML written to {path}")
    return 0 if outcome.ok else 1


def add_conformance_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``chunkscope conformance``."""
    parser = subparsers.add_parser("conformance", help=CONFORMANCE_HELP, description=CONFORMANCE_HELP)
    parser.add_argument(
        "target", metavar="module:factory", help="a callable factory(base_url, api_key) returning the adapter"
    )
    parser.add_argument(
        "--wire", choices=tuple(WIRE_FACTS), default=DEFAULT_WIRE, help=f"default: {DEFAULT_WIRE}"
    )
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    parser.add_argument(
        "--case", action="append", dest="cases", metavar="NAME", help="run only this case (repeatable)"
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=40.0,
        metavar="S",
        help="seconds one case may take (default 40)",
    )
    parser.add_argument(
        "--total-timeout",
        type=positive_seconds,
        default=300.0,
        metavar="S",
        help="seconds the whole run may take; cases not reached are reported as not run (default 300)",
    )
    parser.set_defaults(
        func=lambda args: run_command(
            args.target,
            wire=args.wire,
            junit=args.junit,
            cases=args.cases,
            timeout=args.timeout,
            total_timeout=args.total_timeout,
        )
    )
