"""The kit's own error (kept apart so that importing the command costs nothing)."""

from __future__ import annotations

__all__ = ["ConformanceError"]


class ConformanceError(Exception):
    """The kit could not run at all (a factory that fails, an unknown wire or case, a bad target)."""
