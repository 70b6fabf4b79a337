"""Chunk logs as JSONL: one compact camelCase JSON object per line, UTF-8.

The same form the TypeScript harness writes, so logs move both ways unchanged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from ._chunks import AnyChunk, ChunkLike, chunk_to_dict, describe_invalid, parse_chunk

__all__ = ["ChunkFileError", "read_chunks", "write_chunks"]


class ChunkFileError(ValueError):
    """A line of a chunk file that is not a chunk; ``path`` and ``line`` (1-based) say where."""

    def __init__(self, message: str, path: str, line: int) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


def read_chunks(path: str | os.PathLike[str]) -> Iterator[AnyChunk]:
    """Yield the chunks of a JSONL file lazily, as typed models; blank lines are skipped.

    A malformed line raises ``ChunkFileError`` when it is reached; the chunks
    before it have been yielded by then.
    """
    name = os.fspath(path)
    with open(name, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj: Any = json.loads(line, parse_constant=_refuse_constant)
            except json.JSONDecodeError as exc:
                raise ChunkFileError(
                    f"{name}, line {number}: not valid JSON ({exc.msg} at column {exc.colno})", name, number
                ) from exc
            except ValueError as exc:  # NaN / Infinity: Python reads them, JSON (and JSON.parse) does not
                raise ChunkFileError(f"{name}, line {number}: not valid JSON ({exc})", name, number) from exc
            try:
                chunk = parse_chunk(obj)
            except ValidationError as exc:
                raise ChunkFileError(
                    f"{name}, line {number}: not a chunk: {describe_invalid(obj, exc)}", name, number
                ) from exc
            yield chunk


def write_chunks(path: str | os.PathLike[str], chunks: Iterable[ChunkLike]) -> int:
    """Write ``chunks`` (models or seed-style dicts) to ``path``, one compact JSON object per line.

    Dicts are validated first (``pydantic.ValidationError`` for one that is not
    a chunk); a NaN or infinite number, which JSON cannot carry, is a
    ``ValueError``. Non-ASCII text is written as is, in UTF-8. Returns the
    number of chunks written.
    """
    count = 0
    with open(os.fspath(path), "w", encoding="utf-8", newline="\n") as handle:
        for chunk in chunks:
            try:
                line = json.dumps(
                    chunk_to_dict(chunk), ensure_ascii=False, separators=(",", ":"), allow_nan=False
                )
            except ValueError as exc:
                if isinstance(exc, ValidationError):
                    raise
                raise ValueError(
                    f"chunk {count} holds a NaN or infinite number (in its replayState), which JSON cannot "
                    "carry; replace it before writing"
                ) from exc
            handle.write(line)
            handle.write("\n")
            count += 1
    return count


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")
