"""Valid streams: ``GeneratedStream`` and ``valid_streams``, drawn block by block.

A stream is planned (finish kind, block kinds, which block is left open or
cut), its blocks are built with their deltas split at arbitrary points, the
blocks are laid out (``dsh`` may interleave them), and usage and the finish
are placed. ``_mutations`` breaks such streams one rule at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

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
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
)

from ..protocol import PROFILES
from ._content import arguments, failures, names, split, texts, usages

__all__ = ["ALL_KINDS", "BLOCK_KINDS", "FAILING", "OK_KINDS", "GeneratedStream", "streams", "valid_streams"]

OK_KINDS = ("stop", "tool-calls", "max-tokens")
FAILING = ("error", "aborted")
ALL_KINDS = (*OK_KINDS, *FAILING)
BLOCK_KINDS = ("text", "reasoning", "tool-call")


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


# --- blocks -------------------------------------------------------------------


@dataclass
class _Built:
    """One block's chunk sequence and the block it streams."""

    index: int
    chunks: list[AnyChunk]
    block: AnyBlock
    is_open: bool


def _text_deltas(
    draw: st.DrawFn, index: int, kind: str, *, leave_open: bool
) -> tuple[list[AnyChunk], AnyBlock]:
    text = draw(texts)
    pieces = split(draw, text, allow_none=not leave_open)
    if leave_open and pieces:
        pieces = pieces[: draw(st.integers(0, len(pieces)))]
        text = "".join(pieces)
    delta = TextDelta if kind == "text" else ReasoningDelta
    block: AnyBlock = TextBlock(text=text) if kind == "text" else ReasoningBlock(text=text)
    return [delta(index=index, text=piece) for piece in pieces], block


def _tool_deltas(
    draw: st.DrawFn, index: int, number: int, *, cut: bool, leave_open: bool
) -> tuple[list[AnyChunk], AnyBlock]:
    call_id = f"call_{number}_{draw(st.text('abcxyz0123', max_size=4))}"
    name = draw(names)
    text = draw(arguments())
    if cut:  # cut inside the JSON, as max-tokens or a failure leaves it
        text = text[: draw(st.integers(0, max(0, len(text) - 1)))]
    pieces = split(draw, text)
    if leave_open:
        pieces = pieces[: draw(st.integers(0, len(pieces)))]
        text = "".join(pieces)
    repeat_name = draw(st.booleans())
    deltas: list[AnyChunk] = [
        ToolCallDelta(
            index=index, id=call_id, name=name if k == 0 or repeat_name else None, arguments_delta=piece
        )
        for k, piece in enumerate(pieces)
    ]
    if leave_open and not pieces:  # what an assembler makes of a call that never streamed
        return deltas, ToolCallBlock(id=f"call-{index}", name="", arguments="")
    return deltas, ToolCallBlock(id=call_id, name=name, arguments=text)


def _build_block(
    draw: st.DrawFn, index: int, kind: str, number: int, *, cut: bool, leave_open: bool
) -> _Built:
    chunks: list[AnyChunk] = [BlockStart(index=index, block_type=kind)]  # type: ignore[arg-type]
    if kind in ("text", "reasoning"):
        deltas, block = _text_deltas(draw, index, kind, leave_open=leave_open)
    else:
        deltas, block = _tool_deltas(draw, index, number, cut=cut, leave_open=leave_open)
    chunks.extend(deltas)
    if not leave_open:
        chunks.append(BlockEnd(index=index, block=block))
    return _Built(index, chunks, block, leave_open)


# --- a stream, step by step ---------------------------------------------------


def _plan(
    draw: st.DrawFn,
    finish_kinds: Sequence[str],
    block_kinds: Sequence[str],
    min_blocks: int,
    max_blocks: int,
    need: str | None,
) -> tuple[str, list[str]]:
    """The finish kind and the block kinds (a ``tool-calls`` finish, or ``need``, gets its block)."""
    kind = draw(st.sampled_from(list(finish_kinds)))
    wanted = "tool-call" if kind == "tool-calls" else need
    low = max(min_blocks, 1 if kind == "stop" or wanted else 0)
    count = draw(st.integers(low, max(low, max_blocks)))
    kinds = draw(st.lists(st.sampled_from(list(block_kinds)), min_size=count, max_size=count))
    if wanted is not None and wanted not in kinds:
        kinds[draw(st.integers(0, count - 1))] = wanted
    return kind, kinds


