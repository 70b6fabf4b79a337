"""The Google Gemini wire: ``adapter`` (the adapter), ``request`` (GenerateOptions → JSON body)
and ``translate`` (SSE events → StreamChunks, pure; ``_partial`` writes ``partialArgs`` as
argument text)."""

from __future__ import annotations

from .adapter import GEMINI_MODELS, GeminiAdapter
from .request import BUDGET_EFFORTS, LEVEL_EFFORTS, THINKING_BUDGETS, build_body, thinking_config
from .translate import GeminiTranslator, map_finish_reason, map_usage

__all__ = [
    "BUDGET_EFFORTS",
    "GEMINI_MODELS",
    "LEVEL_EFFORTS",
    "THINKING_BUDGETS",
    "GeminiAdapter",
    "GeminiTranslator",
    "build_body",
    "map_finish_reason",
    "map_usage",
    "thinking_config",
]
