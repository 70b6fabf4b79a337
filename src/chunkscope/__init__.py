"""chunkscope — make the StreamChunk protocol of LLM adapters visible and trustworthy.

``import chunkscope as cs`` is the one public face. Names are loaded lazily,
so ``import chunkscope`` stays cheap and the protocol layer never pulls in
Jupyter or pandas.
"""

from __future__ import annotations

import importlib
import types
import warnings
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# The one list of public names: name -> the layer face that provides it (relative to this
# package). It holds what the README, the docs and the tutorial notebooks teach; every other
# name lives in its layer's face (``chunkscope.runtime``, ``chunkscope.sources``, …).
# ``__all__`` and ``__dir__`` derive from it; the TYPE_CHECKING imports at the bottom repeat it
# for type checkers (tests/test_public_api.py keeps the two equal).
# To publish a name: add it to your layer's block here and to the matching import below.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        [
            "StreamChunk",
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
            "TokenUsage",
            "FinishReason",
            "LlmFailure",
            "CallId",
            "parse_chunk",
            "chunk_to_dict",
            "LlmError",
            "ERROR_CODES",
            "error_chain",
            "MissingExtraError",
            "check",
            "validated",
            "Violation",
            "RULES",
            "BlockAssembler",
            "StreamInspector",
            "collect",
            "StreamResult",
            "fan_out",
        ],
        ".protocol",
    ),
    **dict.fromkeys(["read_chunks", "write_chunks", "SourceError", "DshLogError"], ".sources"),
    **dict.fromkeys(
        [
            "LlmAdapter",
            "GenerateOptions",
            "AbortController",
            "ModelInfo",
            "ReasoningInfo",
            "attribution_headers",
            "OpenAICompatAdapter",
            "AnthropicAdapter",
            "OpenAIResponsesAdapter",
            "GeminiAdapter",
            "BedrockAdapter",
            "ScriptedAdapter",
            "ReplayAdapter",
            "RecordingAdapter",
        ],
        ".adapters",
    ),
    **dict.fromkeys(["LlmRuntime", "RetryPolicy", "AgentLoop", "tool", "batch"], ".runtime"),
    **dict.fromkeys(["LocalProvider", "SCENARIOS"], ".provider"),
    **dict.fromkeys(["Tap", "TapReplay"], ".tap"),
    **dict.fromkeys(["Timeline", "show", "ConformanceGrid", "CacheView"], ".notebook"),
    **dict.fromkeys(["conformance", "ConformanceReport"], ".conformance_kit"),
    **dict.fromkeys(
        [
            "UsageLog",
            "summary",
            "PriceTable",
            "Price",
            "UnpricedModelWarning",
            "plot_usage",
            "read_parquet",
            "to_parquet",
            "read_recordings",
            "to_inclusive",
            "to_disjoint",
            "OTEL_ATTRIBUTES",
            "read_dsh_session",
            "read_dsh_sessions",
            "read_llm_logs",
            "otel_sink",
            "to_otel",
            "cadence",
            "cache_report",
        ],
        ".usage",
    ),
}

# Names this face used to carry and that now live only in their layer's face: still
# importable from ``chunkscope``, with a DeprecationWarning naming where they live.
_MOVED: dict[str, str] = {
    **dict.fromkeys(
        [
            "AnyChunk",
            "ChunkLike",
            "ContentBlock",
            "parse_block",
            "block_to_dict",
            "Message",
            "parse_message",
            "ErrorCode",
            "ValidatedStream",
            "Rule",
            "Checker",
            "PROFILES",
            "Timings",
            "UsageSink",
        ],
        ".protocol",
    ),
    **dict.fromkeys(
        [
            "ChunkFileError",
            "RecordingFileError",
            "load_streams",
            "DshSession",
            "DshStep",
            "DshAttempt",
            "DshProblem",
        ],
        ".sources",
    ),
    **dict.fromkeys(["AbortSignal", "ReasoningEffort", "ToolSpec"], ".adapters"),
    **dict.fromkeys(
        [
            "PreparedCall",
            "Registration",
            "AdapterDefectError",
            "RetryDecision",
            "AgentRun",
            "AgentResult",
            "AgentEvent",
            "StepStart",
            "ChunkEvent",
            "RetryScheduled",
            "OutputDiscarded",
            "ToolCallEvent",
            "ToolResultEvent",
            "ToolOutcome",
            "StepEnd",
            "StepRecord",
            "LoopEnd",
            "AttemptUsage",
            "Tool",
            "ToolArgumentsError",
        ],
        ".runtime",
    ),
    **dict.fromkeys(["Scenario", "get_scenario"], ".provider"),
    **dict.fromkeys(["TapCall"], ".tap"),
    **dict.fromkeys(["run_conformance", "CaseResult", "CheckResult", "ConformanceError"], ".conformance_kit"),
}

