"""The watchdog: every case of the matrix, and the whole run, end in bounded time.

``conformance()`` runs the cases' event loop (the ``LocalProvider`` and the
adapter) on a worker thread and judges time from the caller's thread, which
no adapter can block. The loop beats a heartbeat; the caller's thread ends a
case whose loop stops beating for longer than the case's ``timeout`` (an
adapter calling ``time.sleep`` or a blocking socket inside ``stream``), or
that outlives its hard limit (``2 x timeout + 10 s``) for any other reason.
Such a case is reported failed on the ``time`` check; the worker is abandoned
and the cases after it run on a fresh thread, provider and adapter. The run
as a whole has a budget (``total_timeout``): the cases it does not reach are
reported as not run, with the reason, so a report never says "conforms" for
what it did not see.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from chunkscope._wires import DEFAULT_WIRE
from chunkscope.protocol.shared import type_phrase
from chunkscope.provider import SCENARIOS, LocalProvider

from ._errors import ConformanceError
from ._report import CaseResult, CheckResult, ConformanceReport
from ._run import (
    ABORT_CASE,
    ABORT_SCENARIO,
    REFUSAL_CASE,
    _Runner,
    build_adapter,
    case_names,
    close_adapter,
)

__all__ = ["DEFAULT_TIMEOUT_S", "DEFAULT_TOTAL_TIMEOUT_S", "conformance", "run_conformance"]

Wire = str
"""A wire's name: a key of the wire table (``chunkscope._wires.WIRE_FACTS``)."""

DEFAULT_TIMEOUT_S = 40.0
"""Seconds one case may take (the adapter's own idle timeout should fire first: 1-30 s)."""

DEFAULT_TOTAL_TIMEOUT_S = 300.0
"""Seconds the whole run may take (a conforming adapter needs well under a minute)."""

_BEAT_S = 0.05  # the loop's heartbeat period
_MIN_BLOCK_S = 1.0  # a loop silent for less than this is load, not a blocking adapter
_SETUP_GRACE_S = 10.0  # starting the provider and calling the factory, on top of `timeout`
_CLOSE_GRACE_S = 5.0  # the adapter's aclose() (itself bounded on the loop) and the provider's shutdown


def hard_limit(timeout: float) -> float:
    """How long one case may run, whatever it does: its timeout twice (the refusal makes two
    requests) plus the kit's own waits (abort, cancellation, the connection check)."""
    return 2 * timeout + 10.0


def check_seconds(name: str, value: Any) -> float:
    """``value`` as a positive, finite number of seconds; ``ConformanceError`` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConformanceError(f"{name} must be a number of seconds, not {type_phrase(value)} ({value!r})")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConformanceError(f"{name} must be a positive, finite number of seconds, not {value!r}")
    return seconds


@dataclass
class _Worker:
    """One worker thread's event loop, as the watching thread sees it (fields guarded by ``lock``)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    beat: float = field(default_factory=time.monotonic)
    phase: Literal["setup", "case", "closing"] = "setup"
    case: str | None = None  # the case running now
    started: float = field(default_factory=time.monotonic)  # when the phase (or the case) began
    events: queue.SimpleQueue[tuple[str, Any]] = field(default_factory=queue.SimpleQueue)
    stop: threading.Event = field(default_factory=threading.Event)

    def begin(self, case: str | None) -> None:
        """A case begins (or, with None, the closing)."""
        with self.lock:
            self.phase = "case" if case is not None else "closing"
            self.case = case
            self.started = time.monotonic()

    def alive(self) -> None:
        with self.lock:
            self.beat = time.monotonic()

    def state(self) -> tuple[str, str | None, float, float]:
        with self.lock:
            return self.phase, self.case, self.started, self.beat


async def _heartbeat(worker: _Worker) -> None:
    while True:
        worker.alive()
        await asyncio.sleep(_BEAT_S)


async def _work(
    factory: Callable[[str, str], Any], wire: Wire, names: list[str], timeout: float, worker: _Worker
) -> None:
    beating = asyncio.ensure_future(_heartbeat(worker))
    try:
        async with LocalProvider() as provider:
            adapter = build_adapter(factory, provider, wire)
            worker.events.put(("adapter", type(adapter).__name__))
            runner = _Runner(adapter, provider, wire, timeout)
            for name in names:
                if worker.stop.is_set():
                    return
                worker.begin(name)
                worker.events.put(("case", await runner.case(name)))
            worker.begin(None)
            problem = await close_adapter(adapter)
            if problem is not None:
                worker.events.put(("problem", problem))
    finally:
        beating.cancel()


def _thread_main(
    factory: Callable[[str, str], Any], wire: Wire, names: list[str], timeout: float, worker: _Worker
) -> None:
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(_work(factory, wire, names, timeout, worker))
    except BaseException as exc:  # handed to the watching thread
        worker.events.put(("error", exc))
    finally:
        worker.events.put(("done", None))
        # Bounded cleanup: a task that swallows its cancellation would hold asyncio.run's forever.
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            with contextlib.suppress(BaseException):
                loop.run_until_complete(asyncio.wait(pending, timeout=_CANCEL_CLEANUP_S))
        if not any(not t.done() for t in pending):
            loop.close()  # else left to the garbage collector: closing would not stop it either


