"""``OpenAICompatAdapter``: DeepSeek and any OpenAI-compatible chat-completions server.

``POST {base_url}/chat/completions`` with ``stream: true`` and
``stream_options.include_usage``. The request comes from ``request.py``, the
translation from ``translate.py``; everything else (credential, guard,
limits, failures) is the shared core (``_core.EventStreamAdapter``); the path, media
type and key variables are its row of the wire table (``chunkscope._wires``).
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
from .translate import OpenAITranslator

__all__ = ["DEEPSEEK_EFFORTS", "DEEPSEEK_MODELS", "OpenAICompatAdapter"]

DEEPSEEK_EFFORTS = ReasoningInfo(
    (
        ReasoningEffort("off", "Off", "thinking disabled"),
        ReasoningEffort("low", "Low"),
        ReasoningEffort("high", "High"),
        ReasoningEffort("max", "Max"),
    )
)
"""DeepSeek's reasoning efforts: ``off`` sends ``thinking: disabled``, the others ``reasoning_effort``."""

DEEPSEEK_MODELS: tuple[ModelInfo, ...] = (
    ModelInfo("deepseek-chat", "DeepSeek Chat", reasoning=DEEPSEEK_EFFORTS),
    ModelInfo("deepseek-reasoner", "DeepSeek Reasoner", reasoning=DEEPSEEK_EFFORTS),
    ModelInfo("deepseek-v4*", "DeepSeek V4", reasoning=DEEPSEEK_EFFORTS),
)
"""The default model table. An id ending in ``*`` matches every model id with that prefix."""


class OpenAICompatAdapter(EventStreamAdapter):
    """DeepSeek / OpenAI chat-completions streaming adapter.

    ``base_url`` is the API root that ``/chat/completions`` is appended to
    (``https://api.deepseek.com``, ``LocalProvider().base_url``). The key comes
    from ``api_key`` or, at stream time, the ``api_key_env`` environment
    variable, else those its wire row names (``DEEPSEEK_API_KEY``, then
    ``OPENAI_API_KEY``); a missing key is ``MISSING_CREDENTIAL``
    and one no header can carry ``INVALID_CREDENTIAL``, both raised by
    ``stream()`` before any I/O. ``http_client`` is used as given (the caller
    closes it); otherwise the adapter owns one (``aclose()`` / ``async with``).
    ``idle_timeout`` (seconds, None = wait forever) bounds the silence between
    bytes, ``total_timeout`` (None = none) the whole call. ``models`` replaces
    the model table (default ``DEEPSEEK_MODELS``); ``headers`` are added to
    every request (they may replace the ``User-Agent``, never remove it).
    ``think_tags=True`` reads ``<think>…</think>`` in the text as reasoning
    (R1-style models served by vLLM, Ollama, Groq, Together).
    ``max_event_bytes`` / ``max_body_bytes`` bound one SSE event and the
    decompressed body (``MALFORMED_RESPONSE`` beyond, partial output kept).

    Every ``GenerateOptions`` field is honoured: ``reasoning_effort`` ``off``
    sends ``thinking: {"type": "disabled"}``, any other listed effort sends
    ``reasoning_effort`` (plus ``thinking: enabled`` for ``deepseek*`` models);
    a model's configured default effort applies when none is given;
    ``purpose`` is caller metadata (recordings, usage records) and does not
    change the request.
    """

    wire = WIRE_FACTS["openai"]  # provider name, key variables, media type, request path
    supported_options = frozenset(OPTIONAL_OPTIONS)
    api_name = "chat completions API"

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        models: Sequence[ModelInfo] | None = None,
        think_tags: bool = False,
        **options: Unpack[StreamOptions],
    ) -> None:
        super().__init__(base_url, api_key, **options)
        self.think_tags = think_tags
        self._models = tuple(DEEPSEEK_MODELS if models is None else models)

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

    def translator(self, secrets: tuple[str, ...]) -> OpenAITranslator:
        """A fresh translator for one response."""
        return OpenAITranslator(self._label, secrets, think_tags=self.think_tags)
