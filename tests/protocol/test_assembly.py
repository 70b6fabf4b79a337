"""``BlockAssembler`` (the reference's assembly rules) and ``collect``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from chunkscope.protocol import (
    AnyBlock,
    BlockAssembler,
    FinishReason,
    LlmError,
    Message,
    ReasoningBlock,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
    collect,
    parse_chunk,
)

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


def assemble(chunks: list[Any]) -> BlockAssembler:
    assembler = BlockAssembler()
    for chunk in chunks:
        assembler.push(chunk)
    return assembler


SEED_BLOCKS: list[AnyBlock] = [
    TextBlock(text="サンプル 教程"),
    ToolCallBlock(id="call-123", name="bash", arguments='{"command":"echo サンプル"}'),
]


def test_seed_example_assembles_to_its_text_and_bash_call() -> None:
    assembler = assemble(SEED_CHUNKS)
    assert assembler.blocks() == SEED_BLOCKS
    assert assembler.usage == TokenUsage(input_tokens=100, output_tokens=50)
    assert assembler.finish == FinishReason(kind="stop")
    assert assembler.message() == Message(role="assistant", content=SEED_BLOCKS)


def test_interleaved_text_reasoning_and_tool_call_deltas() -> None:
    chunks = [
        start(0, "reasoning"),
        reasoning(0, "thinking…"),
        end_text(0, "thinking…", "reasoning"),
        start(1),
        text(1, "Hello"),
        text(1, " world"),
        start(2, "tool-call"),
        tool(2, '{"text":', call_id="call-1", name="echo"),
        tool(2, '"hi"}', call_id="call-1", name=None),
        usage(10, 5),
        finish("tool-calls"),
    ]
    assembler = assemble(chunks)
    assert assembler.blocks() == [
        ReasoningBlock(text="thinking…"),
        TextBlock(text="Hello world"),
        ToolCallBlock(id="call-1", name="echo", arguments='{"text":"hi"}'),
    ]
    assert assembler.finish.kind == "tool-calls"
    assert assembler.message().role == "assistant"


def test_blocks_come_out_in_first_seen_order_not_index_order() -> None:
    assembler = assemble([start(5), text(5, "five"), start(2), text(2, "two")])
    assert assembler.blocks() == [TextBlock(text="five"), TextBlock(text="two")]


def test_a_delta_without_block_start_opens_the_block_implicitly() -> None:
    assembler = assemble([text(0, "implicit")])
    assert assembler.blocks() == [TextBlock(text="implicit")]
    assert assembler.finish == FinishReason(kind="stop")
    assert not assembler.finished
    assert assembler.usage is None


def test_a_repeated_block_start_is_ignored() -> None:
    assembler = assemble([start(0), text(0, "one"), start(0, "reasoning"), text(0, " two")])
    assert assembler.blocks() == [TextBlock(text="one two")]


def test_deltas_after_block_end_are_ignored() -> None:
    assembler = assemble(
        [
            start(0, "tool-call"),
            tool(0, "{}", call_id="c1", name="echo"),
            end_tool(0, "{}", "c1", "echo"),
            tool(0, "oops", call_id="c1", name="evil"),
        ]
    )
    assert assembler.blocks() == [ToolCallBlock(id="c1", name="echo", arguments="{}")]


def test_the_first_block_end_wins_and_is_authoritative() -> None:
    assembler = assemble([start(0), text(0, "streamed"), end_text(0, "final"), end_text(0, "later")])
    assert assembler.blocks() == [TextBlock(text="final")]


def test_a_tool_call_without_id_assembles_as_call_index() -> None:
    assembler = BlockAssembler()
    assembler.push(start(3, "tool-call"))
    assert assembler.blocks() == [ToolCallBlock(id="call-3", name="", arguments="")]


def test_an_empty_name_never_overwrites_an_earlier_one() -> None:
    assembler = assemble([tool(0, '{"a"', name="lookup"), tool(0, ":1}", name=""), tool(0, "", name=None)])
    assert assembler.blocks() == [ToolCallBlock(id="call_1", name="lookup", arguments='{"a":1}')]


def test_a_later_non_empty_name_does_overwrite() -> None:
    assembler = assemble([tool(0, "{}", name="first"), tool(0, "", name="second")])
    assert assembler.blocks()[0].name == "second"  # type: ignore[union-attr]


def test_max_tokens_drops_tool_calls_whose_json_may_be_cut() -> None:
    chunks = [
        *text_block(0, "partial"),
        start(1, "tool-call"),
        tool(1, '{"a": "b'),
        usage(),
        finish("max-tokens"),
    ]
    assembler = assemble(chunks)
    assert assembler.blocks() == [TextBlock(text="partial")]
    assert assembler.message().content == [TextBlock(text="partial")]


def test_interrupted_blocks_keep_only_text_and_reasoning_with_visible_text() -> None:
    chunks = [
        start(0, "reasoning"),
        reasoning(0, "plan"),
        end_text(0, "plan", "reasoning"),
        start(1),
        text(1, "  \n "),
        end_text(1, "  \n "),
        start(2, "tool-call"),
        tool(2, '{"x":'),
        start(3),
        text(3, "half an ans"),
    ]
    assert assemble(chunks).interrupted_blocks() == [
        ReasoningBlock(text="plan"),
        TextBlock(text="half an ans"),
    ]


def test_replay_state_is_pruned_in_step_with_dropped_tool_calls() -> None:
    replay = {"response": {"id": "r1"}, "blocks": [{"n": 0}, {"n": 1}]}
    chunks = [
        *text_block(0, "a"),
        start(1, "tool-call"),
        tool(1, "{"),
        {"type": "finish", "reason": {"kind": "max-tokens"}, "replayState": replay},
    ]
    assert assemble(chunks).replay_state == {"response": {"id": "r1"}, "blocks": [{"n": 0}]}
    misaligned = {"blocks": [{"n": 0}]}
    chunks[-1] = {"type": "finish", "reason": {"kind": "stop"}, "replayState": misaligned}
    assert assemble(chunks).replay_state is None


def test_push_accepts_dicts_and_refuses_what_is_not_a_chunk() -> None:
    from pydantic import ValidationError

    assembler = BlockAssembler()
    assembler.push(text(0, "x"))
    with pytest.raises(ValidationError):
        assembler.push({"type": "bogus"})


# --- collect ---------------------------------------------------------------------


class FakeClock:
    """A clock that advances 0.5 s per reading."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 0.5
        return self.now


