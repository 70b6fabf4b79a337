"""AgentLoop and @tool: schemas, concurrent tools, tool failures back to the model, results, abort."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Literal

import pytest

import chunkscope as cs
from chunkscope.adapters import AbortController
from chunkscope.protocol import LlmError
from chunkscope.runtime import LoopEnd, ToolArgumentsError

from ._fakes import Call, SequenceAdapter, llm_error, text_reply, tool_reply


@cs.tool
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, Any]:
    """Current weather for a city.

    Args:
        city: the city's name, e.g. Tokyo.
        unit: temperature unit.
    """
    return {"city": city, "temp": 21, "unit": unit}


@cs.tool
async def get_time(timezone: str) -> str:
    """The local time in a timezone."""
    return f"12:00 in {timezone}"


def test_the_schema_comes_from_type_hints_and_the_docstring() -> None:
    assert get_weather.name == "get_weather"
    assert get_weather.description == "Current weather for a city."
    params = get_weather.parameters
    assert params["type"] == "object" and params["required"] == ["city"]
    assert params["properties"]["city"] == {
        "type": "string",
        "title": "City",
        "description": "the city's name, e.g. Tokyo.",
    }
    assert params["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert params["properties"]["unit"]["default"] == "celsius"
    assert params["additionalProperties"] is False
    assert get_weather("Oslo") == {"city": "Oslo", "temp": 21, "unit": "celsius"}  # still callable


async def test_the_loop_runs_tools_and_feeds_their_results_back_until_a_text_answer() -> None:
    adapter = SequenceAdapter(
        [
            Call(
                tool_reply(
                    ("c1", "get_weather", '{"city": "Tokyo"}'), ("c2", "get_time", '{"timezone": "JST"}')
                )
            ),
            Call(text_reply("It is 21 degrees.")),
        ]
    )
    loop = cs.AgentLoop(adapter, tools=[get_weather, get_time])
    run = loop.run("weather?", model="m")
    kinds = [e.type async for e in run]
    result = run.result
    assert result is not None and result.ok and result.text == "It is 21 degrees."
    assert kinds[0] == "step-start" and kinds[-1] == "loop-end"
    assert kinds.count("tool-call") == 2 and kinds.count("tool-result") == 2 and kinds.count("step-end") == 2
    assert [o.content for o in result.tool_outcomes] == [
        '{"city": "Tokyo", "temp": 21, "unit": "celsius"}',
        "12:00 in JST",
    ]
    second = adapter.calls[1]
    assert [m.role for m in second.messages] == ["user", "assistant", "user"]
    results = second.messages[2].content
    assert [b.tool_call_id for b in results] == ["c1", "c2"]  # type: ignore[union-attr]
    assert {t.name for t in second.tools or ()} == {"get_weather", "get_time"}
    assert len(result.usage) == 2 and result.total_usage()["input_tokens"] == 20


async def test_tool_calls_run_concurrently() -> None:
    started: list[str] = []
    both = asyncio.Event()

    @cs.tool
    async def slow(tag: str) -> str:
        """Waits for the other call."""
        started.append(tag)
        if len(started) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 5)  # deadlocks if the calls ran one after the other
        return tag

    adapter = SequenceAdapter(
        [
            Call(tool_reply(("a", "slow", '{"tag": "a"}'), ("b", "slow", '{"tag": "b"}'))),
            Call(text_reply("done")),
        ]
    )
    result = await cs.AgentLoop(adapter, tools=[slow]).run("go", model="m")
    assert result.ok and sorted(started) == ["a", "b"]


async def test_bad_arguments_unknown_tools_and_raising_tools_go_back_to_the_model_as_errors() -> None:
    @cs.tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("kaboom")

    adapter = SequenceAdapter(
        [
            Call(
                tool_reply(
                    ("c1", "get_weather", '{"city": '),  # not JSON
                    ("c2", "get_weather", '{"city": 5, "wind": 1}'),  # does not fit the schema
                    ("c3", "nope", "{}"),  # no such tool
                    ("c4", "explode", "{}"),  # raises
                )
            ),
            Call(text_reply("sorry")),
        ]
    )
    result = await cs.AgentLoop(adapter, tools=[get_weather, explode]).run("go", model="m")
    assert result.ok and result.text == "sorry"
    outcomes = result.tool_outcomes
    assert all(o.is_error for o in outcomes)
    assert "not valid JSON" in outcomes[0].content
    assert "city" in outcomes[1].content and "wind" in outcomes[1].content
    assert "no tool named 'nope'" in outcomes[2].content
    assert "RuntimeError: kaboom" in outcomes[3].content
    sent = adapter.calls[1].messages[-1].content
    assert all(block.is_error for block in sent)  # type: ignore[union-attr]


async def test_a_failed_step_keeps_its_llm_error_with_status_request_id_and_cause() -> None:
    cause = ConnectionResetError("reset by peer")
    error = LlmError("upstream went away", "INVALID_REQUEST", status=400, request_id="req-9", cause=cause)
    adapter = SequenceAdapter(
        [Call(tool_reply(("c1", "get_time", '{"timezone": "UTC"}'))), Call(error=error)]
    )
    result = await cs.AgentLoop(adapter, tools=[get_time]).run("go", model="m")
    assert result.outcome == "error" and result.error is error
    assert (result.error.code, result.error.status, result.error.request_id) == (
        "INVALID_REQUEST",
        400,
        "req-9",
    )
    assert result.error.cause is cause
    assert len(result.steps) == 2 and result.steps[0].result.ok and result.steps[1].result.error is error


async def test_max_steps_ends_a_loop_that_keeps_calling_tools() -> None:
    adapter = SequenceAdapter([Call(tool_reply(("c", "get_time", '{"timezone": "UTC"}')))])
    result = await cs.AgentLoop(adapter, tools=[get_time], max_steps=3).run("go", model="m")
    assert result.outcome == "max_steps" and len(result.steps) == 3 and len(adapter.calls) == 3


async def test_every_attempt_is_recorded_in_the_usage_log() -> None:
    class Sink:
        def __init__(self) -> None:
            self.rows: list[tuple[str, int, bool, Any]] = []

        def record(
            self,
            result: Any,
            *,
            provider: str,
            model: str,
            tags: Any = None,
            call_id: Any = None,
            attempt: int = 1,
            final: bool = True,
        ) -> None:
            self.rows.append((model, attempt, final, call_id))

    sink = Sink()
    adapter = SequenceAdapter([Call(error=llm_error("SERVER")), Call(text_reply("ok"))])
    loop = cs.AgentLoop(adapter, retry=cs.RetryPolicy(sleep=lambda s: asyncio.sleep(0)), log=sink)
    await loop.run("hi", model="m1")
    assert [(m, a, f) for m, a, f, _ in sink.rows] == [("m1", 1, False), ("m1", 2, True)]
    assert sink.rows[0][3] == sink.rows[1][3]  # both attempts share one call id


async def test_an_abort_stops_a_running_tool_at_once() -> None:
    controller = AbortController()
    entered = asyncio.Event()

    @cs.tool
    async def forever() -> str:
        """Never returns."""
        entered.set()
        await asyncio.Event().wait()
        return "unreachable"

    adapter = SequenceAdapter([Call(tool_reply(("c", "forever", "{}")))])
    loop = cs.AgentLoop(adapter, tools=[forever])

    async def abort_when_entered() -> None:
        await entered.wait()
        controller.abort("user pressed stop")

    aborter = asyncio.ensure_future(abort_when_entered())
    result = await asyncio.wait_for(loop.run("go", model="m", signal=controller.signal).finish(), 5)
    await aborter
    assert result.aborted and result.error is not None and result.error.code == "ABORTED"
    assert "user pressed stop" in result.error.message


async def test_an_abort_stops_a_stalled_stream_at_once() -> None:
    controller = AbortController()
    adapter = SequenceAdapter([Call([{"type": "block-start", "index": 0, "blockType": "text"}], hang=True)])
    run = cs.AgentLoop(adapter).run("go", model="m", signal=controller.signal)
    async for event in run:
        if event.type == "chunk":
            controller.abort()
    assert run.result is not None and run.result.aborted
    assert run.result.steps[0].result.error is not None and run.result.steps[0].result.error.code == "ABORTED"


def test_run_sync_works_without_a_running_loop() -> None:
    adapter = SequenceAdapter(
        [Call(tool_reply(("c", "get_time", '{"timezone": "UTC"}'))), Call(text_reply("noon"))]
    )
    result = cs.AgentLoop(adapter, tools=[get_time]).run_sync("time?", model="m")
    assert result.ok and result.text == "noon"


async def test_hostile_arguments_are_an_error_result_not_a_crash() -> None:
    deep = "[" * 100_000  # json.loads would recurse past the stack limit
    huge = '{"city": "' + "x" * 1_100_000 + '"}'
    for arguments in (deep, huge, "[1, 2]", '"just a string"'):
        with pytest.raises(ToolArgumentsError):
            get_weather.validate(arguments)
    # (a deep array through the whole loop trips the protocol checker's own RecursionError, reported
    # to the protocol owner; the tool side is what this test pins)
    adapter = SequenceAdapter([Call(tool_reply(("c1", "get_weather", huge))), Call(text_reply("ok"))])
    result = await cs.AgentLoop(adapter, tools=[get_weather]).run("go", model="m")
    assert result.ok and result.tool_outcomes[0].is_error


async def test_a_consumer_that_stops_reading_ends_the_run_as_aborted() -> None:
    adapter = SequenceAdapter(
        [Call(tool_reply(("c", "get_time", '{"timezone": "UTC"}'))), Call(text_reply("x"))]
    )
    loop = cs.AgentLoop(adapter, tools=[get_time])
    run = loop.run("go", model="m")
    iterator = aiter(run)
    async for event in iterator:
        if event.type == "tool-call":
            break
    await iterator.aclose()  # type: ignore[attr-defined]
    assert loop.last_result is not None and loop.last_result.aborted
    assert len(adapter.calls) == 1  # no further step was started


# --- a tool raising what is not an Exception -------------------------------------------


def _one_tool_loop(fn: Any) -> cs.AgentLoop:
    adapter = SequenceAdapter([Call(tool_reply(("c1", fn.__name__, "{}"))), Call(text_reply("after"))])
    return cs.AgentLoop(adapter, [cs.tool(fn)])


@pytest.mark.parametrize("is_async", [False, True])
async def test_a_tool_raising_cancelled_error_is_a_tool_error_the_model_sees(is_async: bool) -> None:
    def sync_cancel() -> str:
        raise asyncio.CancelledError("gave up")

    async def async_cancel() -> str:
        raise asyncio.CancelledError("gave up")

    loop = _one_tool_loop(async_cancel if is_async else sync_cancel)
    events = [e async for e in loop.run("hi", model="m")]
    end = events[-1]
    assert isinstance(end, LoopEnd) and end.result.outcome == "done" and end.result.text == "after"
    outcome = end.result.tool_outcomes[0]
    assert outcome.is_error and outcome.content == "error: the tool raised CancelledError: gave up"


@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("is_async", [False, True])
async def test_a_tool_raising_keyboard_interrupt_or_system_exit_ends_the_run_with_a_result(
    kind: type[BaseException], is_async: bool
) -> None:
    def sync_stop() -> str:
        raise kind()

    async def async_stop() -> str:
        raise kind()

    loop = _one_tool_loop(async_stop if is_async else sync_stop)
    events: list[Any] = []
    with pytest.raises(kind):
        async for event in loop.run("hi", model="m"):
            events.append(event)
    end = events[-1]
    assert isinstance(end, LoopEnd) and end.result is loop.last_result
    assert end.result.outcome == "aborted" and end.result.error is not None
    assert end.result.error.code == "ABORTED" and kind.__name__ in end.result.error.message
    assert end.result.tool_outcomes[0].is_error and len(end.result.steps) == 1


def test_run_sync_raises_the_tools_keyboard_interrupt_after_keeping_the_result() -> None:
    def stop() -> str:
        raise KeyboardInterrupt

    loop = _one_tool_loop(stop)
    with pytest.raises(KeyboardInterrupt):
        loop.run_sync("hi", model="m")
    assert loop.last_result is not None and loop.last_result.outcome == "aborted"


# --- tool timeouts, and an abort while a sync tool is stuck ---------------------------------


async def test_a_tool_that_runs_past_its_timeout_is_an_error_result_the_model_sees() -> None:
    release = threading.Event()

    def stuck() -> str:
        release.wait(30)
        return "late"

    adapter = SequenceAdapter([Call(tool_reply(("c1", "stuck", "{}"))), Call(text_reply("after"))])
    loop = cs.AgentLoop(adapter, [cs.tool(timeout=0.2)(stuck)], tool_timeout=None)
    started = time.monotonic()
    try:
        result = await asyncio.wait_for(loop.run("hi", model="m"), 10)  # the watchdog
    finally:
        release.set()
    assert time.monotonic() - started < 5
    outcome = result.tool_outcomes[0]
    assert outcome.is_error and "did not finish within 0.2 s" in outcome.content
    assert result.outcome == "done" and result.text == "after"


def test_the_loops_tool_timeout_applies_and_is_validated() -> None:
    assert cs.AgentLoop(SequenceAdapter([])).tool_timeout == 60.0
    for bad in (0, -1, float("nan"), float("inf"), "5", True):
        with pytest.raises(ValueError, match="tool_timeout must be a positive"):
            cs.AgentLoop(SequenceAdapter([]), tool_timeout=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="timeout must be a positive"):
            cs.tool(timeout=bad)(lambda: None)  # type: ignore[arg-type]


_STUCK_TOOL_CHILD = """
import threading, time
import chunkscope as cs
from tests.runtime._fakes import Call, SequenceAdapter, text_reply, tool_reply

