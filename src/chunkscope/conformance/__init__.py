"""The conformance kit: run any adapter through the local provider's scenario matrix.

``conformance(factory, wire=...)`` (any wire of the wire table, ``chunkscope._wires``) returns a
``ConformanceReport`` (one row per scenario, plus an abort and a refusal
case; one cell per check). ``chunkscope conformance module:factory`` and the
pytest plugin (``pytest --chunkscope-conformance=module:factory``) sit on top.
Imports protocol, adapters and provider — lazily, so that the ``chunkscope``
command and the pytest plugin cost nothing until used; pandas only inside
``to_frame()``.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from chunkscope._wires import DEFAULT_WIRE

from ._errors import ConformanceError

__all__ = [
    "ABORT_CASE",
    "API_KEY",
    "CHECKS",
    "PROMPT",
    "REFUSAL_CASE",
    "CaseResult",
    "CheckResult",
    "ConformanceError",
    "ConformanceReport",
    "case_names",
    "conformance",
    "grid_html",
    "load_factory",
    "run_conformance",
]

_LAZY = {
    "CHECKS": "._report",
    "CaseResult": "._report",
    "CheckResult": "._report",
    "ConformanceReport": "._report",
    "grid_html": "._report",
    "ABORT_CASE": "._run",
    "API_KEY": "._run",
    "PROMPT": "._run",
    "REFUSAL_CASE": "._run",
    "case_names": "._run",
    "conformance": "._run",
    "run_conformance": "._run",
    "load_factory": "._target",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from ._report import CHECKS, CaseResult, CheckResult, ConformanceReport, grid_html
    from ._run import ABORT_CASE, API_KEY, PROMPT, REFUSAL_CASE, case_names, conformance, run_conformance
    from ._target import load_factory


class _CallableModule(types.ModuleType):
    """This package, callable as ``conformance()``.

    ``cs.conformance`` names both this package and the function: importing the
    package (``from chunkscope.conformance import ...``) makes Python set the
    package as the ``chunkscope.conformance`` attribute, so calling it must
    still run the kit.
    """

    def __call__(
        self,
        factory: Callable[[str, str], Any],
        *,
        wire: str = DEFAULT_WIRE,  # a name of the wire table, chunkscope._wires.WIRE_FACTS
        scenarios: Iterable[str] | None = None,
        timeout: float = 40.0,
    ) -> ConformanceReport:
        from ._run import conformance

        return conformance(factory, wire=wire, scenarios=scenarios, timeout=timeout)


sys.modules[__name__].__class__ = _CallableModule
