"""What ``chunkscope check`` and ``chunkscope show`` read: the recorded streams in any file a user names.

Three kinds of file are recognised by their first non-blank line:

* a **recording** (``RecordingAdapter``'s JSONL): the header line
  ``{"recording": "chunkscope", ...}``, then ``{"t", "chunk"}`` lines and maybe
  one ``{"t", "error"}`` line;
* a **chunk log** (``write_chunks`` / the TypeScript harness's JSONL): one chunk
  object per line, the first one with a chunk ``type``;
* a **DeepSeek Harness session log** (``session.jsonl``): the header line
  ``{"type": "session", ...}``, then the harness's events; read by
  ``chunkscope.read_dsh_session`` into one stream per model-call attempt. Its
  zstd form (``session.jsonl.zstd``) is recognised by the zstd magic bytes,
  before the binary-file refusal.

:func:`detect_kind` is the one place that tells them apart, and a reader in
:data:`_READERS` turns a file of each kind into the streams it holds (one for
the first two, one per attempt for a session log). Every file is bounded
before any reader sees it: a file over
:data:`MAX_BYTES`, a binary file, text that is not UTF-8, JSON nested too deep
or a line that is not JSON is an :class:`InputError` — one sentence naming the
file (and line), never a traceback.

A line of a chunk log that is JSON but not a chunk is *not* an input error: it
is kept as it came and the rule checker reports it as a ``schema`` violation
at its position, as it would in a live stream.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

# The chunkscope layers load when a file is read, not at import: `chunkscope --help` and
# `chunkscope lab` stay as quick to start as they were before these subcommands.
if TYPE_CHECKING:
    from chunkscope import LlmFailure, StreamResult

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
    "replay_items",
]

MAX_BYTES = 256 * 1024 * 1024
"""The largest file ``check``/``show`` read (256 MiB): a bigger one is refused, not half-read."""

_MAX_DEPTH_NOTE = "JSON nested too deeply"

PROFILE_CHOICES = ("strict", "dsh")
"""``--profile`` choices: ``chunkscope.PROFILES``, spelled out so a parser needs no protocol import
(tests/cli pins the two equal)."""

CHUNK_TYPES = frozenset(
    {"block-start", "text-delta", "reasoning-delta", "tool-call-delta", "block-end", "usage", "finish"}
)
"""The ``type`` of a chunk log's first line. Only these: other JSONL files with a ``type`` field
(a DeepSeek Harness session log starts with ``{"type": "session", ...}``) are not chunk logs."""


class InputError(Exception):
    """A file ``check``/``show`` cannot read; ``str()`` is one sentence naming the file (and line)."""


@dataclass
class LoadedStream:
    """One recorded stream: its chunks as they came (dicts), times, metadata and recorded failure.

    A file holds one or more (``load_streams``); ``name`` says which, for people.

    ``times`` are seconds since the request began (a recording), else None (a chunk log
    has no clock). ``error`` is the failure a recording's stream raised, at ``error_t``.
    """

    path: str
    kind: str
    chunks: list[Any] = field(default_factory=list)
    label: str = ""
    """Which stream of the file this is, for files that hold several ("" when it holds one)."""
    times: list[float] | None = None
    header: dict[str, Any] = field(default_factory=dict)
    error: LlmFailure | None = None
    error_t: float | None = None

    @property
    def name(self) -> str:
        """The file, and the stream's label when it has one."""
        return f"{self.path} [{self.label}]" if self.label else self.path


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _read_text(path: str) -> str:
    """The file's text: bounded in size, refused when binary or not UTF-8."""
    try:
        size = os.stat(path).st_size
        if os.path.isdir(path):
            raise InputError(f"{path}: is a directory, not a file")
        if size > MAX_BYTES:
            raise InputError(f"{path}: {size:,} bytes is over the {MAX_BYTES:,}-byte limit")
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except InputError:
        raise
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:  # it grew while we looked
        raise InputError(f"{path}: over the {MAX_BYTES:,}-byte limit")
    if b"\x00" in data:
        raise InputError(f"{path}: a binary file (it holds NUL bytes), not JSON lines")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{path}, line {line}: not UTF-8 text (byte {exc.start})") from None


