"""The agent run's timeline as a person sees it: real JupyterLab, real kernel, headless Chromium.

``await cs.show(loop.run(...))`` against the local provider draws the whole run in ONE
widget: a section per step, the retry wait after a 429 (code and delay), the tool span
(duration, result), the outcome; a run that fails shows its LlmError badge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import Lab

pytestmark = pytest.mark.browser

LIVE = ".cs-timeline:not(.cs-static)"

PRELUDE = """\
import asyncio
import chunkscope as cs

@cs.tool
def get_weather(city: str) -> str:
    '''Current weather for a city.'''
    return f"sunny, 21 C in {city} <b>not bold</b>"

class FirstAttemptVia(cs.LlmAdapter):
    '''Sends the first request to a fault scenario, every later one as asked.'''
    provider = "deepseek"
    def __init__(self, inner, first_model):
        self.inner, self.first_model, self.requests = inner, first_model, 0
        self.supported_options = inner.supported_options
    def stream(self, options):
        self.requests += 1
        if self.requests == 1:
            options = options.replace(model=self.first_model)
        return self.inner.stream(options)

async def no_wait(seconds):  # the Retry-After wait, recorded but not slept for real
    waits.append(seconds)
waits = []
"""

ROUND_TRIP = """\
with cs.LocalProvider() as provider:
    async with cs.OpenAICompatAdapter(provider.base_url, "sk-local") as real:
        loop = cs.AgentLoop(FirstAttemptVia(real, "fault-429"), tools=[get_weather],
                            retry=cs.RetryPolicy(sleep=no_wait, seed=1))
        result = await cs.show(loop.run("Weather in Tokyo?", model="tool-roundtrip"), title="agent run")
assert result.ok, result
assert waits == [2.0] and len(result.retries) == 1
"""

FAILING = """\
with cs.LocalProvider() as provider:
    async with cs.OpenAICompatAdapter(provider.base_url, "sk-local") as adapter:
        failed = await cs.show(cs.AgentLoop(adapter, tools=[get_weather]).run("hi", model="fault-401"))
assert failed.outcome == "error" and failed.error.code == "AUTH", failed
"""


def _timeline(lab: Lab, cell: int, state: str) -> Any:
    timeline = lab.page.locator(".jp-CodeCell").nth(cell).locator(LIVE)
    timeline.first.wait_for(state="attached")
    assert timeline.count() == 1
    lab.page.wait_for_function(
        "([el, state]) => el.dataset.state === state",
        arg=[timeline.first.element_handle(), state],
        timeout=30_000,
    )
    return timeline.first


def test_an_agent_run_shows_steps_a_retry_wait_a_tool_span_and_the_outcome(lab: Lab) -> None:
    lab.write_notebook("agent.ipynb", [PRELUDE, ROUND_TRIP, FAILING])
    lab.open("agent.ipynb")
    lab.run_all()

    run = _timeline(lab, 1, "done")
    steps = run.locator(".cs-step")
    assert steps.count() == 2
    assert [steps.nth(i).inner_text() for i in range(2)] == ["step 1", "step 2"]

    retry = run.locator(".cs-retry")
    assert retry.count() == 1 and retry.get_attribute("data-code") == "RATE_LIMIT"
    assert "RATE_LIMIT" in retry.inner_text() and "429" in retry.inner_text()
    assert "wait 2.00 s" in retry.locator(".cs-cap").inner_text()  # the provider's Retry-After
    # the wait bar ends where the second attempt began: inside the plot, before step 1's text
    bar = retry.locator(".cs-bar").bounding_box()
    track = retry.locator(".cs-track").bounding_box()
    assert (
        bar is not None and track is not None and bar["x"] + bar["width"] <= track["x"] + track["width"] + 1
    )

    tool = run.locator(".cs-tool-span")
    assert tool.count() == 1
    assert tool.get_attribute("data-tool") == "get_weather" and tool.get_attribute("data-state") == "ok"
    text = tool.locator(".cs-seg-text").inner_text()
    assert 'get_weather({"city": "Tokyo"})' in text and "sunny, 21 C in Tokyo <b>not bold</b>" in text
    assert tool.locator("b").count() == 0  # the tool's output is text, never markup
    assert "ok" in tool.locator(".cs-cap").inner_text()

    # the lanes in page order: each step's blocks inside its own section
    order = run.locator(".cs-lanes > *").evaluate_all(
        "els => els.map(el => el.classList.contains('cs-seg') ? el.dataset.kind : el.className)"
    )
    assert order == [
        "cs-step",
        "cs-retry",
        "text",
        "tool-call",
        "cs-tool-span",
        "cs-step",
        "text",
        "cs-outcome",
    ], order
    answer = run.locator(".cs-seg").nth(2).locator(".cs-seg-text").inner_text()
    assert answer.startswith("The tool said: sunny, 21 C in Tokyo")
    assert run.locator(".cs-outcome").get_attribute("data-outcome") == "done"
    assert run.locator(".cs-error").count() == 0
    # 11 chunks of step 1's second attempt + 8 of step 2; the run's own records are no chunks
    assert run.locator(".cs-fact-chunks").inner_text() == "19"
    lab.screenshot("agent-run.png", run)

    failed = _timeline(lab, 2, "error")
    badge = failed.locator(".cs-error")
    assert badge.get_attribute("data-code") == "AUTH" and badge.is_visible()
    assert failed.locator(".cs-outcome").get_attribute("data-outcome") == "error"
    assert failed.locator(".cs-step").count() == 1
    assert "0 chunks" in failed.locator(".cs-partial").inner_text()
    lab.screenshot("agent-run-failed.png", failed)


def test_a_saved_agent_run_reopens_with_its_steps_retry_and_tool_span(lab: Lab) -> None:
    lab.write_notebook("agent-saved.ipynb", [PRELUDE, ROUND_TRIP])
    lab.open("agent-saved.ipynb")
    lab.run_all()
    _timeline(lab, 1, "done")
    lab.save()
    saved = lab.read_saved("agent-saved.ipynb")
    html = "".join(
        "".join(output.get("data", {}).get("text/html", "")) for output in saved["cells"][1]["outputs"]
    )
    # the static copy (what a viewer without widgets shows) names the run's parts, escaped
    assert 'class="cs-retry" data-code="RATE_LIMIT"' in html and 'data-outcome="done"' in html
    assert "&lt;b&gt;not bold&lt;/b&gt;" in html and "<b>not bold</b>" not in html

    # reopened on a fresh kernel that ran nothing: only the saved widget state can draw it
    lab.reopen("agent-saved.ipynb")
    run = _timeline(lab, 1, "done")
    assert run.locator(".cs-step").count() == 2
    assert run.locator(".cs-retry").get_attribute("data-code") == "RATE_LIMIT"
    assert run.locator(".cs-tool-span").get_attribute("data-state") == "ok"
    assert run.locator(".cs-outcome").get_attribute("data-outcome") == "done"
