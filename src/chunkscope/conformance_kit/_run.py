"""The cases of the conformance matrix, run on one event loop, and the checks that judge them.

``_watch`` drives these on a worker thread: it starts a ``LocalProvider``, builds the
adapter with ``build_adapter`` (``factory(base_url, api_key)``) and runs one request per scenario
of that wire (``Scenario.wires``), then two requests that are not replies:
``abort`` (``fault-stall``, aborted at its first text) and
``refuse-unsupported-options``. Each stream is consumed by ``collect`` under
``strict``; the provider's record of what it received judges the request and
the connection. Every wait here is bounded (a stream that ignores its abort
is cancelled, one that swallows the cancellation abandoned); what no wait on
the loop can bound — an adapter that blocks the loop itself — is ``_watch``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from chunkscope._wires import WIRE_FACTS
from chunkscope.adapters import OPTIONAL_OPTIONS, AbortController, GenerateOptions, attribution_headers
from chunkscope.adapters.wires import WIRES
from chunkscope.protocol import Checker, LlmError, StreamResult, Violation, collect
from chunkscope.protocol.shared import plural
from chunkscope.provider import SCENARIOS, LocalProvider, ReceivedRequest, Scenario
from chunkscope.provider.wires import PROVIDER_WIRES

from ._errors import ConformanceError
from ._report import CaseResult, CheckResult

__all__ = [
    "ABORT_CASE",
    "REFUSAL_CASE",
    "API_KEY",
    "PROMPT",
    "ConformanceError",
    "build_adapter",
    "case_names",
    "close_adapter",
]

Wire = str
"""A wire's name: a key of the wire table (``chunkscope._wires.WIRE_FACTS``)."""

API_KEY = "sk-chunkscope-conformance"
"""The key every adapter under test is given (the provider accepts any)."""

PROMPT = "Hello from the chunkscope conformance kit"
"""The user message of every request (``echo`` says it back)."""

ABORT_CASE = "abort"
REFUSAL_CASE = "refuse-unsupported-options"
ABORT_SCENARIO = "fault-stall"  # text, then silence: an abort there can only be the adapter's doing

ABORT_LIMIT_S = 0.1
"""An abort must end the stream within this long."""

ACLOSE_LIMIT_S = 3.0
"""How long the adapter's ``aclose()`` may take at the end of the run."""

_RELEASE_WAIT_S = 1.0  # how long the provider gets to see the aborted connection close
_ABORT_WAIT_S = 2.0  # after the time limit's abort, before the kit cancels the stream
_CANCEL_WAIT_S = 1.0  # after the cancellation, before the kit abandons a stream that swallows it
_ABORT_FALLBACK_S = 3.0  # abort this long after the start when no text ever arrives
_UNLISTED_EFFORT = "chunkscope-unlisted-effort"
_USER_AGENT = re.compile(r"^[^\s/]+/\S+ \(\+\S+\)")

# What the kit asks for in every request (only the options the adapter lists as supported).
_SYSTEM = "You are being checked by chunkscope."
_TEMPERATURE = 0.25
_MAX_TOKENS = 321
_STOP = "<<chunkscope-stop>>"
_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
_OPTION_VALUES: dict[str, Any] = {
    "system": _SYSTEM,
    "tools": [_TOOL],
    "temperature": _TEMPERATURE,
    "max_tokens": _MAX_TOKENS,
    "stop": [_STOP],
    "purpose": "conformance",
}


_DEFAULT_SUPPORTED = frozenset({"signal", "purpose"})


def case_names(wire: Wire) -> list[str]:
    """Every case of ``wire``'s matrix, in order: its scenarios, then the abort and the refusal."""
    _check_wire(wire)
    return [s.name for s in _scenarios(wire)] + [ABORT_CASE, REFUSAL_CASE]


def _check_wire(wire: str) -> None:
    if wire not in WIRE_FACTS:
        known = " or ".join(repr(name) for name in WIRE_FACTS)
        raise ConformanceError(f"wire must be {known}, not {wire!r}")


