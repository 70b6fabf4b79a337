"""What drawn streams are made of: texts, tool names and arguments, usage counts, failures.

Texts mix arbitrary strings with grapheme clusters that are easy to cut wrong
(combining marks, emoji ZWJ sequences, flags, astral characters), and JSON
arguments are cut at arbitrary code-point offsets, inside tokens.
"""

from __future__ import annotations

import itertools
import json

from hypothesis import strategies as st

from chunkscope.protocol import LlmFailure, TokenUsage

__all__ = ["arguments", "failures", "names", "split", "texts", "usages"]

_TRICKY = [
    "サンプル",
    " 教程",
    "👩‍💻",
    "🇯🇵",
    "e\u0301",
    "é",
    "한국어",
    "𝄞",
    "\n",
    " ",
    "a",
    "\\",
    '"',
    "{",
    "}",
    "\t",
]
texts = st.one_of(
    st.text(max_size=30),
    st.lists(st.sampled_from(_TRICKY), max_size=8).map("".join),
)
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,15}", fullmatch=True)
_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
_json_value = st.recursive(
    _json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_json_objects = st.dictionaries(st.text(max_size=8), _json_value, max_size=4)
_failure_codes = st.sampled_from(
    ["SERVER", "TIMEOUT", "TRANSPORT", "ABORTED", "STREAM_CLOSED", "RATE_LIMIT", "CONTENT_FILTER", "UNKNOWN"]
)


@st.composite
def arguments(draw: st.DrawFn) -> str:
    """A JSON object's text, compact or spaced, ASCII-escaped or not."""
    obj = draw(_json_objects)
    compact = draw(st.booleans())
    return json.dumps(obj, ensure_ascii=draw(st.booleans()), separators=(",", ":") if compact else None)


def split(draw: st.DrawFn, text: str, *, allow_none: bool = False) -> list[str]:
    """Cut ``text`` at arbitrary code-point offsets (empty pieces allowed)."""
    if allow_none and text == "" and draw(st.booleans()):
        return []
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def usages(draw: st.DrawFn) -> TokenUsage:
    """Token counts, the optional ones sometimes absent."""
    counts = st.integers(min_value=0, max_value=2_000_000)
    optional = st.none() | counts
    return TokenUsage(
        input_tokens=draw(counts),
        output_tokens=draw(counts),
        cache_read_tokens=draw(optional),
        cache_write_tokens=draw(optional),
        reasoning_tokens=draw(optional),
    )


@st.composite
def failures(draw: st.DrawFn) -> LlmFailure:
    """The failure an ``error``/``aborted`` finish carries."""
    return LlmFailure(
        message=draw(st.text(min_size=1, max_size=30)),
        code=draw(_failure_codes),
        status=draw(st.none() | st.integers(100, 599)),
        provider_retry_after_ms=draw(st.none() | st.floats(min_value=1, max_value=60_000)),
        request_id=draw(st.none() | st.text(min_size=1, max_size=12)),
    )