async def source(chunks: list[Any], fail: BaseException | None = None) -> AsyncIterator[Any]:
    for chunk in chunks:
        await asyncio.sleep(0)
        yield chunk
    if fail is not None:
        raise fail


async def test_collect_gathers_blocks_usage_finish_and_helpers() -> None:
    result = await collect(source(SEED_CHUNKS))
    assert result.ok
    assert result.blocks == SEED_BLOCKS
    assert result.text == "サンプル 教程"
    assert result.reasoning == ""
    assert result.tool_calls == [SEED_BLOCKS[1]]
    assert result.usage == TokenUsage(input_tokens=100, output_tokens=50)
    assert result.finish == FinishReason(kind="stop")
    assert result.error is None and result.error_code is None
    assert result.violations == []
    assert result.message() == Message(role="assistant", content=SEED_BLOCKS)
    assert result.chunks == [parse_chunk(c) for c in SEED_CHUNKS]  # parsed at the edge


async def test_collect_timings_come_from_the_injected_clock() -> None:
    result = await collect(source(SEED_CHUNKS), clock=FakeClock())
    times = result.timings.chunk_times
    assert times == [0.5 * k for k in range(1, len(SEED_CHUNKS) + 1)]
    assert result.timings.first_chunk_s == 0.5
    assert result.timings.total_s == 0.5 * (len(SEED_CHUNKS) + 1)


def test_timings_of_arrivals_takes_the_first_arrival_and_none_when_nothing_arrived() -> None:
    from chunkscope.protocol import Timings

    some = Timings.of_arrivals([0.25, 0.5], total_s=1.0, started_at=1700000000.0)
    assert (some.first_chunk_s, some.chunk_times, some.total_s, some.started_at) == (
        0.25,
        [0.25, 0.5],
        1.0,
        1700000000.0,
    )
    none = Timings.of_arrivals([], total_s=0.125)
    assert (none.first_chunk_s, none.chunk_times, none.total_s, none.started_at) == (None, [], 0.125, None)


# A stream whose first deltas carry nothing (a keep-alive, an empty tool-call frame), as OpenAI-compatible
# servers send: as in the TypeScript reference (isTokenDelta), none of them is a first token.
EMPTY_FIRST: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "reasoning"},
    {"type": "reasoning-delta", "index": 0, "text": ""},  # 1
    {"type": "reasoning-delta", "index": 0, "text": "Hm"},  # 2: the first content
    {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "Hm"}},
    {"type": "block-start", "index": 1, "blockType": "text"},
    {"type": "text-delta", "index": 1, "text": ""},  # 5
    {"type": "text-delta", "index": 1, "text": "Hi"},  # 6: the first text
    {"type": "block-end", "index": 1, "block": {"type": "text", "text": "Hi"}},
    {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}},
    {"type": "finish", "reason": {"kind": "stop"}},
]


