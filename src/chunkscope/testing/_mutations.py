"""Invalid streams: mutations of valid streams, each tagged with the one rule it breaks.

``@breaks(rule_id)`` registers a mutation in ``MUTATIONS``: given a profile, it
draws a valid stream (``_valid.streams``) and changes it so that checking it
under that profile reports that rule and no other. ``invalid_streams`` draws a
rule of ``RULES``, then either that rule's own smallest breaking example (its
row in ``RULES``) or one of its mutations. A new rule is a row in ``RULES``, a
branch in the checker and a mutation here; ``tests/protocol/test_properties.py``
holds every rule to having one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st
from pydantic import ValidationError

from chunkscope.protocol import (
    AnyBlock,
    AnyChunk,
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    TextBlock,
    TextDelta,
    ToolCallDelta,
    Usage,
    parse_chunk,
)

from ..protocol import PROFILES, RULES
from ._content import texts
from ._valid import BLOCK_KINDS, FAILING, OK_KINDS, GeneratedStream, streams

__all__ = ["MUTATIONS", "breaks", "invalid_streams", "rules_for"]

Mutation = Callable[[st.DrawFn, str], list[Any]]
"""Draws a stream that breaks one rule under the profile it is given."""

MUTATIONS: dict[str, Mutation] = {}
"""Every rule's mutation, by rule id (filled by ``@breaks``)."""


def breaks(rule_id: str) -> Callable[[Mutation], Mutation]:
    """Register the decorated mutation as the one that breaks ``rule_id`` (a key of ``RULES``)."""
    if rule_id not in RULES:
        raise ValueError(f"{rule_id!r} is not a rule of RULES")

    def register(mutation: Mutation) -> Mutation:
        if rule_id in MUTATIONS:
            raise ValueError(f"rule {rule_id!r} already has a mutation")
        MUTATIONS[rule_id] = mutation
        return mutation

    return register


def rules_for(profile: str = "strict") -> list[str]:
    """The rule ids ``profile`` applies (the ones ``invalid_streams(profile)`` can break)."""
    return [rule.id for rule in RULES.values() if profile in rule.profiles]


def _pick(draw: st.DrawFn, items: Sequence[int]) -> int:
    return draw(st.sampled_from(list(items)))


def _where(chunks: list[Any], kind: type[Any], index: int | None = None) -> list[int]:
    return [
        k for k, chunk in enumerate(chunks) if type(chunk) is kind and (index is None or chunk.index == index)
    ]


def _of_block(chunks: list[Any], index: int) -> list[int]:
    return [k for k, chunk in enumerate(chunks) if getattr(chunk, "index", None) == index]


def _closed(stream: GeneratedStream, kind: str | None = None) -> list[int]:
    """Indexes of closed blocks (of ``kind``) whose block-end exists."""
    out = []
    for chunk in stream.chunks:
        if type(chunk) is BlockEnd and (kind is None or chunk.block.type == kind):
            out.append(chunk.index)
    return out


def _base(draw: st.DrawFn, profile: str, **kwargs: Any) -> GeneratedStream:
    return draw(streams(profile=profile, **kwargs))


def _mutable(stream: GeneratedStream) -> list[Any]:
    return list(stream.chunks)


def _before_finish(draw: st.DrawFn, chunks: list[Any]) -> int:
    return draw(st.integers(0, len(chunks) - 1))


@breaks("block-pairing")
def _break_block_pairing(draw: st.DrawFn, profile: str) -> list[Any]:
    variant = draw(st.sampled_from(["duplicate-end", "drop-end", "stray-end"]))
    if variant == "drop-end":
        stream = _base(draw, profile, finish_kinds=OK_KINDS, min_blocks=1, usage="always")
        chunks = _mutable(stream)
        ends = _where(chunks, BlockEnd)
        # strict: only the last block's end (an earlier one would make the next start interleave).
        del chunks[ends[-1] if profile == "strict" else _pick(draw, ends)]
        return chunks
    if variant == "duplicate-end":
        stream = _base(draw, profile, min_blocks=1, allow_open=False, usage="always")
        chunks = _mutable(stream)
        at = _pick(draw, _where(chunks, BlockEnd))
        chunks.insert(at + 1, chunks[at])
        return chunks
    stream = _base(draw, profile, usage="always")
    chunks = _mutable(stream)
    stray = BlockEnd(index=60 + draw(st.integers(0, 9)), block=TextBlock(text=""))
    chunks.insert(_before_finish(draw, chunks), stray)
    return chunks


