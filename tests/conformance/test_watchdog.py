"""Hostile adapters against the kit's watchdog: every case and the whole run end in bounded time.

Each test runs the kit with small limits under a wall-clock bound of its own
(``pytest.mark.timeout`` and an elapsed-time assertion): an adapter that
blocks the event loop, one that swallows ``CancelledError``, one whose
``aclose()`` hangs, one whose ``supported_options`` raises, and the run's
total budget with the cases it never reached.
"""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from chunkscope.adapters import GenerateOptions, LlmAdapter, OpenAICompatAdapter
from chunkscope.cli import main
from chunkscope.conformance_kit import ConformanceError, conformance, run_conformance

IDLE = 1.5
SRC = Path(__file__).resolve().parents[2] / "src"


def good(base_url: str, api_key: str) -> OpenAICompatAdapter:
    return OpenAICompatAdapter(base_url, api_key, idle_timeout=IDLE)


class _Blocking(OpenAICompatAdapter):
    """Calls ``time.sleep`` inside ``stream`` (the whole event loop stops) while ``blocks`` says so."""

    def __init__(self, base_url: str, api_key: str, blocks: Callable[[], bool]) -> None:
        super().__init__(base_url, api_key, idle_timeout=IDLE)
        self.blocks = blocks

    async def stream(self, options: GenerateOptions) -> AsyncIterator[Any]:  # type: ignore[override]
        if self.blocks():
            time.sleep(4.0)
        async for chunk in super().stream(options):
            yield chunk


def _first_call_only() -> Callable[[], bool]:
    calls = iter([True])
    lock = threading.Lock()

    def blocks() -> bool:
        with lock:
            return next(calls, False)

    return blocks


@pytest.mark.timeout(30)
def test_an_adapter_that_blocks_the_loop_fails_that_case_and_the_next_case_runs_on_a_fresh_one() -> None:
    blocks = _first_call_only()
    started = time.monotonic()
    # timeout=2: the loop is blocked for 4 s and judged at 2 s; echo has 2 s on a loaded machine
    report = conformance(
        lambda url, key: _Blocking(url, key, blocks), scenarios=["text", "echo"], timeout=2.0
    )
    elapsed = time.monotonic() - started
    assert elapsed < 10.0, elapsed
    text = report.case("text")
    cell = text.check("time")
    assert cell is not None and not cell.passed
    assert "the event loop was blocked" in cell.observed and "Never block the event loop" in cell.sentence
    assert report.case("echo").ok, report.summary()
    assert not report.ok and "does not conform" in report.headline()
    assert "✗ text · time: Never block the event loop" in report.summary()


class _SwallowsCancel(LlmAdapter):
    """Streams a text delta, then ignores its abort and swallows every cancellation."""

    supported_options = frozenset({"signal", "purpose"})

    async def stream(self, options: GenerateOptions) -> AsyncIterator[Any]:
        yield {"type": "block-start", "index": 0, "blockType": "text"}
        yield {"type": "text-delta", "index": 0, "text": "Hi"}
        for _ in range(200):  # 20 s at most: the thread that is left behind ends on its own
            try:
                await asyncio.sleep(0.1)
            except asyncio.CancelledError:  # the defect under test
                continue


@pytest.mark.timeout(30)
def test_an_adapter_that_swallows_cancellation_is_abandoned_and_reported() -> None:
    started = time.monotonic()
    report = conformance(lambda url, key: _SwallowsCancel(), scenarios=["text"], timeout=0.3)
    elapsed = time.monotonic() - started
    assert elapsed < 8.0, elapsed  # 0.3 s, then the abort's 2 s and the cancellation's 1 s
    outcome = report.case("text").check("outcome")
    assert outcome is not None and not outcome.passed
    result = report.case("text").result
    assert result is not None and result.error is not None and result.error.code == "TIMEOUT"
    assert "swallows CancelledError" in str(result.error)
    assert not report.ok


