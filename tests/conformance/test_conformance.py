"""The conformance kit on the built-in adapters, on the source text's skeleton, and on leaky adapters."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from skeleton import make_skeleton

import chunkscope as cs
from chunkscope import conformance_kit
from chunkscope.adapters import (
    OPTIONAL_OPTIONS,
    AnthropicAdapter,
    BedrockAdapter,
    GeminiAdapter,
    GenerateOptions,
    LlmAdapter,
    OpenAICompatAdapter,
    OpenAIResponsesAdapter,
)
from chunkscope.conformance_kit import (
    ABORT_CASE,
    CHECKS,
    REFUSAL_CASE,
    ConformanceError,
    ConformanceReport,
    case_names,
    conformance,
)
from chunkscope.protocol import LlmError
from chunkscope.provider import SCENARIOS

# Between slow-first-byte (1 s) and fault-stall (30 s), as conformance() documents.
IDLE = 1.5


def openai_factory(base_url: str, api_key: str) -> OpenAICompatAdapter:
    return OpenAICompatAdapter(base_url, api_key, idle_timeout=IDLE)


def anthropic_factory(base_url: str, api_key: str) -> AnthropicAdapter:
    return AnthropicAdapter(base_url, api_key, idle_timeout=IDLE)


def responses_factory(base_url: str, api_key: str) -> OpenAIResponsesAdapter:
    return OpenAIResponsesAdapter(base_url, api_key, idle_timeout=IDLE)


def gemini_factory(base_url: str, api_key: str) -> GeminiAdapter:
    return GeminiAdapter(base_url, api_key, idle_timeout=IDLE)


@pytest.fixture(scope="module")
def skeleton_report() -> ConformanceReport:
    return conformance(make_skeleton, wire="openai")


def bedrock_factory(base_url: str, api_key: str) -> BedrockAdapter:
    return BedrockAdapter(base_url, api_key, idle_timeout=IDLE)


@pytest.mark.parametrize(
    ("wire", "factory"),
    [
        ("openai", openai_factory),
        ("anthropic", anthropic_factory),
        ("responses", responses_factory),
        ("gemini", gemini_factory),
        ("bedrock", bedrock_factory),
    ],
)
@pytest.mark.slow  # the whole matrix: a few seconds of real provider time
def test_both_builtin_adapters_conform_on_every_scenario_of_their_wire(wire: str, factory: Any) -> None:
    report = conformance(factory, wire=wire)  # type: ignore[arg-type]
    assert [case.name for case in report.cases] == case_names(wire)  # type: ignore[arg-type]
    assert report.ok, report.summary()


def test_the_matrix_holds_every_scenario_of_the_wire_plus_the_abort_and_the_refusal() -> None:
    openai = case_names("openai")
    assert set(openai) == {n for n, s in SCENARIOS.items() if "openai" in s.wires} | {
        ABORT_CASE,
        REFUSAL_CASE,
    }
    assert "dialect-usage-iterations" not in openai and "dialect-content-parts" in openai
    assert "dialect-usage-iterations" in case_names("anthropic")


def expected_skeleton_failures() -> set[tuple[str, str]]:
    """What the skeleton (POST {model, messages}, then only a stop finish) must fail, case by case."""
    failing: set[tuple[str, str]] = set()
    for name in case_names("openai"):
        if name in (ABORT_CASE, REFUSAL_CASE):
            continue
        scenario = SCENARIOS[name]
        expected = scenario.expected
        failing.add((name, "request"))  # it never asks for a stream
        if scenario.http_fault is not None:
            failing.add((name, "outcome"))  # PROVIDER_HTTP_ERROR instead of AUTH, QUOTA, ...
            continue
        if name in ("fault-drop", "fault-stall"):
            # the cut body / the silence makes httpx raise its own exception
            failing |= {(name, "outcome"), (name, "llm-error"), (name, "partial")}
            continue
        failing.add((name, "strict"))  # a lone stop finish: finish-consistency
        if expected.finish is None:  # a stream fault read as a clean stop
            failing |= {(name, "outcome"), (name, "partial")}
            continue
        if expected.text or expected.reasoning or expected.tool_calls:
            failing.add((name, "content"))
        failing.add((name, "usage"))  # no usage chunk at all
        if expected.finish != "stop" or scenario.expected_codes is not None:
            failing.add((name, "outcome"))  # always stop
    # fetch's abort is a plain AbortError; the cancelled request does free its connection
    failing |= {(ABORT_CASE, "abort"), (ABORT_CASE, "llm-error")}
    failing.add((REFUSAL_CASE, "refusal"))  # it never calls prepare()
    return failing


@pytest.mark.slow  # the whole matrix: a few seconds of real provider time
def test_the_source_texts_skeleton_fails_exactly_the_checks_it_should(
    skeleton_report: ConformanceReport,
) -> None:
    assert not skeleton_report.ok
    got = {(c.case, c.check) for c in skeleton_report.failures}
    assert got == expected_skeleton_failures()
    # what it does right stays green: dsh-clean everywhere, its connection released on abort
    assert all(case.check("dsh").passed for case in skeleton_report.cases if case.check("dsh"))  # type: ignore[union-attr]
    assert skeleton_report.case(ABORT_CASE).check("connection").passed  # type: ignore[union-attr]


@pytest.mark.slow  # the whole matrix: a few seconds of real provider time
def test_each_skeleton_failure_tells_its_author_what_to_fix(skeleton_report: ConformanceReport) -> None:
    fixes = {
        "request": '"stream": true',
        "strict": "finish-consistency",
        "content": "Translate every content event",
        "usage": "usage chunk before the finish",
        "outcome": "LlmError with code",
        "partial": "before the fault",
        "llm-error": "raise LlmError with a stable code",
        "abort": "ABORTED",
        "refusal": "self.prepare(options)",
    }
    for failure in skeleton_report.failures:
        assert failure.sentence and failure.expected and failure.observed
        if failure.check == "outcome" and failure.case in ("text", "tool-call"):
            assert "tool-calls finish" in failure.sentence  # the stop reason, mapped
            continue
        assert fixes[failure.check] in failure.sentence or failure.check == "outcome", failure
    outcome_401 = skeleton_report.case("fault-401").check("outcome")
    assert (
        outcome_401 is not None
        and "AUTH" in outcome_401.sentence
        and "PROVIDER_HTTP_ERROR" in outcome_401.sentence
    )
    assert "RemoteProtocolError" in skeleton_report.case("fault-drop").check("llm-error").sentence  # type: ignore[union-attr]


@pytest.mark.slow  # the whole matrix: a few seconds of real provider time
def test_the_frame_has_one_row_per_case_and_check(skeleton_report: ConformanceReport) -> None:
    frame = skeleton_report.to_frame()
    assert list(frame.columns) == [
        "case",
        "scenario",
        "wire",
        "check",
        "passed",
        "expected",
        "observed",
        "sentence",
    ]
    assert len(frame) == sum(len(case.checks) for case in skeleton_report.cases)
    assert frame["passed"].dtype == bool
    failed = frame[~frame["passed"]]
    assert set(zip(failed["case"], failed["check"], strict=False)) == expected_skeleton_failures()
    assert set(frame["check"]) <= set(CHECKS)


@pytest.mark.slow  # the whole matrix: a few seconds of real provider time
def test_junit_has_one_testcase_per_case_and_the_failures_say_why(
    skeleton_report: ConformanceReport, tmp_path: Path
) -> None:
    path = skeleton_report.to_junit(tmp_path / "conformance.xml")
    suite = ET.parse(path).getroot()
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [case.name for case in skeleton_report.cases]
    failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert int(suite.get("failures", "0")) == len(failed) == sum(not c.ok for c in skeleton_report.cases)
    assert "self.prepare(options)" in failed[REFUSAL_CASE].get("message", "")  # type: ignore[union-attr]


@pytest.mark.slow  # the whole matrix: a few seconds of real provider time
def test_the_summary_names_each_failure_and_the_headline_the_verdict(
    skeleton_report: ConformanceReport,
) -> None:
    lines = skeleton_report.summary().splitlines()
    assert lines[0].startswith("HttpAdapter does not conform on the openai wire:")
    assert len(lines) == 1 + len(skeleton_report.failures)
    assert "ConformanceReport(wire='openai', adapter='HttpAdapter', ok=False" in repr(skeleton_report)


class _LeakyAbort(LlmAdapter):
    """Streams the text fragments, ends on abort as ABORTED, but never closes the response."""

    supported_options = frozenset(OPTIONAL_OPTIONS)

    def __init__(self, base_url: str) -> None:
        import httpx

        self.url = base_url + "/chat/completions"
        self.client = httpx.AsyncClient(timeout=IDLE)
        self.kept: list[Any] = []

    async def stream(self, options: GenerateOptions) -> AsyncIterator[Any]:
        self.prepare(options)
        request = self.client.build_request("POST", self.url, json={"model": options.model, "stream": True})
        response = await self.client.send(request, stream=True)
        self.kept.append(response)  # the leak: nothing ever closes it
        yield {"type": "block-start", "index": 0, "blockType": "text"}
        yield {"type": "text-delta", "index": 0, "text": "Hello"}
        assert options.signal is not None
        await options.signal.wait()
        raise LlmError("aborted", "ABORTED")

    async def aclose(self) -> None:
        for response in self.kept:
            await response.aclose()
        await self.client.aclose()


def test_an_adapter_that_keeps_its_connection_after_an_abort_fails_the_connection_check() -> None:
    report = conformance(lambda url, key: _LeakyAbort(url), scenarios=[ABORT_CASE])
    case = report.case(ABORT_CASE)
    assert case.check("abort").passed  # type: ignore[union-attr]
    connection = case.check("connection")
    assert connection is not None and not connection.passed
    assert "aclose()" in connection.sentence and "still open" in connection.observed


def test_scenarios_limits_the_run_and_unknown_names_are_refused() -> None:
    report = conformance(openai_factory, scenarios=["text", "fault-429"])
    assert [c.name for c in report.cases] == ["text", "fault-429"]
    assert report.ok, report.summary()
    with pytest.raises(ConformanceError, match="unknown case"):
        conformance(openai_factory, scenarios=["no-such-case"])


def test_a_factory_that_raises_or_returns_no_adapter_is_a_clear_error() -> None:
    def broken(base_url: str, api_key: str) -> Any:
        raise RuntimeError("boom")

    with pytest.raises(ConformanceError, match="the factory raised RuntimeError: boom"):
        conformance(broken)
    with pytest.raises(ConformanceError, match="no stream"):
        conformance(lambda url, key: object())


async def test_inside_a_running_event_loop_the_kit_still_runs() -> None:
    report = cs.conformance(openai_factory, scenarios=["text"])
    assert report.ok and isinstance(report, cs.ConformanceReport)
    again = await conformance_kit.run_conformance(openai_factory, scenarios=["echo"])
    assert again.ok, again.summary()
    await asyncio.sleep(0)


def test_import_chunkscope_does_not_import_pandas_and_cs_conformance_is_the_function() -> None:
    import subprocess
    import sys

    code = (
        "import sys, types, chunkscope as cs\n"
        "from chunkscope.conformance_kit import ConformanceReport\n"
        "import chunkscope.conformance_kit.pytest_plugin\n"  # what every pytest run imports
        "assert 'pandas' not in sys.modules\n"
        "from chunkscope.conformance_kit import conformance\n"
        "assert cs.conformance is conformance and isinstance(conformance, types.FunctionType)\n"
        "assert type(sys.modules['chunkscope.conformance_kit']) is types.ModuleType\n"
        "assert 'chunkscope.conformance' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


class _DropsTemperature(OpenAICompatAdapter):
    """Claims every option but leaves the temperature out of the body."""

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        body = super().request_body(options)
        body.pop("temperature", None)
        return body


def test_the_request_check_reads_what_the_provider_received() -> None:
    dropped = conformance(lambda url, key: _DropsTemperature(url, key, idle_timeout=IDLE), scenarios=["text"])
    request = dropped.case("text").check("request")
    assert request is not None and not request.passed
    assert request.sentence == "Fix the request: send temperature 0.25 (sent None)."
    anonymous = conformance(
        lambda url, key: OpenAICompatAdapter(url, key, idle_timeout=IDLE, headers={"User-Agent": "curl/8.0"}),
        scenarios=["text"],
    )
    request = anonymous.case("text").check("request")
    assert request is not None and not request.passed
    assert "merge attribution_headers() into every request (User-Agent was 'curl/8.0'" in request.sentence
