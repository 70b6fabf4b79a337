"""Property tests over ``chunkscope.testing``'s strategies.

The fast variants run by default; the ``slow`` ones give CI several thousand examples.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope.protocol import RULES, BlockAssembler, check
from chunkscope.sources import read_chunks, write_chunks
from chunkscope.testing import GeneratedStream, invalid_streams, rules_for, valid_streams
from chunkscope.testing._mutations import MUTATIONS, breaks

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
THOROUGH = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assembled(chunks: list[Any]) -> list[Any]:
    assembler = BlockAssembler()
    for chunk in chunks:
        assembler.push(chunk)
    return assembler.blocks()


def _valid_strict(stream: GeneratedStream) -> None:
    assert check(stream.chunks) == []
    assert check(stream.chunks, "dsh") == []
    assert check(stream.dicts()) == []
    assert assembled(stream.chunks) == stream.assembled


def _valid_dsh(stream: GeneratedStream) -> None:
    assert check(stream.chunks, "dsh") == []
    assert assembled(stream.chunks) == stream.assembled


def _one_rule(profile: str, case: tuple[list[Any], str]) -> None:
    chunks, rule = case
    found = check(chunks, profile)
    assert {v.rule for v in found} == {rule}, [str(v) for v in found]


@FAST
@given(valid_streams())
def test_valid_streams_check_clean_and_reassemble(stream: GeneratedStream) -> None:
    _valid_strict(stream)


@FAST
@given(valid_streams("dsh"))
def test_valid_dsh_streams_check_clean_under_dsh_and_reassemble(stream: GeneratedStream) -> None:
    _valid_dsh(stream)


@pytest.mark.parametrize(
    ("profile", "rule"), [(profile, rule) for profile in ("strict", "dsh") for rule in rules_for(profile)]
)
def test_every_rule_has_a_mutation_that_breaks_only_it(profile: str, rule: str) -> None:
    mutation = MUTATIONS[rule]  # drawn directly: invalid_streams also draws the rule's own example

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data: st.DataObject) -> None:
        _one_rule(profile, (data.draw(st.composite(lambda draw: mutation(draw, profile))()), rule))

    run()


def test_each_rule_of_rules_has_one_tagged_mutation() -> None:
    assert list(MUTATIONS) == list(RULES)  # tagged in the registry's order
    with pytest.raises(ValueError, match="already has a mutation"):
        breaks("schema")(lambda draw, profile: [])
    with pytest.raises(ValueError, match="is not a rule of RULES"):
        breaks("no-such-rule")


@pytest.mark.parametrize("profile", ["strict", "dsh"])
def test_invalid_streams_draw_each_rules_own_example_too(profile: str) -> None:
    examples = {rule: list(RULES[rule].example) for rule in rules_for(profile)}
    seen: set[str] = set()

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(invalid_streams(profile))
    def run(case: tuple[list[Any], str]) -> None:
        chunks, rule = case
        as_json = [c.to_dict() if hasattr(c, "to_dict") else c for c in chunks]
        if as_json == examples[rule]:
            seen.add(rule)
        _one_rule(profile, case)

    run()
    assert seen, "no rule's own example was ever drawn"


@pytest.mark.slow
@THOROUGH
@given(valid_streams())
def test_valid_streams_thoroughly(stream: GeneratedStream) -> None:
    _valid_strict(stream)


@pytest.mark.slow
@THOROUGH
@given(valid_streams("dsh"))
def test_valid_dsh_streams_thoroughly(stream: GeneratedStream) -> None:
    _valid_dsh(stream)


@pytest.mark.slow
@THOROUGH
@given(invalid_streams())
def test_mutated_streams_report_exactly_the_broken_rule_strict(case: tuple[list[Any], str]) -> None:
    _one_rule("strict", case)


@pytest.mark.slow
@THOROUGH
@given(invalid_streams("dsh"))
def test_mutated_streams_report_exactly_the_broken_rule_dsh(case: tuple[list[Any], str]) -> None:
    _one_rule("dsh", case)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(valid_streams())
def test_jsonl_round_trips_any_valid_stream(
    tmp_path_factory: pytest.TempPathFactory, stream: GeneratedStream
) -> None:
    path = tmp_path_factory.mktemp("jsonl") / "stream.jsonl"
    write_chunks(path, stream.chunks)
    assert list(read_chunks(path)) == stream.chunks


def test_strategy_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="not rules of profile 'dsh'"):
        invalid_streams("dsh", rules=["no-interleave"])
    with pytest.raises(ValueError, match="unknown profile"):
        valid_streams("lenient")
