"""The OpenAI Responses wire: ``adapter`` (the adapter), ``request`` (GenerateOptions → JSON
body) and ``translate`` (SSE events → StreamChunks, pure; the provider's encoder of this wire
lives in ``chunkscope.provider``)."""

from __future__ import annotations

from .adapter import RESPONSES_EFFORTS, RESPONSES_MODELS, OpenAIResponsesAdapter
from .request import build_body
from .translate import ResponsesTranslator, map_usage, responses_error_code

__all__ = [
    "RESPONSES_EFFORTS",
    "RESPONSES_MODELS",
    "OpenAIResponsesAdapter",
    "ResponsesTranslator",
    "build_body",
    "map_usage",
    "responses_error_code",
]
