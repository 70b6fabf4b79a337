"""The conformance report: one row per case (a scenario, the abort, the refusal), one cell per check.

``ConformanceReport`` is plain data (frozen dataclasses): ``ok``,
``summary()``, ``failures``, ``to_frame()`` (pandas, imported on first use),
``to_junit(path)``. How a notebook shows it (the static HTML grid for saved
pages, the interactive grid that opens a case's timeline) is the notebook
layer's ``ConformanceGrid``, registered for this type when a kernel imports
chunkscope.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkscope._extras import needs_extra
from chunkscope.protocol import StreamResult

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from chunkscope.provider import ReceivedRequest

__all__ = ["CHECKS", "CaseResult", "CheckResult", "ConformanceReport"]

CHECKS: dict[str, str] = {
    "strict": "the chunks break no rule of the strict profile",
    "dsh": (
        "the chunks break no rule of the dsh profile "
        "(the invariant of the TypeScript reference, deepseek-ai/deepseek-harness)"
    ),
    "content": "the assembled text, reasoning and tool calls equal the scenario's script",
    "usage": "the reported usage equals the scenario's",
    "outcome": "the finish kind, or the LlmError code, is the documented one",
    "llm-error": "a failure is raised as an LlmError, never as another exception",
    "partial": "the output delivered before a mid-stream fault is kept",
    "request": "the request carried the attribution headers and the caller's options",
    "abort": "an abort ends the stream within 100 ms, as ABORTED",
    "connection": "the aborted request's connection is closed at once (seen by the provider)",
    "refusal": "options the adapter cannot honour are refused before any request is sent",
    "options": "supported_options can be read (a collection of option names)",
    "time": "the case ended within its time limit (judged by a watchdog outside the case's event loop)",
}
"""Every check's id and what it verifies, in the grid's column order."""


@dataclass(frozen=True)
class CheckResult:
    """One cell of the grid: a check applied to one case.

    ``sentence`` says what held (on a pass) or what the adapter's author
    should fix (on a failure); ``position`` is the chunk the finding points
    at, when there is one.
    """

    case: str
    check: str
    passed: bool
    expected: str
    observed: str
    sentence: str
    position: int | None = None

    def __str__(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        return f"{mark} {self.case} · {self.check}: {self.sentence}"


@dataclass(frozen=True)
class CaseResult:
    """One row: the case's name, the scenario it ran, its checks, and what the stream produced."""

    name: str
    scenario: str
    description: str
    checks: tuple[CheckResult, ...]
    result: StreamResult | None = field(default=None, repr=False, compare=False)
    requests: tuple[ReceivedRequest, ...] = field(default=(), repr=False, compare=False)
    not_run: str | None = None
    """Why the case never ran (an earlier case hung, the run's time budget was spent), or None."""

    @property
    def ok(self) -> bool:
        """True when the case ran and every applicable check passed."""
        return self.not_run is None and all(c.passed for c in self.checks)

    @property
    def failures(self) -> list[CheckResult]:
        """The failed checks, in column order."""
        return [c for c in self.checks if not c.passed]

    def check(self, name: str) -> CheckResult | None:
        """The cell for check ``name``, or None when it does not apply to this case."""
        for c in self.checks:
            if c.check == name:
                return c
        return None


