"""The conformance kit as pytest test cases.

``pytest --chunkscope-conformance=module:factory [--chunkscope-wire=anthropic]``
adds one test per case of the wire's matrix
(``chunkscope-conformance[<wire>]::<case>``); a failing case prints every failed
check with the sentence saying what to fix, what was expected and what was
observed. The matrix runs once per session, when its first test runs. The
``chunkscope_conformance`` fixture is ``chunkscope.conformance`` (the function),
for a test that runs the kit itself. Registered through the ``pytest11`` entry
point, so installing chunkscope is enough; importing this module costs nothing
until the option is used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from chunkscope._wires import DEFAULT_WIRE, WIRE_FACTS

from ._errors import ConformanceError
from ._target import load_factory

if TYPE_CHECKING:  # pragma: no cover
    from ._report import CaseResult, ConformanceReport

# The kit itself (adapters, provider) loads only when the option is used: every pytest run of a
# project that installs chunkscope loads this module through the pytest11 entry point.

__all__ = ["ConformanceCase", "ConformanceMatrix", "chunkscope_conformance"]

_OPTION = "--chunkscope-conformance"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chunkscope", "chunkscope adapter conformance")
    group.addoption(
        _OPTION,
        action="store",
        default=None,
        metavar="MODULE:FACTORY",
        help="run this adapter factory(base_url, api_key) through the local provider's scenario matrix",
    )
    group.addoption(
        "--chunkscope-wire",
        action="store",
        default=DEFAULT_WIRE,
        choices=tuple(WIRE_FACTS),
        help=f"the wire the adapter speaks (default: {DEFAULT_WIRE})",
    )


class ConformanceFailure(Exception):
    """A case whose checks failed (its message is the readable report)."""


class ConformanceMatrix(pytest.Collector):
    """The matrix of one factory on one wire; runs it once, on first use."""

    def __init__(self, *, target: str, wire: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.wire = wire
        self._report: ConformanceReport | None = None
        self._error: str | None = None

    def collect(self) -> Iterator[ConformanceCase]:
        from ._run import case_names

        for name in case_names(self.wire):
            yield ConformanceCase.from_parent(self, name=name)

    def report(self) -> ConformanceReport:
        if self._report is None:
            if self._error is not None:
                raise ConformanceFailure(self._error)
            from ._watch import conformance

            try:
                factory = load_factory(self.target)
                self._report = conformance(factory, wire=self.wire)
            except ConformanceError as exc:
                self._error = f"chunkscope conformance could not run {self.target}: {exc}"
                raise ConformanceFailure(self._error) from None
        return self._report


class ConformanceCase(pytest.Item):
    """One case of the matrix: passes when every applicable check passed."""

    def runtest(self) -> None:
        matrix = self.parent
        assert isinstance(matrix, ConformanceMatrix)
        case = matrix.report().case(self.name)
        if not case.ok:
            raise ConformanceFailure(_describe(case, matrix.wire))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return str(self.path), None, f"chunkscope conformance: {self.name}"


def _describe(case: CaseResult, wire: str) -> str:
    failed = case.failures
    lines = [
        f"{case.name} ({wire} wire: {case.description}) fails {len(failed)} of {len(case.checks)} checks:"
    ]
    for c in failed:
        lines.append(f"  ✗ {c.check}: {c.sentence}")
        lines.append(f"      expected: {c.expected}")
        lines.append(f"      observed: {c.observed}")
    return "\n".join(lines)


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    target = config.getoption(_OPTION)
    if not target:
        return
    wire = config.getoption("--chunkscope-wire")
    try:
        load_factory(target)
    except ConformanceError as exc:
        raise pytest.UsageError(f"{_OPTION}: {exc}") from None
    matrix = ConformanceMatrix.from_parent(
        session, name=f"chunkscope-conformance[{wire}]", target=target, wire=wire
    )
    items.extend(matrix.collect())


@pytest.fixture
def chunkscope_conformance() -> Callable[..., ConformanceReport]:
    """``chunkscope.conformance`` (the function): run the kit on a factory inside a test."""
    from ._watch import conformance

    return conformance
