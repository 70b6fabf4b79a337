"""The README's code runs as written, and its two commands are the ones the project uses."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _python_blocks() -> list[str]:
    return _PYTHON_BLOCK.findall(README.read_text(encoding="utf-8"))


def test_readme_has_python_examples() -> None:
    assert len(_python_blocks()) >= 3


async def test_readme_python_blocks_run_in_order() -> None:
    # one namespace, blocks in order, top-level await allowed: as in a notebook or `python -m asyncio`
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for number, source in enumerate(_python_blocks(), start=1):
        name = f"README.md python block {number}"
        code = compile(source, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        outcome = eval(code, namespace)
        if inspect.isawaitable(outcome):
            await outcome


@pytest.mark.parametrize("command", ["bash scripts/lab.sh", "bash scripts/test.sh"], ids=["lab", "test"])
def test_readme_names_the_two_commands(command: str) -> None:
    assert command in README.read_text(encoding="utf-8")


def test_ci_runs_the_readme_test_command() -> None:
    ci = (README.parent / ".ci" / "run").read_text()
    assert re.search(r"^\s*bash scripts/test\.sh\b", ci, re.M), ci
    assert "set -euo pipefail" in ci
