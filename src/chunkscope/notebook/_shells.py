"""Which IPython shells already carry chunkscope's printers.

A shell is remembered by a mark on its display formatter, the object the
printers are registered with: the mark lives and dies with it. An ``id()``
would not do: CPython reuses the id of a dead object, so a fresh shell could
be taken for one that was already set up and never get the printers.
"""

from __future__ import annotations

from typing import Any

__all__ = ["first_registration"]

_MARK = "_chunkscope_registered"


def first_registration(ip: Any, what: str) -> bool:
    """True the first time ``what`` is registered with ``ip``'s formatters; False after (and marks it)."""
    formatter = ip.display_formatter
    done: set[str] | None = getattr(formatter, _MARK, None)
    if done is None:
        done = set()
        setattr(formatter, _MARK, done)
    if what in done:
        return False
    done.add(what)
    return True