@breaks("index-order")
def _break_index_order(draw: st.DrawFn, profile: str) -> list[Any]:
    variants = ["repeat-start", "negative"] + (["skip", "reuse"] if profile == "strict" else [])
    variant = draw(st.sampled_from(variants))
    stream = _base(draw, profile, min_blocks=2 if variant == "reuse" else 1, usage="always")
    chunks = _mutable(stream)
    if variant == "repeat-start":
        at = _pick(draw, _where(chunks, BlockStart))
        chunks.insert(at + 1, chunks[at])
        return chunks
    starts = [chunks[k].index for k in _where(chunks, BlockStart)]
    return _INDEX_BREAKS[variant](draw, chunks, starts)


def _negative_index(draw: st.DrawFn, chunks: list[Any], starts: list[int]) -> list[Any]:
    """A block's chunks all carry a negative index."""
    old = _pick(draw, starts)
    new = -1 - draw(st.integers(0, 5))
    return [_reindex(c, new) if getattr(c, "index", None) == old else c for c in chunks]


def _skipped_index(draw: st.DrawFn, chunks: list[Any], starts: list[int]) -> list[Any]:
    """From one block on, every index jumps ahead (a gap in strict's 0, 1, 2, …)."""
    first = _pick(draw, starts)
    shift = draw(st.integers(1, 3))
    return [_reindex(c, c.index + shift) if getattr(c, "index", -1) >= first else c for c in chunks]


def _reused_index(draw: st.DrawFn, chunks: list[Any], starts: list[int]) -> list[Any]:
    """A later block takes an earlier block's index (strict streams run 0, 1, 2, …)."""
    later = _pick(draw, starts[1:])
    earlier = draw(st.integers(0, later - 1))
    return [_reindex(c, earlier) if getattr(c, "index", None) == later else c for c in chunks]


_INDEX_BREAKS: dict[str, Callable[[st.DrawFn, list[Any], list[int]], list[Any]]] = {
    "negative": _negative_index,
    "skip": _skipped_index,
    "reuse": _reused_index,
}


def _reindex(chunk: Any, index: int) -> Any:
    return chunk.model_copy(update={"index": index})


@breaks("arguments-json")
def _break_arguments_json(draw: st.DrawFn, profile: str) -> list[Any]:
    stream = _base(draw, profile, finish_kinds=("stop", "tool-calls"), need="tool-call", usage="always")
    chunks = _mutable(stream)
    index = _pick(draw, _closed(stream, "tool-call"))
    end_at = _where(chunks, BlockEnd, index)[0]
    block = chunks[end_at].block
    bad = draw(st.sampled_from(["garbage", "empty", "array", "number", "cut", "nan"]))
    arguments = {
        "garbage": block.arguments + "x",
        "empty": "",
        "array": "[1, 2]",
        "number": "42",
        "cut": block.arguments[:-1],
        "nan": '{"a": NaN}',
    }[bad]
    deltas = _where(chunks, ToolCallDelta, index)
    pieces = [arguments] + [""] * (len(deltas) - 1)
    for k, piece in zip(deltas, pieces, strict=True):
        chunks[k] = chunks[k].model_copy(update={"arguments_delta": piece})
    chunks[end_at] = BlockEnd(index=index, block=block.model_copy(update={"arguments": arguments}))
    return chunks


