"""Hypothesis strategies for adapter authors (needs the ``testing`` extra: ``hypothesis``).

``valid_streams()`` draws streams that keep every rule of a profile, together
with the blocks they were built from; ``invalid_streams()`` draws streams that
break exactly one rule, with that rule's id::

    from hypothesis import given
    import chunkscope as cs
    from chunkscope.testing import valid_streams, invalid_streams

    @given(valid_streams())
    def test_my_consumer_accepts_valid_streams(stream):
        assert my_consumer(stream.chunks) == stream.assembled

    @given(invalid_streams())
    def test_checker_names_the_broken_rule(case):
        chunks, rule = case
        assert {v.rule for v in cs.check(chunks)} == {rule}

Deltas are split at arbitrary points: inside grapheme clusters (combining
marks, emoji ZWJ sequences, flags — a Python string holds code points, so that
is where "inside a multi-byte character" lands) and inside JSON tokens
(strings, escapes, numbers, keywords).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._extras import needs_extra

with needs_extra("chunkscope.testing"):  # the one dependency: the "testing" extra
    from hypothesis import strategies as st

from .protocol import PROFILES, RULES
from .protocol._chunks import (
    AnyBlock,
    AnyChunk,
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    LlmFailure,
    ReasoningBlock,
    ReasoningDelta,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
)

__all__ = ["GeneratedStream", "valid_streams", "invalid_streams", "rules_for"]

_OK_KINDS = ("stop", "tool-calls", "max-tokens")
_FAILING = ("error", "aborted")
_ALL_KINDS = (*_OK_KINDS, *_FAILING)
_BLOCK_KINDS = ("text", "reasoning", "tool-call")


@dataclass(frozen=True)
class GeneratedStream:
    """A drawn valid stream and what it was built from.

    ``blocks`` are the blocks in first-seen order as streamed (a block left
    open at an ``error``/``aborted`` finish holds the content streamed before
    it; a tool call cut by ``max-tokens`` holds its cut JSON). ``assembled`` is
    what ``BlockAssembler.blocks()`` must return for ``chunks``.
    """

    chunks: list[AnyChunk]
    blocks: list[AnyBlock]
    usage: TokenUsage | None
    finish: FinishReason
    open_indexes: tuple[int, ...]
    profile: str

    @property
    def assembled(self) -> list[AnyBlock]:
        """The blocks an assembler returns: ``blocks``, minus tool calls after a ``max-tokens`` finish."""
        if self.finish.kind == "max-tokens":
            return [block for block in self.blocks if block.type != "tool-call"]
        return list(self.blocks)

    def dicts(self) -> list[dict[str, Any]]:
        """The chunks in their JSON (camelCase dict) form."""
        return [chunk.to_dict() for chunk in self.chunks]


def rules_for(profile: str = "strict") -> list[str]:
    """The rule ids ``profile`` applies (the ones ``invalid_streams(profile)`` can break)."""
    return [rule.id for rule in RULES.values() if profile in rule.profiles]


# --- content ------------------------------------------------------------------

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
_texts = st.one_of(
    st.text(max_size=30),
    st.lists(st.sampled_from(_TRICKY), max_size=8).map("".join),
)
_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,15}", fullmatch=True)
_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    _texts,
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
def _arguments(draw: st.DrawFn) -> str:
    obj = draw(_json_objects)
    compact = draw(st.booleans())
    return json.dumps(obj, ensure_ascii=draw(st.booleans()), separators=(",", ":") if compact else None)


def _split(draw: st.DrawFn, text: str, *, allow_none: bool = False) -> list[str]:
    """Cut ``text`` at arbitrary code-point offsets (empty pieces allowed)."""
    if allow_none and text == "" and draw(st.booleans()):
        return []
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def _usages(draw: st.DrawFn) -> TokenUsage:
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
def _failures(draw: st.DrawFn) -> LlmFailure:
    return LlmFailure(
        message=draw(st.text(min_size=1, max_size=30)),
        code=draw(_failure_codes),
        status=draw(st.none() | st.integers(100, 599)),
        provider_retry_after_ms=draw(st.none() | st.floats(min_value=1, max_value=60_000)),
        request_id=draw(st.none() | st.text(min_size=1, max_size=12)),
    )


# --- streams ------------------------------------------------------------------


@dataclass
class _Built:
    """One block's chunk sequence and the block it streams."""

    index: int
    chunks: list[AnyChunk]
    block: AnyBlock
    is_open: bool


