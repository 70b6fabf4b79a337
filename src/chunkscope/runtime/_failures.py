"""Failure normalization: what an adapter raised, as an ``LlmError`` or a terminal finish chunk.

The runtime's own errors::

    LlmError                      (chunkscope.protocol) every failure of a call, by .code
     └── AdapterDefectError       an adapter raised something that is not an LlmError, or published
                                  metadata that cannot be right (code UNKNOWN)
    ValueError
     └── ToolArgumentsError       a tool call's arguments do not fit the tool's signature; the agent
                                  loop hands it back to the model as an error tool result
"""

from __future__ import annotations

from typing import Literal

from chunkscope.adapters import LlmAdapter
from chunkscope.protocol import Finish, FinishReason, LlmError

__all__ = ["AdapterDefectError", "failure_finish", "normalize_failure"]


class AdapterDefectError(LlmError):
    """Code ``UNKNOWN``: an adapter broke its contract (raised something that is not an
    ``LlmError``, or published metadata that cannot be right).

    A defect of the adapter, shown rather than hidden: ``adapter_defect`` is
    True, ``adapter`` names the adapter class, ``cause`` is the original
    exception. ``problem`` replaces the default wording ("raised <type>").
    """

    adapter_defect = True

    def __init__(self, adapter: str, cause: BaseException, problem: str | None = None) -> None:
        if problem is None:
            problem = f"raised {type(cause).__name__} (adapters must raise LlmError): {cause}"
        super().__init__(f"adapter {adapter} {problem} (an adapter defect)", "UNKNOWN", cause=cause)
        self.adapter = adapter


def normalize_failure(exc: BaseException, adapter: LlmAdapter | None = None) -> LlmError:
    """``exc`` as an ``LlmError``: itself, or an ``AdapterDefectError`` (``UNKNOWN``) wrapping it."""
    if isinstance(exc, LlmError):
        return exc
    return AdapterDefectError(type(adapter).__name__ if adapter is not None else "adapter", exc)


def failure_finish(error: LlmError, aborted: bool = False) -> Finish:
    """The terminal ``finish`` chunk carrying ``error``: kind ``aborted`` for an abort, else ``error``."""
    kind: Literal["error", "aborted"] = "aborted" if aborted or error.code == "ABORTED" else "error"
    return Finish(reason=FinishReason(kind=kind, failure=error.failure))
