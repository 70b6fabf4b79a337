"""The data model of a read session log: ``DshSession`` → ``DshStep`` → ``DshAttempt``, and ``DshProblem``.

An attempt holds its logged items (events and packed rows) as the reader
found them; its ``StreamResult`` is built from them on first access
(``chunkscope.sources.dsh._materialize``). ``DshSession.to_frame`` is the
usage layer's projection (pandas): a session read by ``chunkscope.usage.read_dsh_session``
(``cs.read_dsh_session``) carries it; this layer imports nothing below it, so a session read
here has none and says where to get one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from chunkscope.protocol import BlockAssembler, StreamResult, Timings, check

from ._materialize import materialize, message_usage

__all__ = ["AttemptKind", "DshAttempt", "DshProblem", "DshSession", "DshStep", "FrameProjection"]

AttemptKind = Literal["step", "compaction"]


@dataclass(frozen=True)
class DshProblem:
    """A line skipped by ``read_dsh_session(..., strict=False)``: where, the stable code, why."""

    line: int
    code: str
    message: str


# One logged item of an attempt: (time_ms | None, chunk) for an event, or
# (time0_ms | None, row_type, row_data) for a packed row of deltas.
_Item = tuple[Any, ...]


@dataclass(eq=False)
class DshAttempt:
    """One model call attempt as the log recorded it.

    ``result`` is its ``StreamResult`` (chunks in log order, checked under
    ``dsh``, timings relative to ``started_ms``). ``final`` is False when a
    retry of the same step follows; ``retry`` is the ``llm/retry`` event data
    written after it. ``synthesized`` says the reader added chunks the log did
    not hold (an ``aborted`` finish, or chunks rebuilt from a message or a
    retry's failure); ``usage_from_message`` says the usage came from the
    ``assistant/message`` because no usage chunk was logged.
    """

    session_id: str
    turn: int
    step: int
    attempt: int
    line: int
    kind: AttemptKind = "step"
    provider: str | None = None
    model: str | None = None
    started_ms: float | None = None
    ended_ms: float | None = None
    final: bool = True
    retry: dict[str, Any] | None = None
    message: dict[str, Any] | None = None
    interrupted: bool = False
    synthesized: bool = False
    timing_adjusted: bool = False
    _items: list[_Item] = field(default_factory=list, repr=False)
    _usage_chunk: bool = field(default=False, repr=False)
    _finished: bool = field(default=False, repr=False)
    _result: StreamResult | None = field(default=None, repr=False)

    @property
    def call_id(self) -> str:
        """Groups the attempts of one call: ``<session>:<turn>:<step>`` (``…:compaction:<line>``)."""
        if self.kind == "compaction":
            return f"{self.session_id}:compaction:{self.line}"
        return f"{self.session_id}:{self.turn}:{self.step}"

    @property
    def usage_from_message(self) -> bool:
        """True when no usage chunk was logged and the usage comes from the ``assistant/message``."""
        return not self._usage_chunk and self.message is not None and message_usage(self.message) is not None

    @property
    def result(self) -> StreamResult:
        """The attempt's ``StreamResult`` (built on first access, then cached)."""
        if self._result is None:
            self._result = self._build()
        return self._result

    def _build(self) -> StreamResult:
        chunks, times, foreign, adjusted = materialize(self._items)
        if adjusted:
            self.timing_adjusted = True
        violations = check(chunks, "dsh")
        assembler = BlockAssembler()
        push = assembler.push
        if foreign:
            for chunk in chunks:
                # A non-chunk is kept as it came (check() reported it as schema); nothing to assemble.
                with contextlib.suppress(ValidationError):
                    push(chunk)
        else:
            for chunk in chunks:
                push(chunk)
        usage = assembler.usage
        if usage is None and not self._usage_chunk and self.message is not None:
            usage = message_usage(self.message)
        return StreamResult(
            chunks=chunks,
            blocks=assembler.blocks(),
            usage=usage,
            finish=assembler.finish if assembler.finished else None,
            error=None,
            violations=violations,
            timings=self._timings(times, chunks),
            profile="dsh",
        )

    def _timings(self, times: list[float | None], chunks: list[Any]) -> Timings:
        start = self.started_ms
        if start is None or not times or None in times:
            return Timings()
        rel = [(t - start) / 1000.0 for t in times]  # type: ignore[operator]
        end = self.ended_ms if self.ended_ms is not None else times[-1]
        total = max(rel[-1], (end - start) / 1000.0)  # type: ignore[operator]
        # the first content and text deltas too: the harness's own time to first token (step start to
        # the first delta carrying output)
        return Timings.of_arrivals(rel, total_s=total, started_at=start / 1000.0, chunks=chunks)

    def __repr__(self) -> str:
        flags = "".join(
            f", {name}"
            for name in ("synthesized", "interrupted", "usage_from_message")
            if getattr(self, name)
        )
        return (
            f"DshAttempt({self.call_id} #{self.attempt}, {self.provider}/{self.model}, "
            f"final={self.final}, items={len(self._items)}{flags})"
        )


@dataclass(eq=False)
class DshStep:
    """One step of a turn (one model call plus its retries); ``result`` is the final attempt's."""

    turn: int
    step: int
    attempts: list[DshAttempt] = field(default_factory=list)

    @property
    def result(self) -> StreamResult:
        """The last attempt's ``StreamResult``: what the harness went on with."""
        return self.attempts[-1].result

    @property
    def retries(self) -> int:
        """How many attempts came before the final one."""
        return len(self.attempts) - 1


@dataclass(eq=False)
class DshSession:
    """A session log, read: its header, steps (in log order), compaction calls, turn ends and problems.

    ``attempts`` lists every attempt (steps' and compactions') in log order;
    ``results`` is one ``StreamResult`` per step (the final attempt's), ready
    for ``cs.show`` / ``Timeline``.
    """

    path: str
    header: dict[str, Any]
    steps: list[DshStep] = field(default_factory=list)
    compactions: list[DshAttempt] = field(default_factory=list)
    turn_ends: dict[int, dict[str, Any]] = field(default_factory=dict)
    problems: list[DshProblem] = field(default_factory=list)
    lines: int = 0
    # The usage layer's frame projection, given by the reader that made this session (never an
    # import's side effect): None for a session read by this layer alone.
    projection: FrameProjection | None = field(default=None, repr=False)

    @property
    def id(self) -> str:
        """The session id from the header."""
        value = self.header.get("id")
        return value if isinstance(value, str) else ""

    @property
    def attempts(self) -> list[DshAttempt]:
        """Every attempt, steps' and compactions', in the order the log started them."""
        every = [attempt for step in self.steps for attempt in step.attempts] + list(self.compactions)
        every.sort(key=lambda attempt: attempt.line)
        return every

    @property
    def results(self) -> list[StreamResult]:
        """One ``StreamResult`` per step: the final attempt's."""
        return [step.result for step in self.steps]

    def record_into(self, sink: Any, *, tags: Mapping[str, str] | None = None) -> Any:
        """Record every attempt into ``sink`` (a ``UsageSink`` such as ``UsageLog``); returns ``sink``.

        Results not built yet are built for the record and not cached (so a
        large session is never held as chunk models all at once). Each attempt
        is recorded with its provider and model (``"unknown"`` when
        the log does not say), ``call_id``, attempt number and ``final`` flag,
        and tags ``session``, ``turn``, ``step`` and ``kind`` (plus ``tags``).
        """
        for attempt in self.attempts:
            # A result not already built is built for the record and not kept: a big log's frame
            # never holds every chunk of the session at once.
            result = attempt._result if attempt._result is not None else attempt._build()
            sink.record(
                result,
                provider=attempt.provider or "unknown",
                model=attempt.model or "unknown",
                tags={
                    **(tags or {}),
                    "session": self.id,
                    "turn": str(attempt.turn),
                    "step": str(attempt.step),
                    "kind": attempt.kind,
                },
                call_id=attempt.call_id,
                attempt=attempt.attempt,
                final=attempt.final,
            )
        return sink

    def to_frame(self, *, prices: Any = None, tags: Mapping[str, str] | None = None) -> Any:
        """The usage frame: one row per attempt (``UsageLog.to_frame`` columns and dtypes), then
        ``session_id``, ``turn``, ``step``, ``kind`` and ``synthesized``.

        ``prices`` (a ``PriceTable``) fills ``cost``. ``duration_s`` is NaN for
        an attempt whose log has no times (``started_at`` and ``ttfc_s`` are
        missing then too). The projection is the usage layer's (pandas): a session read by
        ``cs.read_dsh_session`` (``chunkscope.usage``) has it; one read by
        ``chunkscope.sources.read_dsh_session`` (no pandas) raises ``TypeError`` saying so.
        """
        if self.projection is None:
            raise TypeError(
                "DshSession.to_frame: this session was read by chunkscope.sources, which has no frames; "
                "read it with cs.read_dsh_session (chunkscope.usage) or pass it to "
                "chunkscope.usage.session_frame"
            )
        return self.projection(self, prices, tags)

    def __repr__(self) -> str:
        attempts = sum(len(step.attempts) for step in self.steps)
        return (
            f"DshSession({self.id!r}, steps={len(self.steps)}, attempts={attempts}, "
            f"compactions={len(self.compactions)}, problems={len(self.problems)}, lines={self.lines})"
        )


FrameProjection = Callable[[DshSession, Any, "Mapping[str, str] | None"], Any]
"""``(session, prices, tags) -> frame``: the usage layer's frame of a session."""