@breaks("finish-last")
def _break_finish_last(draw: st.DrawFn, profile: str) -> list[Any]:
    stream = _base(draw, profile, usage="always")
    chunks = _mutable(stream)
    variant = draw(st.sampled_from(["drop", "after", "second-finish"]))
    if variant == "drop":
        return chunks[:-1]
    if variant == "second-finish":
        return [*chunks, chunks[-1]]
    # usage after the finish breaks usage-before-finish instead
    candidates = [k for k, chunk in enumerate(chunks[:-1]) if not isinstance(chunk, Usage)]
    extra = chunks[_pick(draw, candidates)] if candidates else chunks[-1]
    return [*chunks, extra]


@breaks("usage-before-finish")
def _break_usage_before_finish(draw: st.DrawFn, profile: str) -> list[Any]:
    stream = _base(draw, profile, usage="always")
    chunks = _mutable(stream)
    at = _where(chunks, Usage)[0]
    if draw(st.booleans()):  # moved after the finish
        return [*chunks[:at], *chunks[at + 1 :], chunks[at]]
    chunks.insert(draw(st.integers(at + 1, len(chunks) - 1)), chunks[at])
    return chunks


@breaks("delta-index")
def _break_delta_index(draw: st.DrawFn, profile: str) -> list[Any]:
    variant = draw(st.sampled_from(["unknown-index", "straggler", "wrong-kind"]))
    if variant == "unknown-index":
        stream = _base(draw, profile, usage="always")
        chunks = _mutable(stream)
        chunks.insert(_before_finish(draw, chunks), _stray_delta(draw, 60 + draw(st.integers(0, 9))))
        return chunks
    stream = _base(draw, profile, min_blocks=1, allow_open=False, usage="always")
    chunks = _mutable(stream)
    index = _pick(draw, _closed(stream))
    kind = _kind_of(chunks, index)
    start_at = _where(chunks, BlockStart, index)[0]
    end_at = _where(chunks, BlockEnd, index)[0]
    if variant == "straggler":
        chunks.insert(draw(st.integers(end_at + 1, len(chunks) - 1)), _delta_of(draw, kind, index))
        return chunks
    other = draw(st.sampled_from([k for k in BLOCK_KINDS if k != kind]))
    # strict: inside its own block's span, so no other block is open there
    chunks.insert(draw(st.integers(start_at + 1, end_at)), _delta_of(draw, other, index))
    return chunks


def _kind_of(chunks: list[Any], index: int) -> str:
    return str(chunks[_where(chunks, BlockStart, index)[0]].block_type)


def _delta_of(draw: st.DrawFn, kind: str, index: int) -> AnyChunk:
    text = draw(texts)
    if kind == "text":
        return TextDelta(index=index, text=text)
    if kind == "reasoning":
        return ReasoningDelta(index=index, text=text)
    return ToolCallDelta(index=index, id="call_stray", arguments_delta=text)


def _stray_delta(draw: st.DrawFn, index: int) -> AnyChunk:
    return _delta_of(draw, draw(st.sampled_from(BLOCK_KINDS)), index)


@breaks("no-interleave")
def _break_no_interleave(draw: st.DrawFn, profile: str) -> list[Any]:
    stream = _base(draw, profile, min_blocks=2, usage="always")
    chunks = _mutable(stream)
    index = draw(st.integers(0, len(stream.blocks) - 2))  # strict: block k is followed by block k + 1
    start_next = _where(chunks, BlockStart, index + 1)[0]
    moved = chunks.pop(start_next)
    if draw(st.booleans()):
        chunks.insert(_where(chunks, BlockEnd, index)[0], moved)  # just before the end of block k
    else:
        chunks.insert(_where(chunks, BlockStart, index)[0] + 1, moved)  # right after its start
    return chunks


