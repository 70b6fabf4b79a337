"""The tap's view of the wire table: which request path speaks which wire, and its parsers.

This is the tap's one door into the adapters layer: the SSE decoder, each
wire's pure translator and the failure table are imported here and nowhere
else in ``chunkscope.tap``, so a reorganisation of the adapters touches one
module. Its rows come from the adapters' wire table (``chunkscope.adapters.wires``): a new
wire there is a new wire here.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from chunkscope.adapters._core.framing import SseDecoder
from chunkscope.adapters._core.loop import Decoder
from chunkscope.adapters._failures import error_from_response, transport_error
from chunkscope.adapters.wires import WIRES as ADAPTER_WIRES
from chunkscope.adapters.wires import Wire as AdapterWire
from chunkscope.protocol import AnyChunk, FinishReason, LlmError, TokenUsage

__all__ = [
    "WIRES",
    "SseDecoder",
    "Decoder",
    "Translator",
    "Wire",
    "detect_wire",
    "error_from_response",
    "transport_error",
    "wire_named",
]


class Translator(Protocol):
    """What the tap needs of a wire's translator: events in, chunks out (no I/O)."""

    done: bool

    def feed(self, event: Any) -> list[AnyChunk]: ...  # an SSE event, or a Bedrock frame

    def end(self) -> list[AnyChunk]: ...

    def salvage(self) -> list[AnyChunk]: ...


@dataclass(frozen=True)
class Wire:
    """One row of the wire table.

    ``matches(path)`` says whether a request path speaks this wire;
    ``translator(label, secrets)`` makes a fresh translator for one response;
    ``whole(body)`` reads a non-streaming JSON answer: its usage and finish;
    ``media_type`` is its streamed answer's content type and ``decoder()`` a fresh framing
    decoder for one (SSE; Bedrock's binary event stream); ``model_of(path)`` the model a
    request path names (None where the model is in the body).
    """

    name: str
    matches: Callable[[str], bool]
    translator: Callable[[str, tuple[str, ...]], Translator]
    whole: Callable[[Mapping[str, Any]], tuple[TokenUsage | None, FinishReason | None]]
    media_type: str = "text/event-stream"
    decoder: Callable[[], Decoder] = SseDecoder
    model_of: Callable[[str], str | None] = lambda path: None


def _model_finder(pattern: str) -> Callable[[str], str | None]:
    if not pattern:
        return lambda path: None
    compiled = re.compile(pattern)

    def model_of(path: str) -> str | None:
        found = compiled.search(path)
        return urllib.parse.unquote(found["model"]) if found else None

    return model_of


def _row(wire: AdapterWire) -> Wire:
    # the streamed call's path and, where the wire has one, its non-streaming call's
    suffixes = tuple(p for p in (wire.facts.request_path, wire.facts.whole_path) if p)
    return Wire(
        wire.name,
        lambda path: path.endswith(suffixes),
        wire.translator,
        wire.read_whole,
        media_type=wire.media_type,
        decoder=wire.decoder,
        model_of=_model_finder(wire.facts.model_in_path),
    )


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
