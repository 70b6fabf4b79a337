"""chunkscope — make the StreamChunk protocol of LLM adapters visible and trustworthy.

``import chunkscope as cs`` is the one public face. Names are loaded lazily,
so ``import chunkscope`` stays cheap and the protocol layer never pulls in
Jupyter or pandas.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# The one list of public names: name -> the layer face that provides it (relative to this
# package). ``__all__`` and ``__dir__`` derive from it; the TYPE_CHECKING imports at the
# bottom repeat it for type checkers (tests/test_public_api.py keeps the two equal).
# To publish a name: add it to your layer's block here and to the matching import below.
_EXPORTS: dict[str, str] = {
    # protocol
    **dict.fromkeys(
        [
            "StreamChunk", "AnyChunk", "ChunkLike", "BlockStart", "TextDelta", "ReasoningDelta",
            "ToolCallDelta", "BlockEnd", "Usage", "Finish", "TextBlock", "ReasoningBlock",
            "ToolCallBlock", "ToolResultBlock", "ImageBlock", "ImageAttachment", "ContentBlock",
            "TokenUsage", "FinishReason",
            "LlmFailure", "CallId", "parse_chunk", "parse_block", "chunk_to_dict", "block_to_dict",
            "Message", "parse_message",
            "LlmError", "ERROR_CODES", "ErrorCode", "error_chain", "MissingExtraError",
            "check", "validated", "ValidatedStream", "Violation", "RULES", "Rule", "Checker", "PROFILES",
            "BlockAssembler", "StreamInspector", "collect", "StreamResult", "Timings",
            "UsageSink",
        ],
        ".protocol",
    ),
    # sources: every stream stored on disk, and their one error family
    **dict.fromkeys(
        [
            "read_chunks", "write_chunks", "ChunkFileError", "RecordingFileError", "SourceError",
            "load_streams",
        ],
        ".sources",
    ),
    # adapters
    **dict.fromkeys(
        [
            "LlmAdapter", "GenerateOptions", "AbortController", "AbortSignal", "ModelInfo",
            "ReasoningInfo", "ReasoningEffort", "ToolSpec", "attribution_headers",
            "OpenAICompatAdapter", "AnthropicAdapter", "OpenAIResponsesAdapter", "GeminiAdapter",
            "BedrockAdapter", "ScriptedAdapter", "ReplayAdapter", "RecordingAdapter",
        ],
        ".adapters",
    ),
    # runtime (issue 10): registry, checks before I/O, retries, the agent loop and its events
    **dict.fromkeys(
        [
            "LlmRuntime", "PreparedCall", "Registration", "AdapterDefectError", "RetryPolicy",
            "RetryDecision",
            "AgentLoop", "AgentRun", "AgentResult", "AgentEvent", "StepStart", "ChunkEvent", "RetryScheduled",
            "OutputDiscarded", "ToolCallEvent", "ToolResultEvent", "ToolOutcome", "StepEnd", "StepRecord",
            "LoopEnd", "AttemptUsage", "Tool", "ToolArgumentsError", "tool",
        ],
        ".runtime",
    ),
    # provider
    **dict.fromkeys(["LocalProvider", "SCENARIOS", "Scenario", "get_scenario"], ".provider"),
    # the tap (issue 19): a reverse proxy that shows, checks and records any app's streams
    **dict.fromkeys(["Tap", "TapCall", "TapReplay"], ".tap"),
    # notebook
    **dict.fromkeys(["Timeline", "show"], ".notebook"),
    # conformance (issue 11): the kit, its report, and the grid widget
    **dict.fromkeys(
        [
            "conformance", "run_conformance", "ConformanceReport", "CaseResult", "CheckResult",
            "ConformanceError",
        ],
        ".conformance_kit",
    ),
    "ConformanceGrid": ".notebook",
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
            "DshProblem", "read_llm_logs",
        ],
        ".usage",
    ),
    # usage: OpenTelemetry GenAI spans (issue 18; the "otel" extra)
    **dict.fromkeys(["otel_sink", "to_otel"], ".usage"),
}

__all__ = ["__version__", *_EXPORTS]

# Names whose own extra brings the usage extra with it: a missing usage module names theirs, so one
# install is enough (``pip install "chunkscope[otel]"`` rather than usage first, then otel).
_OWN_EXTRAS = {"otel_sink": "otel", "to_otel": "otel"}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'chunkscope' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module, __name__), name)
    except ModuleNotFoundError as exc:  # an optional dependency: one line naming the extra to install
        from ._extras import as_missing_extra

        missing = as_missing_extra(exc, f"chunkscope.{name}")
        if missing is None:
            raise
        own = _OWN_EXTRAS.get(name)
        if own is not None and missing.extra == "usage":
            from ._extras import MissingExtraError

            missing = MissingExtraError(own, missing.name or "", f"chunkscope.{name}")
        if missing is exc:
            raise
        raise missing from exc
    _publish(value)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def _publish(value: Any) -> None:
    # As httpx does: a public class or function names its public path (`chunkscope.LlmError`), so
    # reprs, tracebacks and docs show what users import. Pickle looks classes up by `__module__` +
    # `__qualname__`, and `chunkscope.<name>` resolves through this module, so pickles keep working.
    if isinstance(value, (type, types.FunctionType)) and value.__module__.startswith("chunkscope."):
        value.__module__ = "chunkscope"


def __dir__() -> list[str]:
    return sorted(__all__)


def _enable_reprs_under_ipython() -> None:
    # In a kernel, `import chunkscope` alone should give LlmError, violation lists and
    # StreamResult their inline HTML; registering costs ~10 ms and loads no widget library.
    if "IPython" in sys.modules:
        importlib.import_module(".notebook", __name__).enable()


_enable_reprs_under_ipython()

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    # `X as X` marks an explicit re-export (PEP 484), which type checkers in strict mode require.
    from .adapters import AbortController as AbortController
    from .adapters import AbortSignal as AbortSignal
    from .adapters import AnthropicAdapter as AnthropicAdapter
    from .adapters import BedrockAdapter as BedrockAdapter
    from .adapters import GeminiAdapter as GeminiAdapter
    from .adapters import GenerateOptions as GenerateOptions
    from .adapters import LlmAdapter as LlmAdapter
    from .adapters import ModelInfo as ModelInfo
    from .adapters import OpenAICompatAdapter as OpenAICompatAdapter
    from .adapters import OpenAIResponsesAdapter as OpenAIResponsesAdapter
    from .adapters import ReasoningEffort as ReasoningEffort
    from .adapters import ReasoningInfo as ReasoningInfo
    from .adapters import RecordingAdapter as RecordingAdapter
    from .adapters import ReplayAdapter as ReplayAdapter
    from .adapters import ScriptedAdapter as ScriptedAdapter
    from .adapters import ToolSpec as ToolSpec
    from .adapters import attribution_headers as attribution_headers
    from .conformance_kit import CaseResult as CaseResult
    from .conformance_kit import CheckResult as CheckResult
    from .conformance_kit import ConformanceError as ConformanceError
    from .conformance_kit import ConformanceReport as ConformanceReport
    from .conformance_kit import conformance as conformance
    from .conformance_kit import run_conformance as run_conformance
    from .notebook import ConformanceGrid as ConformanceGrid
    from .notebook import Timeline as Timeline
    from .notebook import show as show
    from .protocol import ERROR_CODES as ERROR_CODES
    from .protocol import PROFILES as PROFILES
    from .protocol import RULES as RULES
    from .protocol import AnyChunk as AnyChunk
    from .protocol import BlockAssembler as BlockAssembler
    from .protocol import BlockEnd as BlockEnd
    from .protocol import BlockStart as BlockStart
    from .protocol import CallId as CallId
    from .protocol import Checker as Checker
    from .protocol import ChunkLike as ChunkLike
    from .protocol import ContentBlock as ContentBlock
    from .protocol import ErrorCode as ErrorCode
    from .protocol import Finish as Finish
    from .protocol import FinishReason as FinishReason
    from .protocol import ImageAttachment as ImageAttachment
    from .protocol import ImageBlock as ImageBlock
    from .protocol import LlmError as LlmError
    from .protocol import LlmFailure as LlmFailure
    from .protocol import Message as Message
    from .protocol import MissingExtraError as MissingExtraError
    from .protocol import ReasoningBlock as ReasoningBlock
    from .protocol import ReasoningDelta as ReasoningDelta
    from .protocol import Rule as Rule
    from .protocol import StreamChunk as StreamChunk
    from .protocol import StreamInspector as StreamInspector
    from .protocol import StreamResult as StreamResult
    from .protocol import TextBlock as TextBlock
    from .protocol import TextDelta as TextDelta
    from .protocol import Timings as Timings
    from .protocol import TokenUsage as TokenUsage
    from .protocol import ToolCallBlock as ToolCallBlock
    from .protocol import ToolCallDelta as ToolCallDelta
    from .protocol import ToolResultBlock as ToolResultBlock
    from .protocol import Usage as Usage
    from .protocol import UsageSink as UsageSink
    from .protocol import ValidatedStream as ValidatedStream
    from .protocol import Violation as Violation
    from .protocol import block_to_dict as block_to_dict
    from .protocol import check as check
    from .protocol import chunk_to_dict as chunk_to_dict
    from .protocol import collect as collect
    from .protocol import error_chain as error_chain
    from .protocol import parse_block as parse_block
    from .protocol import parse_chunk as parse_chunk
    from .protocol import parse_message as parse_message
    from .protocol import validated as validated
    from .provider import SCENARIOS as SCENARIOS
    from .provider import LocalProvider as LocalProvider
    from .provider import Scenario as Scenario
    from .provider import get_scenario as get_scenario
    from .runtime import AdapterDefectError as AdapterDefectError
    from .runtime import AgentEvent as AgentEvent
    from .runtime import AgentLoop as AgentLoop
    from .runtime import AgentResult as AgentResult
    from .runtime import AgentRun as AgentRun
    from .runtime import AttemptUsage as AttemptUsage
    from .runtime import ChunkEvent as ChunkEvent
    from .runtime import LlmRuntime as LlmRuntime
    from .runtime import LoopEnd as LoopEnd
    from .runtime import OutputDiscarded as OutputDiscarded
    from .runtime import PreparedCall as PreparedCall
    from .runtime import Registration as Registration
    from .runtime import RetryDecision as RetryDecision
    from .runtime import RetryPolicy as RetryPolicy
    from .runtime import RetryScheduled as RetryScheduled
    from .runtime import StepEnd as StepEnd
    from .runtime import StepRecord as StepRecord
    from .runtime import StepStart as StepStart
    from .runtime import Tool as Tool
    from .runtime import ToolArgumentsError as ToolArgumentsError
    from .runtime import ToolCallEvent as ToolCallEvent
    from .runtime import ToolOutcome as ToolOutcome
    from .runtime import ToolResultEvent as ToolResultEvent
    from .runtime import tool as tool
    from .sources import ChunkFileError as ChunkFileError
    from .sources import RecordingFileError as RecordingFileError
    from .sources import SourceError as SourceError
    from .sources import load_streams as load_streams
    from .sources import read_chunks as read_chunks
    from .sources import write_chunks as write_chunks
    from .tap import Tap as Tap
    from .tap import TapCall as TapCall
    from .tap import TapReplay as TapReplay
    from .usage import OTEL_ATTRIBUTES as OTEL_ATTRIBUTES
    from .usage import DshAttempt as DshAttempt
    from .usage import DshLogError as DshLogError
    from .usage import DshProblem as DshProblem
    from .usage import DshSession as DshSession
    from .usage import DshStep as DshStep
    from .usage import Price as Price
    from .usage import PriceTable as PriceTable
    from .usage import UnpricedModelWarning as UnpricedModelWarning
    from .usage import UsageLog as UsageLog
    from .usage import batch as batch
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
