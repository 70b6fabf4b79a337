"""``StreamInspector``: checking and assembling in one pass agrees with doing each apart."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from pydantic import ValidationError

from chunkscope.protocol import (
    BlockAssembler,
    Checker,
    StreamInspector,
    TextDelta,
    check,
    collect,
    parse_chunk,
)
from chunkscope.testing import GeneratedStream, invalid_streams, valid_streams

from ._streams import SEED_CHUNKS

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _apart(chunks: list[Any], profile: str) -> tuple[list[Any], list[Any]]:
    checker = Checker(profile)
    assembler = BlockAssembler()
    found: list[Any] = []
    for chunk in chunks:
        found.extend(checker.feed(chunk))
        # a chunk that is no chunk: the checker reports it, the assembler skips it
        with contextlib.suppress(ValidationError):
            assembler.push(chunk)
    found.extend(checker.close())
    return found, assembler.blocks()


def _inspected(chunks: list[Any], profile: str) -> tuple[list[Any], list[Any]]:
    inspector = StreamInspector(profile)
    for chunk in chunks:
        inspector.add(chunk)
    result = inspector.result()
    return result.violations, result.blocks


@FAST
@given(valid_streams("dsh"))
def test_inspector_agrees_with_checker_and_assembler_on_valid_streams(stream: GeneratedStream) -> None:
    for profile in ("strict", "dsh"):
        assert _inspected(stream.chunks, profile) == _apart(stream.chunks, profile)


@FAST
@given(invalid_streams("strict"))
def test_inspector_agrees_with_checker_and_assembler_on_broken_streams(case: tuple[list[Any], str]) -> None:
    chunks, _rule = case
    assert _inspected(chunks, "strict") == _apart(chunks, "strict")
    assert _inspected(chunks, "strict")[0] == check(chunks)


def test_inspector_shows_each_chunks_violations_as_it_is_added() -> None:
    inspector = StreamInspector()
    inspector.add({"type": "text-delta", "index": 0, "text": "orphan"})
    assert [v.rule for v in inspector.violations] == ["delta-index"]
    assert isinstance(inspector.chunks[0], TextDelta)  # dicts are kept parsed
    inspector.add({"type": "nonsense"})
    assert [v.rule for v in inspector.violations] == ["delta-index", "schema"]
    assert inspector.chunks[1] == {"type": "nonsense"}  # kept as it came, so positions index chunks
    assert inspector.position == 2 and not inspector.finished


def test_inspector_result_runs_end_of_stream_rules_once_and_only_without_an_error() -> None:
    from chunkscope.protocol import LlmError

    chunks = [parse_chunk(c) for c in SEED_CHUNKS[:3]]
    failed = StreamInspector()
    for chunk in chunks:
        failed.add(chunk)
    assert failed.result(LlmError("boom", "TRANSPORT")).violations == []

    ended = StreamInspector()
    for chunk in chunks:
        ended.add(chunk)
    first = ended.result()
    assert [v.rule for v in first.violations] == ["finish-last"]
    assert [v.rule for v in ended.result().violations] == ["finish-last"]


async def test_collect_is_the_inspector_plus_timings() -> None:
    inspector = StreamInspector()
    for chunk in SEED_CHUNKS:
        inspector.add(chunk)
    alone = inspector.result()
    collected = await collect(SEED_CHUNKS)
    assert (collected.chunks, collected.blocks, collected.violations, collected.usage, collected.finish) == (
        alone.chunks,
        alone.blocks,
        alone.violations,
        alone.usage,
        alone.finish,
    )
    assert len(collected.timings.chunk_times) == len(SEED_CHUNKS)


@FAST
@given(valid_streams("dsh"))
def test_inspector_blocks_agree_with_the_assembler_after_every_chunk(stream: GeneratedStream) -> None:
    # The fused path hands a run of deltas over lazily: a live view reading blocks() mid-run sees it all.
    inspector = StreamInspector("strict")
    assembler = BlockAssembler()
    for chunk in stream.chunks:
        inspector.add(chunk)
        assembler.push(chunk)
        assert inspector.blocks() == assembler.blocks()
    assert inspector.result().blocks == assembler.blocks()


def test_a_tool_call_that_changes_its_id_and_back_assembles_under_the_last_id() -> None:
    chunks = [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": "A", "name": "f", "argumentsDelta": "{"},
        {"type": "tool-call-delta", "index": 0, "id": "B", "argumentsDelta": ""},
        {"type": "tool-call-delta", "index": 0, "id": "A", "argumentsDelta": "}"},
        {"type": "tool-call-delta", "index": 0, "id": "A", "name": "g", "argumentsDelta": ""},
    ]
    assert _inspected(chunks, "strict") == _apart(chunks, "strict")
    assert _inspected(chunks, "dsh") == _apart(chunks, "dsh")


def _windowed(chunks: list[Any], profile: str, keep: int) -> tuple[Any, Any]:
    """The result of ``chunks`` inspected with all but the latest ``keep`` dropped after each one."""
    inspector = StreamInspector(profile)
    for chunk in chunks:
        inspector.add(chunk)
        inspector.trim(inspector.position - inspector.dropped - keep)
    return inspector.result(), inspector


@FAST
@given(invalid_streams("strict"))
def test_a_windowed_inspector_drops_the_oldest_chunks_and_finds_the_same(case: tuple[list[Any], str]) -> None:
    chunks, _rule = case
    for keep in (0, 1, 3):
        windowed, inspector = _windowed(chunks, "strict", keep)
        whole = StreamInspector("strict")
        for chunk in chunks:
            whole.add(chunk)
        expected = whole.result()
        assert windowed.violations == expected.violations == check(chunks)  # positions in the whole stream
        assert (windowed.blocks, windowed.usage, windowed.finish) == (
            expected.blocks,
            expected.usage,
            expected.finish,
        )
        kept = min(keep, len(chunks))
        assert windowed.chunks == expected.chunks[len(chunks) - kept :]
        assert windowed.chunks_dropped == inspector.dropped == len(chunks) - kept
        assert windowed.chunk_count == inspector.position == len(chunks)


def test_a_windowed_text_block_is_joined_and_checked_whole() -> None:
    pieces = [TextDelta(index=0, text=f"{n} ") for n in range(10_000)]
    said = {
        "type": "block-end",
        "index": 0,
        "block": {"type": "text", "text": "".join(p.text for p in pieces)},
    }
    for end in (said, {**said, "block": {"type": "text", "text": "x"}}):
        inspector = StreamInspector()
        inspector.add({"type": "block-start", "index": 0, "blockType": "text"})
        for n, piece in enumerate(pieces):
            inspector.add(piece)
            if n % 1000 == 999:
                inspector.trim(inspector.position - inspector.dropped - 10)
        text = "".join(getattr(block, "text", "") for block in inspector.blocks())  # read while open
        inspector.add(end)
        result = inspector.result()
        assert text == "".join(f"{n} " for n in range(10_000))
        # block-end-match compares the whole text the deltas built, dropped ones included
        mismatch = ["block-end-match"] if end is not said else []
        assert [v.rule for v in result.violations] == [*mismatch, "finish-last"]
        assert len(result.chunks) == 11 and result.chunks_dropped == 10_000 - 9
