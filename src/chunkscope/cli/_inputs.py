"""What ``chunkscope check``, ``show`` and ``usage`` read: the recorded streams in any file a user names.

The reading itself is ``chunkscope.sources.load_streams`` (the one entry
point: chunk logs, recordings and DeepSeek Harness session logs, plain or
zstd, told apart by their first bytes, each file read once as a stream, so a
pipe or ``<(…)`` works). This module bounds it by :data:`MAX_BYTES` and turns
its ``SourceError`` into an :class:`InputError` — one sentence naming the file
(and line), never a traceback — and holds the command line's shared helpers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn

# The chunkscope layers load when a file is read, not at import: `chunkscope --help` and
# `chunkscope lab` stay as quick to start as they were before these subcommands.
if TYPE_CHECKING:
    from chunkscope import StreamResult
    from chunkscope.sources import ZSTD_MAGIC as ZSTD_MAGIC
    from chunkscope.sources import LoadedStream as LoadedStream
    from chunkscope.sources import detect_kind as detect_kind

__all__ = [
    "MAX_BYTES",
    "PROFILE_CHOICES",
    "ZSTD_MAGIC",
    "InputError",
    "analyze",
    "pipe_safe",
    "terse_errors",
    "LoadedStream",
    "detect_kind",
    "load_streams",
    "printable",
    "read_bounded",
    "replay_items",
]

MAX_BYTES = 256 * 1024 * 1024
"""The most a file ``check``/``show``/``usage`` read (256 MiB, decompressed): a bigger one is refused,
not half-read."""

PROFILE_CHOICES = ("strict", "dsh")
"""``--profile`` choices: ``chunkscope.PROFILES``, spelled out so a parser needs no protocol import
(tests/cli pins the two equal)."""

_FROM_SOURCES = frozenset({"LoadedStream", "ZSTD_MAGIC", "detect_kind"})


def __getattr__(name: str) -> Any:
    # The sources layer's names, loaded on first use (see the note on imports above).
    if name in _FROM_SOURCES:
        from chunkscope import sources

        return getattr(sources, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class InputError(Exception):
    """A file the command line cannot read; ``str()`` is one sentence naming the file (and line)."""


def load_streams(path: str | os.PathLike[str]) -> list[LoadedStream]:
    """Every recorded stream in ``path``, whatever its kind; ``InputError`` if it cannot be read."""
    from chunkscope.sources import SourceError
    from chunkscope.sources import load_streams as load

    try:
        return load(path, max_bytes=MAX_BYTES)
    except SourceError as exc:
        raise InputError(str(exc)) from None
    except ModuleNotFoundError as exc:  # zstandard, for a zstd log: the one line names the extra
        raise InputError(f"{os.fspath(path)}: {exc}") from None


def read_bounded(path: str, limit: int = 16 * 1024 * 1024) -> bytes:
    """The bytes of ``path`` read once, as a stream (a pipe works), at most ``limit`` of them.

    ``OSError`` if it cannot be opened or read, ``ValueError`` naming the limit when it holds more.
    """
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory", path)
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"over the {limit:,}-byte limit; not read")
    return data


def replay_items(stream: LoadedStream) -> Iterator[Any]:
    """The recorded chunks, then the recorded failure raised as ``LlmError`` (as the stream did)."""
    return stream.replay()


# C0/C1 controls (ESC starts terminal escape sequences), DEL, the bidirectional overrides that can
# reorder what a terminal shows, and lone surrogates (JSON "\ud800" escapes; no encoding can print
# them): none of them may reach the terminal from a file's content.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str, *, newlines: bool = False) -> str:
    """``text`` safe for a terminal: control characters shown as ``\\xNN`` escapes.

    Newlines and tabs stay when ``newlines`` is true, else become ``⏎`` and a space.
    """
    out = _UNSAFE.sub(_escape, text)
    if not newlines:
        out = out.replace("\n", "⏎").replace("\t", " ")
    return out


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def analyze(stream: LoadedStream, profile: str) -> StreamResult:
    """Check and assemble a loaded stream under ``profile``, as ``collect`` does a live one.

    A recorded failure ends it as the live stream ended (``result.error``), so a missing
    finish after it is not reported: the error explains it.
    """
    from chunkscope import collect

    return asyncio.run(collect(replay_items(stream), profile=profile))


def pipe_safe(run: Callable[[], int]) -> int:
    """``run()``, but a reader that stopped reading (``| head``) ends it quietly with status 141.

    141 is what a shell reports for a process killed by SIGPIPE; Python turns that signal
    into ``BrokenPipeError``, which would otherwise end in a traceback.
    """
    try:
        status = run()
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # stdout is gone: point it at /dev/null so the interpreter's final flush stays quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141


def terse_errors(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` report a bad argument as one line on stderr (and exit 2), not usage + error."""

    def error(message: str) -> NoReturn:
        parser.exit(2, f"{parser.prog}: {message} (see {parser.prog} --help)\n")

    parser.error = error  # type: ignore[method-assign]