def _scenarios(wire: str) -> list[Scenario]:
    return [s for s in SCENARIOS.values() if wire in s.wires]


# --- building the adapter ----------------------------------------------------------


def build_adapter(factory: Callable[[str, str], Any], provider: LocalProvider, wire: str) -> Any:
    """``factory(base_url, api_key)`` for ``wire``; ``ConformanceError`` if it fails or gives no adapter."""
    base_url = WIRE_FACTS[wire].base_url(provider.url)
    try:
        adapter = factory(base_url, API_KEY)
    except Exception as exc:
        raise ConformanceError(
            f"the factory raised {type(exc).__name__}: {exc} (it is called as factory(base_url, api_key))"
        ) from exc
    if not callable(getattr(adapter, "stream", None)):
        raise ConformanceError(
            f"the factory returned {type(adapter).__name__}, which has no stream(options) method"
        )
    return adapter


async def close_adapter(adapter: Any) -> str | None:
    """Await the adapter's ``aclose()`` (if any) for at most ``ACLOSE_LIMIT_S``; a sentence when it hangs."""
    aclose = getattr(adapter, "aclose", None)
    if aclose is None:
        return None
    closing = asyncio.ensure_future(_quietly(aclose))
    done, _ = await asyncio.wait({closing}, timeout=ACLOSE_LIMIT_S)
    if done:
        return None
    closing.cancel()
    return (
        f"{type(adapter).__name__}.aclose() did not return within {ACLOSE_LIMIT_S:g} s: close the client "
        "without waiting on anything that may never come (the kit abandoned it)"
    )


async def _quietly(aclose: Callable[[], Any]) -> None:
    with contextlib.suppress(Exception):
        await aclose()


@dataclass
class _Probe:
    """What the kit sees of one stream besides its chunks: raw exceptions, timing, first text."""

    raw_error: BaseException | None = None
    ended: float | None = None  # perf_counter at the stream's end (return or raise)
    first_text: asyncio.Event = field(default_factory=asyncio.Event)
    chunks: list[Any] = field(default_factory=list)


async def _watched(adapter: Any, options: GenerateOptions, probe: _Probe) -> AsyncIterator[Any]:
    stream: Any = None
    try:
        stream = adapter.stream(options)
        async for chunk in stream:
            kind = chunk.get("type") if isinstance(chunk, dict) else getattr(chunk, "type", None)
            if kind == "text-delta":
                probe.first_text.set()
            probe.chunks.append(chunk)
            yield chunk
    except GeneratorExit:
        raise
    except BaseException as exc:
        probe.raw_error = exc
        probe.ended = time.perf_counter()
        raise
    else:
        probe.ended = time.perf_counter()
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(BaseException):
                await aclose()


