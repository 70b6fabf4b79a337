"""The OpenAI-compatible chat-completions wire: ``adapter`` (the adapter), ``request``
(GenerateOptions → JSON body) and ``translate`` (SSE events → StreamChunks, pure)."""

from __future__ import annotations

from .adapter import DEEPSEEK_EFFORTS, DEEPSEEK_MODELS, OpenAICompatAdapter
from .request import build_body
from .translate import OpenAITranslator, map_finish_reason, map_usage

__all__ = [
    "DEEPSEEK_EFFORTS",
    "DEEPSEEK_MODELS",
    "OpenAICompatAdapter",
    "OpenAITranslator",
    "build_body",
    "map_finish_reason",
    "map_usage",
]
