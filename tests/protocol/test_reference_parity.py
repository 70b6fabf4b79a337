"""Differential tests: the ``dsh`` profile and ``BlockAssembler`` against models of the reference.

docs/protocol.md says ``dsh`` is exactly the TypeScript reference's stream invariant
(``packages/llm/llm/src/invariant.ts``) and that assembly follows its
``assembler.ts``. The two small models below restate those files' documented
behaviour in Python (one statement per rule, no optimisation) and Hypothesis
feeds both sides arbitrary, mostly broken, chunk sequences — small index
ranges, so that reuse, stragglers, unknown indexes and kind mismatches are
common.
"""

from __future__ import annotations

import sys
import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope.protocol import (
    BlockAssembler,
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
    check,
    parse_chunk,
)

from ._streams import SEED_CHUNKS

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
THOROUGH = settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_MAX_SAFE_INTEGER = 2**53 - 1  # JavaScript's Number.MAX_SAFE_INTEGER
_DELTA_KIND = {TextDelta: "text", ReasoningDelta: "reasoning", ToolCallDelta: "tool-call"}


CLEAN = "clean"


def reference_invariant(chunks: list[Any]) -> int | str | None:
    """Where invariant.ts's ``validateStream`` fails: a chunk position, None (at the end), or ``CLEAN``."""
    open_blocks: dict[int, str] = {}
    usage_seen = False
    finished = False
    for position, chunk in enumerate(chunks):
        if finished:
            return position
        kind = type(chunk)
        if kind is BlockStart:
            if not 0 <= chunk.index <= _MAX_SAFE_INTEGER or chunk.index in open_blocks:
                return position
            open_blocks[chunk.index] = chunk.block_type
        elif kind in _DELTA_KIND:
            if chunk.index < 0 or open_blocks.get(chunk.index) != _DELTA_KIND[kind]:
                return position
        elif kind is BlockEnd:
            if chunk.index < 0 or open_blocks.get(chunk.index) != chunk.block.type:
                return position
            del open_blocks[chunk.index]
        elif kind is Usage:
            if usage_seen:
                return position
            usage_seen = True
        elif kind is Finish:
            if open_blocks and chunk.reason.kind not in ("error", "aborted"):
                return position
            finished = True
    return CLEAN if finished else None


class ReferenceAssembler:
    """assembler.ts's documented behaviour, restated plainly."""

    def __init__(self) -> None:
        self.partials: dict[int, dict[str, Any]] = {}  # insertion order = first-seen order
        self.usage: TokenUsage | None = None
        self.finish: FinishReason = FinishReason(kind="stop")
        self.replay: Any = None

    def _ensure(self, index: int, block_type: str) -> dict[str, Any]:
        if index not in self.partials:
            self.partials[index] = {"type": block_type, "text": "", "id": None, "name": None, "args": ""}
        return self.partials[index]

    def push(self, chunk: Any) -> None:
        kind = type(chunk)
        if kind is BlockStart:
            self._ensure(chunk.index, chunk.block_type)
        elif kind in (TextDelta, ReasoningDelta):
            partial = self._ensure(chunk.index, _DELTA_KIND[kind])
            if "block" not in partial:
                partial["text"] += chunk.text
        elif kind is ToolCallDelta:
            partial = self._ensure(chunk.index, "tool-call")
            if "block" not in partial:
                partial["id"] = chunk.id
                if chunk.name:
                    partial["name"] = chunk.name
                partial["args"] += chunk.arguments_delta
        elif kind is BlockEnd:
            partial = self._ensure(chunk.index, chunk.block.type)
            partial.setdefault("block", chunk.block)
        elif kind is Usage:
            self.usage = chunk.usage
        else:
            self.finish = chunk.reason
            self.replay = chunk.replay_state

    def _assemble(self, index: int, partial: dict[str, Any]) -> Any:
        if "block" in partial:
            return partial["block"]
        if partial["type"] == "text":
            return TextBlock(text=partial["text"])
        if partial["type"] == "reasoning":
            return ReasoningBlock(text=partial["text"])
        call_id = partial["id"] if partial["id"] is not None else f"call-{index}"
        return ToolCallBlock(id=call_id, name=partial["name"] or "", arguments=partial["args"])

    def blocks(self) -> list[Any]:
        every = [self._assemble(index, partial) for index, partial in self.partials.items()]
        if self.finish.kind == "max-tokens":
            return [block for block in every if block.type != "tool-call"]
        return every

    def replay_state(self) -> Any:
        state = self.replay
        if not isinstance(state, dict) or "blocks" not in state:
            return state
        every = [self._assemble(index, partial) for index, partial in self.partials.items()]
        if len(state["blocks"]) != len(every):
            return None
        kept = [
            entry for entry, block in zip(state["blocks"], every, strict=True) if block.type != "tool-call"
        ]
        if self.finish.kind != "max-tokens" or len(kept) == len(every):
            return state
        return {"response": state.get("response"), "blocks": kept}

    def interrupted_blocks(self) -> list[Any]:
        kept = []
        for index, partial in self.partials.items():
            block_type = partial["block"].type if "block" in partial else partial["type"]
            if block_type in ("text", "reasoning"):
                block = self._assemble(index, partial)
                if _js_trim(block.text) != "":
                    kept.append(block)
        return kept


