"""The wire table with its adapters: ``WIRES`` joins each neutral wire row to its adapter.

It is also the adapters layer's seam for anyone who reads a wire without an adapter (the tap,
replays of recorded reads): ``Wire.reader`` builds the one ``WireReader`` the adapters stream
through, so nothing outside this layer frames, inflates or translates a wire its own way.
``WIRES`` maps a wire's name to its ``Wire``: the neutral facts of ``chunkscope._wires``
(title, key variables, provider name, base-URL form) plus the built-in adapter class. The
conformance kit (``wire=``), its pytest plugin and ``chunkscope record`` build adapters from
it; none of them spells a wire's name. The local provider reads only the neutral rows (it
imports nothing of the adapters it judges).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._wires import DEFAULT_WIRE, WIRE_FACTS, WireFacts
from ..protocol import AnyChunk, FinishReason, TokenUsage
from ._base import LlmAdapter
from ._core import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_EVENT_BYTES, SseDecoder
from ._core.reader import Decoder, Translator, WireReader
from ._failures import transport_error
from ._sent import SentOptions
from .anthropic import AnthropicAdapter
from .anthropic.request import sent_options as anthropic_sent
from .anthropic.translate import AnthropicTranslator
from .anthropic.translate import read_whole as anthropic_whole
from .anthropic.translate import whole_answer as anthropic_answer
from .bedrock import BedrockAdapter
from .bedrock.request import sent_options as bedrock_sent
from .bedrock.translate import BedrockTranslator
from .bedrock.translate import read_whole as bedrock_whole
from .bedrock.translate import whole_answer as bedrock_answer
from .gemini import GeminiAdapter
from .gemini.request import sent_options as gemini_sent
from .gemini.translate import GeminiTranslator
from .gemini.translate import read_whole as gemini_whole
from .gemini.translate import whole_answer as gemini_answer
from .openai_compat import OpenAICompatAdapter
from .openai_compat.request import sent_options as openai_sent
from .openai_compat.translate import OpenAITranslator
from .openai_compat.translate import read_whole as openai_whole
from .openai_compat.translate import whole_answer as openai_answer
from .openai_responses import OpenAIResponsesAdapter
from .openai_responses.request import sent_options as responses_sent
from .openai_responses.translate import ResponsesTranslator
from .openai_responses.translate import read_whole as responses_whole
from .openai_responses.translate import whole_answer as responses_answer

__all__ = [
    "DEFAULT_WIRE",
    "WIRES",
    "Translator",
    "Wire",
    "WireReader",
    "detect_wire",
    "transport_error",
    "unparsed_reader",
    "wire_named",
]

_ADAPTERS: dict[str, tuple[Any, ...]] = {
    "openai": (OpenAICompatAdapter, openai_sent, OpenAITranslator, openai_whole, openai_answer),
    "anthropic": (AnthropicAdapter, anthropic_sent, AnthropicTranslator, anthropic_whole, anthropic_answer),
    "responses": (
        OpenAIResponsesAdapter,
        responses_sent,
        ResponsesTranslator,
        responses_whole,
        responses_answer,
    ),
    "gemini": (GeminiAdapter, gemini_sent, GeminiTranslator, gemini_whole, gemini_answer),
    "bedrock": (BedrockAdapter, bedrock_sent, BedrockTranslator, bedrock_whole, bedrock_answer),
}


@dataclass(frozen=True)
class Wire:
    """One wire: its neutral facts and the built-in adapter class that speaks it.

    ``adapter`` is called as ``adapter(base_url=, api_key=, ...)`` (``idle_timeout``,
    ``http_client`` …, as every built-in SSE adapter takes them). ``sent`` reads a request
    body of this wire back as the options it carries (the conformance kit's request check).
    ``translator(label, secrets)`` is a fresh pure translator for one streamed response, and
    ``read_whole(body)`` the usage and finish of a non-streaming answer, ``whole_answer(body)``
    that answer as the chunks its stream would have been; ``reader(...)`` puts the translator
    and ``whole_answer`` behind the one wire reader. ``matches(path)`` says whether a request path speaks this
    wire and ``model_of(path)`` finds the model a path names (Gemini, Bedrock).
    """

    facts: WireFacts
    adapter: type[LlmAdapter]
    sent: Callable[[dict[str, Any]], SentOptions]
    translator: Callable[[str, tuple[str, ...]], Translator]
    read_whole: Callable[[Mapping[str, Any]], tuple[TokenUsage | None, FinishReason | None]]
    whole_answer: Callable[[Mapping[str, Any]], list[AnyChunk]]
    _model_in_path: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pattern = self.facts.model_in_path
        object.__setattr__(self, "_model_in_path", re.compile(pattern) if pattern else None)

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
        return self.facts.media_type

    def decoder(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> Decoder:
        """A fresh framing decoder for one streamed answer of this wire: its adapter's one
        framing hook (SSE, Gemini's CRLF, Bedrock's binary frames)."""
        framing: Callable[[int], Decoder] = getattr(self.adapter, "framing", SseDecoder)
        return framing(max_event_bytes)

    def matches(self, path: str) -> bool:
        """Whether a request ``path`` (no query) is this wire's streamed or whole call."""
        facts = self.facts
        return path.endswith(tuple(p for p in (facts.request_path, facts.whole_path) if p))

    def model_of(self, path: str) -> str | None:
        """The model a request path names (None where the model is in the body)."""
        found = self._model_in_path.search(path) if self._model_in_path is not None else None
        return urllib.parse.unquote(found["model"]) if found else None

    def asks_stream(self, path: str, body: Any) -> bool:
        """Whether a request (its path, its parsed JSON body) asks for a streamed answer."""
        if self.facts.whole_path:
            return path.endswith(self.facts.request_path)
        return isinstance(body, dict) and body.get("stream") is True

    def reader(
        self,
        label: str,
        secrets: tuple[str, ...] = (),
        *,
        expect_stream: bool = True,
        mask: Callable[[Any], Any] | None = None,
        on_event: Callable[[], None] | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> WireReader:
        """The one wire reader for one response of this wire (as its adapter reads it)."""
        return WireReader(
            self.translator(label, secrets),
            self.decoder(),
            label=label,
            secrets=secrets,
            media_type=self.media_type,
            max_body_bytes=max_body_bytes,
            expect_stream=expect_stream,
            read_whole=self.whole_answer,
            mask=mask,
            on_event=on_event,
        )


WIRES: dict[str, Wire] = {name: Wire(facts, *_ADAPTERS[name]) for name, facts in WIRE_FACTS.items()}
"""Every wire, by name, with its adapter (the order of ``chunkscope._wires.WIRE_FACTS``)."""


def wire_named(name: str) -> Wire:
    """The row of wire ``name``; ``ValueError`` naming the wires for any other name."""
    wire = WIRES.get(name)
    if wire is None:
        known = ", ".join(repr(n) for n in WIRES)
        raise ValueError(f"unknown wire {name!r}: the wires are {known}")
    return wire


def detect_wire(path: str) -> Wire | None:
    """The wire a request ``path`` speaks (the first row that matches), or None."""
    for wire in WIRES.values():
        if wire.matches(path):
            return wire
    return None


def unparsed_reader(label: str, secrets: tuple[str, ...] = ()) -> WireReader:
    """A reader for a response of no known wire: an error answer still gets its code."""
    return WireReader.unparsed(label, secrets)
