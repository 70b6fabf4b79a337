"""One ``log=`` for several usage sinks: a Parquet-backed ``UsageLog`` and live OpenTelemetry spans
together, say.

Every place that records attempts takes one sink (``collect``, ``show``, ``batch``, a runtime,
the agent loop); ``fan_out`` makes one of several. Each attempt reaches every sink, even when an
earlier one fails (the first failure is raised after all were called, so no sink loses a row to
another's defect). The optional hooks a recorder looks for by name (a batch's progress, the
agent loop's run, step and tool events, ``flush`` / ``close``) reach the sinks that have them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ._assembly import StreamResult, UsageSink

__all__ = ["FanOut", "fan_out"]


class FanOut:
    """A ``UsageSink`` that hands each attempt, and each optional hook, to every sink it holds."""

    __slots__ = ("sinks",)

    def __init__(self, *sinks: UsageSink) -> None:
        if not sinks:
            raise TypeError("fan_out() needs at least one usage sink")
        for sink in sinks:
            if not callable(getattr(sink, "record", None)):
                raise TypeError(
                    f"fan_out() takes usage sinks (objects with a record method), not {type(sink).__name__}"
                )
        self.sinks: tuple[UsageSink, ...] = sinks

    def __repr__(self) -> str:
        return f"FanOut({', '.join(type(sink).__name__ for sink in self.sinks)})"

    def record(
        self,
        result: StreamResult,
        *,
        provider: str,
        model: str,
        tags: Mapping[str, str] | None = None,
        call_id: str | None = None,
        attempt: int = 1,
        final: bool = True,
    ) -> None:
        """Record the attempt in every sink, under one call id when none is given (the sinks'
        rows and spans of one attempt then name the same call)."""
        if call_id is None:
            call_id = uuid.uuid4().hex[:16]
        self._each(
            "record",
            (result,),
            {
                "provider": provider,
                "model": model,
                "tags": tags,
                "call_id": call_id,
                "attempt": attempt,
                "final": final,
            },
        )

    # --- hooks found by name: each reaches the sinks that have it ---------------------------

    def set_progress(self, done: int, total: int) -> None:
        self._each("set_progress", (done, total), {})

    def clear_progress(self) -> None:
        self._each("clear_progress", (), {})

    def agent_run_started(self, run_id: str, *, provider: str, model: str) -> None:
        self._each("agent_run_started", (run_id,), {"provider": provider, "model": model})

    def agent_step_started(self, run_id: str, step: int) -> None:
        self._each("agent_step_started", (run_id, step), {})

    def agent_step_ended(self, run_id: str, step: int, *, error_code: str | None = None) -> None:
        self._each("agent_step_ended", (run_id, step), {"error_code": error_code})

    def agent_tool_ran(self, run_id: str, step: int, **details: Any) -> None:
        self._each("agent_tool_ran", (run_id, step), details)

    def agent_run_ended(self, run_id: str, *, outcome: str, error_code: str | None = None) -> None:
        self._each("agent_run_ended", (run_id,), {"outcome": outcome, "error_code": error_code})

    def flush(self) -> None:
        self._each("flush", (), {})

    def close(self) -> None:
        self._each("close", (), {})

    def _each(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        failure: Exception | None = None
        for sink in self.sinks:
            method = getattr(sink, name, None)
            if method is None:
                continue
            try:
                method(*args, **kwargs)
            except Exception as exc:  # the others still get it; the first failure is raised after
                if failure is None:
                    failure = exc
        if failure is not None:
            raise failure


def fan_out(*sinks: UsageSink) -> FanOut:
    """One usage sink for several: ``log=cs.fan_out(cs.UsageLog(path="usage/"), cs.otel_sink())``
    writes each attempt's row to the Parquet dataset and its span to OpenTelemetry."""
    return FanOut(*sinks)