def _loads(text: str, path: str, number: int) -> Any:
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise InputError(f"{path}, line {number}: {_MAX_DEPTH_NOTE}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}, line {number}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:
        raise InputError(f"{path}, line {number}: not valid JSON ({exc})") from None


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line


def detect_kind(first: Any) -> str | None:
    """The kind of file whose first non-blank line parses to ``first``: ``"recording"``,
    ``"chunks"``, ``"dsh"`` (a DeepSeek Harness session log), or None when it is none of them.
    """
    if not isinstance(first, dict):
        return None
    if first.get("recording") == "chunkscope":
        return "recording"
    if first.get("type") in CHUNK_TYPES:
        return "chunks"
    if first.get("type") == "session":
        return "dsh"
    return None


def _read_chunk_log(path: str, text: str) -> list[LoadedStream]:
    chunks = [_loads(line, path, number) for number, line in _lines(text)]
    return [LoadedStream(path=path, kind="chunks", chunks=chunks)]


def _read_recording(path: str, text: str) -> list[LoadedStream]:
    from chunkscope import ChunkFileError, ReplayAdapter

    del text  # the recording format's own reader parses it, so the two cannot disagree
    try:
        recording = ReplayAdapter(path, speed=None).read()
    except ChunkFileError as exc:
        raise InputError(str(exc)) from None
    except RecursionError:
        raise InputError(f"{path}: {_MAX_DEPTH_NOTE}") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read the recording ({exc})") from None
    chunks: list[Any] = []
    times: list[float] = []
    for t, chunk in recording.entries:
        chunks.append(chunk if isinstance(chunk, dict) else chunk.to_dict())
        times.append(t)
    return [
        LoadedStream(
            path=path,
            kind="recording",
            chunks=chunks,
            times=times,
            header=dict(recording.header),
            error=recording.error,
            error_t=recording.error_t,
        )
    ]


def _attempt_label(attempt: Any) -> str:
    if attempt.kind == "compaction":
        return f"compaction, line {attempt.line}"
    return f"turn {attempt.turn} step {attempt.step} attempt {attempt.attempt}"


def _read_dsh(path: str, text: str | None) -> list[LoadedStream]:
    """A session log's attempts, one stream each (in the order the log started them)."""
    from chunkscope import DshLogError, read_dsh_session

    del text  # the session-log reader reads (and decompresses) the file itself, bounded per line
    try:
        session = read_dsh_session(path)
    except DshLogError as exc:
        raise InputError(
            f"{path}, line {exc.line}: not a readable session log ({exc}) [{exc.code}]"
        ) from None
    except RecursionError:
        raise InputError(f"{path}: {_MAX_DEPTH_NOTE}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    streams = []
    for attempt in session.attempts:
        result = attempt.result
        timed = result.timings.first_chunk_s is not None and len(result.timings.chunk_times) == len(
            result.chunks
        )
        header = {
            "provider": attempt.provider or "unknown",
            "model": attempt.model or "unknown",
            "adapter": "DeepSeek Harness",
            "session": session.id,
            "call_id": attempt.call_id,
            "attempt": attempt.attempt,
            "final": attempt.final,
        }
        if attempt.started_ms is not None:
            header["started_ms"] = attempt.started_ms
        streams.append(
            LoadedStream(
                path=path,
                kind="dsh",
                chunks=list(result.chunks),
                label=_attempt_label(attempt),
                times=list(result.timings.chunk_times) if timed else None,
                header=header,
            )
        )
    if not streams:
        raise InputError(f"{path}: a session log with no model call in it")
    return streams


# kind -> reader (path, the file's text) -> the streams it holds (a session log holds several)
_READERS: dict[str, Callable[[str, str], list[LoadedStream]]] = {
    "chunks": _read_chunk_log,
    "recording": _read_recording,
    "dsh": _read_dsh,
}

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
"""The first four bytes of a zstd frame: a compressed session log (``session.jsonl.zstd``)."""


def _is_zstd(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == ZSTD_MAGIC
    except OSError:
        return False  # _read_text names the problem


def load_streams(path: str | os.PathLike[str]) -> list[LoadedStream]:
    """Every recorded stream in ``path``, whatever its kind; ``InputError`` if it cannot be read."""
    name = os.fspath(path)
    if os.path.isfile(name) and _is_zstd(name):
        size = os.stat(name).st_size
        if size > MAX_BYTES:
            raise InputError(f"{name}: {size:,} bytes is over the {MAX_BYTES:,}-byte limit")
        return _read_dsh(name, None)
    text = _read_text(name)
    first = next(_lines(text), None)
    if first is None:
        raise InputError(f"{name}: empty file (no chunks, no recording header)")
    kind = detect_kind(_loads(first[1], name, first[0]))
    if kind is None:
        raise InputError(
            f"{name}, line {first[0]}: not a chunkscope recording (header line), a chunk log "
            '(a chunk object, such as {"type": "block-start", ...}) '
            'or a session log ({"type": "session", ...})'
        )
    return _READERS[kind](name, text)


def replay_items(stream: LoadedStream) -> Iterator[Any]:
    """The recorded chunks, then the recorded failure raised as ``LlmError`` (as the stream did)."""
    from chunkscope import LlmError

    yield from stream.chunks
    if stream.error is not None:
        raise LlmError.from_failure(stream.error)


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
