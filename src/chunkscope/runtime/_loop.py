"""``AgentLoop``: stream a step, run the tools it asks for, feed the results back, repeat.

Every step's attempts, every chunk, tool call, tool result and retry wait is
an event (``run`` yields them); the ``AgentResult`` at the end keeps every
step's ``StreamResult``, every attempt's usage and the ``LlmError`` of a failed
step. A tool problem (arguments that are not JSON or do not fit the schema,
an unknown tool, a tool that raises — ``CancelledError`` included, unless the
run itself is being cancelled) goes back to the model as an error tool
result: the loop does not crash. A tool raising ``KeyboardInterrupt`` or
``SystemExit`` ends the run: the other tools are cancelled, the result has
outcome ``aborted`` (an ``ABORTED`` error naming the exception), ``LoopEnd``
is yielded and ``last_result`` set, and then the exception is raised again,
so Ctrl-C and ``sys.exit()`` still stop the program. The ``AbortSignal``
stops the stream, the running tools and a backoff wait at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Union, runtime_checkable

from chunkscope.adapters import AbortSignal, GenerateOptions, LlmAdapter, turn_paused
from chunkscope.protocol import (
    AnyChunk,
    LlmError,
    Message,
    StreamResult,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
    ToolResultBlock,
    UsageSink,
    collect,
    parse_message,
)

from ._registry import LlmRuntime
from ._retry import RetryDecision, RetryPolicy
from ._sync import run_sync
from ._tools import DEFAULT_TOOL_TIMEOUT_S, Tool, ToolArgumentsError, check_timeout

__all__ = [
    "AgentEvent",
    "AgentLoop",
    "AgentResult",
    "AgentRun",
    "AttemptUsage",
    "ChunkEvent",
    "LoopEnd",
    "OutputDiscarded",
    "RetryScheduled",
    "StepEnd",
    "StepRecord",
    "StepStart",
    "ToolCallEvent",
    "ToolOutcome",
    "ToolResultEvent",
]

_MAX_RESULT_CHARS = 100_000
Outcome = Literal["done", "max_steps", "error", "aborted"]


# --- events ----------------------------------------------------------------------
# ``t`` is seconds since the run started (the loop's clock).


@dataclass(frozen=True)
class StepStart:
    """A step (one model call, with its retries) begins; ``step`` counts from 1."""

    t: float
    step: int
    type: Literal["step-start"] = "step-start"


@dataclass(frozen=True)
class ChunkEvent:
    """One chunk of attempt ``attempt`` (from 1) of step ``step``."""

    t: float
    step: int
    attempt: int
    chunk: AnyChunk
    type: Literal["chunk"] = "chunk"


@dataclass(frozen=True)
class RetryScheduled:
    """Attempt ``attempt`` failed with ``error``; retry number ``retry`` follows after ``delay_ms``."""

    t: float
    step: int
    attempt: int
    retry: int
    delay_ms: float
    error: LlmError
    from_retry_after: bool = False
    type: Literal["retry"] = "retry"


@dataclass(frozen=True)
class OutputDiscarded:
    """The failed attempt had already delivered ``chunks`` chunks; the retry starts the step over."""

    t: float
    step: int
    attempt: int
    chunks: int
    type: Literal["discarded"] = "discarded"


@dataclass(frozen=True)
class ToolCallEvent:
    """The model asked for ``call`` (its id, name and raw JSON arguments); the tool starts now."""

    t: float
    step: int
    call: ToolCallBlock
    type: Literal["tool-call"] = "tool-call"


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call returned to the model: text, error flag, how long it ran (seconds)."""

    call: ToolCallBlock
    content: str
    is_error: bool
    duration_s: float

    def block(self) -> ToolResultBlock:
        """The ``tool-result`` block sent back to the model."""
        return ToolResultBlock(
            tool_call_id=self.call.id, content=[TextBlock(text=self.content)], is_error=self.is_error or None
        )


@dataclass(frozen=True)
class ToolResultEvent:
    """A tool call finished (``outcome.is_error``: it failed, and the model is told why)."""

    t: float
    step: int
    outcome: ToolOutcome
    type: Literal["tool-result"] = "tool-result"


