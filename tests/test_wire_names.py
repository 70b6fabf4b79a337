"""Adding a wire is one folder under adapters/, one module under provider/wires/ and one row:
a wire's name is spelled, as a string, only in the wire table and the wire's own modules.

Every string constant in ``src/chunkscope`` that is exactly a wire's name is found with
``ast`` (docstrings and comments that mention a wire do not count). Each must stand in an
allowed place; the few that remain elsewhere are listed with why, and may not grow.
"""

from __future__ import annotations

import argparse
import ast
import re
from collections import Counter
from pathlib import Path

import pytest

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


# --- every list of wires people read is the wire table ------------------------------------------

_REPO = PACKAGE.parents[1]
_COUNT_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_TOKEN = "|".join(WIRE_FACTS)
# a wire name, then more joined by `|`, `\|`, ` | `, `", "` or `` `, ` `` (with or without quotes)
_NAME_RUN = re.compile(rf'\b(?:{_TOKEN})\b(?:(?:\\?\||"?\s+\|\s+"?|"?`?,\s+`?"?)\b(?:{_TOKEN})\b)+')
# a count of wires in words, or the two-wire words "both wires", "either wire"
_WIRE_COUNT = re.compile(r"\b(\w+) (?:wires|wire formats)\b|\b(?:both|either) wire", re.I)


def _adapters() -> list[str]:
    from chunkscope.adapters.wires import WIRES

    return [wire.adapter.__name__ for wire in WIRES.values()]


def wire_list_mistakes(text: str) -> list[str]:
    """Each place in ``text`` where a list or count of wires is not the wire table's."""
    mistakes = []
    for run in _NAME_RUN.finditer(text):
        if "wire" not in text[max(0, run.start() - 80) : run.end() + 80]:
            continue  # names that are also providers' ids (genai-prices' `openai`, `anthropic`, ...)
        names = re.findall(rf"\b(?:{_TOKEN})\b", run[0])
        if names != list(WIRE_FACTS):
            mistakes.append(f"wires {names}, the table has {list(WIRE_FACTS)}: {run[0]!r}")
    for count in _WIRE_COUNT.finditer(text):
        said = (count[1] or "either").lower()
        said = "two" if said in ("both", "either") else said
        if said in _COUNT_WORDS and _COUNT_WORDS.index(said) != len(WIRE_FACTS):
            mistakes.append(f"{count[0]!r}, the table has {len(WIRE_FACTS)} wires")
    adapter = "|".join(_adapters())
    for run in re.finditer(
        rf"(?:cs\.)?\b(?:{adapter})\b(?:`?,?\s+(?:(?:and|or)\s+)?`?(?:cs\.)?\b(?:{adapter})\b)+", text
    ):
        named = re.findall(rf"\b(?:{adapter})\b", run[0])
        if named != _adapters():
            mistakes.append(f"adapters {named}, the table has {_adapters()}: {run[0]!r}")
    return mistakes


def _help_texts() -> dict[str, str]:
    from chunkscope.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    texts = {"chunkscope --help": parser.format_help()}
    for name, subcommand in commands.choices.items():
        texts[f"chunkscope {name} --help"] = subcommand.format_help()
    return texts


def _docstrings() -> dict[str, str]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    found[f"{path.relative_to(PACKAGE)}:{getattr(node, 'name', '')}"] = doc
    return found


def test_every_list_of_wires_in_the_readme_docs_help_and_docstrings_is_the_wire_table() -> None:
    texts = {
        "README.md": (_REPO / "README.md").read_text(encoding="utf-8"),
        **{f"docs/{p.name}": p.read_text(encoding="utf-8") for p in sorted((_REPO / "docs").glob("*.md"))},
        **_help_texts(),
        **_docstrings(),
    }
    found = [f"{where}: {mistake}" for where, text in texts.items() for mistake in wire_list_mistakes(text)]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        "[--wire openai|anthropic]",
        "--wire openai\\|anthropic\\|responses",
        'wire="openai" | "anthropic"',
        '`wire` one of `"openai"`, `"anthropic"`, `"gemini"`',
        "the provider speaks both wire formats",
        "served on both wires",
        "(either wire's shape)",
        "the two wires",
        "`OpenAICompatAdapter` and `AnthropicAdapter` are",
    ],
)
def test_the_wire_list_check_catches_each_kind(text: str) -> None:
    assert wire_list_mistakes(text) != []


def test_the_wire_list_check_passes_the_whole_table() -> None:
    names = list(WIRE_FACTS)
    assert wire_list_mistakes(f"--wire {'|'.join(names)}") == []
    assert wire_list_mistakes(", ".join(f'`"{name}"`' for name in names)) == []
    assert (
        wire_list_mistakes(f"all {_COUNT_WORDS[len(names)]} wires; the openai wire, the anthropic wire") == []
    )


def test_serve_help_names_every_wire_its_banner_prints() -> None:
    from chunkscope.cli.serve import SERVE_HELP

    for facts in WIRE_FACTS.values():
        assert facts.label in SERVE_HELP, facts.name
