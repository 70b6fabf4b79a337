"""What ``cs.show(path)`` draws: each stream a stored file holds, read through ``load_streams``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from chunkscope.protocol import LlmError
from chunkscope.sources import LoadedStream, load_streams

__all__ = ["replayed_streams"]


def _replayed(stream: LoadedStream) -> Iterator[Any]:
    """The recorded chunks, then the recorded failure raised as the stream raised it."""
    yield from stream.chunks
    if stream.error is not None:
        raise LlmError.from_failure(stream.error)


def replayed_streams(path: str | os.PathLike[str]) -> list[tuple[str, Iterator[Any]]]:
    """``(name, items)`` per stream in ``path``; a file that cannot be read raises its ``SourceError``
    here, before anything is displayed."""
    return [(stream.name, _replayed(stream)) for stream in load_streams(path)]
