"""Chunk logs as JSONL: one compact camelCase JSON object per line, UTF-8.

The same form the TypeScript harness writes, so logs move both ways unchanged.
Reading is line by line from bytes, so a bad line (invalid UTF-8, JSON that is
not JSON or is nested too deeply, a line past the size bound) is reported with
its line and column after every chunk before it was yielded. Writing
serializes a whole line before it touches the file, so a failure never leaves
half a line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from ._chunks import AnyChunk, ChunkLike, chunk_to_dict, describe_invalid, parse_chunk

__all__ = ["ChunkFileError", "MAX_LINE_BYTES", "read_chunks", "write_chunks"]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line ``read_chunks`` (and a recording replay) reads: 64 MiB."""


class ChunkFileError(ValueError):
    """A line of a chunk file that is not a chunk; ``path``, ``line`` (1-based) and ``column`` say where.

    ``column`` is the 1-based character in the line where the problem starts,
    when one is known (invalid UTF-8, a JSON syntax error), else None.
    """

    def __init__(self, message: str, path: str, line: int, column: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.column = column

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.path, self.line, self.column))


def json_lines(
    path: str | os.PathLike[str],
    *,
    error: type[ChunkFileError] = ChunkFileError,
    refuse_constants: bool = True,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[tuple[int, Any]]:
    """``(line number, JSON value)`` for each non-blank line of a UTF-8 JSONL file (internal).

    Raises ``error`` (a ``ChunkFileError``) naming the path, line and, where
    known, column: invalid UTF-8, invalid JSON, NaN/Infinity when
    ``refuse_constants``, nesting deeper than the parser's recursion bound, a
    line longer than ``max_line_bytes``. A UTF-8 byte-order mark on line 1 is skipped.
    """
    name = os.fspath(path)
    loads: Callable[[str], Any] = (
        (lambda text: json.loads(text, parse_constant=_refuse_constant)) if refuse_constants else json.loads
    )
    with open(name, "rb") as handle:
        number = 0
        while True:
            raw = handle.readline(max_line_bytes + 1)
            if not raw:
                return
            number += 1
            if len(raw) > max_line_bytes:
                raise error(
                    f"{name}, line {number}: longer than {max_line_bytes:,} bytes; not read", name, number
                )
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                column = len(raw[: exc.start].decode("utf-8", errors="replace")) + 1
                raise error(
                    f"{name}, line {number}, column {column}: not valid UTF-8 "
                    f"(byte 0x{raw[exc.start]:02x}: {exc.reason})",
                    name,
                    number,
                    column,
                ) from None  # the decoder's message names a byte offset in no file the user has
            # Without its line break, so that an error's column counts in this line (json
            # would place an error at the very end on a second line, column 1).
            text = text.rstrip("\r\n")
            if not text.strip():
                continue
            try:
                value = loads(text)
            except json.JSONDecodeError as exc:
                raise error(
                    f"{name}, line {number}, column {exc.colno}: not valid JSON ({exc.msg})",
                    name,
                    number,
                    exc.colno,
                ) from exc
            except RecursionError:
                raise error(f"{name}, line {number}: JSON nested too deeply to read", name, number) from None
            except ValueError as exc:  # NaN / Infinity: Python reads them, JSON (and JSON.parse) does not
                raise error(f"{name}, line {number}: not valid JSON ({exc})", name, number) from exc
            yield number, value


def read_chunks(path: str | os.PathLike[str], *, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[AnyChunk]:
    """Yield the chunks of a JSONL file lazily, as typed models; blank lines are skipped.

    A bad line raises ``ChunkFileError`` (path, line, column where known) when
    it is reached — invalid UTF-8, invalid or too deeply nested JSON, a line
    over ``max_line_bytes`` (default ``MAX_LINE_BYTES``), or JSON that is not a
    chunk; every chunk before it has been yielded by then.
    """
    name = os.fspath(path)
    for number, obj in json_lines(name, max_line_bytes=max_line_bytes):
        try:
            chunk = parse_chunk(obj)
        except ValidationError as exc:
            raise ChunkFileError(
                f"{name}, line {number}: not a chunk: {describe_invalid(obj, exc)}", name, number
            ) from exc
        yield chunk


def json_line(obj: Any, *, allow_nan: bool = False, default: Callable[[Any], Any] | None = None) -> bytes:
    """``obj`` as one compact JSON line in UTF-8, newline included (internal).

    Non-ASCII text is written as is; a string holding a lone surrogate (which
    UTF-8 cannot carry) makes the whole line ``\\u``-escaped instead, so the
    file stays valid UTF-8 and reads back to the same string. Raises before
    anything is written: ``ValueError`` for NaN/Infinity unless ``allow_nan``,
    ``RecursionError`` for nesting too deep to serialize.
    """
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=allow_nan, default=default)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=allow_nan, default=default)
        return text.encode("ascii") + b"\n"


def write_chunks(path: str | os.PathLike[str], chunks: Iterable[ChunkLike]) -> int:
    """Write ``chunks`` (models or camelCase dicts) to ``path``, one compact JSON object per line.

    Dicts are validated first (``pydantic.ValidationError`` for one that is not
    a chunk); a NaN or infinite number, which JSON cannot carry, is a
    ``ValueError``. Non-ASCII text is written as is, in UTF-8; a line whose
    text holds a lone surrogate is ``\\u``-escaped, so the file stays valid
    UTF-8 and reads back identically. Each line is serialized whole before it
    is written: on an error, the file holds every earlier chunk and no part of
    the bad one. Returns the number of chunks written.
    """
    count = 0
    with open(os.fspath(path), "wb") as handle:
        for chunk in chunks:
            try:
                line = json_line(chunk_to_dict(chunk))
            except ValueError as exc:
                if isinstance(exc, ValidationError):
                    raise
                raise ValueError(
                    f"chunk {count} holds a NaN or infinite number (in its replayState), which JSON cannot "
                    "carry; replace it before writing"
                ) from exc
            handle.write(line)
            count += 1
    return count


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")
