"""The notebook layer: the live ``Timeline`` widget, ``show``, and inline reprs.

One folder per widget, each its Python class (``_widget``), its static HTML
(``_static_html``, what a saved notebook shows) and its ES module and CSS
(anywidget's shape): ``timeline/``, ``usage_summary/``, ``conformance_grid/``.
What the widgets share (the static copy beside the view) is ``_base``.

``Timeline`` and ``show`` load ipywidgets/anywidget on first use; the HTML and
plain-text reprs of ``LlmError``, violation lists and ``StreamResult`` need
only the protocol layer and are registered with IPython (``enable()``, ``enable_grid()``) as
soon as this package is imported — the first use of a notebook name (``cs.show``,
``cs.Timeline``) or ``%load_ext chunkscope``; ``import chunkscope`` alone registers nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from chunkscope._extras import needs_extra

from ._reprs import (
    ViolationList,
    enable,
    error_html,
    error_text,
    result_html,
    violations_html,
)
from .conformance_grid._display import enable_grid
from .timeline._state import state_from_result
from .timeline._static_html import render_fragment, render_page
from .usage_summary._static_html import usage_html, usage_state

__all__ = [
    "Timeline",
    "show",
    "FRAME_INTERVAL",
    "ConformanceGrid",
    "UsageSummary",
    "TapTable",
    "CacheView",
    "cache_html",
    "usage_html",
    "usage_state",
    "ViolationList",
    "enable",
    "enable_grid",
    "error_html",
    "error_text",
    "violations_html",
    "result_html",
    "render_fragment",
    "render_page",
    "state_from_result",
]

# name -> the private module that defines it; widgets load ipywidgets/anywidget on first use
_LAZY = {
    "Timeline": ".timeline._widget",
    "show": ".timeline._widget",
    "FRAME_INTERVAL": ".timeline._widget",
    "ConformanceGrid": ".conformance_grid._widget",
    "UsageSummary": ".usage_summary._widget",
    "TapTable": ".tap_table._widget",
    "CacheView": ".cache_report._view",
    "cache_html": ".cache_report._view",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        with needs_extra(f"chunkscope.notebook.{name}"):
            value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'chunkscope.notebook' has no attribute {name!r}")


if TYPE_CHECKING:  # pragma: no cover
    from .cache_report._view import CacheView, cache_html
    from .conformance_grid._widget import ConformanceGrid
    from .tap_table._widget import TapTable
    from .timeline._widget import FRAME_INTERVAL, Timeline, show
    from .usage_summary._widget import UsageSummary

enable()
enable_grid()  # a displayed ConformanceReport becomes the interactive grid
