"""``AnthropicAdapter``: the Anthropic Messages API as a StreamChunk stream.

It POSTs ``{base_url}/v1/messages`` with ``stream: true`` (``base_url`` is the
root, as the official Anthropic SDK takes it: ``LocalProvider.url`` or
``https://api.anthropic.com``). The body comes from ``request.py``, the
translation from ``translate.py`` (chunks that pass the ``strict`` profile:
blocks in order 0, 1, 2, …, never interleaved; usage once, then the finish);
credential, guard, limits and failures are the shared core
(``_core.EventStreamAdapter``); the path, media type and key variable are its row
of the wire table (``chunkscope._wires``).

Failures are ``LlmError`` with the codes of docs/protocol.md §4, from the one
table (``_failures``): Anthropic's ``prompt is too long`` and
``billing_error`` refine a 400 into ``CONTEXT_WINDOW_EXCEEDED`` / ``QUOTA``;
529 "overloaded" is ``SERVER``; ``error`` events inside the stream map by
their type; ``STREAM_CLOSED`` without ``message_stop``. In-band stops that are
not ``end_turn``, ``stop_sequence``, ``tool_use`` or ``max_tokens`` end the
stream with an ``error`` finish whose code is the upper-cased ``stop_reason``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, ClassVar

from typing_extensions import Unpack

from ..._wires import WIRE_FACTS
from .._base import OPTIONAL_OPTIONS, GenerateOptions, ModelInfo
from .._core import EventStreamAdapter, StreamOptions, Translator
from .request import DEFAULT_MAX_TOKENS, THINKING_BUDGETS, THINKING_EFFORTS, build_body
from .translate import AnthropicTranslator

__all__ = ["DEFAULT_MAX_TOKENS", "THINKING_BUDGETS", "THINKING_EFFORTS", "AnthropicAdapter"]

# Model families with extended thinking, for when no ``models`` list is given.
_THINKING_PREFIXES = ("claude-3-7-sonnet", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4")

_SIGNATURES_KEPT = 512  # thinking signatures remembered for replay (oldest dropped first)


class AnthropicAdapter(EventStreamAdapter):
    """Streams Anthropic Messages (``POST {base_url}/v1/messages``) as StreamChunks.

    ``api_key`` defaults to the ``ANTHROPIC_API_KEY`` environment variable,
    read when a stream starts; none is ``MISSING_CREDENTIAL``, one an HTTP
    header cannot carry is ``INVALID_CREDENTIAL`` (both before any I/O). The
    key never appears in the repr, ``vars()``, a pickle, errors or logs.
    ``http_client`` is used as given (and not closed); without one the adapter
    owns a client, released by ``aclose()``. ``idle_timeout`` (seconds, None =
    none) is the longest silence tolerated while streaming, ``total_timeout``
    the whole call (both ``TIMEOUT``). ``models`` publishes ``ModelInfo``s;
    without it, Claude model ids of the families with extended thinking get
    the efforts ``THINKING_EFFORTS`` (off, low, medium, high), and other ids no
    reasoning metadata. Every ``GenerateOptions`` field is honoured; content
    the wire cannot carry is ``UNSUPPORTED_OPTION``.

    Reasoning blocks replay as ``thinking`` blocks with the signature they
    streamed with (the adapter remembers the latest signatures it saw);
    reasoning it never streamed is left out of the request, as the API refuses
    unsigned thinking. The finish's ``replay_state`` carries the signatures
    and redacted thinking of the turn.
    """

    wire = WIRE_FACTS["anthropic"]  # provider name, key variables, media type, request path
    supported_options: ClassVar[frozenset[str]] = frozenset(OPTIONAL_OPTIONS)
    api_name = "Anthropic API"

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        models: Iterable[ModelInfo] | None = None,
        anthropic_version: str = "2023-06-01",
        **options: Unpack[StreamOptions],
    ) -> None:
        super().__init__(base_url, api_key, **options)
        self.anthropic_version = anthropic_version
        self._models = tuple(models) if models is not None else None
        self._signatures: OrderedDict[str, str] = OrderedDict()

    # --- models ---------------------------------------------------------------

    def models(self) -> list[ModelInfo]:
        """The ``models`` given at construction (empty when none were)."""
        return list(self._models or ())

    def model_info(self, model: str) -> ModelInfo | None:
        """The given ``ModelInfo`` of ``model``; without a list, efforts for Claude thinking families."""
        if self._models is not None:
            return super().model_info(model)
        if model.startswith(_THINKING_PREFIXES):
            return ModelInfo(id=model, reasoning=THINKING_EFFORTS)
        return None

    # --- the wire -------------------------------------------------------------

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body ``stream()`` sends for ``options`` (signatures of streamed thinking included)."""
        return build_body(options, signature_of=self._signatures.get)

    def wire_headers(self, key: str) -> dict[str, str]:
        """``x-api-key`` and ``anthropic-version``."""
        return {"x-api-key": key, "anthropic-version": self.anthropic_version}

    def translator(self, secrets: tuple[str, ...]) -> AnthropicTranslator:
        """A fresh translator for one response."""
        return AnthropicTranslator(self._label, secrets)

    def finished(self, translator: Translator) -> None:
        """Remember the thinking signatures of a complete response, for replay."""
        if not isinstance(translator, AnthropicTranslator):
            return
        for text, signature in translator.signatures():
            self._signatures[text] = signature
            self._signatures.move_to_end(text)
        while len(self._signatures) > _SIGNATURES_KEPT:
            self._signatures.popitem(last=False)
