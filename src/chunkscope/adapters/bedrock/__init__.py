"""The AWS Bedrock ConverseStream wire: ``adapter`` (the adapter, bearer key or SigV4),
``request`` (GenerateOptions → JSON body), ``framing`` (the binary
``application/vnd.amazon.eventstream`` frames, CRC-checked) and ``translate`` (frames →
StreamChunks, pure; the provider's ENcoder of this wire lives in ``chunkscope.provider``)."""

from __future__ import annotations

from .adapter import BedrockAdapter, Signing
from .framing import EventFrame, EventStreamDecoder
from .request import CLAUDE_EFFORTS, DEFAULT_MAX_TOKENS, NOVA_EFFORTS, THINKING_BUDGETS, build_body
from .translate import BedrockTranslator, bedrock_error_code, map_stop_reason

__all__ = [
    "CLAUDE_EFFORTS",
    "DEFAULT_MAX_TOKENS",
    "NOVA_EFFORTS",
    "THINKING_BUDGETS",
    "BedrockAdapter",
    "BedrockTranslator",
    "EventFrame",
    "EventStreamDecoder",
    "Signing",
    "bedrock_error_code",
    "build_body",
    "map_stop_reason",
]
