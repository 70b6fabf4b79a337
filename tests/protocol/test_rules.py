"""The rules of docs/protocol.md §2: for every rule id, the smallest stream that breaks it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from chunkscope.protocol import RULES, Checker, Violation, check, parse_chunk

from ._streams import (
    SEED_CHUNKS,
    end_text,
    end_tool,
    finish,
    reasoning,
    start,
    text,
    text_block,
    tool,
    usage,
)

STRICT_ONLY = {
    "arguments-json",
    "no-interleave",
    "tool-call-id",
    "tool-call-name",
    "finish-consistency",
    "usage-valid",
    "usage-missing",
}

# (case id, chunks, [(rule, position, message fragment)] under strict)
CASES: list[tuple[str, list[Any], list[tuple[str, int | None, str]]]] = [
    (
        "block-end with no open block",
        [*text_block(0, "a"), end_text(0, "a"), usage(), finish()],
        [("block-pairing", 3, "block-end for index 0 arrived, but block 0 already ended at chunk 2")],
    ),
    (
        "block-end for another index than the open block",
        [start(0), text(0, "a"), end_text(1, "a"), end_text(0, "a"), usage(), finish()],
        [("block-pairing", 2, "block-end for index 1 arrived, but the open block is 0 (text)")],
    ),
    (
        "block left open at a stop finish",
        [start(0), text(0, "a"), usage(), finish()],
        [("block-pairing", 3, "a stop finish arrived while block 0 (text) is still open")],
    ),
    (
        "first index is not 0",
        [*text_block(1, "a"), usage(), finish()],
        [("index-order", 0, "block-start for index 1 arrived, but the next block must take index 0")],
    ),
    (
        "index reused after its block ended",
        [*text_block(0, "a"), *text_block(0, "b"), usage(), finish()],
        [("index-order", 3, "block-start reuses index 0, which block 0 already used (chunks 0 to 2)")],
    ),
    (
        "negative index",
        [*text_block(-1, "a"), usage(), finish()],
        [("index-order", 0, "block-start has index -1; block indexes are non-negative integers")],
    ),
    (
        "block-start repeated while the block is open",
        [start(0), start(0), text(0, "a"), end_text(0, "a"), usage(), finish()],
        [
            (
                "index-order",
                1,
                "block-start for index 0 arrived while block 0 is still open (opened at chunk 0)",
            )
        ],
    ),
    (
        "tool arguments cut short at a tool-calls finish",
        [start(0, "tool-call"), tool(0, '{"a":'), end_tool(0, '{"a":'), usage(), finish("tool-calls")],
        [("arguments-json", 2, "the arguments of tool call 0 (bash) are not valid JSON")],
    ),
    (
        "empty tool arguments",
        [start(0, "tool-call"), tool(0, ""), end_tool(0, ""), usage(), finish("tool-calls")],
        [("arguments-json", 2, "are empty; empty text is not JSON (a call without arguments sends {})")],
    ),
    (
        "tool arguments that are JSON but not an object",
        [start(0, "tool-call"), tool(0, "[1]"), end_tool(0, "[1]"), usage(), finish("tool-calls")],
        [("arguments-json", 2, "are JSON but not an object (a list)")],
    ),
    (
        "no finish",
        [*text_block(0, "a"), usage()],
        [("finish-last", None, "the stream ended after 4 chunks without a finish; every stream ends")],
    ),
    (
        "a chunk after the finish",
        [*text_block(0, "a"), usage(), finish(), text(0, "b")],
        [("finish-last", 5, "text-delta arrived after the finish (chunk 4); finish must be the last chunk")],
    ),
    (
        "two finishes",
        [*text_block(0, "a"), usage(), finish(), finish()],
        [("finish-last", 5, "a second finish arrived (the first was chunk 4)")],
    ),
    (
        "usage twice",
        [*text_block(0, "a"), usage(), usage(), finish()],
        [("usage-before-finish", 4, "a second usage chunk arrived (the first was chunk 3)")],
    ),
    (
        "delta for a block never started",
        [*text_block(0, "a"), text(5, "x"), usage(), finish()],
        [("delta-index", 3, "text-delta for index 5 arrived, but no block 5 was started")],
    ),
    (
        "delta after its block ended",
        [*text_block(0, "a"), text(0, "b"), usage(), finish()],
        [("delta-index", 3, "text-delta for index 0 arrived, but block 0 already ended at chunk 2")],
    ),
    (
        "delta of the wrong kind",
        [start(0), reasoning(0, "x"), text(0, "a"), end_text(0, "a"), usage(), finish()],
        [("delta-index", 1, "reasoning-delta for index 0 arrived, but block 0 is a text block")],
    ),
    (
        "a block starts while another is open",
        [
            start(0),
            text(0, "a"),
            start(1),
            text(1, "b"),
            end_text(0, "a"),
            end_text(1, "b"),
            usage(),
            finish(),
        ],
        [("no-interleave", 2, "block-start for index 1 arrived while block 0 (text) is still open")],
    ),
    (
        "a delta for an open block that is not the current one",
        [start(0), start(1), text(0, "a"), end_text(0, "a"), end_text(1, ""), usage(), finish()],
        [
            ("no-interleave", 1, "block-start for index 1 arrived while block 0 (text) is still open"),
            ("no-interleave", 2, "text-delta for block 0 arrived while block 1 is the open block"),
        ],
    ),
    (
        "block-end of another type",
        [start(0), text(0, "a"), end_text(0, "a", "reasoning"), usage(), finish()],
        [
            (
                "block-end-match",
                2,
                "block-end for index 0 carries a reasoning block, but block 0 was started as text",
            )
        ],
    ),
    (
        "block-end text differs from the deltas",
        [start(0), text(0, "abc"), end_text(0, "abd"), usage(), finish()],
        [("block-end-match", 2, "they differ from character 2: the block-end has 'd'")],
    ),
    (
        "block-end arguments differ from the deltas",
        [start(0, "tool-call"), tool(0, '{"a":1}'), end_tool(0, '{"a":2}'), usage(), finish("tool-calls")],
        [("block-end-match", 2, "does not hold the arguments its deltas built")],
    ),
    (
        "block-end renames the tool",
        [start(0, "tool-call"), tool(0, "{}"), end_tool(0, "{}", name="sh"), usage(), finish("tool-calls")],
        [("block-end-match", 2, "names it 'sh', but its deltas named it 'bash'")],
    ),
    (
        "tool call with an empty id",
        [
            start(0, "tool-call"),
            tool(0, "{}", call_id=""),
            end_tool(0, "{}", call_id=""),
            usage(),
            finish("tool-calls"),
        ],
        [
            ("tool-call-id", 1, "tool-call-delta for block 0 has an empty id"),
            ("tool-call-id", 2, "block-end for tool call 0 has an empty id"),
        ],
    ),
    (
        "tool call changes its id",
        [
            start(0, "tool-call"),
            tool(0, "{"),
            tool(0, "}", call_id="call_2"),
            end_tool(0, "{}"),
            usage(),
            finish("tool-calls"),
        ],
        [("tool-call-id", 2, "changes the call id from 'call_1' to 'call_2'")],
    ),
    (
        "block-end with another id",
        [
            start(0, "tool-call"),
            tool(0, "{}"),
            end_tool(0, "{}", call_id="call_9"),
            usage(),
            finish("tool-calls"),
        ],
        [("tool-call-id", 2, "says id 'call_9', but its deltas used 'call_1'")],
    ),
    (
        "two tool calls with one id",
        [
            start(0, "tool-call"),
            tool(0, "{}"),
            end_tool(0, "{}"),
            start(1, "tool-call"),
            tool(1, "{}"),
            end_tool(1, "{}"),
            usage(),
            finish("tool-calls"),
        ],
        [("tool-call-id", 4, "tool call 1 uses id 'call_1', which tool call 0 already used")],
    ),
    (
        "tool call without a name",
        [
            start(0, "tool-call"),
            tool(0, "{}", name=None),
            end_tool(0, "{}", name=""),
            usage(),
            finish("tool-calls"),
        ],
        [("tool-call-name", 2, "tool call 0 (id 'call_1') has no name by its block-end")],
    ),
    (
        "stop finish with no block at all",
        [usage(), finish()],
        [("finish-consistency", 1, "a stop finish arrived, but the stream has no block at all")],
    ),
    (
        "tool-calls finish without a tool call",
        [*text_block(0, "a"), usage(), finish("tool-calls")],
        [("finish-consistency", 4, "a tool-calls finish arrived, but the stream has no tool-call block")],
    ),
    (
        "negative usage count",
        [*text_block(0, "a"), usage(-1, 5), finish()],
        [("usage-valid", 3, "usage has inputTokens=-1; token counts are non-negative integers")],
    ),
    (
        "no usage before a successful finish",
        [*text_block(0, "a"), finish()],
        [("usage-missing", 3, "a stop finish arrived with no usage chunk before it")],
    ),
    (
        "unknown chunk type",
        [*text_block(0, "a"), {"type": "bogus"}, usage(), finish()],
        [("schema", 3, "unknown chunk type 'bogus'")],
    ),
    (
        "missing field",
        [*text_block(0, "a"), {"type": "text-delta", "index": 0}, usage(), finish()],
        [("schema", 3, "the text-delta chunk is malformed: 'text' is missing")],
    ),
    (
        "error finish without a failure",
        [*text_block(0, "a"), finish("error")],
        [("schema", 3, "an error finish carries no failure")],
    ),
]


@pytest.mark.parametrize(("chunks", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_smallest_breaking_stream_reports_its_rule_once(chunks: list[Any], expected: list[Any]) -> None:
    found = check(chunks)
    assert [(v.rule, v.position) for v in found] == [(rule, pos) for rule, pos, _ in expected]
    for violation, (rule, _, fragment) in zip(found, expected, strict=True):
        assert fragment in violation.message
        assert violation.severity == RULES[rule].severity


@pytest.mark.parametrize(("chunks", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_dsh_reports_the_reference_rules_only(chunks: list[Any], expected: list[Any]) -> None:
    rules = {v.rule for v in check(chunks, "dsh")}
    assert rules <= {rule for rule, _, _ in expected}
    assert not rules & STRICT_ONLY


def test_every_rule_has_a_smallest_breaking_stream() -> None:
    covered = {rule for _, _, expected in CASES for rule, _, _ in expected}
    assert covered == set(RULES)
    assert [rid for rid, rule in RULES.items() if not rule.example] == []


@pytest.mark.parametrize("rule_id", list(RULES))
@pytest.mark.parametrize("profile", ["strict", "dsh"])
def test_each_rules_example_breaks_exactly_that_rule_where_it_says(rule_id: str, profile: str) -> None:
    # Under a profile applying the rule: that rule alone, once, at the stated position; else clean.
    rule = RULES[rule_id]
    found = check(list(rule.example), profile)
    expected = [(rule_id, rule.severity, rule.example_position)] if profile in rule.profiles else []
    assert [(v.rule, v.severity, v.position) for v in found] == expected


@pytest.mark.parametrize("rule_id", list(RULES))
def test_each_rules_example_checks_alike_as_dicts_and_as_models(rule_id: str) -> None:
    example = list(RULES[rule_id].example)
    parsed = []
    for chunk in example:
        try:
            parsed.append(parse_chunk(chunk))
        except ValidationError:
            parsed.append(chunk)  # the schema example's malformed chunk stays as it came
    assert [(v.rule, v.position) for v in check(parsed)] == [(v.rule, v.position) for v in check(example)]


def test_rule_examples_are_the_registrys_own_copies() -> None:
    first, second = RULES["usage-missing"].example, RULES["usage-valid"].example
    assert first[0] == second[0] and first[0] is not second[0]
    assert hash(RULES["schema"]) == hash(RULES["schema"])  # a Rule stays hashable


def test_rule_registry_names_every_protocol_rule_with_severity_and_profiles() -> None:
    assert set(RULES) == {
        "block-pairing",
        "index-order",
        "arguments-json",
        "finish-last",
        "usage-before-finish",
        "delta-index",
        "no-interleave",
        "block-end-match",
        "tool-call-id",
        "tool-call-name",
        "finish-consistency",
        "usage-valid",
        "usage-missing",
        "schema",
    }
    assert [r.id for r in RULES.values() if r.severity == "warning"] == ["usage-missing"]
    assert {r.id for r in RULES.values() if "dsh" not in r.profiles} == STRICT_ONLY
    assert all(rule.id == key and rule.description for key, rule in RULES.items())


@pytest.mark.parametrize("profile", ["strict", "dsh"])
def test_seed_example_checks_clean(profile: str) -> None:
    assert check(SEED_CHUNKS, profile) == []
    assert check([parse_chunk(c) for c in SEED_CHUNKS], profile) == []


# --- the profiles differ exactly where docs/protocol.md says -----------------------------


def test_interleaved_blocks_are_clean_under_dsh_and_flagged_under_strict() -> None:
    # the reference invariant's own "complete interleaved stream grammar"
    chunks = [
        start(0),
        text(0, "a"),
        start(1, "reasoning"),
        reasoning(1, "b"),
        end_text(1, "b", "reasoning"),
        end_text(0, "a"),
        start(2, "tool-call"),
        tool(2, "{}", call_id="c1", name="echo"),
        end_tool(2, "{}", call_id="c1", name="echo"),
        usage(1, 1),
        finish(),
    ]
    assert check(chunks, "dsh") == []
    assert [(v.rule, v.position) for v in check(chunks)] == [("no-interleave", 2)]


def test_index_reuse_after_block_end_is_allowed_only_under_dsh() -> None:
    chunks = [*text_block(0, "a"), *text_block(0, "b"), usage(), finish()]
    assert check(chunks, "dsh") == []
    assert [v.rule for v in check(chunks)] == ["index-order"]


def test_dsh_does_not_compare_content_or_sequence_indexes() -> None:
    chunks = [start(3), text(3, "abc"), end_text(3, "xyz"), finish()]
    assert check(chunks, "dsh") == []
    assert {v.rule for v in check(chunks)} == {"index-order", "block-end-match", "usage-missing"}


def test_open_blocks_are_allowed_at_an_error_or_aborted_finish() -> None:
    for kind, code in (("error", "SERVER"), ("aborted", "ABORTED")):
        chunks = [start(0), text(0, "par"), start(1, "tool-call"), tool(1, '{"cut'), finish(kind, code)]
        assert [v.rule for v in check(chunks)] == ["no-interleave"]  # block 0 never ended before block 1
        chunks = [*text_block(0, "a"), start(1, "tool-call"), tool(1, '{"cut'), finish(kind, code)]
        assert check(chunks) == []
        assert check(chunks, "dsh") == []


@pytest.mark.parametrize(
    ("kind", "code"), [("max-tokens", None), ("error", "SERVER"), ("aborted", "ABORTED")]
)
def test_cut_tool_json_is_allowed_at_max_tokens_error_and_aborted(kind: str, code: str | None) -> None:
    chunks = [
        start(0, "tool-call"),
        tool(0, '{"a": "b'),
        end_tool(0, '{"a": "b'),
        usage(),
        finish(kind, code),
    ]
    assert check(chunks) == []


# --- the streaming checker ---------------------------------------------------------


def test_arguments_json_verdict_is_held_until_the_finish() -> None:
    checker = Checker()
    chunks = [start(0, "tool-call"), tool(0, '{"a":'), end_tool(0, '{"a":'), usage()]
    assert all(checker.feed(c) == () for c in chunks)
    found = checker.feed(finish("tool-calls"))
    assert [(v.rule, v.position) for v in found] == [("arguments-json", 2)]
    assert checker.close() == ()


def test_a_stream_without_finish_drops_held_verdicts_and_reports_only_the_missing_finish() -> None:
    chunks = [start(0, "tool-call"), tool(0, '{"a":'), end_tool(0, '{"a":'), start(1), text(1, "x")]
    assert [(v.rule, v.position) for v in check(chunks)] == [("finish-last", None)]


def test_feed_returns_a_shared_empty_result_on_the_clean_path() -> None:
    checker = Checker()
    results = [checker.feed(parse_chunk(c)) for c in SEED_CHUNKS]
    assert all(r == () for r in results)
    assert checker.position == len(SEED_CHUNKS)
    assert checker.finished
    assert checker.close() == () and checker.close() == ()


def test_close_on_an_empty_stream_reports_the_missing_finish() -> None:
    (violation,) = Checker().close()
    assert violation.rule == "finish-last" and violation.position is None and violation.chunk is None
    assert "without any chunk" in violation.message


def test_schema_violation_does_not_stop_checking() -> None:
    chunks = [
        *text_block(0, "a"),
        42,
        {"type": "text-delta", "index": "0", "text": "x"},
        usage(-5, 1),
        finish(),
    ]
    found = check(chunks)
    assert [(v.rule, v.position) for v in found] == [("schema", 3), ("schema", 4), ("usage-valid", 5)]
    assert found[0].chunk == 42
    assert "expected a chunk (a model or a dict with a 'type'), got int" in found[0].message
    assert "'index': input should be a valid integer (got '0')" in found[1].message


def test_a_malformed_chunk_after_the_finish_is_a_schema_violation() -> None:
    found = check([*text_block(0, "a"), usage(), finish(), {"type": "nope"}])
    assert [(v.rule, v.position) for v in found] == [("schema", 5)]


def test_success_finish_with_a_failure_is_a_schema_violation() -> None:
    found = check([*text_block(0, "a"), usage(), finish("stop", "SERVER")])
    assert [(v.rule, v.position) for v in found] == [("schema", 4)]


@pytest.mark.parametrize("profile", ["strict", "dsh"])
def test_usage_after_the_finish_is_usage_before_finish_and_nothing_else(profile: str) -> None:
    # The source text's rule for a late usage; the usage is there, so no usage-missing warning.
    found = check([*text_block(0, "a"), finish(), usage()], profile)
    assert [(v.rule, v.severity, v.position) for v in found] == [("usage-before-finish", "error", 4)]
    assert "usage arrived after the finish (chunk 3)" in found[0].message


def test_usage_missing_is_decided_at_the_end_of_the_stream_at_the_finish() -> None:
    checker = Checker()
    for chunk in [*text_block(0, "a"), finish()]:
        assert checker.feed(chunk) == ()
    (warning,) = checker.close()
    assert (warning.rule, warning.severity, warning.position) == ("usage-missing", "warning", 3)
    assert checker.close() == ()


def test_a_late_usage_after_an_early_one_is_one_usage_before_finish() -> None:
    found = check([*text_block(0, "a"), usage(), finish(), usage()])
    assert [(v.rule, v.position) for v in found] == [("usage-before-finish", 5)]


def test_unknown_profile_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown profile 'lenient'"):
        Checker("lenient")


def test_violation_reads_as_a_sentence() -> None:
    violation = check([*text_block(0, "a"), end_text(0, "a"), usage(), finish()])[0]
    assert str(violation) == (
        "chunk 3: block-pairing: block-end for index 0 arrived, but block 0 already ended at chunk 2"
    )
    warning = Violation("usage-missing", "warning", None, None, "no usage")
    assert str(warning) == "end of stream: usage-missing (warning): no usage"


def test_violation_has_a_json_form_with_the_chunk_as_json() -> None:
    (violation,) = check([*text_block(0, "a"), text(0, "late"), usage(), finish()])
    assert violation.to_dict() == {
        "rule": "delta-index",
        "severity": "error",
        "position": 3,
        "message": violation.message,
        "chunk": {"type": "text-delta", "index": 0, "text": "late"},
    }


def test_violation_is_frozen() -> None:
    violation = Violation("schema", "error", 0, None, "x")
    with pytest.raises(AttributeError):
        violation.rule = "other"  # type: ignore[misc]


def test_a_tool_call_id_is_remembered_even_when_its_delta_interleaves() -> None:
    # Delta 2 is reported as no-interleave only, but its id still counts: call 2 reusing it is caught.
    chunks = [
        start(0, "tool-call"),
        start(1),
        tool(0, "{}", call_id="X"),
        end_text(1, ""),
        end_tool(0, "{}", call_id="X"),
        start(2, "tool-call"),
        tool(2, "{}", call_id="X", name="other"),
        end_tool(2, "{}", call_id="X", name="other"),
        usage(),
        finish("tool-calls"),
    ]
    assert [(v.rule, v.position) for v in check(chunks)] == [
        ("no-interleave", 1),
        ("no-interleave", 2),
        ("tool-call-id", 6),
    ]


def test_an_index_beyond_javascripts_safe_integers_is_refused_under_both_profiles() -> None:
    chunks = [start(2**53), end_text(2**53, ""), usage(), finish()]
    for profile in ("strict", "dsh"):
        assert [(v.rule, v.position) for v in check(chunks, profile)] == [("index-order", 0)]
    assert "2**53 - 1" in check(chunks, "dsh")[0].message
