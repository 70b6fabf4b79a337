"""What ``cs.show(path)`` draws: each stream a stored file holds, read through ``load_streams``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from chunkscope.sources import load_streams

__all__ = ["replayed_streams"]


def replayed_streams(path: str | os.PathLike[str]) -> list[tuple[str, Iterator[Any]]]:
    """``(name, items)`` per stream in ``path`` (``LoadedStream.replay``: its chunks, then its recorded
    failure raised); a file that cannot be read raises its ``SourceError`` here, before anything is
    displayed."""
    return [(stream.name, stream.replay()) for stream in load_streams(path)]
