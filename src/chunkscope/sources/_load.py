"""``load_streams(path)``: every recorded stream in a file, whatever its kind — the one entry point.

``chunkscope check``, ``show`` and ``usage`` read through it. A file is
opened once and read once, front to back, as a stream: a pipe, a FIFO or a
shell's ``<(…)`` works as a file does. Its kind is told by its first bytes
(:mod:`._detect`); the bytes already looked at are handed back in front of
the rest, so each kind's reader sees the whole file and counts its lines.

Every input is bounded before any reader keeps it: more than ``max_bytes``
(a regular file by its size, before reading; a pipe as it is read; a zstd
log by its decompressed size), a binary file, text that is not UTF-8, JSON
nested too deep or a line that is not JSON is an
:class:`UnreadableSourceError` (or the kind's own ``SourceError``) — one
sentence naming the file (and line).

A line of a chunk log that is JSON but not a chunk is *not* an error here: it
is kept as it came, and the rule checker reports it as a ``schema`` violation
at its position, as it would in a live stream.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from chunkscope.protocol import LlmError, LlmFailure

from ._detect import detect_kind, is_sqlite, is_zstd
from ._errors import DshLogError, UnreadableSourceError
from ._json import MAX_LINE_BYTES, JsonProblem, json_guard, strict_loads

__all__ = ["MAX_BYTES", "LoadedStream", "load_streams"]

MAX_BYTES = 256 * 1024 * 1024
"""The most a file may hold (256 MiB, decompressed for zstd): a bigger one is refused, not half-read."""


@dataclass
class LoadedStream:
    """One recorded stream: its chunks as they came (dicts), times, metadata and recorded failure.

    A file holds one or more (``load_streams``); ``name`` says which, for people.

    ``times`` are seconds since the request began (a recording), else None (a chunk log
    has no clock). ``error`` is the failure a recording's stream raised, at ``error_t``.
    ``source`` is the parsed file the stream came from when its kind has one (the
    ``DshSession`` of a session log), so nothing needs to read the file twice.
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
    source: Any = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """The file, and the stream's label when it has one."""
        return f"{self.path} [{self.label}]" if self.label else self.path

    def replay(self) -> Iterator[Any]:
        """The recorded chunks, then the recorded failure raised as ``LlmError`` (as the stream did):
        what ``collect`` or a timeline consumes to see the stream as it happened."""
        yield from self.chunks
        if self.error is not None:
            raise LlmError.from_failure(self.error)


class _Counted(io.RawIOBase):
    """The bytes looked at first, then the rest of the file: bounded in total, NUL refused on request."""

    def __init__(self, source: IO[bytes], name: str, limit: int) -> None:
        self._source = source
        self._name = name
        self._limit = limit
        self._pending = b""
        self._total = 0
        self.refuse_nul = False

    def readable(self) -> bool:
        return True

    def rewind(self, prefix: bytes) -> None:
        """Hand ``prefix`` (the bytes read so far) back in front of the rest."""
        self._pending = prefix + self._pending

    def readinto(self, buffer: Any) -> int:
        if self._pending:
            data, self._pending = self._pending[: len(buffer)], self._pending[len(buffer) :]
        else:
            data = self._source.read(len(buffer))
            self._total += len(data)
            if self._total > self._limit:
                raise UnreadableSourceError(f"{self._name}: over the {self._limit:,}-byte limit", self._name)
        if self.refuse_nul and b"\x00" in data:
            raise UnreadableSourceError(
                f"{self._name}: a binary file (it holds NUL bytes), not JSON lines", self._name
            )
        buffer[: len(data)] = data
        return len(data)


def load_streams(path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES) -> list[LoadedStream]:
    """Every recorded stream in ``path``, whatever its kind; a ``SourceError`` if it cannot be read.

    The file is read once, as a stream (pipes and FIFOs work), and at most ``max_bytes``
    of it (decompressed) are read.
    """
    name = os.fspath(path)
    try:
        mode = os.stat(name)
        if stat.S_ISDIR(mode.st_mode):
            raise UnreadableSourceError(f"{name}: is a directory, not a file", name)
        if stat.S_ISREG(mode.st_mode) and mode.st_size > max_bytes:
            raise UnreadableSourceError(
                f"{name}: {mode.st_size:,} bytes is over the {max_bytes:,}-byte limit", name
            )
        with open(name, "rb", buffering=0) as raw:
            return _load(name, _Counted(raw, name, max_bytes), max_bytes)
    except OSError as exc:
        raise UnreadableSourceError(f"{name}: cannot read it ({exc.strerror or exc})", name) from None


def _load(name: str, counted: _Counted, max_bytes: int) -> list[LoadedStream]:
    looked = _look(counted)
    counted.rewind(looked)  # the bytes looked at come first again: each reader sees the whole file
    if is_zstd(looked):
        return _read_dsh(name, io.BufferedReader(counted, buffer_size=_BLOCK), max_bytes)
    if is_sqlite(looked):
        raise UnreadableSourceError(
            f"{name}: a SQLite database (an llm logs.db?), not a stream of chunks: "
            "chunkscope usage and cs.read_llm_logs read it",
            name,
        )
    if b"\x00" in looked:
        raise UnreadableSourceError(f"{name}: a binary file (it holds NUL bytes), not JSON lines", name)
    counted.refuse_nul = True
    first = _first_line(io.BytesIO(looked), name)
    if first is None:
        raise UnreadableSourceError(f"{name}: empty file (no chunks, no recording header)", name)
    number, value = first
    kind = detect_kind(value)
    if kind is None:
        raise UnreadableSourceError(
            f"{name}, line {number}: not a chunkscope recording (header line), a chunk log "
            '(a chunk object, such as {"type": "block-start", ...}) '
            'or a session log ({"type": "session", ...})',
            name,
            number,
        )
    return _READERS[kind](name, io.BufferedReader(counted, buffer_size=_BLOCK))


