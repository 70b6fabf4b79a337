"""Adding a wire is one folder under adapters/, one module under provider/wires/ and one row:
a wire's name is spelled, as a string, only in the wire table and the wire's own modules.

Every string constant in ``src/chunkscope`` that is exactly a wire's name is found with
``ast`` (docstrings and comments that mention a wire do not count). Each must stand in an
allowed place; the few that remain elsewhere are listed with why, and may not grow.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from chunkscope._wires import WIRE_FACTS

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "chunkscope"

ALLOWED = (
    "_wires.py",  # the neutral wire table
    "adapters/wires.py",  # the table joined to its adapters
    "adapters/openai_compat/",  # the openai wire's own folder
    "adapters/anthropic/",  # the anthropic wire's own folder
    "adapters/openai_responses/",  # the responses wire's own folder
    "adapters/bedrock/",  # the bedrock wire's own folder
    "adapters/gemini/",  # the gemini wire's own folder
    "provider/wires/",  # the provider's module per wire and its routes
)
"""Where a wire's name may be written."""

REMAINING: dict[str, int] = {
    "sources/llm_logs.py": 2,  # the llm tool's SQLite table named "responses", not the wire
    "_extras.py": 1,  # the "bedrock" extra (botocore, for SigV4), named as its wire is
}
"""Files still spelling a wire's name, with how many times; the count may shrink, never grow."""


def wire_name_spellings() -> Counter[str]:
    found: Counter[str] = Counter()
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in WIRE_FACTS:
                found[relative] += 1
    return found


def test_wire_names_are_spelled_only_in_the_wire_table_and_the_wires_own_modules() -> None:
    elsewhere = {name: count for name, count in wire_name_spellings().items() if not name.startswith(ALLOWED)}
    grown = {name: count for name, count in elsewhere.items() if count > REMAINING.get(name, 0)}
    assert grown == {}, f"wire names written outside the wire table and the wires' own modules: {grown}"


def test_the_scan_sees_every_wire_of_the_table_in_its_allowed_places() -> None:
    spellings = wire_name_spellings()
    assert spellings["_wires.py"] >= len(WIRE_FACTS)
    assert spellings["provider/wires/__init__.py"] >= len(WIRE_FACTS)
