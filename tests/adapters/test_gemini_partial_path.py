"""Gemini ``functionCall.partialArgs``: any ``jsonPath`` is read in linear time and bounded memory,
and arguments holding a number JSON cannot hold (``1e999``) are MALFORMED_RESPONSE, never
``Infinity`` in the arguments text."""

from __future__ import annotations

import json
import time
import tracemalloc
from typing import Any

import pytest
from test_gemini_wire import USAGE, partial, response, run

from chunkscope.adapters.gemini._partial import parse_json_path


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("$.a.b[0]", ("a", "b", 0)),
        ("$['a b'][12].c", ("a b", 12, "c")),
        ("$['it\\'s']", ("it's",)),
        ('$["say \\"hi\\""]', ('say "hi"',)),
        ("$['say \"hi\"']", ('say "hi"',)),
        ("$['a\\\\']['b']", ("a\\", "b")),
        ("$['\\u00e9.[]']", ("é.[]",)),
        ("$[000000007]", (7,)),
    ],
)
def test_json_paths_read_as_rfc_9535_normalized_paths(path: str, segments: tuple[Any, ...]) -> None:
    assert parse_json_path(path) == segments


@pytest.mark.parametrize(
    "path",
    [
        "$",
        "a",
        "$.",
        "$..a",
        "$.a]",
        "$[",
        "$[]",
        "$[a]",
        "$[1234567890]",
        "$[1",
        "$['a'",
        "$['a",
        "$['a\\']",
        "$['\\x']",
    ],
)
def test_ill_formed_json_paths_are_a_value_error(path: str) -> None:
    with pytest.raises(ValueError, match="jsonPath"):
        parse_json_path(path)


@pytest.mark.parametrize("ending", ["']", "", "\\"], ids=["closed", "unclosed", "escape-at-end"])
def test_a_5_mb_quoted_name_costs_linear_time_and_memory_of_its_own_size(ending: str) -> None:
    path = "$['" + "n" * (5 << 20) + ending
    tracemalloc.start()
    started = time.perf_counter()
    try:
        segments: tuple[Any, ...] | None = parse_json_path(path)
    except ValueError:
        segments = None
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert (segments is not None) == (ending == "']")
    assert peak < 48 << 20, peak  # a backtracking pattern took 100-200 bytes a character: +1 GiB
    assert elapsed < 2.0, elapsed


def test_a_long_path_of_names_stops_at_the_depth_limit_at_once() -> None:
    started = time.perf_counter()
    with pytest.raises(ValueError, match="deeper"):
        parse_json_path("$" + ".a" * (1 << 20))
    assert time.perf_counter() - started < 0.5


def _number_call(literal: str) -> str:
    """A partialArgs event whose numberValue is ``literal`` as the wire wrote it."""
    event = response(partial({"jsonPath": "$.n", "numberValue": 0}, name="f", more=False))
    return json.dumps(event).replace('"numberValue": 0', f'"numberValue": {literal}')


@pytest.mark.parametrize("literal", ["1e999", "-1e999", "NaN", "Infinity"])
def test_a_partial_number_json_cannot_hold_is_malformed_with_the_output_before_kept(literal: str) -> None:
    chunks, error = run([response({"text": "Before."}), _number_call(literal)])
    assert error is not None and error.code == "MALFORMED_RESPONSE", error
    deltas = "".join(c.arguments_delta for c in chunks if c.type == "tool-call-delta")
    assert "Infinity" not in deltas and "NaN" not in deltas


@pytest.mark.parametrize("literal", ["1e999", "-1e999"])
def test_whole_args_holding_1e999_are_malformed(literal: str) -> None:
    event = json.dumps(response({"functionCall": {"name": "f", "args": {"n": 0}}})).replace(
        '"n": 0', f'"n": {literal}'
    )
    chunks, error = run([event])
    assert error is not None and error.code == "MALFORMED_RESPONSE", error
    assert all("Infinity" not in c.arguments_delta for c in chunks if c.type == "tool-call-delta")


def test_big_and_exact_numbers_stay_exact_valid_json() -> None:
    big = "1" + "0" * 40
    chunks, error = run(
        [
            _number_call(big),
            json.dumps(response({"text": ""}, finish="STOP", usage=USAGE)),
        ]
    )
    assert error is None, error
    text = "".join(c.arguments_delta for c in chunks if c.type == "tool-call-delta")
    assert json.loads(text) == {"n": int(big)}