class _HangingClose(OpenAICompatAdapter):
    async def aclose(self) -> None:
        await super().aclose()
        await asyncio.sleep(3600)  # never returns in time


class _BlockingClose(OpenAICompatAdapter):
    async def aclose(self) -> None:
        await super().aclose()
        time.sleep(12.0)


@pytest.mark.timeout(40)
@pytest.mark.parametrize(
    ("adapter", "says"),
    [
        (_HangingClose, "aclose() did not return within 3 s"),
        (_BlockingClose, "aclose() blocked the event loop"),
    ],
)
def test_an_aclose_that_hangs_is_a_problem_of_the_report_not_a_hang(
    adapter: type, says: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    report = conformance(lambda url, key: adapter(url, key, idle_timeout=IDLE), scenarios=["text"])
    elapsed = time.monotonic() - started
    assert elapsed < 12.0, elapsed
    assert report.case("text").ok, report.summary()
    assert not report.ok
    assert any(says in problem for problem in report.problems), report.problems
    assert says in report.summary()
    suite = ET.parse(report.to_junit(tmp_path / "conformance.xml")).getroot()
    outside = [c for c in suite.findall("testcase") if c.get("name") == "outside-the-cases"]
    assert suite.get("failures") == "1" and len(outside) == 1
    assert says in outside[0].find("failure").get("message", "")  # type: ignore[union-attr]


class _RaisingOptions(OpenAICompatAdapter):
    @property  # type: ignore[override]
    def supported_options(self) -> frozenset[str]:
        raise RuntimeError("options not loaded yet")


@pytest.mark.timeout(30)
def test_a_raising_supported_options_is_a_failure_in_the_report_not_a_traceback(tmp_path: Path) -> None:
    report = conformance(
        lambda url, key: _RaisingOptions(url, key, idle_timeout=IDLE),
        scenarios=["text", "refuse-unsupported-options"],
    )
    for case in report.cases:
        cell = case.check("options")
        assert cell is not None and not cell.passed
        assert cell.observed == "RuntimeError: options not loaded yet"
        assert "Reading supported_options raised RuntimeError" in cell.sentence
    assert not report.ok
    frame_checks = {row["check"] for row in report.to_records()}
    assert "options" in frame_checks


class _AlwaysBlocks(OpenAICompatAdapter):
    async def stream(self, options: GenerateOptions) -> AsyncIterator[Any]:  # type: ignore[override]
        time.sleep(3.0)
        async for chunk in super().stream(options):
            yield chunk


@pytest.mark.timeout(30)
def test_the_run_has_a_budget_and_the_cases_it_never_reached_are_reported_not_run() -> None:
    names = ["text", "echo", "tool-call", "fault-429"]
    started = time.monotonic()
    report = conformance(
        lambda url, key: _AlwaysBlocks(url, key, idle_timeout=IDLE),
        scenarios=names,
        timeout=0.5,
        total_timeout=1.5,
    )
    elapsed = time.monotonic() - started
    assert elapsed < 6.0, elapsed
    assert [c.name for c in report.cases] == names
    not_run = [c for c in report.cases if c.not_run is not None]
    assert not_run, report.summary()
    for case in not_run:
        assert not case.ok and "total_timeout=1.5 s" in case.not_run  # type: ignore[operator]
        cell = case.check("time")
        assert cell is not None and cell.observed == "not run" and cell.sentence.startswith("Not run: ")
    assert not report.ok and "conforms" not in report.headline().replace("does not conform", "")
    assert f"{len(not_run)}/4 cases not run" in report.headline()


@pytest.mark.timeout(30)
async def test_run_conformance_keeps_the_callers_loop_free_while_a_case_blocks_its_own() -> None:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.05)

    ticking = asyncio.ensure_future(tick())
    blocks = _first_call_only()
    report = await run_conformance(
        lambda url, key: _Blocking(url, key, blocks), scenarios=["text"], timeout=0.5
    )
    ticking.cancel()
    assert ticks > 10  # the caller's loop ran while the case's loop was blocked
    cell = report.case("text").check("time")
    assert cell is not None and not cell.passed


