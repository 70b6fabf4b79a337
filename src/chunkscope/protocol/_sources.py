"""Iterating a chunk source: what ``validated`` and ``collect`` are given, async or sync.

Both consumers take an async iterable (an adapter's stream) or a plain
iterable (a list, a generator, ``read_chunks``). A sync source is iterated
directly rather than wrapped in an async generator, which would cost a hop
per chunk on the hot path.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable
from typing import Any

__all__ = ["close_source", "open_source"]


def open_source(source: AsyncIterable[Any] | Iterable[Any]) -> tuple[Any, bool]:
    """The iterator of ``source`` and whether it is async (advance it with ``__anext__``, else ``next``)."""
    if isinstance(source, AsyncIterable):
        return source.__aiter__(), True
    return iter(source), False


async def close_source(iterator: Any) -> None:
    """Close an iterator left before its end: ``aclose()`` an async generator, ``close()`` a sync one."""
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()
        return
    close = getattr(iterator, "close", None)
    if close is not None:
        close()