class _Runner:
    def __init__(self, adapter: Any, provider: LocalProvider, wire: Wire, timeout: float) -> None:
        self.adapter = adapter
        self.provider = provider
        self.wire = wire
        self.timeout = timeout
        self.options_error: str | None = None
        try:
            supported = getattr(adapter, "supported_options", None)
            # An adapter that does not say what it supports is taken at LlmAdapter's default.
            self.supported = frozenset(supported) if supported is not None else _DEFAULT_SUPPORTED
            if not all(isinstance(o, str) for o in self.supported):
                raise TypeError(f"it holds {sorted(map(repr, self.supported))}, not option names")
        except Exception as exc:  # a raising property is the adapter's defect, reported on every case
            self.options_error = f"{type(exc).__name__}: {exc}"[:300]
            self.supported = _DEFAULT_SUPPORTED

    async def case(self, name: str) -> CaseResult:
        """Run the case ``name`` (a scenario, the abort or the refusal)."""
        if name == ABORT_CASE:
            case = await self.abort_case()
        elif name == REFUSAL_CASE:
            case = await self.refusal_case()
        else:
            case = await self.scenario_case(SCENARIOS[name])
        if self.options_error is None:
            return case
        sentence = (
            f"Reading supported_options raised {self.options_error}: make it a frozenset of option names "
            "(LlmAdapter's class attribute); the kit ran this case as if it were {'signal', 'purpose'}."
        )
        cell = CheckResult(
            case.name, "options", False, "a collection of option names", self.options_error, sentence
        )
        return replace(case, checks=(cell, *case.checks))

    def options(self, model: str, **extra: Any) -> GenerateOptions:
        chosen = {k: v for k, v in _OPTION_VALUES.items() if k in self.supported}
        chosen.update(extra)
        return GenerateOptions(
            provider="chunkscope-conformance",
            model=model,
            messages=[{"role": "user", "content": PROMPT}],
            **chosen,
        )

    async def run(
        self, options: GenerateOptions, controller: AbortController | None = None
    ) -> tuple[StreamResult, _Probe, asyncio.Task[StreamResult]]:
        probe = _Probe()
        task = asyncio.ensure_future(collect(_watched(self.adapter, options, probe)))
        return await self.finish(task, probe, controller, self.timeout), probe, task

    async def finish(
        self,
        task: asyncio.Task[StreamResult],
        probe: _Probe,
        controller: AbortController | None,
        timeout: float,
    ) -> StreamResult:
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            if controller is not None:
                controller.abort("the conformance kit's time limit")
                done, _ = await asyncio.wait({task}, timeout=_ABORT_WAIT_S)
            if not done:
                task.cancel()
                # Bounded: a stream that swallows CancelledError would hold `await task` forever.
                done, _ = await asyncio.wait({task}, timeout=_CANCEL_WAIT_S)
                how = (
                    "the kit cancelled it"
                    if done
                    else f"nor within {_CANCEL_WAIT_S:g} s of its cancellation (it swallows CancelledError)"
                )
                result = await collect(list(probe.chunks))
                result.error = LlmError(f"the stream did not end within {timeout:g} s; {how}", "TIMEOUT")
                result.violations = [v for v in result.violations if v.position is not None]
                probe.raw_error = result.error  # the cancellation was the kit's, not the adapter's
                return result
        return task.result()

    def received(self, since: int) -> tuple[ReceivedRequest, ...]:
        return tuple(self.provider.request_log.snapshot(since))

    # --- one scenario ---

    async def scenario_case(self, scenario: Scenario) -> CaseResult:
        since = self.provider.request_log.count
        controller = AbortController()
        result, probe, _ = await self.run(self.options(scenario.name), controller)
        requests = self.received(since)
        expected = scenario.expected_for(PROMPT, self.wire)
        name = scenario.name
        checks: list[CheckResult] = []
        checks.extend(_profile_checks(name, result))
        code = scenario.expected_codes[self.wire] if scenario.expected_codes is not None else None
        if expected.finish is not None:
            checks.append(
                _content_check(name, result, expected.text, expected.reasoning, expected.tool_calls)
            )
        if expected.usage is not None:
            checks.append(_usage_check(name, result, expected.usage))
        checks.append(_outcome_check(name, result, probe, expected.finish, code))
        checks.append(_llm_error_check(name, probe))
        if (
            scenario.http_fault is None
            and expected.finish is None
            and (expected.text or expected.reasoning or expected.tool_calls)
        ):
            checks.append(_partial_check(name, result, expected.text, expected.reasoning))
        checks.append(_request_check(name, self.wire, scenario.name, requests, self.supported))
        return CaseResult(
            name=name,
            scenario=scenario.name,
            description=scenario.description,
            checks=tuple(checks),
            result=result,
            requests=requests,
        )

    # --- the abort ---

    async def abort_case(self) -> CaseResult:
        since = self.provider.request_log.count
        controller = AbortController()
        probe = _Probe()
        options = self.options(ABORT_SCENARIO, signal=controller.signal)
        task = asyncio.ensure_future(collect(_watched(self.adapter, options, probe)))
        text = asyncio.ensure_future(probe.first_text.wait())
        await asyncio.wait({task, text}, timeout=_ABORT_FALLBACK_S, return_when=asyncio.FIRST_COMPLETED)
        text.cancel()
        ended_early = task.done()
        fired = time.perf_counter()
        controller.abort("conformance: abort check")
        result = await self.finish(task, probe, None, _ABORT_WAIT_S)
        elapsed = probe.ended - fired if probe.ended is not None and not ended_early else None
        requests = self.received(since)
        name = ABORT_CASE
        checks = [
            _abort_check(name, result, probe, elapsed, ended_early),
            await _connection_check(name, requests),
            _llm_error_check(name, probe),
        ]
        return CaseResult(
            name=name,
            scenario=ABORT_SCENARIO,
            description=f"{ABORT_SCENARIO}, aborted at its first text: the stream ends, its connection freed",
            checks=tuple(checks),
            result=result,
            requests=requests,
        )

    # --- the refusal ---

    async def refusal_case(self) -> CaseResult:
        name = REFUSAL_CASE
        attempts = _refusal_attempts(self.supported)
        problems: list[str] = []
        observed: list[str] = []
        raw: _Probe | None = None
        last: StreamResult | None = None
        all_requests: list[ReceivedRequest] = []
        for what, values, code in attempts:
            since = self.provider.request_log.count
            options = GenerateOptions(
                provider="chunkscope-conformance",
                model="text",
                messages=[{"role": "user", "content": PROMPT}],
                **values,
            )
            last, probe, _ = await self.run(options)
            raw = probe if probe.raw_error is not None and not isinstance(probe.raw_error, LlmError) else raw
            sent = self.received(since)
            all_requests.extend(sent)
            seen, wrong = _refusal_outcome(what, code, last, sent)
            observed.append(seen)
            problems.extend(wrong)
        expected = "; ".join(f"{what}: LlmError {code}, no request" for what, _, code in attempts)
        checks = [
            CheckResult(
                name, "refusal", not problems, expected, "; ".join(observed), _refusal_sentence(problems)
            ),
            _llm_error_check(name, raw if raw is not None else _Probe()),
        ]
        return CaseResult(
            name=name,
            scenario="text",
            description="options the adapter cannot honour, and an effort no model lists, refused before I/O",
            checks=tuple(checks),
            result=last,
            requests=tuple(all_requests),
        )


