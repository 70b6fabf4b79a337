"""``chunkscope conformance module:factory [--wire W] [--junit FILE] [--case NAME]``.

Prints the report's summary (one line per failed check, with what to fix)
and exits 0 only when the adapter conforms on every case; 1 when it does
not; 2, with one line and no traceback, when the run cannot start (a bad
``module:factory``, a factory that raises).
"""

from __future__ import annotations

import argparse
import os
import sys

from chunkscope._wires import DEFAULT_WIRE, WIRE_FACTS

from ._errors import ConformanceError

__all__ = ["add_conformance_parser", "run_command"]

HELP = "run an adapter through the local provider's scenario matrix; exit 0 only when it conforms"


def run_command(
    target: str,
    *,
    wire: str = DEFAULT_WIRE,
    junit: str | None = None,
    cases: list[str] | None = None,
    timeout: float = 40.0,
) -> int:
    """What ``chunkscope conformance`` does; returns the exit status."""
    # Imported here: `chunkscope --help` and the other commands must not load the adapters.
    from ._run import case_names, conformance
    from ._target import load_factory

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: the caller's folder is importable
    try:
        factory = load_factory(target)
        if cases:
            known = case_names(wire)
            unknown = [c for c in cases if c not in known]
            if unknown:
                raise ConformanceError(f"unknown case(s) {unknown}; the {wire} cases are {', '.join(known)}")
        report = conformance(factory, wire=wire, scenarios=cases, timeout=timeout)
    except ConformanceError as exc:
        print(f"chunkscope conformance: {exc}", file=sys.stderr)
        return 2
    print(report.summary())
    if junit:
        path = report.to_junit(junit)
        print(f"JUnit XML written to {path}")
    return 0 if report.ok else 1


def add_conformance_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``chunkscope conformance``."""
    parser = subparsers.add_parser("conformance", help=HELP, description=HELP)
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
        "--timeout", type=float, default=40.0, metavar="S", help="seconds one case may take (default 40)"
    )
    parser.set_defaults(
        func=lambda args: run_command(
            args.target, wire=args.wire, junit=args.junit, cases=args.cases, timeout=args.timeout
        )
    )