@dataclass(frozen=True)
class StepEnd:
    """A step ended: its final attempt's ``result`` and every attempt's."""

    t: float
    step: int
    result: StreamResult
    attempts: tuple[StreamResult, ...]
    type: Literal["step-end"] = "step-end"


@dataclass(frozen=True)
class AttemptUsage:
    """The usage of one attempt (None when the attempt reported none)."""

    step: int
    attempt: int
    usage: TokenUsage | None
    final: bool


@dataclass
class StepRecord:
    """One step: its final ``result``, every attempt's result, and the tools it ran."""

    step: int
    result: StreamResult
    attempts: list[StreamResult]
    tools: list[ToolOutcome] = field(default_factory=list)


@dataclass
class AgentResult:
    """The whole run.

    ``outcome``: ``done`` (a non-tool finish), ``max_steps``, ``error`` (a step
    failed for good: ``error`` is its ``LlmError`` with code, status, request
    id and cause chain) or ``aborted``. ``steps`` keep every step's
    ``StreamResult`` and attempts; ``usage`` every attempt's usage;
    ``retries`` every scheduled retry; ``messages`` the conversation at the end.
    """

    outcome: Outcome
    steps: list[StepRecord]
    messages: list[Message]
    usage: list[AttemptUsage]
    retries: list[RetryScheduled]
    error: LlmError | None = None
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the run ended with the model's answer."""
        return self.outcome == "done"

    @property
    def aborted(self) -> bool:
        """True when the ``AbortSignal`` (or task cancellation) stopped the run."""
        return self.outcome == "aborted"

    @property
    def text(self) -> str:
        """The last step's text."""
        return self.steps[-1].result.text if self.steps else ""

    @property
    def tool_outcomes(self) -> list[ToolOutcome]:
        """Every tool call's outcome, in order."""
        return [outcome for step in self.steps for outcome in step.tools]

    def total_usage(self) -> dict[str, int]:
        """Tokens summed over every attempt (retried ones included: they were billed)."""
        out = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0}
        for entry in self.usage:
            if entry.usage is None:
                continue
            for name in out:
                out[name] += getattr(entry.usage, name, None) or 0
        return out

    def __repr__(self) -> str:
        code = f", error={self.error.code!r}" if self.error is not None else ""
        return (
            f"AgentResult(outcome={self.outcome!r}{code}, steps={len(self.steps)}, "
            f"tools={len(self.tool_outcomes)}, retries={len(self.retries)})"
        )


@dataclass(frozen=True)
class LoopEnd:
    """The run ended; ``result`` is the ``AgentResult``."""

    t: float
    result: AgentResult
    type: Literal["loop-end"] = "loop-end"


AgentEvent = Union[
    StepStart, ChunkEvent, RetryScheduled, OutputDiscarded, ToolCallEvent, ToolResultEvent, StepEnd, LoopEnd
]
"""Every event ``AgentLoop.run`` yields (dispatch on ``.type``)."""


# --- the run -------------------------------------------------------------------------


class AgentRun:
    """One run of an ``AgentLoop``: async-iterate it for events; ``result`` once it ended.

    Iterate it once (``async for event in run``), or ``await run.finish()`` to
    drain it; ``cs.show(run)`` draws it as one timeline.
    """

    def __init__(self, events: AsyncIterator[AgentEvent], title: str = "") -> None:
        self._events = events
        self.title = title
        self.result: AgentResult | None = None
        self._started = False

    def __aiter__(self) -> AsyncIterator[AgentEvent]:
        if self._started:
            raise RuntimeError("an AgentRun can be iterated once; start a new loop.run(...)")
        self._started = True
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[AgentEvent]:
        try:
            async for event in self._events:
                if isinstance(event, LoopEnd):
                    self.result = event.result
                yield event
        finally:
            await self._events.aclose()  # type: ignore[attr-defined]

    async def finish(self) -> AgentResult:
        """Drain the remaining events and return the result."""
        async for _ in self:
            pass
        assert self.result is not None
        return self.result

    def __await__(self) -> Generator[Any, None, AgentResult]:
        return self.finish().__await__()


