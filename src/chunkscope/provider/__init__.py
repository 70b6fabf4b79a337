"""The local provider: a real loopback HTTP server with scripted replies and faults.

``LocalProvider`` serves every wire of the wire table (``WIRES``, from
``chunkscope._wires``) on 127.0.0.1; the request's model name picks one of
``SCENARIOS`` (documented as one table in ``docs/scenarios.md``). It imports
nothing from ``chunkscope.adapters``: it is the independent judge of them.

Its one exception never leaves the server::

    Exception
     └── ConnectionDropped   raised inside a response body so the server cuts the connection
                             (the ``fault-drop`` scenarios, shutdown)
"""

from __future__ import annotations

from ._recorder import ReceivedRequest, RequestLog
from ._scenarios import DIALECTS, SCENARIOS, WIRES, Expected, Scenario, get_scenario
from ._server import LocalProvider

__all__ = [
    "LocalProvider",
    "SCENARIOS",
    "Scenario",
    "Expected",
    "get_scenario",
    "DIALECTS",
    "WIRES",
    "ReceivedRequest",
    "RequestLog",
]