_CANCEL_CLEANUP_S = 1.0


def _time_case(name: str, observed: str, sentence: str, limit: float) -> CaseResult:
    cell = CheckResult(name, "time", False, f"the case ends within {limit:g} s", observed, sentence)
    return CaseResult(name=name, scenario=_scenario_of(name), description=_description(name), checks=(cell,))


def _not_run(name: str, reason: str) -> CaseResult:
    cell = CheckResult(name, "time", False, "the case runs", "not run", f"Not run: {reason}.")
    return CaseResult(
        name=name, scenario=_scenario_of(name), description=_description(name), checks=(cell,), not_run=reason
    )


def _scenario_of(name: str) -> str:
    return {ABORT_CASE: ABORT_SCENARIO, REFUSAL_CASE: "text"}.get(name, name)


def _description(name: str) -> str:
    scenario = SCENARIOS.get(name)
    return scenario.description if scenario is not None else name


def conformance(
    factory: Callable[[str, str], Any],
    *,
    wire: Wire = DEFAULT_WIRE,
    scenarios: Iterable[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    total_timeout: float = DEFAULT_TOTAL_TIMEOUT_S,
) -> ConformanceReport:
    """Run the adapter ``factory(base_url, api_key)`` builds through every case of ``wire``.

    ``base_url`` is what that wire's adapters take (``LocalProvider.base_url``
    for ``openai``, ``LocalProvider.url`` for ``anthropic``). ``scenarios``
    limits the run to some case names (``case_names(wire)``). ``timeout``
    bounds one case (the kit aborts, then cancels, a stream that runs longer;
    a watchdog outside the case's event loop ends a case that blocks the loop
    or outlives ``2 x timeout + 10 s``); ``total_timeout`` bounds the run
    (cases it does not reach are reported as not run). Give the adapter an
    idle timeout between 1 s (``slow-first-byte``) and 30 s (``fault-stall``).
    The cases run on a worker thread, so this works from scripts and inside a
    running event loop (Jupyter) alike. Never raises for what the adapter does
    in a case; raises ``ConformanceError`` when it cannot run at all (bad
    arguments, a factory that raises or never returns).
    """
    timeout = check_seconds("timeout", timeout)
    total_timeout = check_seconds("total_timeout", total_timeout)
    return _Watch(factory, wire, scenarios, timeout, total_timeout, threading.Event()).run()


async def run_conformance(
    factory: Callable[[str, str], Any],
    *,
    wire: Wire = DEFAULT_WIRE,
    scenarios: Iterable[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    total_timeout: float = DEFAULT_TOTAL_TIMEOUT_S,
) -> ConformanceReport:
    """``conformance`` awaited: the caller's event loop stays free while the cases run on their own.

    Cancelling it stops the run at the next case boundary (the watchdog's
    thread ends within a case's hard limit).
    """
    timeout = check_seconds("timeout", timeout)
    total_timeout = check_seconds("total_timeout", total_timeout)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[ConformanceReport] = loop.create_future()
    cancelled = threading.Event()
    watch = _Watch(factory, wire, scenarios, timeout, total_timeout, cancelled)

    def settle(outcome: ConformanceReport | BaseException) -> None:
        if future.done():
            return
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    def work() -> None:
        try:
            outcome: ConformanceReport | BaseException = watch.run()
        except BaseException as exc:
            outcome = exc
        with contextlib.suppress(RuntimeError):  # the caller's loop may be closed by now
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=work, name="chunkscope-conformance-watch", daemon=True).start()
    try:
        return await future
    finally:
        cancelled.set()


class _Watch:
    """The caller's side: start workers, read what they report, end what overruns."""

    def __init__(
        self,
        factory: Callable[[str, str], Any],
        wire: Wire,
        scenarios: Iterable[str] | None,
        timeout: float,
        total_timeout: float,
        cancelled: threading.Event,
    ) -> None:
        names = case_names(wire)  # refuses an unknown wire
        wanted = names if scenarios is None else list(scenarios)
        unknown = [n for n in wanted if n not in names]
        if unknown:
            raise ConformanceError(f"unknown case(s) {unknown} for the {wire} wire; the cases are {names}")
        self.factory = factory
        self.wire = wire
        self.names = [n for n in names if n in wanted]
        self.timeout = timeout
        self.total_timeout = total_timeout
        self.cancelled = cancelled
        self.label = "the adapter"
        self.cases: dict[str, CaseResult] = {}
        self.problems: list[str] = []

    def run(self) -> ConformanceReport:
        deadline = time.monotonic() + self.total_timeout
        first = True
        reason: str | None = None
        while reason is None and (pending := [n for n in self.names if n not in self.cases]):
            reason = self._one_worker(pending, deadline, first)
            first = False
        for name in self.names:
            if name not in self.cases:
                self.cases[name] = _not_run(name, reason or "the run ended before it")
        cases = tuple(self.cases[name] for name in self.names)
        return ConformanceReport(
            wire=self.wire, adapter=self.label, cases=cases, problems=tuple(self.problems)
        )

    def _one_worker(self, names: list[str], deadline: float, first: bool) -> str | None:
        """Run ``names`` on a fresh worker until it ends or overruns.

        Returns the reason the whole run must stop, or None to go on with the cases left.
        """
        worker = _Worker()
        thread = threading.Thread(
            target=_thread_main,
            args=(self.factory, self.wire, names, self.timeout, worker),
            name="chunkscope-conformance",
            daemon=True,  # an adapter stuck for good must not keep the interpreter alive
        )
        thread.start()
        try:
            while True:
                try:
                    kind, value = worker.events.get(timeout=_BEAT_S)
                except queue.Empty:
                    ended = self._check_worker(worker, deadline, first)
                else:
                    ended = self._on_event(kind, value, first)
                if ended is not None:
                    return ended.reason
        finally:
            worker.stop.set()

    def _on_event(self, kind: str, value: Any, first: bool) -> _Ended | None:
        """Take in one report of the worker."""
        if kind == "adapter":
            self.label = value
        elif kind == "case":
            self.cases[value.name] = value
        elif kind == "problem":
            self.problems.append(value)
        elif kind == "error":
            if first:
                raise value
            # a later worker only runs what a hung case left: its failure ends the run, reported
            what = f"{type(value).__name__}: {value}"
            return _Ended(f"rebuilding the adapter after a hung case failed: {what}")
        elif kind == "done":
            return _Ended(None)
        return None

    def _check_worker(self, worker: _Worker, deadline: float, first: bool) -> _Ended | None:
        """A quiet beat: is the run cancelled, its budget spent, or the worker stuck in its phase?"""
        now = time.monotonic()
        phase, case, started, beat = worker.state()
        if self.cancelled.is_set():
            return _Ended("the run was cancelled")
        if now > deadline:
            return _Ended(self._budget_spent(case if phase == "case" else None))
        if phase == "setup":
            return self._check_setup(now - started, first)
        if phase == "closing" or case is None:
            return self._check_closing(now, started, beat)
        return self._check_case(case, now, started, beat)

    def _budget_spent(self, case: str | None) -> str:
        """Time out the running ``case`` (if any) on the run's budget; the reason the run stops."""
        if case is not None:
            self.cases[case] = _time_case(
                case,
                f"still running when the run's budget of {self.total_timeout:g} s was spent",
                f"The run's time budget (total_timeout={self.total_timeout:g} s) was spent "
                "during this case; the kit stopped it",
                self.total_timeout,
            )
        return f"the run's time budget (total_timeout={self.total_timeout:g} s) was spent"

    def _check_setup(self, elapsed: float, first: bool) -> _Ended | None:
        setup_limit = self.timeout + _SETUP_GRACE_S
        if elapsed <= setup_limit:
            return None
        if first:
            raise ConformanceError(
                f"the adapter was not built within {setup_limit:g} s "
                "(the factory, or the local provider's start, hangs)"
            )
        return _Ended(f"rebuilding the adapter after a hung case took over {setup_limit:g} s")

    def _check_closing(self, now: float, started: float, beat: float) -> _Ended | None:
        if now - started <= _CLOSE_GRACE_S:
            return None
        if now - beat > _MIN_BLOCK_S:
            self.problems.append(
                f"{self.label}.aclose() blocked the event loop for over {now - beat:.1f} s: "
                "close the client without synchronous waits (the kit abandoned it)"
            )
        return _Ended(None)  # every case is in; a shutdown that hangs is not worth waiting for

    def _check_case(self, case: str, now: float, started: float, beat: float) -> _Ended | None:
        """A case that blocks the event loop, or outlives the hard limit, is abandoned with its worker."""
        blocked = now - beat
        if blocked > max(self.timeout, _MIN_BLOCK_S):
            self.cases[case] = _time_case(
                case,
                f"the event loop was blocked for over {blocked:.1f} s",
                "Never block the event loop inside stream(): a synchronous sleep, socket or file "
                "read or a long computation there stops every other task (await asyncio.sleep, use "
                "an async client, or asyncio.to_thread); the kit abandoned this case and ran the "
                "next ones on a fresh adapter",
                self.timeout,
            )
            return _Ended(None)
        limit = hard_limit(self.timeout)
        if now - started > limit:
            self.cases[case] = _time_case(
                case,
                f"still running {limit:g} s after it began",
                f"The case did not end within {limit:g} s although the kit aborted and cancelled "
                "its stream: end the stream on abort and let CancelledError through; the kit "
                "abandoned it and ran the next ones on a fresh adapter",
                limit,
            )
            return _Ended(None)
        return None


@dataclass(frozen=True)
class _Ended:
    """A worker's turn is over; ``reason`` says why the whole run must stop (None: go on with the rest)."""

    reason: str | None