def _build_block(
    draw: st.DrawFn, index: int, kind: str, number: int, *, cut: bool, leave_open: bool
) -> _Built:
    chunks: list[AnyChunk] = [BlockStart(index=index, block_type=kind)]  # type: ignore[arg-type]
    if kind in ("text", "reasoning"):
        text = draw(_texts)
        pieces = _split(draw, text, allow_none=not leave_open)
        if leave_open and pieces:
            pieces = pieces[: draw(st.integers(0, len(pieces)))]
            text = "".join(pieces)
        delta = TextDelta if kind == "text" else ReasoningDelta
        chunks.extend(delta(index=index, text=piece) for piece in pieces)
        block: AnyBlock = TextBlock(text=text) if kind == "text" else ReasoningBlock(text=text)
    else:
        call_id = f"call_{number}_{draw(st.text('abcxyz0123', max_size=4))}"
        name = draw(_names)
        arguments = draw(_arguments())
        if cut:  # cut inside the JSON, as max-tokens or a failure leaves it
            arguments = arguments[: draw(st.integers(0, max(0, len(arguments) - 1)))]
        pieces = _split(draw, arguments)
        if leave_open:
            pieces = pieces[: draw(st.integers(0, len(pieces)))]
            arguments = "".join(pieces)
        repeat_name = draw(st.booleans())
        chunks.extend(
            ToolCallDelta(
                index=index, id=call_id, name=name if k == 0 or repeat_name else None, arguments_delta=piece
            )
            for k, piece in enumerate(pieces)
        )
        if leave_open and not pieces:  # what an assembler makes of a call that never streamed
            block = ToolCallBlock(id=f"call-{index}", name="", arguments="")
        else:
            block = ToolCallBlock(id=call_id, name=name, arguments=arguments)
    if not leave_open:
        chunks.append(BlockEnd(index=index, block=block))
    return _Built(index, chunks, block, leave_open)


@st.composite
def _streams(
    draw: st.DrawFn,
    *,
    profile: str = "strict",
    finish_kinds: Sequence[str] = _ALL_KINDS,
    block_kinds: Sequence[str] = _BLOCK_KINDS,
    min_blocks: int = 0,
    max_blocks: int = 5,
    need: str | None = None,
    usage: str = "maybe",
    allow_open: bool = True,
    allow_cut: bool = True,
) -> GeneratedStream:
    kind = draw(st.sampled_from(list(finish_kinds)))
    wanted = "tool-call" if kind == "tool-calls" else need
    low = max(min_blocks, 1 if kind == "stop" or wanted else 0)
    count = draw(st.integers(low, max(low, max_blocks)))
    kinds = draw(st.lists(st.sampled_from(list(block_kinds)), min_size=count, max_size=count))
    if wanted is not None and wanted not in kinds:
        kinds[draw(st.integers(0, count - 1))] = wanted
    last = count - 1
    # Only the last block may be left open (error/aborted) or cut (its JSON, when a tool call).
    leave_open = allow_open and kind in _FAILING and count > 0 and draw(st.booleans())
    cut = (
        allow_cut
        and kind in ("max-tokens", *_FAILING)
        and count > 0
        and kinds[last] == "tool-call"
        and kinds.count("tool-call") > (1 if need == "tool-call" else 0)
        and draw(st.booleans())
    )
    if profile == "dsh":
        indexes = draw(st.lists(st.integers(0, 50), min_size=count, max_size=count, unique=True))
    else:
        indexes = list(range(count))
    built = [
        _build_block(
            draw,
            indexes[k],
            kinds[k],
            k,
            cut=cut and k == last and not leave_open,
            leave_open=leave_open and k == last,
        )
        for k in range(count)
    ]
    if profile == "dsh" and count > 1 and draw(st.booleans()):
        sequence, order = _interleave(draw, built)
    else:
        sequence = [chunk for part in built for chunk in part.chunks]
        order = built
    blocks = [part.block for part in order]
    want_usage = usage == "always" or (
        usage == "maybe" and ((kind in _OK_KINDS and profile == "strict") or draw(st.booleans()))
    )
    drawn_usage = draw(_usages()) if want_usage else None
    if drawn_usage is not None:
        sequence.insert(draw(st.integers(0, len(sequence))), Usage(usage=drawn_usage))
    failure = draw(_failures()) if kind in _FAILING else None
    reason = FinishReason(kind=kind, failure=failure)  # type: ignore[arg-type]
    replay_states = st.fixed_dictionaries({"response": st.fixed_dictionaries({"id": st.text(max_size=8)})})
    replay = draw(st.none() | replay_states)
    sequence.append(Finish(reason=reason, replay_state=replay))
    return GeneratedStream(
        chunks=sequence,
        blocks=blocks,
        usage=drawn_usage,
        finish=reason,
        open_indexes=tuple(part.index for part in built if part.is_open),
        profile=profile,
    )