def _refusal_attempts(supported: frozenset[str]) -> list[tuple[str, dict[str, Any], str]]:
    """What the refusal case asks for (label, option values, the code it must raise).

    Every optional option the adapter does not declare, at once; and, when it
    declares ``reasoning_effort``, an effort no model lists.
    """
    attempts: list[tuple[str, dict[str, Any], str]] = []
    unsupported = [o for o in OPTIONAL_OPTIONS if o not in supported]
    if unsupported:
        values = {o: _OPTION_VALUES.get(o) for o in unsupported}
        if "reasoning_effort" in values:
            values["reasoning_effort"] = _UNLISTED_EFFORT
        if "signal" in values:
            values["signal"] = AbortController().signal
        attempts.append((", ".join(unsupported), values, "UNSUPPORTED_OPTION"))
    if "reasoning_effort" in supported:
        attempts.append(
            (
                f"reasoning_effort={_UNLISTED_EFFORT!r}",
                {"reasoning_effort": _UNLISTED_EFFORT},
                "UNSUPPORTED_REASONING_EFFORT",
            )
        )
    return attempts


def _refusal_outcome(
    what: str, code: str, result: StreamResult, sent: Sequence[ReceivedRequest]
) -> tuple[str, list[str]]:
    """(what was observed, the problems) of one refusal attempt: it must raise ``code`` and send nothing."""
    got = result.error.code if result.error is not None else _finish_text(result)
    problems = []
    if result.error is None or result.error.code != code:
        problems.append(f"{what} gave {got}, not LlmError {code}")
    if sent:
        problems.append(f"{what} reached the provider ({plural(len(sent), 'request')})")
    return f"{what}: {got}{' after a request was sent' if sent else ''}", problems


