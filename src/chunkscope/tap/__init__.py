"""The tap: a reverse proxy that shows, checks and records the streams of any app, in any language.

``with Tap(upstream=URL, record=DIR) as tap:`` — point a client at
``tap.base_url``; every call appears in ``tap.calls`` (a ``TapCall``: the
request with credentials redacted, the raw reads with their arrival times,
the chunks, the ``StreamResult``, the timing points) and one usage row in
``tap.usage``, while the client gets exactly the bytes the upstream sent.
``WIRES`` is the table of wires the tap parses (by request path).
``TapReplay(DIR)`` shows recorded calls in the same view, parsed again from
their raw reads (``live=True``: at their original timing).

The tap raises nothing of its own (a bad upstream answer is recorded on its call); it warns::

    UserWarning
     └── TapExposedWarning        the tap listens beyond 127.0.0.1 (``host=``): open to whoever reaches it
"""

from __future__ import annotations

from ._call import TapCall, TapTimings
from ._proxy import DEFAULT_MAX_REQUEST_BYTES, Tap, TapExposedWarning
from ._redact import REDACTED, redact_headers
from ._replay import TapReplay
from ._wires import WIRES, Wire, detect_wire

__all__ = [
    "DEFAULT_MAX_REQUEST_BYTES",
    "REDACTED",
    "WIRES",
    "Tap",
    "TapCall",
    "TapExposedWarning",
    "TapReplay",
    "TapTimings",
    "Wire",
    "detect_wire",
    "redact_headers",
]
