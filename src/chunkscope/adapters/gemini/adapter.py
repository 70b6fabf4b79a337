"""``GeminiAdapter``: the Gemini API's ``streamGenerateContent`` as a StreamChunk stream.

It POSTs ``{base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse`` (``base_url`` is
the root, as google-genai takes it: ``LocalProvider.url`` or
``https://generativelanguage.googleapis.com``) with the key in ``x-goog-api-key``, never in
the URL (URLs end up in logs). The body comes from ``request.py``, the translation from
``translate.py``; credential, guard, limits and failures are the shared core; the path, its
query, the media type and the key variables are its row of the wire table (``chunkscope._wires``).
Failures are ``LlmError`` with the codes of docs/protocol.md §4: an error body's ``google.rpc`` status
decides (``_failures.google_rpc_error``: ``RESOURCE_EXHAUSTED`` → ``RATE_LIMIT`` or ``QUOTA``,
``RetryInfo`` → the retry delay), as it does for an ``{"error": …}`` object inside the stream.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import quote

from typing_extensions import Unpack

from ..._wires import WIRE_FACTS
from .._base import (
    OPTIONAL_OPTIONS,
    GenerateOptions,
    ModelInfo,
    ReasoningEffort,
    ReasoningInfo,
    find_model,
    listed_models,
)
from .._core import EventStreamAdapter, StreamOptions, Translator
from ._framing import CrlfSseDecoder
from .request import BUDGET_EFFORTS, LEVEL_EFFORTS, build_body
from .translate import GeminiTranslator

__all__ = ["GEMINI_MODELS", "GeminiAdapter"]

_PRO_EFFORTS = ReasoningInfo(BUDGET_EFFORTS.efforts[1:])  # 2.5 Pro always thinks: no "off"
_FLASH3_EFFORTS = ReasoningInfo(
    tuple(
        ReasoningEffort(level, level.title(), f"thinkingLevel {level}")
        for level in ("minimal", "low", "medium", "high")
    )
)

GEMINI_MODELS: tuple[ModelInfo, ...] = (
    ModelInfo("gemini-2.5-pro*", "Gemini 2.5 Pro", reasoning=_PRO_EFFORTS),
    ModelInfo("gemini-2.5-flash*", "Gemini 2.5 Flash", reasoning=BUDGET_EFFORTS),
    ModelInfo("gemini-3-pro*", "Gemini 3 Pro", reasoning=LEVEL_EFFORTS),
    ModelInfo("gemini-3-flash*", "Gemini 3 Flash", reasoning=_FLASH3_EFFORTS),
)
"""The default model table (thinking models). An id ending in ``*`` matches every model id with
that prefix; other ids get no thinking configuration at all."""

_SIGNATURES_KEPT = 512  # thought signatures of tool calls remembered for replay (oldest dropped first)


class GeminiAdapter(EventStreamAdapter):
    """Streams Gemini ``streamGenerateContent`` as StreamChunks.

    ``api_key`` defaults to the ``GEMINI_API_KEY`` environment variable, else
    ``GOOGLE_API_KEY`` (the two the google-genai SDK reads; ``api_key_env`` names another),
    read when a stream starts; none is
    ``MISSING_CREDENTIAL``, one no header can carry ``INVALID_CREDENTIAL``. ``models``
    replaces the model table (``GEMINI_MODELS``); ``api_version`` is the path's version
    (``v1beta``: the version with thinking and function-call ids). Every ``GenerateOptions``
    field is honoured. Tool calls replay with the ``thoughtSignature`` they streamed with
    (the adapter remembers the latest ones), as Gemini 3 requires.
    """

    wire = WIRE_FACTS["gemini"]  # provider name, key variables, media type, request path
    supported_options: ClassVar[frozenset[str]] = frozenset(OPTIONAL_OPTIONS)
    api_name = "Gemini API"
    framing = CrlfSseDecoder  # a copy-free path for the CRLF the Gemini API frames with

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        models: Sequence[ModelInfo] | None = None,
        api_version: str = "v1beta",
        **options: Unpack[StreamOptions],
    ) -> None:
        super().__init__(base_url, api_key, **options)
        if not api_version or "/" in api_version:
            raise ValueError(f"api_version must be one path segment such as 'v1beta', not {api_version!r}")
        self.api_version = api_version
        self._models = tuple(GEMINI_MODELS if models is None else models)
        self._signatures: OrderedDict[str, str] = OrderedDict()

    # -- models --

    def models(self) -> list[ModelInfo]:
        """The exact (non-pattern) entries of the model table."""
        return listed_models(self._models)

    def model_info(self, model: str) -> ModelInfo | None:
        """The table entry for ``model`` (a ``models/`` prefix ignored): an exact id first, else
        the longest matching ``prefix*``, with ``model`` as its id."""
        found = find_model(self._models, model.removeprefix("models/"))
        if found is None or found in self._models:
            return found
        return dataclasses.replace(found, id=model)

    # -- the wire --

    def path_fields(self, options: GenerateOptions) -> dict[str, str]:
        """The row's path fields: ``api_version`` and the model (a ``models/`` prefix dropped,
        percent-encoded), so the call posts to
        ``{base_url}/{api_version}/models/{model}:streamGenerateContent?alt=sse``."""
        model = quote(options.model.removeprefix("models/"), safe="-._~@")
        return {"api_version": self.api_version, "model": model}

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body ``stream()`` sends for ``options`` (for inspection and tests)."""
        model = options.model.removeprefix("models/")
        return build_body(options, self.model_info(model), self._signatures.get)

    def wire_headers(self, key: str) -> dict[str, str]:
        """``x-goog-api-key`` (the key never goes in the URL)."""
        return {"x-goog-api-key": key}

    def translator(self, secrets: tuple[str, ...]) -> GeminiTranslator:
        """A fresh translator for one response."""
        return GeminiTranslator(self._label, secrets)

    def finished(self, translator: Translator) -> None:
        """Remember the thought signatures of a complete response's tool calls, for replay."""
        if not isinstance(translator, GeminiTranslator):
            return
        for call_id, signature in translator.call_signatures():
            self._signatures[call_id] = signature
            self._signatures.move_to_end(call_id)
        while len(self._signatures) > _SIGNATURES_KEPT:
            self._signatures.popitem(last=False)