__all__ = ["__version__", *_EXPORTS]

# Names whose own extra brings the usage extra with it: a missing usage module names theirs, so one
# install is enough (``pip install "chunkscope[otel]"`` rather than usage first, then otel).
_OWN_EXTRAS = {"otel_sink": "otel", "to_otel": "otel"}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    moved = module is None
    if module is None:
        module = _moved_module(name)
    try:
        value = getattr(importlib.import_module(module, __name__), name)
    except ModuleNotFoundError as exc:  # an optional dependency: one line naming the extra to install
        missing = _missing_extra(name, exc)
        if missing is None:
            raise
        # one line to read: not the import machinery's frames, nor the chained ModuleNotFoundError
        raise missing from None
    if not moved:  # a moved name is not cached: every use warns, so each place that reaches it is found
        _publish(value)
        globals()[name] = value  # later lookups skip __getattr__
    return value


def _moved_module(name: str) -> str:
    """The layer face a name moved to, with a DeprecationWarning at the caller's line."""
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'chunkscope' has no attribute {name!r}")
    path = f"chunkscope{module}"
    warnings.warn(
        f"chunkscope.{name} is deprecated at the top level: use {path}.{name} (from {path} import {name})",
        DeprecationWarning,
        stacklevel=3,
    )
    return module


def _missing_extra(name: str, exc: ModuleNotFoundError) -> Exception | None:
    """The MissingExtraError that names ``name``'s extra; None when ``exc`` is no optional module."""
    from ._extras import MissingExtraError, as_missing_extra

    missing = as_missing_extra(exc, f"chunkscope.{name}")
    if missing is None:
        return None
    own = _OWN_EXTRAS.get(name)
    if own is not None and missing.extra == "usage":
        return MissingExtraError(own, missing.name or "", f"chunkscope.{name}")
    return missing


def _publish(value: Any) -> None:
    # As httpx does: a public class or function names its public path (`chunkscope.LlmError`), so
    # reprs, tracebacks and docs show what users import. Pickle looks classes up by `__module__` +
    # `__qualname__`, and `chunkscope.<name>` resolves through this module, so pickles keep working.
    if isinstance(value, (type, types.FunctionType)) and value.__module__.startswith("chunkscope."):
        value.__module__ = "chunkscope"