_BLOCK = 1 << 16


def _look(counted: _Counted) -> bytes:
    """The file's first bytes: enough to hold its first non-blank line whole (or all of it)."""
    data = bytearray()
    start = -1  # where the first non-blank byte is, once seen
    while True:
        block = counted.read(_BLOCK)
        if not block:
            return bytes(data)
        offset = len(data)
        data += block
        if _is_binary(data):
            return bytes(data)
        if start < 0:
            stripped = block.lstrip()
            if stripped:
                start = offset + len(block) - len(stripped)
        if start >= 0 and (data.find(b"\n", max(start, offset)) >= 0 or len(data) - start > MAX_LINE_BYTES):
            return bytes(data)


def _is_binary(data: bytearray) -> bool:
    """Whether ``data`` opens a file that has no lines to look for (its reader starts over)."""
    if len(data) >= 4 and is_zstd(bytes(data[:4])):
        return True  # a zstd log: its reader decompresses from the start
    return len(data) >= 16 and is_sqlite(bytes(data[:16]))  # a SQLite file


def _first_line(handle: IO[bytes], name: str) -> tuple[int, Any] | None:
    """The first non-blank line's number and value (None: the file holds no such line)."""
    number = 0
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        number += 1
        if raw.strip():
            return number, _parse_line(raw, name, number)
    return None


def _parse_line(raw: bytes, name: str, number: int) -> Any:
    """One line of a chunk log (or the first line of any file), read by the strict JSON reader."""
    if len(raw) > MAX_LINE_BYTES:
        raise UnreadableSourceError(
            f"{name}, line {number}: longer than {MAX_LINE_BYTES:,} bytes; not read", name, number
        )
    try:
        text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableSourceError(
            f"{name}, line {number}: not UTF-8 text (byte {exc.start + 1} of the line)", name, number
        ) from None

    def refused(problem: JsonProblem) -> UnreadableSourceError:
        if problem.kind == "syntax":
            detail = f"not valid JSON ({problem.detail} at column {problem.column})"
        elif problem.kind == "depth":
            detail = "JSON nested too deeply"
        else:
            detail = f"not valid JSON ({problem.detail})"
        return UnreadableSourceError(f"{name}, line {number}: {detail}", name, number)

    with json_guard(refused):
        return strict_loads(text)


def _read_chunk_log(name: str, handle: IO[bytes]) -> list[LoadedStream]:
    chunks = []
    number = 0
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        number += 1
        if raw.strip():
            chunks.append(_parse_line(raw, name, number))
    return [LoadedStream(path=name, kind="chunks", chunks=chunks)]


def _read_recording(name: str, handle: IO[bytes]) -> list[LoadedStream]:
    from .recording import Recording  # the recording format's own reader, so the two cannot disagree

    recording = Recording.read_stream(handle, name)
    chunks: list[Any] = []
    times: list[float] = []
    for t, chunk in recording.entries:
        chunks.append(chunk if isinstance(chunk, dict) else chunk.to_dict())
        times.append(t)
    return [
        LoadedStream(
            path=name,
            kind="recording",
            chunks=chunks,
            times=times,
            header=dict(recording.header),
            error=recording.error,
            error_t=recording.error_t,
            source=recording,
        )
    ]


def _attempt_label(attempt: Any) -> str:
    if attempt.kind == "compaction":
        return f"compaction, line {attempt.line}"
    return f"turn {attempt.turn} step {attempt.step} attempt {attempt.attempt}"


def _read_dsh(name: str, handle: IO[bytes], max_bytes: int = MAX_BYTES) -> list[LoadedStream]:
    """A session log's attempts, one stream each (in the order the log started them)."""
    from .dsh import read_dsh_stream

    try:
        session = read_dsh_stream(handle, name, max_bytes=max_bytes)
    except DshLogError as exc:
        raise DshLogError(
            f"{name}, line {exc.line}: not a readable session log ({exc}) [{exc.code}]",
            name,
            exc.line,
            exc.code,
            exc.session,
        ) from None
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
                path=name,
                kind="dsh",
                chunks=list(result.chunks),
                label=_attempt_label(attempt),
                times=list(result.timings.chunk_times) if timed else None,
                header=header,
                source=session,
            )
        )
    if not streams:
        raise UnreadableSourceError(f"{name}: a session log with no model call in it", name)
    return streams


# kind -> reader (name, the file's bytes from its start) -> the streams it holds (a session log: several)
_READERS: dict[str, Callable[[str, IO[bytes]], list[LoadedStream]]] = {
    "chunks": _read_chunk_log,
    "recording": _read_recording,
    "dsh": _read_dsh,
}