@cs.tool
def stuck() -> str:
    time.sleep(3600)  # a sync tool that never returns
    return "never"

adapter = SequenceAdapter([Call(tool_reply(("c1", "stuck", "{}"))), Call(text_reply("after"))])
controller = cs.AbortController()
threading.Timer(0.5, controller.abort, ("stop",)).start()
started = time.monotonic()
result = cs.AgentLoop(adapter, [stuck]).run_sync("hi", model="m", signal=controller.signal)
print(result.outcome, round(time.monotonic() - started) < 10)
"""


def test_run_sync_returns_after_an_abort_though_a_sync_tool_is_stuck() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    done = subprocess.run(  # the watchdog: the child must exit, not wait for its stuck thread
        [sys.executable, "-c", _STUCK_TOOL_CHILD],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=root,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["aborted", "True"]


class ObservingSink:
    """A usage sink with the agent-run hooks: it writes down every call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def record(self, result: Any, *, provider: str, model: str, tags: Any = None, **_: Any) -> None:
        self.calls.append(("record", tags["agent_run"], tags["step"]))

    def agent_run_started(self, run_id: str, *, provider: str, model: str) -> None:
        self.calls.append(("run-start", run_id, model))

    def agent_step_started(self, run_id: str, step: int) -> None:
        self.calls.append(("step-start", run_id, step))

    def agent_step_ended(self, run_id: str, step: int, *, error_code: str | None = None) -> None:
        self.calls.append(("step-end", run_id, step, error_code))

    def agent_run_ended(self, run_id: str, *, outcome: str, error_code: str | None = None) -> None:
        self.calls.append(("run-end", run_id, outcome, error_code))