def __dir__() -> list[str]:
    return sorted(__all__)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext chunkscope``: the inline reprs of ``LlmError``, violations and ``StreamResult``,
    and the live displays of ``UsageLog``, ``Tap`` and ``ConformanceReport``, in this shell.

    ``import chunkscope`` alone changes nothing in its host; the notebook layer registers these
    when it is first used (``cs.show``, ``cs.Timeline``, ``chunkscope.notebook``) or here.
    """
    notebook = importlib.import_module(".notebook", __name__)
    notebook.enable(ipython)
    notebook.enable_grid(ipython)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    # `X as X` marks an explicit re-export (PEP 484), which type checkers in strict mode require.
    from .adapters import AbortController as AbortController
    from .adapters import AnthropicAdapter as AnthropicAdapter
    from .adapters import BedrockAdapter as BedrockAdapter
    from .adapters import GeminiAdapter as GeminiAdapter
    from .adapters import GenerateOptions as GenerateOptions
    from .adapters import LlmAdapter as LlmAdapter
    from .adapters import ModelInfo as ModelInfo
    from .adapters import OpenAICompatAdapter as OpenAICompatAdapter
    from .adapters import OpenAIResponsesAdapter as OpenAIResponsesAdapter
    from .adapters import ReasoningInfo as ReasoningInfo
    from .adapters import RecordingAdapter as RecordingAdapter
    from .adapters import ReplayAdapter as ReplayAdapter
    from .adapters import ScriptedAdapter as ScriptedAdapter
    from .adapters import attribution_headers as attribution_headers
    from .conformance_kit import ConformanceReport as ConformanceReport
    from .conformance_kit import conformance as conformance
    from .notebook import CacheView as CacheView
    from .notebook import ConformanceGrid as ConformanceGrid
    from .notebook import Timeline as Timeline
    from .notebook import show as show
    from .protocol import ERROR_CODES as ERROR_CODES
    from .protocol import RULES as RULES
    from .protocol import BlockAssembler as BlockAssembler
    from .protocol import BlockEnd as BlockEnd
    from .protocol import BlockStart as BlockStart
    from .protocol import CallId as CallId
    from .protocol import Finish as Finish
    from .protocol import FinishReason as FinishReason
    from .protocol import LlmError as LlmError
    from .protocol import LlmFailure as LlmFailure
    from .protocol import MissingExtraError as MissingExtraError
    from .protocol import ReasoningBlock as ReasoningBlock
    from .protocol import ReasoningDelta as ReasoningDelta
    from .protocol import StreamChunk as StreamChunk
    from .protocol import StreamInspector as StreamInspector
    from .protocol import StreamResult as StreamResult
    from .protocol import TextBlock as TextBlock
    from .protocol import TextDelta as TextDelta
    from .protocol import TokenUsage as TokenUsage
    from .protocol import ToolCallBlock as ToolCallBlock
    from .protocol import ToolCallDelta as ToolCallDelta
    from .protocol import ToolResultBlock as ToolResultBlock
    from .protocol import Usage as Usage
    from .protocol import Violation as Violation
    from .protocol import check as check
    from .protocol import chunk_to_dict as chunk_to_dict
    from .protocol import collect as collect
    from .protocol import error_chain as error_chain
    from .protocol import fan_out as fan_out
    from .protocol import parse_chunk as parse_chunk
    from .protocol import validated as validated
    from .provider import SCENARIOS as SCENARIOS
    from .provider import LocalProvider as LocalProvider
    from .runtime import AgentLoop as AgentLoop
    from .runtime import LlmRuntime as LlmRuntime
    from .runtime import RetryPolicy as RetryPolicy
    from .runtime import batch as batch
    from .runtime import tool as tool
    from .sources import DshLogError as DshLogError
    from .sources import SourceError as SourceError
    from .sources import read_chunks as read_chunks
    from .sources import write_chunks as write_chunks
    from .tap import Tap as Tap
    from .tap import TapReplay as TapReplay
    from .usage import OTEL_ATTRIBUTES as OTEL_ATTRIBUTES
    from .usage import Price as Price
    from .usage import PriceTable as PriceTable
    from .usage import UnpricedModelWarning as UnpricedModelWarning
    from .usage import UsageLog as UsageLog
    from .usage import cache_report as cache_report
    from .usage import cadence as cadence
    from .usage import otel_sink as otel_sink
    from .usage import plot_usage as plot_usage
    from .usage import read_dsh_session as read_dsh_session
    from .usage import read_dsh_sessions as read_dsh_sessions
    from .usage import read_llm_logs as read_llm_logs
    from .usage import read_parquet as read_parquet
    from .usage import read_recordings as read_recordings
    from .usage import summary as summary
    from .usage import to_disjoint as to_disjoint
    from .usage import to_inclusive as to_inclusive
    from .usage import to_otel as to_otel
    from .usage import to_parquet as to_parquet
