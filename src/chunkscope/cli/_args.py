"""What every subcommand's arguments share: the one error type, ports, seconds, folders, wording.

:class:`CommandLineError` is the command line's one error type: a bad flag value,
a folder that is not one, a file that cannot be read. ``str()`` is the one line a
user sees after ``chunkscope <command>:`` (naming the flag or the file), and the
handler turns it into exit status 2 — never a traceback::

    ValueError
     └── CommandLineError         a bad flag value or an unusable input file: one line, exit 2

Nothing here imports a chunkscope layer at module level: ``chunkscope --help``
starts without pydantic, httpx or rich.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import NoReturn

__all__ = [
    "PROFILE_CHOICES",
    "CommandLineError",
    "check_non_negative_seconds",
    "check_port",
    "existing_folder",
    "non_negative_seconds",
    "parse_port",
    "plural",
    "positive_count",
    "positive_seconds",
    "report",
    "terse_errors",
]

PROFILE_CHOICES = ("strict", "dsh")
"""``--profile`` choices: ``chunkscope.protocol.PROFILES``, spelled out so a parser needs no protocol import
(tests/cli pins the two equal)."""

_PORTS = "(1-65535, or 0 for any free port)"


class CommandLineError(ValueError):
    """A value or input the command cannot use; ``str()`` is the one line to show, naming the flag or file."""


def report(command: str, error: Exception | str, status: int = 2) -> int:
    """Print ``chunkscope <command>: <error>`` on stderr; return ``status`` (2: bad input)."""
    print(f"chunkscope {command}: {error}", file=sys.stderr)
    return status


def check_port(port: int, *, flag: str = "--port") -> int:
    """``port`` when it is 0..65535 (0: any free port); else :class:`CommandLineError`."""
    if not 0 <= port <= 65535:
        raise CommandLineError(f"{flag} {port} is not a port {_PORTS}")
    return port


def parse_port(text: str, *, flag: str = "--port") -> int:
    """``text`` as a TCP port: 1..65535, or 0 for any free port; else :class:`CommandLineError`."""
    try:
        port = int(text.strip(), 10)
    except ValueError:
        raise CommandLineError(f"{flag} {text!r} is not a port number {_PORTS}") from None
    return check_port(port, flag=flag)


def check_non_negative_seconds(value: float, *, flag: str) -> float:
    """``value`` when finite and >= 0 (seconds); else :class:`CommandLineError` naming ``flag``."""
    if not (math.isfinite(value) and value >= 0):
        raise CommandLineError(f"{flag} {value:g} must be a number of seconds >= 0")
    return value


def non_negative_seconds(text: str, *, flag: str) -> float:
    """``text`` as a finite number of seconds >= 0; else :class:`CommandLineError` naming ``flag``."""
    try:
        value = float(text)
    except ValueError:
        raise CommandLineError(f"{flag} {text!r} is not a number of seconds") from None
    return check_non_negative_seconds(value, flag=flag)


def positive_seconds(text: str) -> float:
    """An argparse ``type``: ``text`` as a positive, finite number of seconds (argparse names the flag)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive, finite number of seconds")
    return value


def positive_count(text: str) -> int:
    """An argparse ``type``: ``text`` as a whole number >= 1 (argparse names the flag)."""
    try:
        value = int(text.strip(), 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be 1 or more")
    return value


def existing_folder(path: Path, *, flag: str) -> Path:
    """``path`` when it is a folder; else :class:`CommandLineError` saying what it is instead."""
    if not path.exists():
        raise CommandLineError(f"{flag} {path}: no such folder")
    if not path.is_dir():
        raise CommandLineError(f"{flag} {path} is a file, not a folder")
    return path


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun`` in the right number ("1 file", "2 files"): the protocol's wording."""
    from chunkscope.protocol.shared import plural as counted  # here: `chunkscope --help` loads no layer

    return counted(count, noun)


def terse_errors(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` report a bad argument as one line on stderr (and exit 2), not usage + error."""

    def error(message: str) -> NoReturn:
        parser.exit(2, f"{parser.prog}: {message} (see {parser.prog} --help)\n")

    parser.error = error  # type: ignore[method-assign]
