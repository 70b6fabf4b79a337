"""The protocol package's module layout: no import cycle, and the rules split by concept."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import chunkscope.protocol as protocol

PACKAGE = Path(protocol.__file__).parent
SRC = PACKAGE.parents[1]
MODULES = sorted(path.stem for path in PACKAGE.glob("_*.py") if path.stem != "__init__")


def _imports(module: str) -> set[str]:
    """The sibling modules ``module`` imports, TYPE_CHECKING imports included (a cycle there still bites)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("chunkscope.protocol._"):
            found.add((node.module or "").rsplit(".", 1)[1])
    return found


def test_the_rules_live_in_three_modules_by_concept() -> None:
    assert {"_violations", "_checker", "_validate"} <= set(MODULES)
    assert "_rules" not in MODULES
    # where each name is defined (its __module__ is the public path, chunkscope)
    assert protocol.Violation is sys.modules["chunkscope.protocol._violations"].Violation
    assert protocol.RULES is sys.modules["chunkscope.protocol._violations"].RULES
    assert protocol.Checker is sys.modules["chunkscope.protocol._checker"].Checker
    assert protocol.check is sys.modules["chunkscope.protocol._validate"].check
    assert protocol.validated is sys.modules["chunkscope.protocol._validate"].validated


def test_the_protocol_modules_import_each_other_without_a_cycle() -> None:
    graph = {module: _imports(module) & set(MODULES) for module in MODULES}
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        if state.get(module) == "done":
            return
        assert state.get(module) != "active", "import cycle: " + " -> ".join([*path, module])
        state[module] = "active"
        for target in sorted(graph[module]):
            visit(target, [*path, module])
        state[module] = "done"

    for module in MODULES:
        visit(module, [])
    # the cycle the split removed
    assert "_checker" not in graph["_errors"] and "_validate" not in graph["_errors"]
    assert "_errors" not in graph["_violations"]


@pytest.mark.parametrize("module", MODULES)
def test_each_protocol_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    # A cycle that only bites when a given module is imported first shows up here.
    code = f"import chunkscope.protocol.{module}"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=_env())


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_no_module_outside_protocol_imports_the_rules_or_assembly_privately() -> None:
    # collect, check and the timeline share StreamInspector; nobody else reaches into
    # the checker or the assembler.
    private = {"_violations", "_checker", "_validate", "_assembly", "_rules"}
    offenders: list[str] = []
    for path in (SRC / "chunkscope").rglob("*.py"):
        if PACKAGE in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                tail = node.module.rsplit(".", 1)[-1]
                if "protocol" in node.module and tail in private:
                    offenders.append(f"{path.relative_to(SRC)}: from {node.module}")
    assert offenders == []
