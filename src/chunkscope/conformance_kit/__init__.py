"""The conformance kit: run any adapter through the local provider's scenario matrix.

Named ``conformance_kit`` so that ``cs.conformance`` is only ever the function
(a subpackage named ``conformance`` would be bound over it as the package's
attribute the first time it is imported).
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
from typing import TYPE_CHECKING, Any

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
    "load_factory",
    "run_conformance",
]

_LAZY = {
    "CHECKS": "._report",
    "CaseResult": "._report",
    "CheckResult": "._report",
    "ConformanceReport": "._report",
    "ABORT_CASE": "._run",
    "API_KEY": "._run",
    "PROMPT": "._run",
    "REFUSAL_CASE": "._run",
    "case_names": "._run",
    "conformance": "._watch",
    "run_conformance": "._watch",
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
    from ._report import CHECKS, CaseResult, CheckResult, ConformanceReport
    from ._run import ABORT_CASE, API_KEY, PROMPT, REFUSAL_CASE, case_names
    from ._target import load_factory
    from ._watch import conformance, run_conformance
