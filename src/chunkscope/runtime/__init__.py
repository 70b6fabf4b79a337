"""The runtime layer: adapter registry, checks before I/O, retries, a tool-using agent loop, and
``batch`` (many calls at bounded concurrency).

Imports only the protocol and adapters layers (docs/architecture.md). What it warns::

    RuntimeWarning
     └── BatchProgressWarning    batch's progress callback raised: warned once, not called again
"""

from __future__ import annotations

from ._batch import BatchProgressWarning, batch, partial_results
from ._failures import AdapterDefectError, failure_finish, normalize_failure
from ._loop import (
    AgentEvent,
    AgentLoop,
    AgentResult,
    AgentRun,
    AttemptUsage,
    ChunkEvent,
    LoopEnd,
    OutputDiscarded,
    RetryScheduled,
    StepEnd,
    StepRecord,
    StepStart,
    ToolCallEvent,
    ToolOutcome,
    ToolResultEvent,
)
from ._prepare import PreparedCall, prepare_call
from ._registry import LlmRuntime, Registration
from ._retry import DEFAULT_RETRYABLE_CODES, RetryDecision, RetryPolicy
from ._sync import run_sync
from ._tools import Tool, ToolArgumentsError, tool

__all__ = [
    "DEFAULT_RETRYABLE_CODES",
    "AdapterDefectError",
    "AgentEvent",
    "AgentLoop",
    "AgentResult",
    "AgentRun",
    "AttemptUsage",
    "BatchProgressWarning",
    "ChunkEvent",
    "LlmRuntime",
    "LoopEnd",
    "OutputDiscarded",
    "PreparedCall",
    "Registration",
    "RetryDecision",
    "RetryPolicy",
    "RetryScheduled",
    "StepEnd",
    "StepRecord",
    "StepStart",
    "Tool",
    "ToolArgumentsError",
    "ToolCallEvent",
    "ToolOutcome",
    "ToolResultEvent",
    "batch",
    "failure_finish",
    "normalize_failure",
    "partial_results",
    "prepare_call",
    "run_sync",
    "tool",
]
