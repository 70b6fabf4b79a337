"""``chunkscope check FILE...``: the protocol rules over recorded streams, for people and for CI.

Each file is a chunk log, a recording or a DeepSeek Harness session log — one stream per
attempt (see ``cli._inputs``). Its violations are
listed as a table — chunk position, chunk type, severity, rule id, message — or,
with ``--format json``, as one JSON document on stdout.

Exit status: **0** when no file breaks an error-severity rule (warnings such as
``usage-missing`` are shown but do not fail: a provider that sends no usage is not
a broken adapter); **1** when any file has an error-severity violation; **2** for
bad arguments or a file that cannot be read (named on stderr, one line each; the
other files are still checked). A recording whose stream raised (a recorded
``LlmError``) is not a violation — raising with a code is what the protocol asks
of a failing stream; its code is shown, and a code that is no registered code (a finish
reason chunkscope does not map: the `<FINISH_REASON>` family) is marked unmapped.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ._args import PROFILE_CHOICES, CommandLineError, plural, terse_errors
from ._inputs import analyze, load_streams
from ._output import pipe_safe, printable

if TYPE_CHECKING:
    from chunkscope import StreamResult, Violation
    from chunkscope.sources import LoadedStream

__all__ = ["CHECK_HELP", "add_check_parser", "run_check"]

CHECK_HELP = (
    "check recorded streams (chunk logs, recordings, DeepSeek Harness session logs) "
    "against the StreamChunk rules"
)

_KIND_NAMES = {"chunks": "chunk log", "recording": "recording", "dsh": "session log"}
_HEADER = ("chunk", "type", "severity", "rule", "message")


def _chunk_type(violation: Violation) -> str:
    chunk = violation.chunk
    kind = getattr(chunk, "type", None)
    if kind is None and isinstance(chunk, dict):
        kind = chunk.get("type")
    return printable(str(kind))[:20] if isinstance(kind, str) else "-"


def _counts(result: StreamResult) -> tuple[int, int]:
    errors = len(result.errors)
    return errors, len(result.violations) - errors


def _verdict(result: StreamResult) -> str:
    errors, warnings = _counts(result)
    parts = [plural(count, noun) for count, noun in ((errors, "error"), (warnings, "warning")) if count]
    return ", ".join(parts) or "clean"


def _violation_rows(result: StreamResult) -> list[str]:
    """The violations as an aligned table (heading first); no lines when there are none."""
    if not result.violations:
        return []
    rows = [
        (
            "end" if v.position is None else str(v.position),
            _chunk_type(v),
            v.severity,
            v.rule,
            printable(v.message),
        )
        for v in result.violations
    ]
    widths = [max(len(row[i]) for row in [_HEADER, *rows]) for i in range(4)]
    lines = []
    for row in [_HEADER, *rows]:
        cells = [row[0].rjust(widths[0]), *(row[i].ljust(widths[i]) for i in range(1, 4)), row[4]]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _ending_lines(result: StreamResult) -> list[str]:
    """What the stream raised, and an error finish under no registered code."""
    from chunkscope.protocol.shared import is_unmapped  # here: the command starts without the protocol

    lines = []
    if result.error is not None:
        mark = _UNMAPPED_MARK if is_unmapped(result.error.code) else ""
        lines.append(f"  the stream raised {result.error.code}{mark}: {printable(result.error.message)}")
    unmapped = _unmapped_finish_code(result)
    if unmapped is not None:
        lines.append(f"  the stream finished with {printable(unmapped)}{_UNMAPPED_MARK}")
    return lines


def format_text(stream: LoadedStream, result: StreamResult, profile: str) -> str:
    """One file's report: a heading line, then one table row per violation."""
    kind = _KIND_NAMES.get(stream.kind, stream.kind)
    count = len(stream.chunks)
    heading = (
        f"{printable(stream.name)}: {kind}, {plural(count, 'chunk')}, profile {profile}: {_verdict(result)}"
    )
    return "\n".join([heading, *_violation_rows(result), *_ending_lines(result)])


_UNMAPPED_MARK = " (unmapped: no code in cs.ERROR_CODES; a finish reason chunkscope does not map)"


def _unmapped_finish_code(result: StreamResult) -> str | None:
    """The code of an error finish that stands under no registered code, else None."""
    from chunkscope.protocol.shared import is_unmapped

    failure = result.finish.failure if result.finish is not None else None
    if failure is None or not is_unmapped(failure.code):
        return None
    return failure.code


