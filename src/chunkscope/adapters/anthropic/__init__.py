"""The Anthropic Messages wire: ``adapter`` (the adapter), ``request`` (GenerateOptions →
JSON body) and ``translate`` (SSE events → StreamChunks, pure; the provider's ENcoder of
this wire lives in ``chunkscope.provider``)."""

from __future__ import annotations

from .adapter import AnthropicAdapter
from .request import DEFAULT_MAX_TOKENS, THINKING_BUDGETS, THINKING_EFFORTS, build_body, thinking_config
from .translate import AnthropicTranslator, anthropic_error_code, map_stop_reason

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "THINKING_BUDGETS",
    "THINKING_EFFORTS",
    "AnthropicAdapter",
    "AnthropicTranslator",
    "anthropic_error_code",
    "build_body",
    "map_stop_reason",
    "thinking_config",
]
