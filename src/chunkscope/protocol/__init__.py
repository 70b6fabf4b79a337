"""The protocol layer: the StreamChunk vocabulary, errors, rules and assembly.

Imports nothing but pydantic, so an adapter author can use it in a service.
This face lists its public names by hand; everything else in the private
modules (``trusted``, ``describe_invalid``, ``http_status_code``, …) is an
internal helper that may change without notice.
"""

from __future__ import annotations

from chunkscope._extras import MissingExtraError

from ._assembly import BlockAssembler, StreamInspector, StreamResult, Timings, UsageSink, collect
from ._checker import Checker
from ._chunks import (
    CHUNK_TYPES,
    AnyBlock,
    AnyChunk,
    BlockEnd,
    BlockStart,
    BlockType,
    CallId,
    ChunkLike,
    ContentBlock,
    Finish,
    FinishKind,
    FinishReason,
    ImageAttachment,
    ImageBlock,
    LlmFailure,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolResultBlock,
    Usage,
    block_to_dict,
    chunk_to_dict,
    parse_block,
    parse_chunk,
)
from ._errors import ERROR_CODES, ErrorCode, LlmError, error_chain
from ._fan_out import FanOut, fan_out
from ._messages import Message, Role, parse_message
from ._validate import ValidatedStream, check, validated
from ._violations import PROFILES, RULES, USAGE_RULES, Profile, Rule, Severity, Violation

__all__ = [
    # chunks and blocks (_chunks)
    "CallId",
    "BlockType",
    "FinishKind",
    "TextBlock",
    "ReasoningBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "ImageBlock",
    "ImageAttachment",
    "ContentBlock",
    "AnyBlock",
    "TokenUsage",
    "LlmFailure",
    "FinishReason",
    "BlockStart",
    "TextDelta",
    "ReasoningDelta",
    "ToolCallDelta",
    "BlockEnd",
    "Usage",
    "Finish",
    "StreamChunk",
    "AnyChunk",
    "ChunkLike",
    "CHUNK_TYPES",
    "parse_chunk",
    "parse_block",
    "chunk_to_dict",
    "block_to_dict",
    # messages (_messages)
    "Message",
    "Role",
    "parse_message",
    # errors (_errors)
    "LlmError",
    "ErrorCode",
    "ERROR_CODES",
    "error_chain",
    "MissingExtraError",
    # rules (_violations, _checker, _validate)
    "Rule",
    "RULES",
    "USAGE_RULES",
    "PROFILES",
    "Profile",
    "Severity",
    "Violation",
    "Checker",
    "check",
    "validated",
    "ValidatedStream",
    # assembly (_assembly)
    "BlockAssembler",
    "StreamInspector",
    "StreamResult",
    "Timings",
    "collect",
    # where finished streams are reported (_assembly, _fan_out)
    "UsageSink",
    "FanOut",
    "fan_out",
]