@runtime_checkable
class AgentRunObserver(Protocol):
    """What a ``UsageSink`` may add to hear when agent runs and steps start and end.

    ``AgentLoop`` calls these on its ``log`` when the log has them (an
    OpenTelemetry sink opens and closes its ``invoke_agent`` and step spans
    with them); a plain ``UsageLog`` has none. Attempts recorded in between
    carry the tags ``agent_run`` (= ``run_id``) and ``step``. The runtime
    never imports the sink's layer: this protocol is all the two share.

    An observer may also have ``agent_tool_ran(run_id, step, *, name, call_id,
    duration_s, error_type)``, called as each tool run ends (``error_type`` the
    failure's kind, such as ``TimeoutError``, or None): the sink's
    ``execute_tool`` span under the step. Optional, so an observer written
    before it still matches this protocol.
    """

    def agent_run_started(self, run_id: str, *, provider: str, model: str) -> None: ...

    def agent_step_started(self, run_id: str, step: int) -> None: ...

    def agent_step_ended(self, run_id: str, step: int, *, error_code: str | None = None) -> None: ...

    def agent_run_ended(self, run_id: str, *, outcome: str, error_code: str | None = None) -> None: ...


class _SilentObserver:
    """The observer of a run whose log hears nothing of runs and steps."""

    def agent_run_started(self, run_id: str, *, provider: str, model: str) -> None:
        pass

    def agent_step_started(self, run_id: str, step: int) -> None:
        pass

    def agent_step_ended(self, run_id: str, step: int, *, error_code: str | None = None) -> None:
        pass

    def agent_run_ended(self, run_id: str, *, outcome: str, error_code: str | None = None) -> None:
        pass


_SILENT: AgentRunObserver = _SilentObserver()


class _Clock:
    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._start = clock()

    def __call__(self) -> float:
        return self._clock() - self._start


_END = object()