def _interleave(draw: st.DrawFn, built: list[_Built]) -> tuple[list[AnyChunk], list[_Built]]:
    """Merge the blocks' chunk sequences at random, each block's own order kept (dsh allows it)."""
    queues = [list(part.chunks) for part in built]
    positions = [0] * len(built)
    merged: list[AnyChunk] = []
    order: list[_Built] = []
    while True:
        ready = [k for k, queue in enumerate(queues) if positions[k] < len(queue)]
        if not ready:
            break
        k = draw(st.sampled_from(ready))
        if positions[k] == 0:
            order.append(built[k])
        merged.append(queues[k][positions[k]])
        positions[k] += 1
    return merged, order


def valid_streams(profile: str = "strict", *, max_blocks: int = 5) -> st.SearchStrategy[GeneratedStream]:
    """Streams that check clean under ``profile`` (``strict`` streams are clean under ``dsh`` too).

    Any number of text, reasoning and tool-call blocks (up to ``max_blocks``),
    deltas split at arbitrary points, optional usage fields, every finish kind:
    ``error``/``aborted`` with a failure and possibly the last block left open
    (cut mid-JSON when a tool call), ``max-tokens`` with possibly the last tool
    call's JSON cut short. ``dsh`` streams also use arbitrary distinct indexes
    and may interleave blocks.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}")
    return _streams(profile=profile, max_blocks=max_blocks)


# --- one broken rule ------------------------------------------------------------

_Mutation = Callable[[st.DrawFn, str], list[Any]]


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
    return draw(_streams(profile=profile, **kwargs))


def _mutable(stream: GeneratedStream) -> list[Any]:
    return list(stream.chunks)


def _before_finish(draw: st.DrawFn, chunks: list[Any]) -> int:
    return draw(st.integers(0, len(chunks) - 1))


def _break_block_pairing(draw: st.DrawFn, profile: str) -> list[Any]:
    variant = draw(st.sampled_from(["duplicate-end", "drop-end", "stray-end"]))
    if variant == "drop-end":
        stream = _base(draw, profile, finish_kinds=_OK_KINDS, min_blocks=1, usage="always")
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
    if variant == "negative":
        old = _pick(draw, starts)
        new = -1 - draw(st.integers(0, 5))
        return [_reindex(c, new) if getattr(c, "index", None) == old else c for c in chunks]
    if variant == "skip":
        first = _pick(draw, starts)
        shift = draw(st.integers(1, 3))
        return [_reindex(c, c.index + shift) if getattr(c, "index", -1) >= first else c for c in chunks]
    # reuse: a later block takes an earlier block's index (strict streams run 0, 1, 2, …)
    later = _pick(draw, starts[1:])
    earlier = draw(st.integers(0, later - 1))
    return [_reindex(c, earlier) if getattr(c, "index", None) == later else c for c in chunks]


def _reindex(chunk: Any, index: int) -> Any:
    return chunk.model_copy(update={"index": index})


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


def _break_usage_before_finish(draw: st.DrawFn, profile: str) -> list[Any]:
    stream = _base(draw, profile, usage="always")
    chunks = _mutable(stream)
    at = _where(chunks, Usage)[0]
    if draw(st.booleans()):  # moved after the finish
        return [*chunks[:at], *chunks[at + 1 :], chunks[at]]
    chunks.insert(draw(st.integers(at + 1, len(chunks) - 1)), chunks[at])
    return chunks


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
    other = draw(st.sampled_from([k for k in _BLOCK_KINDS if k != kind]))
    # strict: inside its own block's span, so no other block is open there
    chunks.insert(draw(st.integers(start_at + 1, end_at)), _delta_of(draw, other, index))
    return chunks


def _kind_of(chunks: list[Any], index: int) -> str:
    return str(chunks[_where(chunks, BlockStart, index)[0]].block_type)


def _delta_of(draw: st.DrawFn, kind: str, index: int) -> AnyChunk:
    text = draw(_texts)
    if kind == "text":
        return TextDelta(index=index, text=text)
    if kind == "reasoning":
        return ReasoningDelta(index=index, text=text)
    return ToolCallDelta(index=index, id="call_stray", arguments_delta=text)


def _stray_delta(draw: st.DrawFn, index: int) -> AnyChunk:
    return _delta_of(draw, draw(st.sampled_from(_BLOCK_KINDS)), index)


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


def _break_tool_call_name(draw: st.DrawFn, profile: str) -> list[Any]:
    stream = _base(draw, profile, need="tool-call", allow_open=False, usage="always")
    chunks = _mutable(stream)
    index = _pick(draw, _closed(stream, "tool-call"))
    for k in _where(chunks, ToolCallDelta, index):
        chunks[k] = chunks[k].model_copy(update={"name": draw(st.sampled_from([None, ""]))})
    end_at = _where(chunks, BlockEnd, index)[0]
    chunks[end_at] = BlockEnd(index=index, block=chunks[end_at].block.model_copy(update={"name": ""}))
    return chunks


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
    stream = _base(draw, profile, max_blocks=0, finish_kinds=("max-tokens", *_FAILING), usage="always")
    return [*stream.chunks[:-1], Finish(reason=FinishReason(kind="stop"))]


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


def _break_usage_missing(draw: st.DrawFn, profile: str) -> list[Any]:
    stream = _base(draw, profile, finish_kinds=_OK_KINDS, usage="always")
    return [chunk for chunk in stream.chunks if type(chunk) is not Usage]


_MALFORMED: list[Any] = [
    {"type": "bogus", "index": 0},
    {"type": "text-delta", "index": 0},
    {"type": "text-delta", "index": "0", "text": "x"},
    {"type": "text-delta", "index": 0, "text": "x", "extra": True},
    {"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": 5},
    {"type": "block-start", "index": 0, "blockType": "image"},
    {"type": "usage", "usage": {"inputTokens": 1}},
    {"type": "finish", "reason": {"kind": "done"}},
    {"index": 0, "text": "no type"},
    "text-delta",
    None,
]


def _break_schema(draw: st.DrawFn, profile: str) -> list[Any]:
    if draw(st.integers(0, 4)) == 0:
        # an error finish without its failure: well-typed fields, wrong shape
        stream = _base(draw, profile, finish_kinds=_OK_KINDS, allow_open=False, usage="always")
        kind = draw(st.sampled_from(_FAILING))
        return [*stream.chunks[:-1], Finish(reason=FinishReason(kind=kind))]  # type: ignore[arg-type]
    stream = _base(draw, profile, usage="always")
    chunks = _mutable(stream)
    chunks.insert(draw(st.integers(0, len(chunks))), draw(st.sampled_from(_MALFORMED)))
    return chunks


_MUTATIONS: dict[str, _Mutation] = {
    "block-pairing": _break_block_pairing,
    "index-order": _break_index_order,
    "arguments-json": _break_arguments_json,
    "finish-last": _break_finish_last,
    "usage-before-finish": _break_usage_before_finish,
    "delta-index": _break_delta_index,
    "no-interleave": _break_no_interleave,
    "block-end-match": _break_block_end_match,
    "tool-call-id": _break_tool_call_id,
    "tool-call-name": _break_tool_call_name,
    "finish-consistency": _break_finish_consistency,
    "usage-valid": _break_usage_valid,
    "usage-missing": _break_usage_missing,
    "schema": _break_schema,
}


@st.composite
def _invalid(draw: st.DrawFn, profile: str, rules: Sequence[str]) -> tuple[list[Any], str]:
    rule = draw(st.sampled_from(list(rules)))
    return _MUTATIONS[rule](draw, profile), rule


def invalid_streams(
    profile: str = "strict", rules: Sequence[str] | None = None
) -> st.SearchStrategy[tuple[list[Any], str]]:
    """``(chunks, rule_id)``: a valid stream with one mutation that breaks exactly rule ``rule_id``.

    Checking ``chunks`` under ``profile`` reports that rule and no other
    (possibly at more than one chunk). ``rules`` narrows the rules drawn
    (default: every rule ``profile`` applies). Chunks are models, except the
    malformed entries of ``schema`` cases (dicts and other values).
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}")
    applicable = rules_for(profile)
    chosen = list(rules) if rules is not None else applicable
    unknown = [rule for rule in chosen if rule not in applicable]
    if unknown or not chosen:
        raise ValueError(f"rules {unknown or chosen} are not rules of profile {profile!r}")
    return _invalid(profile, chosen)
