"""The kit's own errors (kept apart so that importing the command costs nothing).

::

    Exception
     ├── ConformanceError     the kit could not run at all: a factory that fails, an unknown wire
     │                        or case, a bad target (the command exits 2)
     └── ConformanceFailure   (pytest_plugin) a case of the pytest plugin whose checks failed;
                              its message is the readable report
"""

from __future__ import annotations

__all__ = ["ConformanceError"]


class ConformanceError(Exception):
    """The kit could not run at all (a factory that fails, an unknown wire or case, a bad target)."""