def _refusal_sentence(problems: list[str]) -> str:
    if not problems:
        return "Every option it cannot honour was refused with its code before any request was sent."
    return (
        "Call self.prepare(options) (or check the options yourself) at the top of stream(), "
        "before any I/O, and raise LlmError UNSUPPORTED_OPTION / UNSUPPORTED_REASONING_EFFORT: "
        + "; ".join(problems)
        + "."
    )


# --- the checks --------------------------------------------------------------------


def _finish_text(result: StreamResult) -> str:
    if result.finish is None:
        return "no finish"
    failure = result.finish.failure
    return f"finish {result.finish.kind}" + (f" ({failure.code})" if failure is not None else "")


def _observed_outcome(result: StreamResult) -> str:
    if result.error is not None:
        return f"raised LlmError {result.error.code}"
    return _finish_text(result)


def _profile_checks(case: str, result: StreamResult) -> list[CheckResult]:
    strict = [v for v in result.violations if v.severity == "error"]
    return [_profile_check(case, "strict", strict), _profile_check(case, "dsh", _dsh_errors(result))]


def _dsh_errors(result: StreamResult) -> list[Violation]:
    """The stream's errors under the ``dsh`` profile (the close rules only when it did not raise)."""
    dsh = Checker("dsh")
    found: list[Violation] = []
    for chunk in result.chunks:
        found.extend(dsh.feed(chunk))
    if result.error is None:
        found.extend(dsh.close())
    return [v for v in found if v.severity == "error"]


def _profile_check(case: str, profile: str, errors: list[Violation]) -> CheckResult:
    if not errors:
        return CheckResult(case, profile, True, "no violation", "no violation", f"Clean under {profile}.")
    first = errors[0]
    rules = sorted({v.rule for v in errors})
    sentence = (
        f"Under the {profile} profile the stream breaks {', '.join(rules)}: "
        f"at chunk {first.position}, {first.message}"
    )
    observed = "; ".join(f"#{v.position} {v.rule}" for v in errors[:8])
    return CheckResult(case, profile, False, "no violation", observed, sentence, first.position)


def _tool_calls(result: StreamResult) -> list[tuple[str, str]]:
    return [(block.name, block.arguments) for block in result.tool_calls]


def _content_check(
    case: str, result: StreamResult, text: str, reasoning: str, tool_calls: Sequence[tuple[str, str]]
) -> CheckResult:
    got_calls = _tool_calls(result)
    problems = []
    if result.text != text:
        problems.append(f"text {result.text!r} instead of {text!r}")
    if result.reasoning != reasoning:
        problems.append(f"reasoning {result.reasoning!r} instead of {reasoning!r}")
    if got_calls != list(tool_calls):
        problems.append(f"tool calls {got_calls} instead of {list(tool_calls)}")
    expected = f"text={text!r} reasoning={reasoning!r} tool_calls={list(tool_calls)}"
    observed = f"text={result.text!r} reasoning={result.reasoning!r} tool_calls={got_calls}"
    if problems:
        sentence = (
            "Translate every content event of the wire into deltas (text, reasoning, tool-call fragments "
            "joined as raw JSON text): got " + "; ".join(problems) + "."
        )
        return CheckResult(case, "content", False, expected, observed, sentence)
    return CheckResult(case, "content", True, expected, observed, "Text, reasoning and tool calls match.")


def _usage_check(case: str, result: StreamResult, usage: dict[str, int]) -> CheckResult:
    got = result.usage.to_dict() if result.usage is not None else None
    expected = json.dumps(usage, sort_keys=True)
    observed = json.dumps(got, sort_keys=True) if got is not None else "no usage chunk"
    if got != usage:
        sentence = (
            "Emit one usage chunk before the finish with DISJOINT counts as the wire reports them "
            "(cache hits subtracted from the input, reasoning inside the output, every billed iteration): "
            f"expected {expected}, got {observed}."
        )
        return CheckResult(case, "usage", False, expected, observed, sentence)
    return CheckResult(case, "usage", True, expected, observed, "Usage matches.")