# JavaScript's String.prototype.trim: WhiteSpace (TAB, VT, FF, U+FEFF, every Zs space) and LineTerminator.
_JS_WHITESPACE = "\t\v\f\ufeff\n\r\u2028\u2029" + "".join(
    chr(code) for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)) == "Zs"
)


def _js_trim(text: str) -> str:
    return text.strip(_JS_WHITESPACE)


# --- arbitrary chunk sequences ----------------------------------------------------

_indexes = st.integers(-1, 3)
_texts = st.sampled_from(["", "a", " ", "\u3000", "\ufeff", "\x1c", "\x85", "x y", "{", '{"a":1}'])
_ids = st.sampled_from(["", "call_1", "call_2"])
_names = st.sampled_from([None, "", "f", "g"])
_failure = LlmFailure(message="cut", code="SERVER")
_blocks = st.one_of(
    st.builds(TextBlock, text=_texts),
    st.builds(ReasoningBlock, text=_texts),
    st.builds(ToolCallBlock, id=_ids, name=st.sampled_from(["", "f"]), arguments=_texts),
)
_reasons = st.sampled_from(["stop", "tool-calls", "max-tokens", "error", "aborted"]).map(
    lambda kind: FinishReason(kind=kind, failure=_failure if kind in ("error", "aborted") else None)  # type: ignore[arg-type]
)
_chunks = st.one_of(
    st.tuples(_indexes, st.sampled_from(["text", "reasoning", "tool-call"])).map(
        lambda args: BlockStart(index=args[0], block_type=args[1])  # type: ignore[arg-type]
    ),
    st.builds(TextDelta, index=_indexes, text=_texts),
    st.builds(ReasoningDelta, index=_indexes, text=_texts),
    st.tuples(_indexes, _ids, _names, _texts).map(
        lambda args: ToolCallDelta(index=args[0], id=args[1], name=args[2], arguments_delta=args[3])
    ),
    st.builds(BlockEnd, index=_indexes, block=_blocks),
    st.tuples(st.integers(0, 9), st.integers(0, 9)).map(
        lambda counts: Usage(usage=TokenUsage(input_tokens=counts[0], output_tokens=counts[1]))
    ),
    st.tuples(_reasons, st.sampled_from([None, {"blocks": [1, 2]}, {"response": 7, "blocks": [1]}])).map(
        lambda args: Finish(reason=args[0], replay_state=args[1])
    ),
)
_sequences = st.lists(_chunks, max_size=14)


def _assert_dsh_matches_reference(chunks: list[Any]) -> None:
    verdict = reference_invariant(chunks)
    found = check(chunks, "dsh")
    if verdict == CLEAN:
        assert found == [], [str(v) for v in found]
    else:
        assert found, f"the reference fails at {verdict}, dsh found nothing"
        assert found[0].position == verdict, [str(v) for v in found]


def _assert_assembly_matches_reference(chunks: list[Any]) -> None:
    ours, theirs = BlockAssembler(), ReferenceAssembler()
    for chunk in chunks:
        ours.push(chunk)
        theirs.push(chunk)
    assert ours.blocks() == theirs.blocks()
    assert ours.interrupted_blocks() == theirs.interrupted_blocks()
    assert ours.usage == theirs.usage
    assert ours.finish == theirs.finish
    assert ours.replay_state == theirs.replay_state()


@FAST
@given(_sequences)
def test_dsh_fails_exactly_where_the_reference_invariant_fails(chunks: list[Any]) -> None:
    _assert_dsh_matches_reference(chunks)


@FAST
@given(_sequences)
def test_assembler_matches_the_reference_assembler_on_any_sequence(chunks: list[Any]) -> None:
    _assert_assembly_matches_reference(chunks)


@pytest.mark.slow
@THOROUGH
@given(_sequences)
def test_dsh_and_assembly_match_the_reference_thoroughly(chunks: list[Any]) -> None:
    _assert_dsh_matches_reference(chunks)
    _assert_assembly_matches_reference(chunks)


@pytest.mark.parametrize("index", [2**53, 2**63])
def test_dsh_refuses_a_block_index_javascript_cannot_hold_exactly(index: int) -> None:
    chunks = [
        BlockStart(index=index, block_type="text"),
        BlockEnd(index=index, block=TextBlock(text="")),
        Finish(reason=FinishReason(kind="stop")),
    ]
    assert [(v.rule, v.position) for v in check(chunks, "dsh")] == [("index-order", 0)]
    assert reference_invariant(chunks) == 0


