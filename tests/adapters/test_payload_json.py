"""The hot path's JSON parser reads every payload as ``json`` does, or refuses it to ``json``.

The SSE translators parse each event with ``parse_fast`` (pydantic-core's parser) and hand
what it refuses to their ``json`` path. So whatever it accepts must be ``json.loads``'s value
exactly (types included), and what it refuses must still stream as before.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope.adapters._core.payload import PARSE_FAST_REFUSES, parse_fast
from chunkscope.adapters.gemini.translate import GeminiTranslator
from chunkscope.adapters.openai_compat.translate import OpenAITranslator
from chunkscope.adapters.openai_responses.translate import ResponsesTranslator

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (NaN equal to NaN, -0.0 not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _agrees(text: str) -> None:
    try:
        fast = parse_fast(text)
    except PARSE_FAST_REFUSES:
        return  # the translator asks json: nothing to compare
    assert _same(fast, json.loads(text)), text


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@SETTINGS
@given(value=_values, ascii_only=st.booleans())
def test_every_json_document_reads_as_json_reads_it(value: Any, ascii_only: bool) -> None:
    _agrees(json.dumps(value, ensure_ascii=ascii_only))


@SETTINGS
@given(
    text=st.lists(
        st.sampled_from(
            [
                '{"a":',
                "1",
                "-0",
                "1e400",
                "0.1",
                "1.",
                ".5",
                "NaN",
                "-Infinity",
                '"\\ud83d"',
                '"\\ude00"',
                '"x"',
                "[",
                "]",
                ",",
                "}",
                " ",
                "\t",
                "\x0b",
                "\u00a0",
                "\ufeff",
                "true",
                "null",
                '{"a":2}',
            ]
        ),
        max_size=8,
    ).map("".join)
)
def test_any_text_reads_as_json_reads_it_or_is_refused(text: str) -> None:
    _agrees(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,"b":2,"a":3}',
        "1" * 4300,
        "1" * 4301,
        "1e-400",
        "2.2250738585072014e-308",
        '"\\u0000"',
        '"\\ud83d\\ude00"',
        '"a\\/b"',
        "[" * 150 + "]" * 150,
    ],
)
def test_the_edges_read_as_json_reads_them(text: str) -> None:
    _agrees(text)


def test_what_the_fast_parser_refuses_still_streams_as_before() -> None:
    deep = "[" * 400 + "]" * 400  # past the fast parser's nesting limit, within json's
    lone = '"\ud800"'  # a lone surrogate in the text itself
    for extra in (deep, lone):
        with pytest.raises(PARSE_FAST_REFUSES):
            parse_fast(extra)
        chat = OpenAITranslator()
        event = '{"choices":[{"index":0,"delta":{"content":"hi"}}],"x":' + extra + "}"
        assert [c.type for c in chat.feed(("message", event))] == ["block-start", "text-delta"]
        gemini = GeminiTranslator()
        event = '{"candidates":[{"content":{"parts":[{"text":"hi"}]},"index":0}],"x":' + extra + "}"
        assert [c.type for c in gemini.feed(("message", event))] == ["block-start", "text-delta"]
        responses = ResponsesTranslator()
        event = '{"type":"response.created","response":{},"x":' + extra + "}"
        assert responses.feed(("response.created", event)) == []
