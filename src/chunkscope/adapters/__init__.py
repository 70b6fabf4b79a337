"""Adapters: the request and cancellation vocabulary, and the adapters themselves.

``LlmAdapter`` turns ``GenerateOptions`` into an async stream of StreamChunk
models. ``OpenAICompatAdapter`` speaks DeepSeek / OpenAI chat completions,
``AnthropicAdapter`` the Anthropic Messages API, ``OpenAIResponsesAdapter`` the OpenAI
Responses API, ``GeminiAdapter`` Google Gemini, ``BedrockAdapter`` AWS Bedrock ConverseStream;
``ScriptedAdapter``,
``RecordingAdapter`` and ``ReplayAdapter`` are full implementations for
teaching, tests and bug reports; ``WrappingAdapter`` is the base of adapters that
wrap another and change only its stream. ``error_code`` is the one failure table
(HTTP status + body → code); ``is_quota_exceeded`` and
``is_context_window_exceeded`` are its wording classifiers; ``turn_paused`` tells a
finish that paused the turn (continue it) from one that ended it. For the layers that read
a wire beside the adapters (the tap): ``Decoder`` / ``SseDecoder`` (a body's framing),
``error_from_response`` (a non-2xx answer → ``LlmError``) and ``transport_error``.

Layout: ``_base`` (vocabulary), ``_failures`` (classification, bounded and
redacted messages), ``_http`` (credentials, URLs, client slot, headers),
``_core/`` (the shared SSE adapter core, by concern: credential, framing, guard,
the adapter loop), ``_blocks`` (the block writer every
translator writes its chunks through), ``wires`` (the wire table), ``_sent`` (a
request body read back), ``_finish`` (wire finish reasons → registered codes, the
same on every wire), one folder per wire — ``openai_compat/``, ``anthropic/``,
``openai_responses/``, ``gemini/``, ``bedrock/`` (each ``adapter``, ``request``, ``translate``) —,
``_wrapping``, ``scripted``, ``recording``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._base import (
    OPTIONAL_OPTIONS,
    AbortController,
    AbortSignal,
    GenerateOptions,
    LlmAdapter,
    ModelInfo,
    ReasoningEffort,
    ReasoningInfo,
    ToolSpec,
    attribution_headers,
    user_agent,
)
from ._core import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_EVENT_BYTES, SseDecoder
from ._core.loop import Decoder
from ._failures import (
    error_code,
    error_from_response,
    is_context_window_exceeded,
    is_quota_exceeded,
    transport_error,
)
from ._finish import turn_paused
from ._wrapping import WrappingAdapter

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_EVENT_BYTES",
    "OPTIONAL_OPTIONS",
    "AbortController",
    "AbortSignal",
    "AnthropicAdapter",
    "BedrockAdapter",
    "Decoder",
    "GeminiAdapter",
    "GenerateOptions",
    "LlmAdapter",
    "ModelInfo",
    "OpenAICompatAdapter",
    "OpenAIResponsesAdapter",
    "ReasoningEffort",
    "ReasoningInfo",
    "RecordingAdapter",
    "ReplayAdapter",
    "ScriptedAdapter",
    "SseDecoder",
    "ToolSpec",
    "WrappingAdapter",
    "attribution_headers",
    "error_code",
    "error_from_response",
    "is_context_window_exceeded",
    "is_quota_exceeded",
    "transport_error",
    "turn_paused",
    "user_agent",
]

# The concrete adapters load lazily: importing the vocabulary stays cheap and
# does not depend on every adapter module being present.
_LAZY = {
    "OpenAICompatAdapter": ".openai_compat",
    "AnthropicAdapter": ".anthropic",
    "OpenAIResponsesAdapter": ".openai_responses",
    "BedrockAdapter": ".bedrock",
    "GeminiAdapter": ".gemini",
    "ScriptedAdapter": ".scripted",
    "RecordingAdapter": ".recording",
    "ReplayAdapter": ".recording",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from .anthropic import AnthropicAdapter
    from .bedrock import BedrockAdapter
    from .gemini import GeminiAdapter
    from .openai_compat import OpenAICompatAdapter
    from .openai_responses import OpenAIResponsesAdapter
    from .recording import RecordingAdapter, ReplayAdapter
    from .scripted import ScriptedAdapter
