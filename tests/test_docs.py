"""docs/protocol.md is the registries, its example stream checks clean, and nothing points outside.

The rules and error-code tables of ``docs/protocol.md`` must be ``RULES`` and ``ERROR_CODES`` row
for row, rendered as the README's are (``tests/test_readme.py``); on a mismatch the test prints the
table to paste. The repository stands on its own: no tracked file may point at a file beside the
checkout (the folder of specs and fixtures the project was written from) — the project's own docs are
``docs/*.md``.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import chunkscope as cs
from chunkscope import protocol
from test_readme import error_codes_table, rules_table

REPO_ROOT = Path(__file__).resolve().parents[1]
PROTOCOL_DOC = REPO_ROOT / "docs" / "protocol.md"


def _table_after(text: str, heading: str) -> list[str]:
    lines = text[text.index(heading) :].splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("|"))
    end = next((k for k in range(start, len(lines)) if not lines[k].startswith("|")), len(lines))
    return lines[start:end]


def test_the_protocol_docs_rules_table_is_the_rules_registry() -> None:
    expected = rules_table()
    got = _table_after(PROTOCOL_DOC.read_text(encoding="utf-8"), "## 2. Rules")
    assert got == expected, "paste into docs/protocol.md:\n" + "\n".join(expected)


def test_the_protocol_docs_error_code_table_is_the_code_registry() -> None:
    expected = error_codes_table()
    got = _table_after(PROTOCOL_DOC.read_text(encoding="utf-8"), "## 4. Errors")
    assert got == expected, "paste into docs/protocol.md:\n" + "\n".join(expected)


def test_the_protocol_docs_name_every_chunk_type_and_finish_kind() -> None:
    text = PROTOCOL_DOC.read_text(encoding="utf-8")
    vocabulary = _table_after(text, "## 1. Chunks")
    assert [re.match(r"\| `([a-z-]+)` \|", row)[1] for row in vocabulary[2:]] == list(cs.protocol.CHUNK_TYPES)  # type: ignore[index]
    for kind in ("stop", "tool-calls", "max-tokens", "error", "aborted"):
        assert f"`{kind}`" in text, kind


async def test_the_protocol_docs_example_stream_checks_clean_and_assembles() -> None:
    [block] = re.findall(r"^```json\n(.*?)^```", PROTOCOL_DOC.read_text(encoding="utf-8"), re.S | re.M)
    chunks = json.loads(block)
    assert len(chunks) == 9
    for profile in protocol.PROFILES:
        assert cs.check(chunks, profile=profile) == [], profile
    result = await cs.collect(chunks)
    assert result.text == "サンプル 教程"
    [call] = result.tool_calls
    assert (call.id, call.name) == ("call-123", "bash")
    assert json.loads(call.arguments) == {"command": "echo サンプル"}
    assert (result.usage.input_tokens, result.usage.output_tokens, result.finish.kind) == (100, 50, "stop")


# what would point at a file beside the checkout, or at the spec it was written from (the names are
# assembled, so this file does not itself read as such a pointer to a plain grep)
_BESIDE = "sha" + "red"
_SPEC_PAGE = "PROTO" + "COL"  # the spec's page name, whose ".md" is not a file of this repository
OUTSIDE = re.compile(
    rf"\.\./{_BESIDE}|{_BESIDE}/spec|{_BESIDE}/fixtures|{_SPEC_PAGE}\.md"
    rf"|(?i:seed-style|\bthe seed\b|protocol tutorial|project's {_BESIDE} spec)"
)


def tracked_files() -> list[Path]:
    listed = (
        subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    return [REPO_ROOT / name for name in listed if name and (REPO_ROOT / name).is_file()]


def pointers_outside(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []  # a picture
    return [
        f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()[:120]}"
        for number, line in enumerate(text.splitlines(), start=1)
        if OUTSIDE.search(line)
    ]


def test_no_tracked_file_points_outside_the_repository() -> None:
    here = Path(__file__).resolve()
    found = [hit for path in tracked_files() if path.resolve() != here for hit in pointers_outside(path)]
    assert found == [], "point these at docs/protocol.md (or name the public project):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [f"see {_SPEC_PAGE}.md §3", f"read ../{_BESIDE}/fixtures/cases.json", "as seed-style dicts"],
)
def test_the_pointer_scan_catches_each_kind(line: str) -> None:
    assert OUTSIDE.search(line)


def test_the_wires_doc_has_a_row_and_a_section_for_every_wire_of_the_table() -> None:
    from chunkscope.adapters.wires import WIRES

    text = (REPO_ROOT / "docs" / "wires.md").read_text(encoding="utf-8")
    rows = {m[0]: m[1] for m in re.findall(r"^\| (\w+) \| `(\w+)` \|", text, re.M)}
    assert list(rows) == list(WIRES), "one table row per wire, in the table's order"
    sections = re.findall(r"^## (\w+) — ", text, re.M)
    assert sections == list(WIRES), "one section per wire, in the table's order"
    for name, wire in WIRES.items():
        assert rows[name] == wire.adapter.__name__, name
        row = next(line for line in text.splitlines() if line.startswith(f"| {name} |"))
        assert wire.facts.key_variables[0] in row, (name, "the row names the wire's key variable")
        section = text.split(f"\n## {name} — ", 1)[1].split("\n## ", 1)[0]
        assert "gnored" in section, (name, "the section says what the wire's adapter ignores, and why")


def test_the_architecture_pages_layer_table_is_the_layer_tests_table() -> None:
    from test_layers import MAY_IMPORT

    text = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\w+) \| `chunkscope/(\w+)/` \| .* \| ([^|]*) \|$", text, re.M)
    assert [layer for layer, _, _ in rows] == [layer for layer in MAY_IMPORT if layer != "wires"]
    for layer, path, may in rows:
        assert layer == path, layer
        words = may.strip()
        if words.startswith("every layer above"):
            # the table's order is the flow: a layer may import every layer listed before it
            above = {row[0] for row in rows[: [row[0] for row in rows].index(layer)]}
            assert MAY_IMPORT[layer] - {"wires", "face", layer} == above, layer
            assert ("face" in MAY_IMPORT[layer]) == ("the face" in words), layer
        else:
            listed = set() if words == "—" else {word.strip() for word in words.split(",")}
            assert MAY_IMPORT[layer] - {"wires", layer} == listed, layer