@dataclass(frozen=True)
class ConformanceReport:
    """What ``conformance()`` found: one ``CaseResult`` per case, on one wire, for one adapter."""

    wire: str
    adapter: str
    cases: tuple[CaseResult, ...]
    problems: tuple[str, ...] = ()
    """What went wrong outside any case (e.g. the adapter's ``aclose()`` hung), one sentence each."""

    @property
    def ok(self) -> bool:
        """True when every check of every case passed and nothing went wrong outside them."""
        return not self.problems and all(case.ok for case in self.cases)

    @property
    def checks(self) -> list[str]:
        """The check ids that apply to at least one case, in column order."""
        used = {c.check for case in self.cases for c in case.checks}
        return [name for name in CHECKS if name in used]

    @property
    def failures(self) -> list[CheckResult]:
        """Every failed check, row by row."""
        return [c for case in self.cases for c in case.failures]

    def case(self, name: str) -> CaseResult:
        """The row named ``name`` (KeyError naming the rows when there is none)."""
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(f"no case {name!r}; the cases are {[c.name for c in self.cases]}")

    def counts(self) -> tuple[int, int]:
        """(checks passed, checks run)."""
        cells = [c for case in self.cases for c in case.checks]
        return sum(c.passed for c in cells), len(cells)

    def headline(self) -> str:
        """One line: the verdict and its numbers."""
        passed, total = self.counts()
        rows = len(self.cases)
        good = sum(case.ok for case in self.cases)
        not_run = sum(case.not_run is not None for case in self.cases)
        verdict = "conforms" if self.ok else "does not conform"
        return (
            f"{self.adapter} {verdict} on the {self.wire} wire: "
            f"{good}/{rows} cases clean, {passed}/{total} checks pass"
            + (f", {not_run}/{rows} cases not run" if not_run else "")
        )

    def summary(self) -> str:
        """The headline, one line per failed check with what to fix, then any problem outside the cases."""
        lines = [self.headline()]
        lines.extend(f"  ✗ {c.case} · {c.check}: {c.sentence}" for c in self.failures)
        lines.extend(f"  ✗ {problem}" for problem in self.problems)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        passed, total = self.counts()
        return (
            f"ConformanceReport(wire={self.wire!r}, adapter={self.adapter!r}, ok={self.ok}, "
            f"cases={len(self.cases)}, checks_passed={passed}/{total})"
        )

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per case and check: case, scenario, wire, check, passed, expected, observed, sentence."""
        return [
            {
                "case": case.name,
                "scenario": case.scenario,
                "wire": self.wire,
                "check": c.check,
                "passed": c.passed,
                "expected": c.expected,
                "observed": c.observed,
                "sentence": c.sentence,
            }
            for case in self.cases
            for c in case.checks
        ]

    def to_frame(self) -> pd.DataFrame:
        """A pandas frame, one row per case and check (string columns, a bool ``passed``)."""
        with needs_extra("ConformanceReport.to_frame()"):
            import pandas as pd

        columns = ["case", "scenario", "wire", "check", "passed", "expected", "observed", "sentence"]
        frame = pd.DataFrame(self.to_records(), columns=columns)
        dtypes: dict[str, Any] = {name: "string" for name in columns if name != "passed"}
        dtypes["passed"] = "bool"
        return frame.astype(dtypes)

    def to_junit(self, path: str | Path) -> Path:
        """Write JUnit XML (one testcase per case; a failure lists its failed checks); return the path.

        Missing parent folders are created; any other ``OSError`` is raised as is.
        """
        failures = sum(not case.ok for case in self.cases)
        suite = ET.Element(
            "testsuite",
            name=f"chunkscope conformance ({self.wire})",
            tests=str(len(self.cases)),
            failures=str(failures),
            errors="0",
            skipped="0",
        )
        ET.SubElement(ET.SubElement(suite, "properties"), "property", name="adapter", value=self.adapter)
        for case in self.cases:
            element = ET.SubElement(
                suite, "testcase", classname=f"chunkscope.conformance.{self.wire}", name=case.name
            )
            if not case.ok:
                failed = case.failures
                failure = ET.SubElement(
                    element,
                    "failure",
                    message="; ".join(f"{c.check}: {c.sentence}" for c in failed),
                    type="ConformanceFailure",
                )
                failure.text = "\n".join(
                    f"{c.check}: {c.sentence}\n  expected: {c.expected}\n  observed: {c.observed}"
                    for c in failed
                )
        if self.problems:  # outside every case, yet part of the verdict: a CI must see it
            element = ET.SubElement(
                suite, "testcase", classname=f"chunkscope.conformance.{self.wire}", name="outside-the-cases"
            )
            failure = ET.SubElement(
                element, "failure", message="; ".join(self.problems), type="ConformanceFailure"
            )
            failure.text = "\n".join(self.problems)
            suite.set("tests", str(len(self.cases) + 1))
            suite.set("failures", str(failures + 1))
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)  # `--junit reports/conformance.xml` in a fresh CI
        ET.ElementTree(suite).write(target, encoding="utf-8", xml_declaration=True)
        return target