async def test_empty_deltas_are_no_first_token() -> None:
    result = await collect(source(EMPTY_FIRST), clock=FakeClock())
    times = result.timings.chunk_times
    assert (result.timings.first_content_s, result.timings.first_text_s) == (times[2], times[6])
    assert result.timings.first_chunk_s == times[0]  # the first chunk stays the first chunk


def test_a_tool_call_delta_is_a_first_token_by_its_arguments_or_its_name() -> None:
    from chunkscope.protocol import Timings

    empty = {"type": "tool-call-delta", "index": 0, "id": "c1", "argumentsDelta": ""}
    named = {**empty, "name": "read"}
    argued = {**empty, "argumentsDelta": "{"}
    assert not Timings.is_token(empty) and not Timings.is_token(parse_chunk(empty))
    assert Timings.is_token(named) and Timings.is_token(parse_chunk(named))
    assert Timings.is_token(argued) and Timings.is_token(parse_chunk(argued))
    chunks = [{"type": "block-start", "index": 0, "blockType": "tool-call"}, empty, argued]
    timings = Timings.of_arrivals([0.1, 0.2, 0.3], total_s=0.4, chunks=chunks)
    assert (timings.first_content_s, timings.first_text_s) == (0.3, None)


async def test_collect_keeps_partial_output_when_the_stream_raises_an_llm_error() -> None:
    failure = LlmError("upstream closed", "STREAM_CLOSED")
    result = await collect(source([start(0), text(0, "Hel"), text(0, "lo")], fail=failure))
    assert result.error is failure
    assert result.error_code == "STREAM_CLOSED"
    assert result.text == "Hello"
    assert result.finish is None
    assert not result.ok
    assert result.violations == []  # the error explains the missing finish


async def test_collect_wraps_a_foreign_exception_as_unknown_with_its_cause() -> None:
    boom = RuntimeError("adapter bug")
    result = await collect(source([start(0), text(0, "x")], fail=boom))
    assert result.error is not None
    assert result.error.code == "UNKNOWN"
    assert result.error.cause is boom
    assert "RuntimeError: adapter bug" in str(result.error)
    assert result.text == "x"


async def test_collect_lets_cancellation_propagate() -> None:
    async def forever() -> AsyncIterator[Any]:
        yield start(0)
        await asyncio.Event().wait()
        yield text(0, "never")

    task = asyncio.ensure_future(collect(forever()))
    for _ in range(5):  # let collect take the first chunk and block on the second
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_collect_reports_violations_and_keeps_malformed_chunks_in_place() -> None:
    chunks = [*text_block(0, "a"), {"type": "bogus"}, text(0, "late"), finish()]
    result = await collect(chunks)  # a sync iterable is fine too
    assert [(v.rule, v.position) for v in result.violations] == [
        ("schema", 3),
        ("delta-index", 4),
        ("usage-missing", 5),
    ]
    assert result.chunks[3] == {"type": "bogus"}
    assert len(result.timings.chunk_times) == len(result.chunks) == 6
    assert result.text == "a"
    assert not result.ok  # an error-severity violation


async def test_collect_ok_tolerates_warnings_and_error_code_reads_the_failure_finish() -> None:
    result = await collect([*text_block(0, "a"), finish()])
    assert result.ok and [v.severity for v in result.violations] == ["warning"]
    failed = await collect([*text_block(0, "a"), finish("error", "CONTENT_FILTER")])
    assert not failed.ok
    assert failed.error_code == "CONTENT_FILTER"


async def test_collect_under_dsh_accepts_interleaving() -> None:
    chunks = [
        start(0),
        start(1),
        text(0, "a"),
        text(1, "b"),
        end_text(0, "a"),
        end_text(1, "b"),
        usage(),
        finish(),
    ]
    assert (await collect(chunks, profile="dsh")).ok
    assert [v.rule for v in (await collect(chunks)).violations] == ["no-interleave"] * 2


async def test_collect_accepts_models_and_sync_generators() -> None:
    def gen() -> Iterator[Any]:
        yield from (parse_chunk(c) for c in SEED_CHUNKS)

    result = await collect(gen())
    assert result.blocks == SEED_BLOCKS


async def test_stream_result_repr_is_a_plain_summary() -> None:
    result = await collect(SEED_CHUNKS, clock=FakeClock())
    assert repr(result) == (
        "StreamResult(ok=True, finish='stop', blocks=[text: 7 chars, tool-call bash], "
        "usage=(in 100, out 50), violations=0, chunks=9, total=5.000s)"
    )
    failed = await collect(source([text(0, "x")], fail=LlmError("gone", "TRANSPORT")), clock=FakeClock())
    assert "error_code='TRANSPORT'" in repr(failed) and "finish=None" in repr(failed)