@breaks("block-end-match")
def _break_block_end_match(draw: st.DrawFn, profile: str) -> list[Any]:
    variants = ["type"] + (["content"] if profile == "strict" else [])
    variant = draw(st.sampled_from(variants))
    stream = _base(draw, profile, min_blocks=1, allow_open=False, usage="always")
    chunks = _mutable(stream)
    index = _pick(draw, _closed(stream))
    end_at = _where(chunks, BlockEnd, index)[0]
    block = chunks[end_at].block
    new: AnyBlock
    if variant == "type":
        if block.type == "text":
            new = ReasoningBlock(text=block.text)
        elif block.type == "reasoning":
            new = TextBlock(text=block.text)
        else:
            new = TextBlock(text=block.arguments)
    elif block.type == "tool-call":
        how = draw(st.sampled_from(["arguments", "name"]))
        if how == "name":
            new = block.model_copy(update={"name": block.name + "_other"})
        else:
            new = block.model_copy(update={"arguments": block.arguments + " "})
    else:
        text = block.text
        new = block.model_copy(update={"text": text[:-1] if text and draw(st.booleans()) else text + "x"})
    chunks[end_at] = BlockEnd(index=index, block=new)
    return chunks


@breaks("tool-call-id")
def _break_tool_call_id(draw: st.DrawFn, profile: str) -> list[Any]:
    stream = _base(draw, profile, need="tool-call", allow_open=False, usage="always")
    chunks = _mutable(stream)
    calls = _closed(stream, "tool-call")
    index = _pick(draw, calls)
    deltas = _where(chunks, ToolCallDelta, index)
    end_at = _where(chunks, BlockEnd, index)[0]
    block = chunks[end_at].block
    variants = (
        ["end", "empty"]
        + (["later-delta"] if len(deltas) > 1 else [])
        + (["duplicate"] if len(calls) > 1 else [])
    )
    variant = draw(st.sampled_from(variants))
    if variant == "end":
        chunks[end_at] = BlockEnd(index=index, block=block.model_copy(update={"id": block.id + "x"}))
    elif variant == "later-delta":
        k = _pick(draw, deltas[1:])
        chunks[k] = chunks[k].model_copy(update={"id": block.id + "x"})
    else:
        if variant == "empty":
            new_id = ""
        else:  # another tool call's id (the earliest, so the reused one is already known)
            index = next(i for i in calls if i != calls[0]) if index == calls[0] else index
            new_id = chunks[_where(chunks, BlockEnd, calls[0])[0]].block.id
            deltas = _where(chunks, ToolCallDelta, index)
            end_at = _where(chunks, BlockEnd, index)[0]
            block = chunks[end_at].block
        for k in deltas:
            chunks[k] = chunks[k].model_copy(update={"id": new_id})
        chunks[end_at] = BlockEnd(index=index, block=block.model_copy(update={"id": new_id}))
    return chunks


@breaks("tool-call-name")
def _break_tool_call_name(draw: st.DrawFn, profile: str) -> list[Any]:
    stream = _base(draw, profile, need="tool-call", allow_open=False, usage="always")
    chunks = _mutable(stream)
    index = _pick(draw, _closed(stream, "tool-call"))
    for k in _where(chunks, ToolCallDelta, index):
        chunks[k] = chunks[k].model_copy(update={"name": draw(st.sampled_from([None, ""]))})
    end_at = _where(chunks, BlockEnd, index)[0]
    chunks[end_at] = BlockEnd(index=index, block=chunks[end_at].block.model_copy(update={"name": ""}))
    return chunks


@breaks("finish-consistency")
def _break_finish_consistency(draw: st.DrawFn, profile: str) -> list[Any]:
    if draw(st.booleans()):
        stream = _base(
            draw,
            profile,
            finish_kinds=("stop", "max-tokens"),
            block_kinds=("text", "reasoning"),
            usage="always",
        )
        return [*stream.chunks[:-1], Finish(reason=FinishReason(kind="tool-calls"))]
    stream = _base(draw, profile, max_blocks=0, finish_kinds=("max-tokens", *FAILING), usage="always")
    return [*stream.chunks[:-1], Finish(reason=FinishReason(kind="stop"))]


