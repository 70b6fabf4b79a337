"""Chunk logs as JSONL: one compact camelCase JSON object per line, UTF-8.

The same form the TypeScript harness writes, so logs move both ways unchanged.
Reading is line by line from bytes, so a bad line (invalid UTF-8, JSON that is
not JSON or is nested too deeply, a line past the size bound) is reported with
its line and column after every chunk before it was yielded. Writing
serializes a whole line before it touches the file, so a failure never leaves
half a line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import IO

from pydantic import ValidationError

from chunkscope.protocol import AnyChunk, ChunkLike, chunk_to_dict, parse_chunk
from chunkscope.protocol.shared import describe_invalid

from ._errors import ChunkFileError
from ._json import MAX_LINE_BYTES, json_line, json_lines

__all__ = ["ChunkFileError", "MAX_LINE_BYTES", "read_chunks", "read_chunk_stream", "write_chunks"]


def read_chunks(path: str | os.PathLike[str], *, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[AnyChunk]:
    """Yield the chunks of a JSONL file lazily, as typed models; blank lines are skipped.

    A bad line raises ``ChunkFileError`` (path, line, column where known) when
    it is reached — invalid UTF-8, invalid or too deeply nested JSON, a line
    over ``max_line_bytes`` (default ``MAX_LINE_BYTES``), or JSON that is not a
    chunk; every chunk before it has been yielded by then.
    """
    name = os.fspath(path)
    with open(name, "rb") as handle:
        yield from read_chunk_stream(handle, name, max_line_bytes=max_line_bytes)


def read_chunk_stream(
    handle: IO[bytes], name: str, *, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[AnyChunk]:
    """``read_chunks`` over an open binary stream (read once, front to back), named ``name`` in errors."""
    for number, obj in json_lines(handle, name=name, max_line_bytes=max_line_bytes):
        try:
            chunk = parse_chunk(obj)
        except ValidationError as exc:
            raise ChunkFileError(
                f"{name}, line {number}: not a chunk: {describe_invalid(obj, exc)}", name, number
            ) from exc
        yield chunk


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