def _outcome_check(
    case: str, result: StreamResult, probe: _Probe, finish: str | None, code: str | None
) -> CheckResult:
    observed = _observed_outcome(result)
    raw = probe.raw_error
    if raw is not None and not isinstance(raw, LlmError):
        observed = f"raised {type(raw).__name__} (not an LlmError)"
    if finish is None:
        expected, ok, fix = _expect_raised(result, probe, code, observed)
    elif finish == "error":
        expected, ok, fix = _expect_error_finish(result, code, observed)
    else:
        expected, ok, fix = _expect_finish(result, finish, observed)
    if ok:
        return CheckResult(case, "outcome", True, expected, observed, f"Ends as documented: {expected}.")
    position = len(result.chunks) - 1 if result.chunks else None
    return CheckResult(case, "outcome", False, expected, observed, fix, position)


def _expect_raised(
    result: StreamResult, probe: _Probe, code: str | None, observed: str
) -> tuple[str, bool, str]:
    """(expected, met, fix) for a case that must raise LlmError ``code``."""
    expected = f"raised LlmError {code}"
    ok = result.error is not None and result.error.code == code and isinstance(probe.raw_error, LlmError)
    fix = (
        f"Raise LlmError with code {code} for this failure (docs/protocol.md §4) instead of "
        + ("finishing normally" if result.error is None else f"{observed}")
        + "."
    )
    return expected, ok, fix


def _expect_error_finish(result: StreamResult, code: str | None, observed: str) -> tuple[str, bool, str]:
    """(expected, met, fix) for a case that must end with an error finish whose failure is ``code``."""
    expected = f"finish error ({code})"
    got = result.finish.failure.code if result.finish is not None and result.finish.failure else None
    ok = result.error is None and result.finish is not None and result.finish.kind == "error" and got == code
    fix = f"End the stream with an error finish whose failure code is {code}; got {observed}."
    return expected, ok, fix


def _expect_finish(result: StreamResult, finish: str, observed: str) -> tuple[str, bool, str]:
    """(expected, met, fix) for a case that must end with a ``finish`` finish."""
    expected = f"finish {finish}"
    ok = result.error is None and result.finish is not None and result.finish.kind == finish
    fix = f"Map the wire's stop reason to a {finish} finish; got {observed}."
    return expected, ok, fix


def _llm_error_check(case: str, probe: _Probe) -> CheckResult:
    raw = probe.raw_error
    if raw is None or isinstance(raw, LlmError):
        observed = "no failure" if raw is None else f"LlmError {raw.code}"
        return CheckResult(
            case, "llm-error", True, "LlmError or no failure", observed, "Failures are LlmError."
        )
    observed = f"{type(raw).__module__}.{type(raw).__name__}: {raw}"[:300]
    sentence = (
        f"Catch {type(raw).__name__} inside stream() and raise LlmError with a stable code instead "
        "(e.g. TRANSPORT, TIMEOUT, MALFORMED_RESPONSE); a plain exception reaches the caller as UNKNOWN."
    )
    return CheckResult(case, "llm-error", False, "LlmError or no failure", observed, sentence)


def _partial_check(case: str, result: StreamResult, text: str, reasoning: str) -> CheckResult:
    expected = f"text={text!r} reasoning={reasoning!r} before the failure"
    observed = f"text={result.text!r} reasoning={result.reasoning!r}"
    if result.text == text and result.reasoning == reasoning:
        return CheckResult(case, "partial", True, expected, observed, "The output before the fault is kept.")
    sentence = (
        "Yield every delta as soon as it arrives, and raise only after them: the caller must keep the "
        f"output sent before the fault ({text!r}); got {result.text!r}."
    )
    return CheckResult(case, "partial", False, expected, observed, sentence)


