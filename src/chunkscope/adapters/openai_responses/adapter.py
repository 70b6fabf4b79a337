"""``OpenAIResponsesAdapter``: the OpenAI Responses API as a StreamChunk stream.

``POST {base_url}/responses`` with ``stream: true`` and ``store: false`` (``base_url`` as the
official SDK takes it: ``https://api.openai.com/v1``, ``LocalProvider().base_url``). The body
comes from ``request.py``, the translation from ``translate.py``; credential, guard, limits
and failures are the shared core (``_core.EventStreamAdapter``); the path, media
type and key variable are its row of the wire table (``chunkscope._wires``).

Failures are ``LlmError`` with the codes of docs/protocol.md §4: an error answer by its status
and body (OpenAI-shaped, the one table of ``_failures``), an ``error`` event inside the stream
by its ``code`` (``rate_limit_exceeded`` → ``RATE_LIMIT``, ``insufficient_quota`` → ``QUOTA``,
``server_error`` → ``SERVER``, ``context_length_exceeded`` → ``CONTEXT_WINDOW_EXCEEDED``,
``invalid_prompt`` → ``INVALID_REQUEST`` …), ``STREAM_CLOSED`` without a terminal response.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
from .._core import EventStreamAdapter, StreamOptions
from .request import build_body
from .translate import ResponsesTranslator

__all__ = ["RESPONSES_EFFORTS", "RESPONSES_MODELS", "OpenAIResponsesAdapter"]

_LEVELS = (
    ReasoningEffort("low", "Low"),
    ReasoningEffort("medium", "Medium"),
    ReasoningEffort("high", "High"),
)

RESPONSES_EFFORTS = ReasoningInfo(
    (ReasoningEffort("off", "Off", "reasoning.effort none"), ReasoningEffort("minimal", "Minimal"), *_LEVELS)
)
"""The efforts of a GPT-5 model: ``off`` sends ``reasoning.effort: none``, the others their id."""

_O_SERIES_EFFORTS = ReasoningInfo(_LEVELS)
"""The o-series models reason always: no ``off``."""

RESPONSES_MODELS: tuple[ModelInfo, ...] = (
    ModelInfo("gpt-5*", "GPT-5", reasoning=RESPONSES_EFFORTS),
    ModelInfo("o1*", "o1", reasoning=_O_SERIES_EFFORTS),
    ModelInfo("o3*", "o3", reasoning=_O_SERIES_EFFORTS),
    ModelInfo("o4*", "o4", reasoning=_O_SERIES_EFFORTS),
)
"""The default model table. An id ending in ``*`` matches every model id with that prefix."""


class OpenAIResponsesAdapter(EventStreamAdapter):
    """Streams the OpenAI Responses API (``POST {base_url}/responses``) as StreamChunks.

    ``api_key`` defaults to the ``OPENAI_API_KEY`` environment variable, read when a stream
    starts; none is ``MISSING_CREDENTIAL``, one no header can carry ``INVALID_CREDENTIAL``
    (both before any I/O); the key never appears in the repr, errors or logs. ``http_client``
    is used as given (the caller closes it), else the adapter owns one (``aclose()`` /
    ``async with``). ``idle_timeout`` / ``total_timeout`` (seconds, None = none) bound the
    silence and the whole call (``TIMEOUT``); ``models`` replaces the model table
    (``RESPONSES_MODELS``: GPT-5 models with ``off``…``high``, o-series with low…high);
    ``check_sequence=False`` accepts a stream whose ``sequence_number`` has gaps (a gateway
    that filters events); ``max_event_bytes`` / ``max_body_bytes`` bound one event and the
    body. The wire has no stop sequences: ``stop`` is ``UNSUPPORTED_OPTION``.
    """

    wire = WIRE_FACTS["responses"]  # provider name, key variables, media type, request path
    supported_options = frozenset(OPTIONAL_OPTIONS) - {"stop"}
    api_name = "Responses API"

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        models: Sequence[ModelInfo] | None = None,
        check_sequence: bool = True,
        **options: Unpack[StreamOptions],
    ) -> None:
        super().__init__(base_url, api_key, **options)
        self.check_sequence = check_sequence
        self._models = tuple(RESPONSES_MODELS if models is None else models)

    # -- models --

    def models(self) -> list[ModelInfo]:
        """The exact (non-pattern) entries of the model table."""
        return listed_models(self._models)

    def model_info(self, model: str) -> ModelInfo | None:
        """The table entry for ``model``: an exact id first, else the longest matching ``prefix*``."""
        return find_model(self._models, model)

    # -- the wire --

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body ``stream()`` sends for ``options`` (for inspection and tests)."""
        return build_body(options, self.model_info(options.model))

    def wire_headers(self, key: str) -> dict[str, str]:
        """``Authorization: Bearer <key>``."""
        return {"Authorization": f"Bearer {key}"}

    def translator(self, secrets: tuple[str, ...]) -> ResponsesTranslator:
        """A fresh translator for one response."""
        return ResponsesTranslator(self._label, secrets, check_sequence=self.check_sequence)
