"""Show a ``ConformanceReport`` as the grid in a kernel, without importing widgets early.

The conformance layer knows nothing of notebooks: this registers, by name, an
IPython display hook for its report type (the interactive grid) and its
``text/html`` (the static grid, for any front end that asks a formatter for
HTML). The hooks load their modules only when a report is displayed.
"""

from __future__ import annotations

import sys
from typing import Any

from .._shells import first_registration

__all__ = ["enable_grid"]


def _display(report: Any) -> bool:
    from ._widget import display_report

    display_report(report)
    return True


def _html(report: Any) -> str:
    from ._static_html import grid_html

    return grid_html(report)


def enable_grid(ip: Any = None) -> bool:
    """Register the grid as the display of ``ConformanceReport``; False when not under IPython."""
    if ip is None:
        if "IPython" not in sys.modules:
            return False
        from IPython.core.getipython import get_ipython

        ip = get_ipython()  # type: ignore[no-untyped-call,unused-ignore]
    if ip is None:
        return False
    if first_registration(ip, "conformance grid"):
        # by both names the class goes by: its public path once `cs.ConformanceReport` resolved
        for module in ("chunkscope", "chunkscope.conformance_kit._report"):
            formatters = ip.display_formatter
            formatters.ipython_display_formatter.for_type_by_name(module, "ConformanceReport", _display)
            formatters.formatters["text/html"].for_type_by_name(module, "ConformanceReport", _html)
    return True
