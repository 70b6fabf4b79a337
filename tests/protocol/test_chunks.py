"""The vocabulary: every chunk shape parses from its JSON form and writes back exactly."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from chunkscope.protocol import (
    CHUNK_TYPES,
    BlockEnd,
    TextBlock,
    TextDelta,
    ToolCallDelta,
    check,
    chunk_to_dict,
    parse_chunk,
)
from chunkscope.protocol._chunks import _chunk_adapter, describe_invalid, trusted

from ._streams import SEED_CHUNKS

SHAPES: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "block-start", "index": 1, "blockType": "reasoning"},
    {"type": "block-start", "index": 2, "blockType": "tool-call"},
    {"type": "text-delta", "index": 0, "text": "サンプル"},
    {"type": "reasoning-delta", "index": 1, "text": ""},
    {"type": "tool-call-delta", "index": 2, "id": "call-1", "argumentsDelta": '{"a"'},
    {"type": "tool-call-delta", "index": 2, "id": "call-1", "name": "bash", "argumentsDelta": ""},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "t"}},
    {"type": "block-end", "index": 1, "block": {"type": "reasoning", "text": "r"}},
    {
        "type": "block-end",
        "index": 2,
        "block": {"type": "tool-call", "id": "c", "name": "n", "arguments": "{}"},
    },
    {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}},
    {
        "type": "usage",
        "usage": {
            "inputTokens": 1,
            "outputTokens": 2,
            "cacheReadTokens": 3,
            "cacheWriteTokens": 4,
            "reasoningTokens": 5,
        },
    },
    {"type": "usage", "usage": {"inputTokens": -1, "outputTokens": 0}},  # parses; strict flags it
    {"type": "finish", "reason": {"kind": "stop"}},
    {"type": "finish", "reason": {"kind": "tool-calls"}},
    {"type": "finish", "reason": {"kind": "max-tokens"}, "replayState": {"opaque": [1, None, {"x": None}]}},
    {"type": "finish", "reason": {"kind": "error", "failure": {"message": "m", "code": "SERVER"}}},
    {
        "type": "finish",
        "reason": {
            "kind": "aborted",
            "failure": {
                "message": "m",
                "code": "ABORTED",
                "status": 499,
                "providerRetryAfterMs": 1500,
                "requestId": "req-1",
            },
        },
    },
]


@pytest.mark.parametrize("shape", SHAPES + SEED_CHUNKS, ids=lambda d: d["type"])
def test_every_shape_round_trips_through_its_model(shape: dict[str, Any]) -> None:
    chunk = parse_chunk(shape)
    assert type(chunk) is CHUNK_TYPES[shape["type"]]
    assert chunk_to_dict(chunk) == shape
    assert parse_chunk(chunk) is chunk


@pytest.mark.parametrize("shape", SHAPES, ids=lambda d: d["type"])
def test_fast_parsing_paths_agree_with_full_validation(shape: dict[str, Any]) -> None:
    assert parse_chunk(shape) == _chunk_adapter.validate_python(shape)


IRREGULAR: list[Any] = [
    {"type": "text-delta", "index": True, "text": "x"},
    {"type": "text-delta", "index": 0, "text": None},
    {"type": "reasoning-delta", "index": 0, "text": "x", "more": 1},
    {"type": "tool-call-delta", "index": 0, "id": "c", "name": None, "argumentsDelta": "{}"},
    {"type": "tool-call-delta", "index": 0, "id": 1, "argumentsDelta": "{}"},
    {"type": "block-start", "index": 0, "blockType": "image"},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "x", "extra": 1}},
    {
        "type": "block-end",
        "index": 0,
        "block": {"type": "tool-call", "id": "c", "name": None, "arguments": "{}"},
    },
    {"type": "block-end", "index": 0, "block": {"type": "tool-result", "toolCallId": "c", "content": []}},
    {"type": "block-end", "index": 0, "block": "text"},
    {"type": "usage", "usage": {"inputTokens": True, "outputTokens": 0}},
    {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 0, "cacheReadTokens": None}},
    {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 0, "other": 1}},
    {"type": "usage", "usage": {"inputTokens": 1.0, "outputTokens": 0}},
    {"type": "usage", "usage": {"outputTokens": 0}},
    {"type": "finish", "reason": {"kind": "stop"}, "replayState": None},
    {"type": "finish", "reason": {"kind": "stop", "extra": 1}},
    {"type": "finish", "reason": {"kind": "done"}},
    {"type": "finish", "reason": {"kind": "stop"}, "other": 1},
]


@pytest.mark.parametrize("obj", IRREGULAR, ids=lambda d: d["type"])
def test_irregular_dicts_parse_exactly_as_full_validation_says(obj: dict[str, Any]) -> None:
    assert_parses_as_full_validation(obj)


def assert_parses_as_full_validation(obj: dict[str, Any]) -> None:
    """``parse_chunk`` (fast paths included) refuses what full validation refuses, builds what it builds."""
    try:
        expected: Any = _chunk_adapter.validate_python(obj)
    except ValidationError:
        with pytest.raises(ValidationError):
            parse_chunk(obj)
    else:
        parsed = parse_chunk(obj)
        assert type(parsed) is type(expected)
        assert parsed == expected
        assert parsed.to_dict() == expected.to_dict()


def test_optional_keys_are_omitted_never_null() -> None:
    delta = ToolCallDelta(index=0, id="c", arguments_delta="{}")
    assert delta.to_dict() == {"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": "{}"}
    assert "null" not in str(chunk_to_dict({"type": "finish", "reason": {"kind": "stop"}}))


def test_python_names_and_aliases_both_construct() -> None:
    assert BlockEnd(index=0, block=TextBlock(text="x")) == parse_chunk(
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "x"}}
    )
    assert TextDelta(index=0, text="a").text == "a"


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"type": "bogus"}, "unknown chunk type 'bogus'"),
        ({"index": 0}, "the chunk has no 'type' field"),
        ([1, 2], "expected a chunk (a model or a dict with a 'type'), got list"),
        ({"type": "text-delta", "index": 0}, "the text-delta chunk is malformed: 'text' is missing"),
        (
            {"type": "text-delta", "index": True, "text": "x"},
            "'index': input should be a valid integer (got True)",
        ),
        ({"type": "text-delta", "index": 0, "text": "x", "extra": 1}, "unexpected field 'extra'"),
        ({"type": "block-end", "index": 0, "block": {"type": "text"}}, "'block.text' is missing"),
        ({"type": "usage", "usage": {"inputTokens": 1}}, "'usage.outputTokens' is missing"),
    ],
)
def test_a_malformed_chunk_is_described_in_one_sentence(obj: Any, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_chunk(obj)
    assert message in describe_invalid(obj, caught.value)


def test_failure_status_and_retry_after_are_range_checked() -> None:
    for failure in (
        {"message": "m", "code": "X", "status": 600},
        {"message": "m", "code": "X", "providerRetryAfterMs": 0},
    ):
        with pytest.raises(ValidationError):
            parse_chunk({"type": "finish", "reason": {"kind": "error", "failure": failure}})


# Copied on each draw: the mutations below must never reach the strategy's own values.
_ODD_VALUES = st.sampled_from(
    [0, -1, True, 1.0, "", "x", "text", "stop", None, [], {}, {"kind": "stop"}]
).map(copy.deepcopy)


@st.composite
def _near_shapes(draw: st.DrawFn) -> dict[str, Any]:
    """A regular shape with a few keys dropped, added or given a value of another type, at any depth."""
    obj = copy.deepcopy(draw(st.sampled_from(SHAPES + SEED_CHUNKS)))
    for _ in range(draw(st.integers(1, 3))):
        node = obj
        while draw(st.booleans()) and any(isinstance(v, dict) for v in node.values()):
            node = draw(st.sampled_from([v for v in node.values() if isinstance(v, dict)]))
        action = draw(st.sampled_from(["drop", "add", "retype"]))
        keys = [k for k in node if k != "type" or node is not obj]
        if action == "add" or not keys:
            node[draw(st.sampled_from(["extra", "name", "replayState", "cacheReadTokens", "failure"]))] = (
                draw(_ODD_VALUES)
            )
        elif action == "drop":
            del node[draw(st.sampled_from(keys))]
        else:
            node[draw(st.sampled_from(keys))] = draw(_ODD_VALUES)
    return obj


@settings(max_examples=400, deadline=None)
@given(_near_shapes())
def test_fast_parsing_accepts_exactly_what_full_validation_accepts(obj: dict[str, Any]) -> None:
    assert_parses_as_full_validation(obj)


@pytest.mark.parametrize(
    "obj",
    [
        {"type": []},
        {"type": {"kind": "text-delta"}},
        {"type": "block-start", "index": 0, "blockType": []},
        {"type": "finish", "reason": {"kind": {}}},
        {"type": "block-end", "index": 0, "block": {"type": ["text"], "text": "x"}},
    ],
)
def test_unhashable_values_where_a_tag_belongs_are_schema_violations_not_crashes(obj: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse_chunk(obj)
    [violation] = check(
        [obj, {"type": "finish", "reason": {"kind": "error", "failure": {"message": "m", "code": "X"}}}]
    )
    assert (violation.rule, violation.position) == ("schema", 0)


@pytest.mark.parametrize(
    "obj",
    [
        {"type": "text-delta", "index": 0, "text": "サンプル"},
        {"type": "reasoning-delta", "index": 2, "text": ""},
        {"type": "tool-call-delta", "index": 1, "id": "call-1", "name": "bash", "argumentsDelta": "{"},
        {"type": "tool-call-delta", "index": 1, "id": "call-1", "argumentsDelta": "}"},
        {"type": "block-start", "index": 3, "blockType": "tool-call"},
    ],
)
def test_the_hot_path_constructor_builds_the_same_model_validation_builds(obj: dict[str, Any]) -> None:
    # trusted() bypasses validation for speed; what it builds must be indistinguishable.
    validated = CHUNK_TYPES[obj["type"]].model_validate(obj)
    fields = {name: getattr(validated, name) for name in type(validated).model_fields}
    fast = trusted(type(validated), fields)
    assert fast == validated
    assert repr(fast) == repr(validated)
    assert fast.to_dict() == obj == chunk_to_dict(fast)
    assert fast.model_dump() == validated.model_dump()
    assert hash(fast) == hash(validated)
    with pytest.raises(ValidationError):
        fast.index = 5  # type: ignore[misc]  # frozen like any other chunk