@pytest.mark.parametrize("bad", [math.nan, -1.0, 0.0, math.inf, "4", True])
def test_a_timeout_that_is_not_a_positive_finite_number_is_refused(bad: Any) -> None:
    with pytest.raises(ConformanceError, match="timeout must be"):
        conformance(good, scenarios=["text"], timeout=bad)
    with pytest.raises(ConformanceError, match="total_timeout must be"):
        conformance(good, scenarios=["text"], total_timeout=bad)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--timeout", "nan"], "argument --timeout: 'nan' must be a positive, finite number of seconds"),
        (["--timeout", "-1"], "argument --timeout: '-1' must be a positive, finite number of seconds"),
        (["--timeout", "0"], "argument --timeout: '0' must be a positive, finite number of seconds"),
        (["--timeout", "abc"], "argument --timeout: 'abc' is not a number of seconds"),
        (["--total-timeout", "inf"], "argument --total-timeout: 'inf' must be a positive, finite number"),
        (["--wire", "grpc"], "argument --wire: invalid choice: 'grpc'"),
    ],
)
def test_bad_flag_values_are_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["conformance", "skeleton:make_skeleton", *argv])
    out, err = capsys.readouterr()
    assert exited.value.code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("chunkscope conformance: ") and says in err, err


def test_junit_into_a_missing_folder_creates_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "reports" / "ci" / "conformance.xml"
    status = main(["conformance", "skeleton:make_skeleton", "--case", "text", "--junit", str(target)])
    assert status == 1  # the skeleton does not conform; the XML is written all the same
    assert target.read_text(encoding="utf-8").startswith("<?xml")
    assert f"JUnit XML written to {target}" in capsys.readouterr().out


def test_junit_that_cannot_be_written_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "taken").write_text("a file, not a folder")
    status = main(
        [
            "conformance",
            "skeleton:make_skeleton",
            "--case",
            "text",
            "--junit",
            str(tmp_path / "taken" / "x.xml"),
        ]
    )
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and err.startswith(
        f"chunkscope conformance: --junit {tmp_path / 'taken' / 'x.xml'}: "
    )


@pytest.mark.timeout(40)
def test_a_factory_that_never_returns_is_a_clear_error_within_the_setup_limit() -> None:
    def stuck(base_url: str, api_key: str) -> Any:
        time.sleep(20.0)  # the defect under test: blocks the loop while building the adapter
        return good(base_url, api_key)

    started = time.monotonic()
    with pytest.raises(ConformanceError, match=r"the adapter was not built within 10\.5 s"):
        conformance(stuck, scenarios=["text"], timeout=0.5)
    assert time.monotonic() - started < 15.0


_STUCK_FOR_GOOD = """\
import time
from chunkscope.adapters import OpenAICompatAdapter

class Stuck(OpenAICompatAdapter):
    async def stream(self, options):
        time.sleep(600)  # never comes back in the life of this command
        yield {}

def make(base_url, api_key):
    return Stuck(base_url, api_key)
"""


@pytest.mark.timeout(60)
def test_the_command_ends_with_exit_1_though_a_case_stays_stuck_forever(tmp_path: Path) -> None:
    (tmp_path / "stuck_adapter.py").write_text(_STUCK_FOR_GOOD, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{SRC}"}
    argv = ["conformance", "stuck_adapter:make", "--case", "text", "--case", "echo", "--timeout", "0.5"]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "chunkscope.cli", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=45,
    )
    assert time.monotonic() - started < 20.0
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Stuck does not conform on the openai wire: 0/2 cases clean, 0/2 checks pass"
    assert lines[1].startswith("  ✗ text · time: Never block the event loop inside stream()")
    assert lines[2].startswith("  ✗ echo · time: Never block the event loop inside stream()")
    assert "Traceback" not in done.stderr