def _open_or_cut(
    draw: st.DrawFn, kind: str, kinds: list[str], need: str | None, *, allow_open: bool, allow_cut: bool
) -> tuple[bool, bool]:
    """Whether the last block is left open (error/aborted) or its JSON cut (a tool call)."""
    count = len(kinds)
    leave_open = allow_open and kind in FAILING and count > 0 and draw(st.booleans())
    cut = (
        allow_cut
        and kind in ("max-tokens", *FAILING)
        and count > 0
        and kinds[-1] == "tool-call"
        and kinds.count("tool-call") > (1 if need == "tool-call" else 0)
        and draw(st.booleans())
    )
    return leave_open, cut


def _indexes(draw: st.DrawFn, profile: str, count: int) -> list[int]:
    if profile == "dsh":  # any distinct indexes
        return draw(st.lists(st.integers(0, 50), min_size=count, max_size=count, unique=True))
    return list(range(count))


def _lay_out(draw: st.DrawFn, profile: str, built: list[_Built]) -> tuple[list[AnyChunk], list[_Built]]:
    """The blocks' chunks in stream order, and the blocks in first-seen order."""
    if profile == "dsh" and len(built) > 1 and draw(st.booleans()):
        return _interleave(draw, built)
    return [chunk for part in built for chunk in part.chunks], built


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


def _place_usage(
    draw: st.DrawFn, sequence: list[AnyChunk], kind: str, profile: str, usage: str
) -> TokenUsage | None:
    """Insert a usage chunk anywhere before the finish: ``always``, ``never`` or ``maybe``."""
    want = usage == "always" or (
        usage == "maybe" and ((kind in OK_KINDS and profile == "strict") or draw(st.booleans()))
    )
    if not want:
        return None
    drawn = draw(usages())
    sequence.insert(draw(st.integers(0, len(sequence))), Usage(usage=drawn))
    return drawn


def _finish(draw: st.DrawFn, kind: str) -> Finish:
    failure = draw(failures()) if kind in FAILING else None
    reason = FinishReason(kind=kind, failure=failure)  # type: ignore[arg-type]
    replay_states = st.fixed_dictionaries({"response": st.fixed_dictionaries({"id": st.text(max_size=8)})})
    return Finish(reason=reason, replay_state=draw(st.none() | replay_states))


@st.composite
def streams(
    draw: st.DrawFn,
    *,
    profile: str = "strict",
    finish_kinds: Sequence[str] = ALL_KINDS,
    block_kinds: Sequence[str] = BLOCK_KINDS,
    min_blocks: int = 0,
    max_blocks: int = 5,
    need: str | None = None,
    usage: str = "maybe",
    allow_open: bool = True,
    allow_cut: bool = True,
) -> GeneratedStream:
    """A valid stream under ``profile``, shaped by the keywords (the mutations' raw material)."""
    kind, kinds = _plan(draw, finish_kinds, block_kinds, min_blocks, max_blocks, need)
    leave_open, cut = _open_or_cut(draw, kind, kinds, need, allow_open=allow_open, allow_cut=allow_cut)
    indexes = _indexes(draw, profile, len(kinds))
    last = len(kinds) - 1
    # Only the last block may be left open or cut.
    built = [
        _build_block(
            draw,
            indexes[k],
            kinds[k],
            k,
            cut=cut and k == last and not leave_open,
            leave_open=leave_open and k == last,
        )
        for k in range(len(kinds))
    ]
    sequence, order = _lay_out(draw, profile, built)
    drawn_usage = _place_usage(draw, sequence, kind, profile, usage)
    finish = _finish(draw, kind)
    sequence.append(finish)
    return GeneratedStream(
        chunks=sequence,
        blocks=[part.block for part in order],
        usage=drawn_usage,
        finish=finish.reason,
        open_indexes=tuple(part.index for part in built if part.is_open),
        profile=profile,
    )


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
    return streams(profile=profile, max_blocks=max_blocks)