def _request_check(
    case: str, wire: str, model: str, requests: Sequence[ReceivedRequest], supported: frozenset[str]
) -> CheckResult:
    want_agent = attribution_headers()["User-Agent"]
    expected = f"User-Agent like {want_agent!r}; model {model!r}; the prompt; " + ", ".join(
        sorted(o for o in _OPTION_VALUES if o in supported and o != "purpose")
    )
    mine = [r for r in requests if r.model == model] or list(requests)
    if not mine:
        sentence = "Send the request to the base_url the factory was given: the provider received nothing."
        return CheckResult(case, "request", False, expected, "no request received", sentence)
    request = mine[0]
    problems = _request_problems(wire, request, model, supported)
    agent = request.headers.get("user-agent", "")
    observed = (
        f"User-Agent {agent!r}; body keys {sorted(request.body) if isinstance(request.body, dict) else None}"
    )
    if problems:
        sentence = "Fix the request: " + "; ".join(problems) + "."
        return CheckResult(case, "request", False, expected, observed, sentence)
    return CheckResult(
        case, "request", True, expected, observed, "Attribution headers and every option were sent."
    )


def _request_problems(
    wire: str, request: ReceivedRequest, model: str, supported: frozenset[str]
) -> list[str]:
    problems = _attribution_problems(request)
    body = request.body
    if not isinstance(body, dict):
        return [*problems, "send a JSON object body"]
    problems.extend(_body_problems(wire, request, body, model))
    problems.extend(_option_problems(_sent_options(wire, body), body, supported))
    return problems


def _attribution_problems(request: ReceivedRequest) -> list[str]:
    agent = request.headers.get("user-agent", "")
    if _USER_AGENT.match(agent):
        return []
    return [
        f"merge attribution_headers() into every request (User-Agent was {agent!r}, "
        f"expected the form {attribution_headers()['User-Agent']!r})"
    ]


def _body_problems(wire: str, request: ReceivedRequest, body: dict[str, Any], model: str) -> list[str]:
    """What every request needs on any wire: the model, a stream, the caller's messages, each
    where the wire carries it (the provider's wire row reads them: body or path)."""
    served = PROVIDER_WIRES[wire]
    problems = []
    if request.model != model:
        problems.append(f"send model {model!r} (sent {request.model!r})")
    if not served.streamed(request.path, body):
        problems.append('ask for a stream ("stream": true, or the wire\'s streaming method)')
    if PROMPT not in served.conversation(body)[0]:
        problems.append("send the caller's messages (the user's text is missing)")
    return problems


@dataclass(frozen=True)
class _SentOptions:
    """The conformance options as the request body carried them."""

    system_sent: bool
    stop_sent: bool
    tool_names: list[Any]
    max_tokens: Any
    temperature: Any


def _sent_options(wire: str, body: dict[str, Any]) -> _SentOptions:
    """The body read back through its wire's own reader (the wire table's ``sent``)."""
    sent = WIRES[wire].sent(body)
    return _SentOptions(
        _SYSTEM in json.dumps(sent.system, ensure_ascii=False),
        _STOP in sent.stops,
        sent.tool_names,
        sent.max_tokens,
        sent.temperature,
    )


def _option_problems(sent: _SentOptions, body: dict[str, Any], supported: frozenset[str]) -> list[str]:
    """Each option the adapter declares must reach the body with the value the case gave."""
    checks = (  # (option, sent as given, the fix)
        ("system", sent.system_sent, "send the system prompt"),
        (
            "temperature",
            sent.temperature == _TEMPERATURE,
            f"send temperature {_TEMPERATURE} (sent {sent.temperature!r})",
        ),
        (
            "max_tokens",
            sent.max_tokens == _MAX_TOKENS,
            f"send max_tokens {_MAX_TOKENS} (sent {sent.max_tokens!r})",
        ),
        ("stop", sent.stop_sent, "send the stop sequences"),
        ("tools", "get_weather" in sent.tool_names, "send the tools"),
    )
    return [fix for option, ok, fix in checks if option in supported and not ok]