def test_interrupted_blocks_trim_whitespace_as_javascript_does() -> None:
    # U+FEFF is whitespace to String.prototype.trim, U+001C and U+0085 are not (str.strip differs).
    assembler = BlockAssembler()
    for index, text in enumerate(["\ufeff \ufeff", "\x1c", "\x85"]):
        assembler.push(TextDelta(index=index, text=text))
    assert [block.text for block in assembler.interrupted_blocks()] == ["\x1c", "\x85"]


def test_the_reference_model_gives_the_verdicts_invariant_ts_gives() -> None:
    # The model is only worth its word if it says what invariant.ts says on streams read by hand.
    seed = [parse_chunk(chunk) for chunk in SEED_CHUNKS]
    start, delta = BlockStart(index=0, block_type="text"), TextDelta(index=0, text="a")
    end = BlockEnd(index=0, block=TextBlock(text="a"))
    stop = Finish(reason=FinishReason(kind="stop"))
    failed = Finish(reason=FinishReason(kind="error", failure=_failure))
    assert reference_invariant(seed) == CLEAN
    assert reference_invariant(seed[:-1]) is None  # no terminal finish
    assert reference_invariant([start, end, delta, stop]) == 2  # a delta after its block-end
    assert reference_invariant([start, end, start, end, stop]) == CLEAN  # reuse after block-end
    assert reference_invariant([start, delta, stop]) == 2  # open block at a stop finish
    assert reference_invariant([start, delta, failed]) == CLEAN  # ... allowed at an error finish
    assert reference_invariant([start, start]) == 1  # repeated block-start
    assert reference_invariant([stop, stop]) == 1  # anything after the finish


# --- the reference's block vocabulary and unknown keys -------------------------------------------

_IMAGE = {
    "type": "image",
    "attachment": {
        "attachmentId": "sha256:0f1e2d",
        "mediaType": "image/png",
        "bytes": 2048,
        "width": 64,
        "height": 48,
        "name": "qr-code.png",
    },
}
_TOOL_RESULT = {"type": "tool-result", "toolCallId": "call-1", "content": [{"type": "text", "text": "ok"}]}

# What invariant.ts accepts although strict does not: a block of the reference's image and tool-result
# types (ContentBlockType), and keys no chunk type has (the validator reads only the fields it needs).
REFERENCE_VOCABULARY: dict[str, list[dict[str, Any]]] = {
    "image block": [
        {"type": "block-start", "index": 0, "blockType": "image"},
        {"type": "block-end", "index": 0, "block": _IMAGE},
        {"type": "finish", "reason": {"kind": "stop"}},
    ],
    "tool-result block": [
        {"type": "block-start", "index": 0, "blockType": "tool-result"},
        {"type": "block-end", "index": 0, "block": _TOOL_RESULT},
        {"type": "finish", "reason": {"kind": "stop"}},
    ],
    "unknown keys at every level": [
        {"type": "block-start", "index": 0, "blockType": "text", "seq": 1},
        {"type": "text-delta", "index": 0, "text": "Hi", "logprob": -0.1},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hi", "cached": True}},
        {"type": "block-start", "index": 1, "blockType": "tool-result"},
        {"type": "block-end", "index": 1, "block": {**_TOOL_RESULT, "content": [{**_IMAGE, "x": 1}], "y": 2}},
        {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 1, "costUsd": 0.1}, "at": 5},
        {
            "type": "finish",
            "reason": {"kind": "error", "failure": {"message": "m", "code": "SERVER", "hint": "h"}, "z": 0},
            "trace": "t",
        },
    ],
}


@pytest.mark.parametrize("name", list(REFERENCE_VOCABULARY))
def test_dsh_passes_what_the_reference_validator_passes_and_strict_flags_it(name: str) -> None:
    chunks = REFERENCE_VOCABULARY[name]
    assert check(chunks, "dsh") == []
    # strict: an image or tool-result block start, an image block-end, an unknown key are not chunks
    assert "schema" in {v.rule for v in check(chunks, "strict")}


def test_a_stream_with_an_image_block_assembles_it_under_dsh() -> None:
    from chunkscope.protocol import ImageBlock, collect

    async def run() -> Any:
        return await collect(REFERENCE_VOCABULARY["image block"], profile="dsh")

    import asyncio

    result = asyncio.run(run())
    assert result.violations == [] and result.ok
    [image] = result.blocks
    assert isinstance(image, ImageBlock) and image.attachment.width == 64
    assert image.to_dict() == _IMAGE


def test_dsh_still_refuses_what_is_not_a_chunk_even_with_unknown_keys_ignored() -> None:
    bad = [
        {"type": "block-start", "index": 0, "blockType": "video", "x": 1},  # no such block type
        {"type": "text-delta", "index": 0, "extra": True},  # no text
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    assert [(v.rule, v.position) for v in check(bad, "dsh")] == [("schema", 0), ("schema", 1)]