@breaks("usage-valid")
def _break_usage_valid(draw: st.DrawFn, profile: str) -> list[Any]:
    stream = _base(draw, profile, usage="always")
    chunks = _mutable(stream)
    at = _where(chunks, Usage)[0]
    field = draw(
        st.sampled_from(
            ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"]
        )
    )
    usage = chunks[at].usage.model_copy(update={field: -draw(st.integers(1, 1000))})
    chunks[at] = Usage(usage=usage)
    return chunks


@breaks("usage-missing")
def _break_usage_missing(draw: st.DrawFn, profile: str) -> list[Any]:
    stream = _base(draw, profile, finish_kinds=OK_KINDS, usage="always")
    return [chunk for chunk in stream.chunks if type(chunk) is not Usage]


_MALFORMED: list[Any] = [
    {"type": "bogus", "index": 0},
    {"type": "text-delta", "index": 0},
    {"type": "text-delta", "index": "0", "text": "x"},
    {"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": 5},
    {"type": "block-start", "index": 0, "blockType": "video"},
    {"type": "usage", "usage": {"inputTokens": 1}},
    {"type": "finish", "reason": {"kind": "done"}},
    {"index": 0, "text": "no type"},
    "text-delta",
    None,
]
# Malformed under strict only: dsh reads them as the reference does (unknown keys ignored, the
# reference's image and tool-result blocks allowed).
_MALFORMED_STRICT: list[Any] = [
    *_MALFORMED,
    {"type": "text-delta", "index": 0, "text": "x", "extra": True},
    {"type": "block-start", "index": 0, "blockType": "image"},
]


@breaks("schema")
def _break_schema(draw: st.DrawFn, profile: str) -> list[Any]:
    if draw(st.integers(0, 4)) == 0:
        # an error finish without its failure: well-typed fields, wrong shape
        stream = _base(draw, profile, finish_kinds=OK_KINDS, allow_open=False, usage="always")
        kind = draw(st.sampled_from(FAILING))
        return [*stream.chunks[:-1], Finish(reason=FinishReason(kind=kind))]  # type: ignore[arg-type]
    stream = _base(draw, profile, usage="always")
    chunks = _mutable(stream)
    malformed = _MALFORMED_STRICT if profile == "strict" else _MALFORMED
    chunks.insert(draw(st.integers(0, len(chunks))), draw(st.sampled_from(malformed)))
    return chunks


def _example(rule_id: str) -> list[Any]:
    """The rule's smallest breaking example as chunk models (a chunk that does not parse stays as it is)."""
    chunks: list[Any] = []
    for chunk in RULES[rule_id].example:
        try:
            chunks.append(parse_chunk(chunk))
        except ValidationError:
            chunks.append(chunk)
    return chunks


@st.composite
def _invalid(draw: st.DrawFn, profile: str, rules: Sequence[str]) -> tuple[list[Any], str]:
    rule = draw(st.sampled_from(list(rules)))
    # The example first, so that shrinking ends at the smallest stream that breaks the rule.
    if draw(st.integers(0, 9)) == 0:
        return _example(rule), rule
    return MUTATIONS[rule](draw, profile), rule


def invalid_streams(
    profile: str = "strict", rules: Sequence[str] | None = None
) -> st.SearchStrategy[tuple[list[Any], str]]:
    """``(chunks, rule_id)``: a stream that breaks exactly rule ``rule_id``.

    Either the rule's smallest breaking example (``RULES[rule_id].example``)
    or a valid stream with one mutation. Checking ``chunks`` under ``profile``
    reports that rule and no other (possibly at more than one chunk).
    ``rules`` narrows the rules drawn (default: every rule ``profile``
    applies). Chunks are models, except the malformed entries of ``schema``
    cases (dicts and other values).
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}")
    applicable = rules_for(profile)
    chosen = list(rules) if rules is not None else applicable
    unknown = [rule for rule in chosen if rule not in applicable]
    if unknown or not chosen:
        raise ValueError(f"rules {unknown or chosen} are not rules of profile {profile!r}")
    return _invalid(profile, chosen)
