"""The wire table with its adapters: ``WIRES`` joins each neutral wire row to its adapter.

``WIRES`` maps a wire's name to its ``Wire``: the neutral facts of ``chunkscope._wires``
(title, key variables, provider name, base-URL form) plus the built-in adapter class. The
conformance kit (``wire=``), its pytest plugin and ``chunkscope record`` build adapters from
it; none of them spells a wire's name. The local provider reads only the neutral rows (it
imports nothing of the adapters it judges).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._wires import DEFAULT_WIRE, WIRE_FACTS, WireFacts
from ..protocol import FinishReason, TokenUsage
from ._base import LlmAdapter
from ._core import DEFAULT_MAX_EVENT_BYTES, SseDecoder
from ._core.loop import Decoder
from ._sent import SentOptions
from .anthropic import AnthropicAdapter
from .anthropic.request import sent_options as anthropic_sent
from .anthropic.translate import AnthropicTranslator
from .anthropic.translate import read_whole as anthropic_whole
from .bedrock import BedrockAdapter
from .bedrock.request import sent_options as bedrock_sent
from .bedrock.translate import BedrockTranslator
from .bedrock.translate import read_whole as bedrock_whole
from .gemini import GeminiAdapter
from .gemini.request import sent_options as gemini_sent
from .gemini.translate import GeminiTranslator
from .gemini.translate import read_whole as gemini_whole
from .openai_compat import OpenAICompatAdapter
from .openai_compat.request import sent_options as openai_sent
from .openai_compat.translate import OpenAITranslator
from .openai_compat.translate import read_whole as openai_whole
from .openai_responses import OpenAIResponsesAdapter
from .openai_responses.request import sent_options as responses_sent
from .openai_responses.translate import ResponsesTranslator
from .openai_responses.translate import read_whole as responses_whole

__all__ = ["DEFAULT_WIRE", "WIRES", "Wire", "wire_named"]

_ADAPTERS: dict[str, tuple[Any, ...]] = {
    "openai": (OpenAICompatAdapter, openai_sent, OpenAITranslator, openai_whole),
    "anthropic": (AnthropicAdapter, anthropic_sent, AnthropicTranslator, anthropic_whole),
    "responses": (OpenAIResponsesAdapter, responses_sent, ResponsesTranslator, responses_whole),
    "gemini": (GeminiAdapter, gemini_sent, GeminiTranslator, gemini_whole),
    "bedrock": (BedrockAdapter, bedrock_sent, BedrockTranslator, bedrock_whole),
}


@dataclass(frozen=True)
class Wire:
    """One wire: its neutral facts and the built-in adapter class that speaks it.

    ``adapter`` is called as ``adapter(base_url=, api_key=, ...)`` (``idle_timeout``,
    ``http_client`` …, as every built-in SSE adapter takes them). ``sent`` reads a request
    body of this wire back as the options it carries (the conformance kit's request check).
    ``translator(label, secrets)`` is a fresh pure translator for one streamed response, and
    ``read_whole(body)`` the usage and finish of a non-streaming answer (the tap reads both).
    """

    facts: WireFacts
    adapter: type[LlmAdapter]
    sent: Callable[[dict[str, Any]], SentOptions]
    translator: Callable[[str, tuple[str, ...]], Any]
    read_whole: Callable[[Mapping[str, Any]], tuple[TokenUsage | None, FinishReason | None]]

    @property
    def name(self) -> str:
        """The wire's id."""
        return self.facts.name

    def base_url(self, root: str) -> str:
        """The base URL this wire's adapters take for a server whose root is ``root``."""
        return self.facts.base_url(root)

    @property
    def media_type(self) -> str:
        """The content type of this wire's streamed answer."""
        return str(getattr(self.adapter, "content_type", "text/event-stream"))

    def decoder(self) -> Decoder:
        """A fresh framing decoder for one streamed answer of this wire (default limits)."""
        framing: Callable[[int], Decoder] = getattr(self.adapter, "framing", SseDecoder)
        return framing(DEFAULT_MAX_EVENT_BYTES)


WIRES: dict[str, Wire] = {name: Wire(facts, *_ADAPTERS[name]) for name, facts in WIRE_FACTS.items()}
"""Every wire, by name, with its adapter (the order of ``chunkscope._wires.WIRE_FACTS``)."""


def wire_named(name: str) -> Wire:
    """The row of wire ``name``; ``ValueError`` naming the wires for any other name."""
    wire = WIRES.get(name)
    if wire is None:
        known = ", ".join(repr(n) for n in WIRES)
        raise ValueError(f"unknown wire {name!r}: the wires are {known}")
    return wire
