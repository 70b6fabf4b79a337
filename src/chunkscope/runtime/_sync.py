"""Running a coroutine to completion from synchronous code, even inside a running loop.

A script has no running loop: ``asyncio.run``. A Jupyter kernel already runs
one, where ``asyncio.run`` refuses; there nest-asyncio is applied to *that*
loop, the first time a synchronous call needs it, and never at import, so a
program that never calls ``generate_sync`` / ``run_sync`` in a running loop
keeps an unpatched asyncio.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

_T = TypeVar("_T")


def run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion and return its result (exceptions propagate)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    _allow_nesting(loop)
    return loop.run_until_complete(coro)


def _allow_nesting(loop: asyncio.AbstractEventLoop) -> None:
    if getattr(loop, "_nest_patched", False):  # nest-asyncio marks the loops it patched
        return
    try:
        nest_asyncio = importlib.import_module("nest_asyncio")
    except ImportError as exc:  # pragma: no cover - the notebook extra installs it
        raise RuntimeError(
            "a synchronous call inside a running event loop (e.g. Jupyter) needs nest-asyncio: "
            "pip install 'chunkscope[notebook]', or use the async API with await"
        ) from exc
    nest_asyncio.apply(loop)
