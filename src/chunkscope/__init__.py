"""chunkscope — make the StreamChunk protocol of LLM adapters visible and trustworthy.

``import chunkscope as cs`` is the one public face. Names are loaded lazily,
so ``import chunkscope`` stays cheap and the protocol layer never pulls in
Jupyter or pandas.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> module that defines it (relative to this package)
_EXPORTS: dict[str, str] = {
    # protocol: vocabulary
    **dict.fromkeys(
        [
            "StreamChunk", "AnyChunk", "ChunkLike", "BlockStart", "TextDelta", "ReasoningDelta",
            "ToolCallDelta", "BlockEnd", "Usage", "Finish", "TextBlock", "ReasoningBlock",
            "ToolCallBlock", "ToolResultBlock", "ContentBlock", "TokenUsage", "FinishReason",
            "LlmFailure", "CallId", "parse_chunk", "parse_block", "chunk_to_dict", "block_to_dict",
        ],
        ".protocol._chunks",
    ),
    **dict.fromkeys(["Message", "parse_message"], ".protocol._messages"),
    **dict.fromkeys(["LlmError", "ERROR_CODES", "ErrorCode", "error_chain"], ".protocol._errors"),
    **dict.fromkeys(
        ["check", "validated", "ValidatedStream", "Violation", "RULES", "Rule", "Checker", "PROFILES"],
        ".protocol._rules",
    ),
    **dict.fromkeys(["BlockAssembler", "collect", "StreamResult", "Timings"], ".protocol._assembly"),
    **dict.fromkeys(["read_chunks", "write_chunks", "ChunkFileError"], ".protocol._jsonl"),
    # adapters
    **dict.fromkeys(
        [
            "LlmAdapter", "GenerateOptions", "AbortController", "AbortSignal", "ModelInfo",
            "ReasoningInfo", "ReasoningEffort", "ToolSpec", "attribution_headers",
        ],
        ".adapters._base",
    ),
    "OpenAICompatAdapter": ".adapters.openai_compat",
    "AnthropicAdapter": ".adapters.anthropic",
    "ScriptedAdapter": ".adapters.scripted",
    **dict.fromkeys(["ReplayAdapter", "RecordingAdapter"], ".adapters.recording"),
    # provider
    **dict.fromkeys(["LocalProvider", "SCENARIOS", "Scenario", "get_scenario"], ".provider"),
    # notebook
    **dict.fromkeys(["Timeline", "show"], ".notebook"),
    # usage (issue 9): loads pandas on first use, never at `import chunkscope`
    **dict.fromkeys(
        [
            "UsageLog", "summary", "PriceTable", "Price", "UnpricedModelWarning", "batch", "plot_usage",
            "read_parquet", "to_parquet", "read_recordings", "to_inclusive", "to_disjoint", "OTEL_ATTRIBUTES",
        ],
        ".usage",
    ),
    # usage: DeepSeek Harness session logs and the Dask paths (issue 9, sections 7-8)
    **dict.fromkeys(
        [
            "read_dsh_session", "read_dsh_sessions", "DshSession", "DshStep", "DshAttempt", "DshLogError",
            "DshProblem",
        ],
        ".usage",
    ),
}

__all__ = [
    "__version__",
    "StreamChunk",
    "AnyChunk",
    "ChunkLike",
    "BlockStart",
    "TextDelta",
    "ReasoningDelta",
    "ToolCallDelta",
    "BlockEnd",
    "Usage",
    "Finish",
    "TextBlock",
    "ReasoningBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "ContentBlock",
    "TokenUsage",
    "FinishReason",
    "LlmFailure",
    "CallId",
    "parse_chunk",
    "parse_block",
    "chunk_to_dict",
    "block_to_dict",
    "Message",
    "parse_message",
    "LlmError",
    "ERROR_CODES",
    "ErrorCode",
    "error_chain",
    "check",
    "validated",
    "ValidatedStream",
    "Violation",
    "RULES",
    "Rule",
    "Checker",
    "PROFILES",
    "BlockAssembler",
    "collect",
    "StreamResult",
    "Timings",
    "read_chunks",
    "write_chunks",
    "ChunkFileError",
    "LlmAdapter",
    "GenerateOptions",
    "AbortController",
    "AbortSignal",
    "ModelInfo",
    "ReasoningInfo",
    "ReasoningEffort",
    "ToolSpec",
    "attribution_headers",
    "OpenAICompatAdapter",
    "AnthropicAdapter",
    "ScriptedAdapter",
    "ReplayAdapter",
    "RecordingAdapter",
    "LocalProvider",
    "SCENARIOS",
    "Scenario",
    "get_scenario",
    "Timeline",
    "show",
    # usage (issue 9)
    "UsageLog",
    "summary",
    "PriceTable",
    "Price",
    "UnpricedModelWarning",
    "batch",
    "plot_usage",
    "read_parquet",
    "to_parquet",
    "read_recordings",
    "to_inclusive",
    "to_disjoint",
    "OTEL_ATTRIBUTES",
    # usage: DeepSeek Harness session logs (issue 9, sections 7-8)
    "read_dsh_session",
    "read_dsh_sessions",
    "DshSession",
    "DshStep",
    "DshAttempt",
    "DshLogError",
    "DshProblem",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'chunkscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


def _enable_reprs_under_ipython() -> None:
    # In a kernel, `import chunkscope` alone should give LlmError, violation lists and
    # StreamResult their inline HTML; registering costs ~10 ms and loads no widget library.
    if "IPython" in sys.modules:
        importlib.import_module(".notebook", __name__).enable()


_enable_reprs_under_ipython()

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .adapters._base import (
        AbortController,
        AbortSignal,
        GenerateOptions,
        LlmAdapter,
        ModelInfo,
        ReasoningEffort,
        ReasoningInfo,
        ToolSpec,
        attribution_headers,
    )
    from .adapters.anthropic import AnthropicAdapter
    from .adapters.openai_compat import OpenAICompatAdapter
    from .adapters.recording import RecordingAdapter, ReplayAdapter
    from .adapters.scripted import ScriptedAdapter
    from .notebook import Timeline, show
    from .protocol._assembly import BlockAssembler, StreamResult, Timings, collect
    from .protocol._chunks import (
        AnyChunk,
        BlockEnd,
        BlockStart,
        CallId,
        ChunkLike,
        ContentBlock,
        Finish,
        FinishReason,
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
    from .protocol._errors import ERROR_CODES, ErrorCode, LlmError, error_chain
    from .protocol._jsonl import ChunkFileError, read_chunks, write_chunks
    from .protocol._messages import Message, parse_message
    from .protocol._rules import PROFILES, RULES, Checker, Rule, ValidatedStream, Violation, check, validated
    from .provider import SCENARIOS, LocalProvider, Scenario, get_scenario
    from .usage import (
        OTEL_ATTRIBUTES,
        DshAttempt,
        DshLogError,
        DshProblem,
        DshSession,
        DshStep,
        Price,
        PriceTable,
        UnpricedModelWarning,
        UsageLog,
        batch,
        plot_usage,
        read_dsh_session,
        read_dsh_sessions,
        read_parquet,
        read_recordings,
        summary,
        to_disjoint,
        to_inclusive,
        to_parquet,
    )