def _abort_check(
    case: str, result: StreamResult, probe: _Probe, elapsed: float | None, ended_early: bool
) -> CheckResult:
    expected = f"LlmError ABORTED (or an aborted finish) within {ABORT_LIMIT_S * 1000:.0f} ms of abort()"
    outcome = _observed_outcome(result)
    if ended_early or elapsed is None:
        observed, sentence = _abort_not_reached(result, outcome, ended_early)
        return CheckResult(case, "abort", False, expected, observed, sentence)
    raw = probe.raw_error
    if raw is not None and not isinstance(raw, LlmError):
        outcome = f"raised {type(raw).__name__}"
    observed = f"{outcome} after {elapsed * 1000:.0f} ms"
    if elapsed > ABORT_LIMIT_S:
        sentence = (
            f"End the stream at once on abort: it took {elapsed * 1000:.0f} ms "
            f"(limit {ABORT_LIMIT_S * 1000:.0f} ms); cancel the pending network read when the signal fires."
        )
        return CheckResult(case, "abort", False, expected, observed, sentence)
    if not _aborted(result):
        sentence = f"Report the caller's abort as LlmError ABORTED (or an aborted finish), not {outcome}."
        return CheckResult(case, "abort", False, expected, observed, sentence)
    return CheckResult(
        case, "abort", True, expected, observed, "The abort ended the stream at once, as ABORTED."
    )


def _aborted(result: StreamResult) -> bool:
    """The stream ended as the caller's abort: LlmError ABORTED, or an aborted finish."""
    if result.error is not None:
        return result.error.code == "ABORTED"
    return result.finish is not None and result.finish.kind == "aborted"


def _abort_not_reached(result: StreamResult, outcome: str, ended_early: bool) -> tuple[str, str]:
    """(observed, fix) when the abort never took effect: the signal refused, the stream over, or ignored."""
    if ended_early and result.error is not None and result.error.code == "UNSUPPORTED_OPTION":
        sentence = (
            "Honour options.signal: list 'signal' in supported_options and pass it to the request, "
            "so that a caller can abort a stream."
        )
        return f"refused the signal: {outcome}", sentence
    if ended_early:
        sentence = (
            f"The stream ended ({outcome}) before the abort, although the provider was still sending: "
            "stream the response as it arrives instead of waiting for all of it."
        )
        return f"ended before the abort: {outcome}", sentence
    sentence = (
        "Listen to options.signal: the stream went on after abort(); cancel the pending read "
        "(signal.add_callback / await signal.wait()) and raise LlmError ABORTED."
    )
    return "still running 2 s after abort()", sentence


async def _connection_check(case: str, requests: Sequence[ReceivedRequest]) -> CheckResult:
    expected = f"the provider sees the connection closed within {_RELEASE_WAIT_S:g} s"
    mine = [r for r in requests if r.model == ABORT_SCENARIO]
    if not mine:
        return CheckResult(
            case, "connection", False, expected, "no request received", "Send the request: none arrived."
        )
    record = mine[0]
    await asyncio.to_thread(record.wait_ended, _RELEASE_WAIT_S)
    if record.outcome == "disconnected":
        return CheckResult(
            case, "connection", True, expected, "closed by the client", "The connection was released at once."
        )
    observed = "still open" if record.outcome is None else f"ended as {record.outcome}"
    sentence = (
        "Close the HTTP response when the stream ends early (response.aclose() in a finally block, or "
        "`async with client.stream(...)`), so its connection goes back to the pool instead of leaking: "
        f"{_RELEASE_WAIT_S:g} s after the abort the provider still saw it {observed}."
    )
    return CheckResult(case, "connection", False, expected, observed, sentence)
