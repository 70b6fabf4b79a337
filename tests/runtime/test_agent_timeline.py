"""``cs.show(loop.run(...))``: the whole agent run in ONE timeline (messages, saved state, static HTML)."""

from __future__ import annotations

import json
from typing import Any

import chunkscope as cs
from chunkscope.notebook import Timeline
from chunkscope.notebook.timeline._view import derive
from chunkscope.runtime import AgentResult

from ._fakes import Call, FakeSleep, SequenceAdapter, llm_error, text_reply, tool_reply


@cs.tool
def lookup(q: str) -> str:
    """Looks something up."""
    if q == "bad":
        raise ValueError("no such thing")
    return f"<b>{q}</b> found"  # markup in a tool result must stay text


def capture(timeline: Timeline) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    def capture(content: dict[str, Any], buffers: Any = None) -> None:
        message = json.loads(json.dumps(content))
        if buffers:  # a batch's records travel as its first buffer
            message["r"] = json.loads(bytes(buffers[0]))
        sent.append(message)

    timeline.send = capture  # type: ignore[method-assign]
    return sent


def agent_loop(calls: list[Call]) -> cs.AgentLoop:
    return cs.AgentLoop(
        SequenceAdapter(calls), tools=[lookup], retry=cs.RetryPolicy(sleep=FakeSleep(), seed=1)
    )


RUN = [
    Call(error=llm_error("RATE_LIMIT", status=429, retry_after_ms=1500)),
    Call(tool_reply(("c1", "lookup", '{"q": "<script>x</script>"}'), ("c2", "lookup", '{"q": "bad"}'))),
    Call(text_reply("<img src=x onerror=alert(1)> done")),
]


async def test_one_timeline_holds_every_step_retry_tool_span_and_the_outcome() -> None:
    timeline = Timeline()
    sent = capture(timeline)
    result = await timeline.consume_run(agent_loop(RUN).run("go", model="m"))
    assert result.ok and timeline.agent_result is result
    records = [r for m in sent if m["type"] == "batch" for r in m["r"]]
    agent = [r[2] for r in records if r[1] == "a"]
    kinds = [a["type"] for a in agent]
    assert kinds == [
        "step-start",
        "retry",
        "tool-call",
        "tool-call",
        "tool-result",
        "tool-result",
        "step-end",
        "step-start",
        "step-end",
        "loop-end",
    ]
    retry = next(a for a in agent if a["type"] == "retry")
    assert (retry["code"], retry["delayMs"], retry["status"], retry["step"]) == ("RATE_LIMIT", 1500, 429, 1)
    results = {a["id"]: a for a in agent if a["type"] == "tool-result"}
    assert results["c1"]["isError"] is False and results["c2"]["isError"] is True
    assert "ValueError: no such thing" in results["c2"]["content"]
    assert all(isinstance(a["durationMs"], float) for a in results.values())
    assert agent[-1] == {"type": "loop-end", "outcome": "done", "code": None, "steps": 2}
    assert sum(1 for m in sent if m["type"] == "batch" and "end" in m) == 1
    # the saved state draws the same picture: one segment per block of each step
    view = derive(timeline.state())
    assert [s.kind for s in view.segments] == ["tool-call", "tool-call", "text"]
    assert view.status == "done" and view.violations == []


async def test_a_failed_run_ends_with_its_llm_error_on_the_badge() -> None:
    timeline = Timeline()
    capture(timeline)
    result = await timeline.consume_run(
        agent_loop([Call(error=llm_error("AUTH", status=401))]).run("go", model="m")
    )
    assert result.outcome == "error"
    state = timeline.state()
    assert state["status"] == "error" and state["error"]["code"] == "AUTH"


async def test_the_static_copy_shows_the_run_with_model_text_escaped() -> None:
    timeline = Timeline()
    capture(timeline)
    await timeline.consume_run(agent_loop(RUN).run("go", model="m"))
    html = timeline.static_html()
    assert 'class="cs-step"' in html and 'data-step="2"' in html
    assert 'class="cs-retry" data-code="RATE_LIMIT"' in html
    assert 'data-tool="lookup" data-state="error"' in html
    assert 'data-outcome="done"' in html
    # the same order as the live widget: each step's rows inside its section
    marks = [
        'data-step="1"',
        'class="cs-retry"',
        'class="cs-seg" data-kind="tool-call"',
        'class="cs-tool-span"',
        'data-step="2"',
        'class="cs-seg" data-kind="text"',
        'class="cs-outcome"',
    ]
    positions = [html.index(mark) for mark in marks]
    assert positions == sorted(positions), list(zip(marks, positions, strict=True))
    assert "<script>x" not in html and "<img src" not in html and "<b><script>" not in html
    assert "&lt;b&gt;&lt;script&gt;x&lt;/script&gt;&lt;/b&gt; found" in html


async def test_show_draws_an_agent_run_and_returns_its_result(monkeypatch: Any) -> None:
    import IPython.display

    shown: list[Any] = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append(obj))
    result = await cs.show(agent_loop(RUN).run("go", model="m"))
    assert isinstance(result, AgentResult) and result.ok
    (timeline,) = shown
    assert isinstance(timeline, Timeline) and timeline.agent_result is result


async def test_a_steps_violation_is_placed_at_its_chunk_in_the_run() -> None:
    broken = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "never closed"},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "stop"}},  # block 0 still open: block-pairing
    ]
    timeline = Timeline()
    capture(timeline)
    result = await timeline.consume_run(agent_loop([Call(broken)]).run("go", model="m"))
    (violation,) = result.steps[0].result.errors
    state = timeline.state()
    placed = [v for v in state["violations"] if v[1] == violation.rule]
    assert len(placed) == 1
    position = placed[0][0]
    record = state["records"][position]
    assert record[1] == "x" and record[2]["type"] == "finish"  # the step's finish, in the run's records
