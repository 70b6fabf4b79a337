"""The reference's own vectors (``upstream_cases``): ``invariants`` against ``dsh``, ``assembler`` against
``BlockAssembler``.

The vectors come from running the TypeScript reference (``invariant.ts``,
``assembler.ts``); they are read through the ``upstream_cases`` fixture only.
Chunks are compared as JSON values (``conventions.chunks``); ``usage: null`` and
``replayState: null`` mean absent (``conventions.nulls_in_expected``).

Deliberate differences, each pinned by a test below:

* Where the reference throws one message at the first broken chunk, ``dsh``
  reports every violation under a stable rule id. The first one is at the
  reference's chunk, and its rule is the one its message names (``RULE_OF``).
* A usage after the finish: the reference says "usage after terminal
  finish"; chunkscope reports it as ``usage-before-finish`` (the source text's
  rule), not as ``finish-last``.
* A fractional block index (1.5) is not a chunk at all here: ``schema`` at
  that chunk (the reference: "non-negative safe integer", same position).
* An unknown block type (``"video"``) or chunk type is refused when the chunk
  is parsed — ``BlockAssembler.push`` raises ``pydantic.ValidationError`` —
  where the reference accepts the push and throws from ``blocks()``. Skipping
  such a chunk (as ``collect`` does) gives the reference's ``interruptedBlocks``.
* A ``tool-call-delta`` without ``id`` (``tool_call_fallback_id_and_name``,
  type-violating on purpose) is not a chunk here either. The fallback it
  exercises — an open tool call with no id assembles as ``call-<index>`` with
  name ``""`` — is reached by a tool call that only has its ``block-start``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from chunkscope.protocol import BlockAssembler, block_to_dict, check, parse_chunk

# The reference's violation message -> the rule id chunkscope reports it under.
RULE_OF: list[tuple[str, str]] = [
    (r"non-negative safe integer, got 1\.5", "schema"),  # deliberate: not an integer, so not a chunk
    (r"non-negative safe integer", "index-order"),
    (r"repeated block-start", "index-order"),
    (r"requires an open .* block", "delta-index"),
    (r"has no open block", "block-pairing"),
    (r"closes \w+, expected \w+", "block-end-match"),
    (r"usage more than once", "usage-before-finish"),
    (r"usage after terminal finish", "usage-before-finish"),  # deliberate: the source text's rule
    (r"finished with \d+ open block", "block-pairing"),
    (r"finish after terminal finish", "finish-last"),
    (r"ended without a terminal finish", "finish-last"),
]


def _rule_for(message: str) -> str:
    return next(rule for pattern, rule in RULE_OF if re.search(pattern, message))


def _cases(upstream_cases: dict[str, Any], group: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = upstream_cases[group]
    return cases


def test_the_vectors_are_the_ones_this_file_was_written_for(upstream_cases: dict[str, Any]) -> None:
    assert len(_cases(upstream_cases, "invariants")) == 29
    assert len(_cases(upstream_cases, "assembler")) == 30
    assert "chunks" in upstream_cases["conventions"] and "nulls_in_expected" in upstream_cases["conventions"]


def test_dsh_accepts_and_rejects_every_invariant_vector_where_the_reference_does(
    upstream_cases: dict[str, Any],
) -> None:
    for case in _cases(upstream_cases, "invariants"):
        name, expected = case["name"], case["expected"]
        found = check(case["chunks"], "dsh")
        errors = [v for v in found if v.severity == "error"]
        if expected["accepted"]:
            assert errors == [], name
            continue
        assert errors, name
        first = errors[0]
        assert first.position == expected["violating_chunk_index"], name
        assert first.rule == _rule_for(expected["violation"]), (name, first)


def test_every_reference_message_maps_to_a_published_rule(upstream_cases: dict[str, Any]) -> None:
    from chunkscope.protocol import RULES

    messages = [
        c["expected"]["violation"]
        for c in _cases(upstream_cases, "invariants")
        if "violation" in c["expected"]
    ]
    assert {_rule_for(m) for m in messages} <= {r for r, rule in RULES.items() if "dsh" in rule.profiles}


def test_deliberate_difference_usage_after_finish_is_usage_before_finish(
    upstream_cases: dict[str, Any],
) -> None:
    case = next(c for c in _cases(upstream_cases, "invariants") if c["name"] == "chunk_after_finish")
    assert "usage after terminal finish" in case["expected"]["violation"]
    assert [(v.rule, v.position) for v in check(case["chunks"], "dsh")] == [("usage-before-finish", 1)]


def test_deliberate_difference_a_fractional_index_is_a_schema_violation(
    upstream_cases: dict[str, Any],
) -> None:
    case = next(c for c in _cases(upstream_cases, "invariants") if c["name"] == "fractional_index_rejected")
    found = check(case["chunks"], "dsh")
    assert (found[0].rule, found[0].position) == ("schema", 0)


# --- assembler ----------------------------------------------------------------------------


TYPE_VIOLATING = {"tool_call_fallback_id_and_name"}  # an input chunk the reference's own types forbid


def _assemble(chunks: list[dict[str, Any]], *, skip_unparsable: bool = False) -> BlockAssembler:
    assembler = BlockAssembler()
    for chunk in chunks:
        if skip_unparsable:
            try:
                parse_chunk(chunk)
            except ValidationError:
                continue
        assembler.push(chunk)
    return assembler


def _json(value: Any) -> Any:
    return value.to_dict() if value is not None and hasattr(value, "to_dict") else value


@pytest.mark.parametrize("field", ["blocks", "finish", "usage", "replayState", "interruptedBlocks"])
def test_block_assembler_matches_every_assembler_vector(upstream_cases: dict[str, Any], field: str) -> None:
    checked = 0
    for case in _cases(upstream_cases, "assembler"):
        expected = case["expected"]
        if field not in expected or case["name"] in TYPE_VIOLATING:
            continue
        name = case["name"]
        assembler = _assemble(case["chunks"], skip_unparsable="blocks_throws" in expected)
        got: Any
        if field == "blocks":
            got = [block_to_dict(b) for b in assembler.blocks()]
        elif field == "interruptedBlocks":
            got = [block_to_dict(b) for b in assembler.interrupted_blocks()]
        elif field == "finish":
            got = _json(assembler.finish)
        elif field == "usage":
            got = _json(assembler.usage)
        else:
            got = assembler.replay_state
        assert got == expected[field], name
        checked += 1
    assert checked >= 26  # every vector but the throwing and type-violating ones


def test_deliberate_difference_unknown_types_are_refused_at_push(upstream_cases: dict[str, Any]) -> None:
    throwing = [c for c in _cases(upstream_cases, "assembler") if "throws" in c["expected"]]
    assert {c["name"] for c in throwing} == {"unknown_open_block_type_throws", "rogue_chunk_type_throws"}
    for case in throwing:
        with pytest.raises(ValidationError):
            _assemble(case["chunks"])
    # the reference's blocks() throws for the open "mystery" block; here that chunk never got in
    mystery = next(c for c in _cases(upstream_cases, "assembler") if "blocks_throws" in c["expected"])
    with pytest.raises(ValidationError):
        _assemble(mystery["chunks"])


def test_deliberate_difference_a_tool_call_delta_without_id_is_refused(
    upstream_cases: dict[str, Any],
) -> None:
    case = next(c for c in _cases(upstream_cases, "assembler") if c["name"] in TYPE_VIOLATING)
    with pytest.raises(ValidationError, match="id"):
        _assemble(case["chunks"])
    # the fallback the vector exercises, reached with chunks that are chunks
    opened = _assemble([{"type": "block-start", "index": 0, "blockType": "tool-call"}])
    assert [block_to_dict(b) for b in opened.blocks()] == [
        {"type": "tool-call", "id": "call-0", "name": "", "arguments": ""}
    ]
    assert case["expected"]["blocks"][0]["id"] == "call-0" and case["expected"]["blocks"][0]["name"] == ""