class AgentLoop:
    """A small tool-using agent loop over an ``LlmRuntime`` (or a single adapter).

    ``tools`` are ``@tool`` functions (or plain callables, wrapped on the fly).
    Each step streams one model call (retried per ``retry``), assembles it,
    runs the requested tool calls concurrently, appends the assistant message
    and the tool results, and continues until a finish that is not
    ``tool-calls`` or ``max_steps`` steps. A ``stop`` finish that paused the
    turn (Anthropic ``pause_turn``; ``adapters.turn_paused``) is not the end:
    the assistant message goes back as the next step, which continues it.
    ``log`` (a ``UsageSink``) records every attempt; ``profile`` is the rule
    profile the steps are checked under.

    ``tool_timeout`` (seconds; default 60, None: no bound) bounds each tool
    call whose tool sets no ``timeout`` of its own: a call that runs longer
    becomes an error tool result the model sees ("the tool did not finish
    within … s"). A sync tool that never returns keeps its daemon thread, but
    neither the run nor ``run_sync``/``asyncio.run`` waits for it, on a
    timeout or an abort.
    """

    def __init__(
        self,
        runtime_or_adapter: LlmRuntime | LlmAdapter,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        retry: RetryPolicy | None = None,
        max_steps: int = 10,
        log: UsageSink | None = None,
        profile: str = "strict",
        clock: Callable[[], float] = time.perf_counter,
        tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT_S,
    ) -> None:
        self.tool_timeout = check_timeout(tool_timeout, "tool_timeout")
        if isinstance(runtime_or_adapter, LlmRuntime):
            self.runtime = runtime_or_adapter
            self._default_provider: str | None = None
        elif isinstance(runtime_or_adapter, LlmAdapter):
            self.runtime = LlmRuntime()
            self._default_provider = runtime_or_adapter.provider
            self.runtime.register_adapter(self._default_provider, runtime_or_adapter)
        else:
            raise TypeError("AgentLoop needs an LlmRuntime or an LlmAdapter")
        self.tools: dict[str, Tool] = {}
        for item in tools:
            t = item if isinstance(item, Tool) else Tool(item)
            if t.name in self.tools:
                raise ValueError(f"two tools are named {t.name!r}")
            self.tools[t.name] = t
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.retry = retry if retry is not None else RetryPolicy()
        self.max_steps = max_steps
        self.log = log
        self.profile = profile
        self._clock = clock
        self.last_result: AgentResult | None = None
        """The result of the latest run that ended (also after an abort or a cancellation)."""

    def run(
        self,
        prompt: str | Iterable[Message | Mapping[str, Any]],
        *,
        model: str,
        provider: str | None = None,
        signal: AbortSignal | None = None,
        **options: Any,
    ) -> AgentRun:
        """Start a run: ``prompt`` (a user message's text) or a list of messages.

        Returns an ``AgentRun`` to iterate for events (``StepStart``,
        ``ChunkEvent``, ``ToolCallEvent``, ``ToolResultEvent``,
        ``RetryScheduled``, ``OutputDiscarded``, ``StepEnd``, ``LoopEnd``).
        ``options`` are further ``GenerateOptions`` fields (``system``,
        ``temperature``, ...); the tools are offered on every step.
        """
        if provider is None:
            provider = self._default_provider
            if provider is None:
                routes = self.runtime.list_providers()
                if len(routes) != 1:
                    raise ValueError(f"name the provider: the runtime routes {routes}")
                provider = routes[0]
        if isinstance(prompt, str):
            messages = [Message(role="user", content=[TextBlock(text=prompt)])]
        else:
            messages = [parse_message(m) for m in prompt]
        specs = [t.spec for t in self.tools.values()] or None
        base = GenerateOptions(provider, model, messages, tools=specs, signal=signal, **options)
        return AgentRun(self._run(base, signal), title=f"{provider} · {model}")

    def run_sync(self, prompt: str | Iterable[Message | Mapping[str, Any]], **kwargs: Any) -> AgentResult:
        """``run`` to the end, for code without asyncio; safe inside a running Jupyter loop."""
        return run_sync(self.run(prompt, **kwargs).finish())

    # --- the engine -------------------------------------------------------------------

    async def _run(self, base: GenerateOptions, signal: AbortSignal | None) -> AsyncIterator[AgentEvent]:
        now = _Clock(self._clock)
        run_id = uuid.uuid4().hex[:12]
        messages = list(base.messages)
        steps: list[StepRecord] = []
        usage: list[AttemptUsage] = []
        retries: list[RetryScheduled] = []
        outcome: Outcome = "max_steps"
        error: LlmError | None = None
        fatal: list[BaseException] = []  # a tool's KeyboardInterrupt / SystemExit, re-raised after LoopEnd
        observer = self.log if isinstance(self.log, AgentRunObserver) else _SILENT
        observer.agent_run_started(run_id, provider=base.provider, model=base.model)
        try:
            for step in range(1, self.max_steps + 1):
                observer.agent_step_started(run_id, step)
                yield StepStart(now(), step)
                options = base.replace(messages=messages)
                attempts: list[StreamResult] = []
                tries = self._attempts(options, step, signal, now, run_id, attempts, usage, retries)
                async with contextlib.aclosing(tries):
                    async for event in tries:
                        yield event
                result = attempts[-1]
                record = StepRecord(step, result, attempts)
                steps.append(record)
                ended = self._ended_by(result, signal, base.provider)
                if ended is not None:
                    yield self._step_end(observer, run_id, now(), step, result, attempts)
                    outcome, error = ended
                    break
                if _paused(result):
                    # The provider paused a long turn (Anthropic pause_turn): sending the
                    # assistant message back continues it, as the next step.
                    messages.append(result.message())
                    yield self._step_end(observer, run_id, now(), step, result, attempts)
                    continue
                if not _wants_tools(result):
                    yield self._step_end(observer, run_id, now(), step, result, attempts)
                    outcome = "done"
                    break
                messages.append(result.message())
                ran = getattr(observer, "agent_tool_ran", None)
                report = functools.partial(ran, run_id, step) if callable(ran) else None
                calls = result.tool_calls
                async for tool_event in self._tools(calls, step, signal, now, record, fatal, report):
                    yield tool_event
                yield self._step_end(observer, run_id, now(), step, result, attempts)
                stopped = self._stopped_by(fatal, signal, base.provider)
                if stopped is not None:
                    outcome, error = stopped
                    break
                messages.append(Message(role="user", content=[o.block() for o in record.tools]))
        except (asyncio.CancelledError, GeneratorExit) as exc:
            # cancelled, or the consumer stopped iterating: the run ends where it was
            outcome, error = "aborted", _stopped_error(exc)
            raise
        finally:
            final = AgentResult(outcome, steps, messages, usage, retries, error, now())
            self.last_result = final
            observer.agent_run_ended(run_id, outcome=outcome, error_code=_code_of(error))
        yield LoopEnd(now(), final)
        if fatal:
            raise fatal[0]  # Ctrl-C / sys.exit() in a tool still stops the program, after the result

    def _ended_by(
        self, result: StreamResult, signal: AbortSignal | None, provider: str
    ) -> tuple[Outcome, LlmError] | None:
        """How a step's result ends the run (aborted, or failed), or None when the run goes on."""
        failure = _failure_of(result)
        if signal is not None and signal.aborted:
            return "aborted", self._abort_error(provider, signal, failure)
        if failure is not None:
            return ("aborted" if failure.code == "ABORTED" else "error"), failure
        return None

    def _stopped_by(
        self, fatal: list[BaseException], signal: AbortSignal | None, provider: str
    ) -> tuple[Outcome, LlmError] | None:
        """How the run ends after a step's tools ran (a tool's Ctrl-C, an abort), or None."""
        if fatal:
            return "aborted", LlmError(f"a tool raised {type(fatal[0]).__name__}: the run stopped", "ABORTED")
        if signal is not None and signal.aborted:
            return "aborted", self._abort_error(provider, signal, None)
        return None

    async def _attempts(
        self,
        options: GenerateOptions,
        step: int,
        signal: AbortSignal | None,
        now: _Clock,
        run_id: str,
        attempts: list[StreamResult],
        usage: list[AttemptUsage],
        retries: list[RetryScheduled],
    ) -> AsyncGenerator[AgentEvent, None]:
        """Step ``step``'s attempts, retried as the policy decides; each result is appended to
        ``attempts`` (the last is the step's), its usage to ``usage``, each retry to ``retries``."""
        retries_here = 0
        while True:
            attempt = len(attempts) + 1
            holder: list[StreamResult] = []
            delivered = 0
            async for event in self._attempt(options, step, attempt, signal, now, holder):
                delivered += 1
                yield event
            result = holder[0]
            attempts.append(result)
            failure = _failure_of(result)
            decision = self._retry_decision(failure, delivered, signal, retries_here)
            self._record(result, options, run_id, step, attempt, final=decision is None)
            usage.append(AttemptUsage(step, attempt, result.usage, decision is None))
            if decision is None or failure is None:
                return
            retries_here += 1
            scheduled = RetryScheduled(
                now(), step, attempt, decision.retry, decision.delay_ms, failure, decision.from_retry_after
            )
            retries.append(scheduled)
            yield scheduled
            if delivered:
                yield OutputDiscarded(now(), step, attempt, delivered)
            if not await self.retry.wait(decision.delay_ms, signal):
                return  # aborted during the wait: the abort is the outcome

    def _retry_decision(
        self, failure: LlmError | None, delivered: int, signal: AbortSignal | None, retries_so_far: int
    ) -> RetryDecision | None:
        """Whether (and after what wait) a failed attempt is tried again; None: its result stands.

        An attempt whose output reached the caller is restarted only if the policy allows it.
        """
        may_retry = delivered == 0 or self.retry.restart_after_output
        if failure is None or not may_retry or _aborted(signal, failure):
            return None
        return self.retry.decide(failure, retries_so_far)

    async def _attempt(
        self,
        options: GenerateOptions,
        step: int,
        attempt: int,
        signal: AbortSignal | None,
        now: _Clock,
        holder: list[StreamResult],
    ) -> AsyncIterator[ChunkEvent]:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        source = _abortable(self.runtime.stream(options), signal)

        async def tee() -> AsyncIterator[AnyChunk]:
            try:
                async for chunk in source:
                    queue.put_nowait(chunk)
                    yield chunk
            finally:
                queue.put_nowait(_END)

        task = asyncio.ensure_future(collect(tee(), profile=self.profile))
        try:
            while True:
                item = await queue.get()
                if item is _END:
                    break
                yield ChunkEvent(now(), step, attempt, item)
            holder.append(await task)
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    async def _tools(
        self,
        calls: Sequence[ToolCallBlock],
        step: int,
        signal: AbortSignal | None,
        now: _Clock,
        record: StepRecord,
        fatal: list[BaseException],
        report: Callable[..., None] | None = None,
    ) -> AsyncIterator[AgentEvent]:
        outcomes: dict[int, ToolOutcome] = {}
        pending: dict[asyncio.Future[ToolOutcome], int] = {}
        for i, call in enumerate(calls):
            yield ToolCallEvent(now(), step, call)
            pending[asyncio.ensure_future(self._call_tool(call, now, fatal, report))] = i
        aborted = asyncio.ensure_future(signal.wait()) if signal is not None else None
        try:
            while pending:
                done = await _next_done(pending, aborted)
                if done is None:
                    break  # aborted: the unfinished tools are cancelled
                for task in done:
                    i = pending.pop(task)
                    outcomes[i] = task.result()
                    yield ToolResultEvent(now(), step, outcomes[i])
                if fatal:
                    break  # the other tools are cancelled: the run stops
        finally:
            _cancel_all([*pending, aborted])
        record.tools.extend(outcomes[i] for i in sorted(outcomes))

    async def _call_tool(
        self,
        call: ToolCallBlock,
        now: _Clock,
        fatal: list[BaseException],
        report: Callable[..., None] | None = None,
    ) -> ToolOutcome:
        start = now()
        failure: str | None = None  # the failure's kind, for an observer (never its text)
        try:
            target, limit = self._tool_and_limit(call.name)
            scope = asyncio.timeout(limit)
            async with scope:
                value = await target.invoke(call.arguments)
            content, is_error = _render(value), False
        except ToolArgumentsError as exc:
            content, is_error, failure = f"error: {exc}", True, type(exc).__name__
        except Exception as exc:  # the tool's own failure goes back to the model, not up the stack
            content, is_error = _failure_text(exc, scope, limit), True
            failure = "TimeoutError" if scope.expired() else type(exc).__name__
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the run cancels its tools (an abort, a cancelled run): not the tool's failure
            content, is_error = f"error: the tool raised CancelledError: {exc}".rstrip(": "), True
            failure = "CancelledError"
        except (KeyboardInterrupt, SystemExit) as exc:
            # Escaping a task, these would tear through the event loop with no result: the run
            # ends (outcome "aborted", a LoopEnd) and the exception is raised again after it.
            fatal.append(exc)
            failure = type(exc).__name__
            content, is_error = f"error: the tool raised {failure}", True
        outcome = ToolOutcome(call, _capped(content), is_error, now() - start)
        if report is not None:
            report(name=call.name, call_id=call.id, duration_s=outcome.duration_s, error_type=failure)
        return outcome

    def _tool_and_limit(self, name: str) -> tuple[Tool, float | None]:
        """The tool the model named and its limit (its own, else the loop's), or ``ToolArgumentsError``."""
        target = self.tools.get(name)
        if target is None:
            known = ", ".join(sorted(self.tools)) or "none"
            raise ToolArgumentsError(f"there is no tool named {name!r} (tools: {known})")
        return target, target.timeout if target.timeout is not None else self.tool_timeout

    def _abort_error(self, provider: str, signal: AbortSignal, failure: LlmError | None) -> LlmError:
        """The run's ``ABORTED`` error: the adapter's own (already redacted), else the reason, redacted."""
        if failure is not None and failure.code == "ABORTED":
            return failure
        reason = signal.reason
        text = "the run was aborted" + (f" ({reason})" if reason is not None else "")
        try:
            text = self.runtime.adapter_for(provider).redact(text)
        except Exception:  # no adapter to ask, or one whose redact fails: the reason is left out
            text = "the run was aborted"
        return LlmError(text, "ABORTED")

    @staticmethod
    def _step_end(
        observer: AgentRunObserver,
        run_id: str,
        t: float,
        step: int,
        result: StreamResult,
        attempts: list[StreamResult],
    ) -> StepEnd:
        observer.agent_step_ended(run_id, step, error_code=_code_of(_failure_of(result)))
        return StepEnd(t, step, result, tuple(attempts))

    def _record(
        self,
        result: StreamResult,
        options: GenerateOptions,
        run_id: str,
        step: int,
        attempt: int,
        *,
        final: bool,
    ) -> None:
        if self.log is None:
            return
        self.log.record(
            result,
            provider=options.provider,
            model=options.model,
            tags={"agent_run": run_id, "step": str(step)},
            call_id=f"{run_id}-{step}",
            attempt=attempt,
            final=final,
        )


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _stopped_error(exc: BaseException) -> LlmError:
    """The ``ABORTED`` error of a run its task's cancellation or its consumer stopped."""
    if isinstance(exc, GeneratorExit):
        return LlmError("the consumer stopped reading the agent run", "ABORTED")
    return LlmError("the task running the agent loop was cancelled", "ABORTED")