async def test_a_sink_with_the_run_hooks_hears_each_run_and_step_start_and_end_around_its_attempts() -> None:
    sink = ObservingSink()
    adapter = SequenceAdapter(
        [Call(tool_reply(("c", "get_time", '{"timezone": "UTC"}'))), Call(text_reply("x"))]
    )
    result = await cs.AgentLoop(adapter, tools=[get_time], log=sink).run("go", model="m")
    assert result.ok
    run_id = sink.calls[0][1]
    assert sink.calls == [
        ("run-start", run_id, "m"),
        ("step-start", run_id, 1),
        ("record", run_id, "1"),
        ("step-end", run_id, 1, None),
        ("step-start", run_id, 2),
        ("record", run_id, "2"),
        ("step-end", run_id, 2, None),
        ("run-end", run_id, "done", None),
    ]


async def test_the_run_hooks_hear_a_failed_step_and_a_consumer_that_stops_reading() -> None:
    sink = ObservingSink()
    failing = SequenceAdapter([Call(error=llm_error("AUTH"))])
    await cs.AgentLoop(failing, log=sink).run("go", model="m")
    assert [c[0] for c in sink.calls] == ["run-start", "step-start", "record", "step-end", "run-end"]
    assert sink.calls[3][3] == "AUTH" and sink.calls[4][2:] == ("error", "AUTH")
    sink.calls.clear()
    adapter = SequenceAdapter(
        [Call(tool_reply(("c", "get_time", '{"timezone": "UTC"}'))), Call(text_reply("x"))]
    )
    iterator = aiter(cs.AgentLoop(adapter, tools=[get_time], log=sink).run("go", model="m"))
    async for event in iterator:
        if event.type == "tool-call":
            break
    await iterator.aclose()  # type: ignore[attr-defined]
    # the step never reached its end event: the run's end is still heard (the sink closes what is open)
    assert sink.calls[-1][0] == "run-end" and sink.calls[-1][2:] == ("aborted", "ABORTED")
