"""The notebook layer: the live ``Timeline`` widget, ``show``, and inline reprs.

``Timeline`` and ``show`` load ipywidgets/anywidget on first use; the HTML and
plain-text reprs of ``LlmError``, violation lists and ``StreamResult`` need
only the protocol layer and are registered with IPython (``enable()``) as
soon as this package is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._reprs import (
    ViolationList,
    enable,
    error_html,
    error_text,
    result_html,
    violations_html,
    violations_text,
)
from ._state import state_from_result
from ._static_html import render_fragment, render_page
from ._usage_state import usage_html, usage_state

__all__ = [
    "Timeline",
    "show",
    "FRAME_INTERVAL",
    "UsageSummary",
    "usage_html",
    "usage_state",
    "ViolationList",
    "enable",
    "error_html",
    "error_text",
    "violations_html",
    "violations_text",
    "result_html",
    "render_fragment",
    "render_page",
    "state_from_result",
]

_LAZY = {
    "Timeline": "._timeline",
    "show": "._timeline",
    "FRAME_INTERVAL": "._timeline",
    "UsageSummary": "._usage",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'chunkscope.notebook' has no attribute {name!r}")


if TYPE_CHECKING:  # pragma: no cover
    from ._timeline import FRAME_INTERVAL, Timeline, show
    from ._usage import UsageSummary

enable()
