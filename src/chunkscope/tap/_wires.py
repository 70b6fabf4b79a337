"""The tap's view of the wire table: which request path speaks which wire, and its parsers.

This is the tap's one door into the adapters layer: the SSE decoder, each
wire's pure translator and the failure table are imported here and nowhere
else in ``chunkscope.tap``, so a reorganisation of the adapters touches one
module. Its rows come from the adapters' wire table (``chunkscope.adapters.wires``): a new
wire there is a new wire here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from chunkscope.adapters._core.framing import SseDecoder
from chunkscope.adapters._failures import error_from_response, transport_error
from chunkscope.adapters.wires import WIRES as ADAPTER_WIRES
from chunkscope.adapters.wires import Wire as AdapterWire
from chunkscope.protocol import AnyChunk, FinishReason, LlmError, TokenUsage

__all__ = [
    "WIRES",
    "SseDecoder",
    "Translator",
    "Wire",
    "detect_wire",
    "error_from_response",
    "transport_error",
    "wire_named",
]


class Translator(Protocol):
    """What the tap needs of a wire's translator: SSE events in, chunks out (no I/O)."""

    done: bool

    def feed(self, event: tuple[str, str]) -> list[AnyChunk]: ...

    def end(self) -> list[AnyChunk]: ...

    def salvage(self) -> list[AnyChunk]: ...


@dataclass(frozen=True)
class Wire:
    """One row of the wire table.

    ``matches(path)`` says whether a request path speaks this wire;
    ``translator(label, secrets)`` makes a fresh translator for one response;
    ``whole(body)`` reads a non-streaming JSON answer: its usage and finish.
    """

    name: str
    matches: Callable[[str], bool]
    translator: Callable[[str, tuple[str, ...]], Translator]
    whole: Callable[[Mapping[str, Any]], tuple[TokenUsage | None, FinishReason | None]]


def _row(wire: AdapterWire) -> Wire:
    suffix = wire.facts.request_path
    return Wire(wire.name, lambda path: path.endswith(suffix), wire.translator, wire.read_whole)


WIRES: tuple[Wire, ...] = tuple(_row(wire) for wire in ADAPTER_WIRES.values())
"""Every wire the tap parses, tried in order against the request path."""


def detect_wire(path: str) -> Wire | None:
    """The wire the request ``path`` speaks, or None (then the call is forwarded, not parsed)."""
    for wire in WIRES:
        if wire.matches(path):
            return wire
    return None


def wire_named(name: str) -> Wire:
    """The row called ``name``; ``ValueError`` listing the known wires otherwise."""
    for wire in WIRES:
        if wire.name == name:
            return wire
    known = ", ".join(w.name for w in WIRES)
    raise ValueError(f"unknown wire {name!r}: use auto or one of {known}")


def stream_failure(exc: Exception, label: str, secrets: tuple[str, ...]) -> LlmError:
    """An httpx/socket failure of the upstream as ``LlmError`` (TRANSPORT, TIMEOUT, …)."""
    return transport_error(exc, label=label, secrets=secrets)
