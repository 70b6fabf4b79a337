"""The tap's view of the wire table: which request path speaks which wire, and how it is read.

This is the tap's one door into the adapters layer, and it goes through that layer's public
wire table (``chunkscope.adapters.wires``): the rows are the adapters' own ``Wire`` records, and
each call is read by ``Wire.reader`` — the same ``WireReader`` an adapter streams through, so
the tap never reads a wire its own way. A new wire there is a new wire here.
"""

from __future__ import annotations

from chunkscope.adapters.wires import WIRES as _BY_NAME
from chunkscope.adapters.wires import (
    Translator,
    Wire,
    WireReader,
    detect_wire,
    transport_error,
    unparsed_reader,
    wire_named,
)
from chunkscope.protocol import LlmError

__all__ = [
    "WIRES",
    "Translator",
    "Wire",
    "WireReader",
    "detect_wire",
    "stream_failure",
    "unparsed_reader",
    "wire_named",
]

WIRES: tuple[Wire, ...] = tuple(_BY_NAME.values())
"""Every wire the tap parses, tried in order against the request path."""


def stream_failure(exc: Exception, label: str, secrets: tuple[str, ...]) -> LlmError:
    """An httpx/socket failure of the upstream as ``LlmError`` (TRANSPORT, TIMEOUT, …)."""
    return transport_error(exc, label=label, secrets=secrets)