def to_json(stream: LoadedStream, result: StreamResult, profile: str) -> dict[str, Any]:
    """One file's report as JSON-ready data: strict JSON (a NaN or Infinity read from the file,
    which JSON cannot carry, is reported as the string ``"NaN"``/``"Infinity"``)."""
    from chunkscope.protocol.shared import is_unmapped

    errors, warnings = _counts(result)
    report = {
        "path": stream.path,
        "label": stream.label,
        "kind": stream.kind,
        "profile": profile,
        "chunks": len(stream.chunks),
        "errors": errors,
        "warnings": warnings,
        "violations": [v.to_dict() for v in result.violations],
        "error": None if result.error is None else result.error.failure.to_dict(),
        # the finish's (or raised error's) code when it is no registered code
        "unmappedCode": _unmapped_finish_code(result)
        or (result.error.code if result.error is not None and is_unmapped(result.error.code) else None),
    }
    strict: dict[str, Any] = json.loads(json.dumps(report, default=str), parse_constant=str)
    return strict


def _check_file(path: str, profile: str, output: str) -> list[tuple[dict[str, Any], str]]:
    """Every stream of one file as (JSON report, text report); ``CommandLineError`` if it cannot be read."""
    found = []
    try:
        for stream in load_streams(path):
            result = analyze(stream, profile)
            text = format_text(stream, result, profile) if output == "text" else ""
            found.append((to_json(stream, result, profile), text))
    except RecursionError:
        raise CommandLineError(f"{path}: JSON nested too deeply") from None
    return found


def _print_document(
    profile: str, reports: list[dict[str, Any]], unreadable_files: list[dict[str, str]], *, ok: bool
) -> None:
    """The ``--format json`` report of the whole run, one document on stdout."""
    document = {
        "profile": profile,
        "ok": ok,
        "streams": reports,
        "unreadable": len(unreadable_files),
        "unreadable_files": unreadable_files,
    }
    # ASCII: any terminal or pipe carries it, and a lone surrogate read from a file stays escaped
    print(json.dumps(document, indent=2, allow_nan=False))


def _check_files(
    paths: list[str], profile: str, output: str
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Every file's reports (text ones printed as each file is done) and the files that could not be read.

    An unreadable file is named on stderr, one line, and the others are still checked.
    """
    reports: list[dict[str, Any]] = []
    unreadable_files: list[dict[str, str]] = []  # which files, and why, for --format json
    for path in paths:
        try:
            found = _check_file(path, profile, output)
        except CommandLineError as exc:
            print(f"chunkscope check: {printable(str(exc))}", file=sys.stderr)
            unreadable_files.append({"path": path, "reason": str(exc)})
            continue
        for report, text in found:
            if output == "text":
                print(text)
            reports.append(report)
    return reports, unreadable_files


def run_check(paths: list[str], *, profile: str = "strict", output: str = "text") -> int:
    """Check every stream of every file; print the report; return the exit status.

    0: no error-severity violation; 1: some; 2: a file could not be read (the others are still checked).
    """
    reports, unreadable_files = _check_files(paths, profile, output)
    failed = sum(report["errors"] > 0 for report in reports)
    unreadable = len(unreadable_files)
    if output == "json":
        _print_document(profile, reports, unreadable_files, ok=failed == 0 and unreadable == 0)
    elif len(paths) > 1 or len(reports) > 1:
        print(
            f"{plural(len(reports), 'stream')} checked, {failed} with errors, "
            f"{plural(unreadable, 'file')} unreadable"
        )
    return 2 if unreadable else 1 if failed else 0


def add_check_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``chunkscope check``."""
    parser = subparsers.add_parser(
        "check",
        help=CHECK_HELP,
        description=CHECK_HELP
        + ". Exit status: 0 clean (warnings allowed), 1 an error-severity violation, 2 unreadable input.",
    )
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="a chunk log (JSONL), a recording or a session log (.jsonl / .jsonl.zstd)",
    )
    parser.add_argument(
        "--profile",
        choices=PROFILE_CHOICES,
        default="strict",
        help=(
            "strict: every rule (default); "
            "dsh: the invariant of the TypeScript reference (deepseek-ai/deepseek-harness)"
        ),
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        dest="output",
        help="report format (default text)",
    )
    terse_errors(parser)
    parser.set_defaults(
        func=lambda args: pipe_safe(lambda: run_check(args.files, profile=args.profile, output=args.output))
    )
