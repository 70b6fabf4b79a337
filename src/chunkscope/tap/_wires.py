"""The wire table: which request path speaks which wire, and that wire's parsers.

This is the tap's one door into the adapters layer: the SSE decoder, each
wire's pure translator and the failure table are imported here and nowhere
else in ``chunkscope.tap``, so a reorganisation of the adapters touches one
module. A new wire is one row of ``WIRES``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from chunkscope.adapters._core.framing import SseDecoder
from chunkscope.adapters._failures import error_from_response, transport_error
from chunkscope.adapters.anthropic import AnthropicTranslator, map_stop_reason
from chunkscope.adapters.openai_compat import OpenAITranslator, map_finish_reason, map_usage
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


def _openai_whole(body: Mapping[str, Any]) -> tuple[TokenUsage | None, FinishReason | None]:
    usage = map_usage(body["usage"]) if isinstance(body.get("usage"), dict) else None
    finish = None
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        reason = choices[0].get("finish_reason")
        if isinstance(reason, str):
            finish = map_finish_reason(reason)
    return usage, finish


def _count(usage: Mapping[str, Any], key: str) -> int | None:
    value = usage.get(key)
    return value if type(value) is int and value >= 0 else None


def _anthropic_whole(body: Mapping[str, Any]) -> tuple[TokenUsage | None, FinishReason | None]:
    usage = None
    raw = body.get("usage")
    if isinstance(raw, dict):
        usage = TokenUsage(
            input_tokens=_count(raw, "input_tokens") or 0,
            output_tokens=_count(raw, "output_tokens") or 0,
            cache_read_tokens=_count(raw, "cache_read_input_tokens"),
            cache_write_tokens=_count(raw, "cache_creation_input_tokens"),
        )
    reason = body.get("stop_reason")
    return usage, map_stop_reason(reason) if isinstance(reason, str) else None


WIRES: tuple[Wire, ...] = (
    Wire(
        "openai",
        lambda path: path.endswith("/chat/completions"),
        lambda label, secrets: OpenAITranslator(label, secrets),
        _openai_whole,
    ),
    Wire(
        "anthropic",
        lambda path: path.endswith("/v1/messages") or path == "/messages",
        lambda label, secrets: AnthropicTranslator(label, secrets),
        _anthropic_whole,
    ),
    # The next wires (/responses, :streamGenerateContent, /converse-stream) are one row each.
)
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
