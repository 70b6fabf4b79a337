"""Show a ``ConformanceReport`` as the interactive grid in a kernel, without importing widgets early.

The conformance layer knows nothing of notebooks: this registers, by name, an
IPython display hook for its report type. The hook loads the widget module
only when a report is displayed.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["enable_grid"]

_ENABLED: set[int] = set()


def _display(report: Any) -> bool:
    from ._conformance_grid import display_report

    display_report(report)
    return True


def enable_grid(ip: Any = None) -> bool:
    """Register the grid as the display of ``ConformanceReport``; False when not under IPython."""
    if ip is None:
        if "IPython" not in sys.modules:
            return False
        from IPython.core.getipython import get_ipython

        ip = get_ipython()  # type: ignore[no-untyped-call,unused-ignore]
    if ip is None:
        return False
    if id(ip) not in _ENABLED:
        ip.display_formatter.ipython_display_formatter.for_type_by_name(
            "chunkscope.conformance_kit._report", "ConformanceReport", _display
        )
        _ENABLED.add(id(ip))
    return True