def _code_of(error: LlmError | None) -> str | None:
    return error.code if error is not None else None


def _paused(result: StreamResult) -> bool:
    """The provider paused the turn (it goes on when the assistant message is sent back)."""
    return bool(result.chunks) and turn_paused(result.chunks[-1])


def _wants_tools(result: StreamResult) -> bool:
    """The step finished asking for tool calls, and made some."""
    finish = result.finish
    return finish is not None and finish.kind == "tool-calls" and bool(result.tool_calls)


def _failure_of(result: StreamResult) -> LlmError | None:
    if result.error is not None:
        return result.error
    finish = result.finish
    if finish is not None and finish.failure is not None:
        return LlmError.from_failure(finish.failure)
    return None


def _aborted(signal: AbortSignal | None, failure: LlmError) -> bool:
    return failure.code == "ABORTED" or (signal is not None and signal.aborted)


async def _abortable(stream: AsyncIterator[AnyChunk], signal: AbortSignal | None) -> AsyncIterator[AnyChunk]:
    """``stream``, cut short with ``LlmError`` ``ABORTED`` the moment ``signal`` fires."""
    if signal is None:
        async for chunk in stream:
            yield chunk
        return
    aborted = asyncio.ensure_future(signal.wait())
    try:
        while True:
            step: asyncio.Future[AnyChunk] = asyncio.ensure_future(stream.__anext__())
            await asyncio.wait({step, aborted}, return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                step.cancel()
                with contextlib.suppress(BaseException):
                    await step
                raise LlmError("the request was aborted by the caller", "ABORTED")
            try:
                chunk = step.result()
            except StopAsyncIteration:
                return
            yield chunk
    finally:
        if not aborted.done():
            aborted.cancel()
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(BaseException):
                await aclose()


def _failure_text(exc: Exception, scope: asyncio.Timeout, limit: float | None) -> str:
    """What the model is told of a tool's failure: its time limit ran out, or the exception it raised."""
    if isinstance(exc, TimeoutError) and scope.expired():
        return f"error: the tool did not finish within {limit:g} s and was stopped (timed out)"
    return f"error: the tool raised {type(exc).__name__}: {exc}"


def _capped(content: str) -> str:
    """A tool result cut to ``_MAX_RESULT_CHARS`` (a marker says it was cut)."""
    if len(content) > _MAX_RESULT_CHARS:
        return content[:_MAX_RESULT_CHARS] + " …(cut)"
    return content


async def _next_done(
    pending: Mapping[asyncio.Future[ToolOutcome], int], aborted: asyncio.Future[Any] | None
) -> set[asyncio.Future[Any]] | None:
    """The tool calls that finished next (at least one); None when the run was aborted first."""
    waiting: set[asyncio.Future[Any]] = set(pending)
    if aborted is not None:
        waiting.add(aborted)
    done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    return None if aborted is not None and aborted in done else done


def _cancel_all(futures: Iterable[asyncio.Future[Any] | None]) -> None:
    """Cancel each future not yet done (the unfinished tool calls, the abort waiter)."""
    for future in futures:
        if future is not None and not future.done():
            future.cancel()
