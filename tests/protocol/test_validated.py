"""``validated``: checking a live stream, raising at the offending chunk or collecting."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from chunkscope.protocol import LlmError, TextDelta, parse_chunk, validated

from ._streams import SEED_CHUNKS, end_text, finish, start, text, text_block, usage


async def source(chunks: list[Any], fail: BaseException | None = None) -> AsyncIterator[Any]:
    for chunk in chunks:
        yield chunk
    if fail is not None:
        raise fail


async def drain(stream: Any, into: list[Any]) -> None:
    async for chunk in stream:
        into.append(chunk)


async def test_clean_stream_passes_through_as_typed_chunks() -> None:
    stream = validated(source(SEED_CHUNKS))
    got: list[Any] = []
    await drain(stream, got)
    assert got == [parse_chunk(c) for c in SEED_CHUNKS]
    assert stream.violations == []


async def test_raise_mode_raises_at_the_offending_chunk_after_delivering_the_ones_before() -> None:
    chunks = [*text_block(0, "a"), text(0, "late"), usage(), finish()]
    got: list[Any] = []
    with pytest.raises(LlmError) as caught:
        await drain(validated(source(chunks)), got)
    assert len(got) == 3  # chunks 0..2 delivered, chunk 3 broke delta-index
    error = caught.value
    assert error.code == "PROTOCOL_VIOLATION"
    assert not error.retryable
    assert [(v.rule, v.position) for v in error.violations] == [("delta-index", 3)]
    assert "the stream broke rule delta-index at chunk 3" in str(error)


async def test_raise_mode_closes_the_source_stream() -> None:
    closed = []

    async def tracked() -> AsyncIterator[Any]:
        try:
            for chunk in [start(0), start(0), text(0, "a")]:
                yield chunk
        finally:
            closed.append(True)

    with pytest.raises(LlmError):
        await drain(validated(tracked()), [])
    assert closed == [True]


async def test_warnings_never_raise() -> None:
    chunks = [*text_block(0, "a"), finish()]  # no usage: a warning
    stream = validated(source(chunks))
    got: list[Any] = []
    await drain(stream, got)
    assert len(got) == 4
    assert [v.rule for v in stream.violations] == ["usage-missing"]


async def test_missing_finish_raises_at_the_end_of_the_stream() -> None:
    got: list[Any] = []
    with pytest.raises(LlmError) as caught:
        await drain(validated(source(text_block(0, "a"))), got)
    assert len(got) == 3
    assert [(v.rule, v.position) for v in caught.value.violations] == [("finish-last", None)]
    assert "at the end of the stream" in str(caught.value)


async def test_collect_mode_yields_everything_and_exposes_the_violations() -> None:
    chunks = [
        start(0),
        text(0, "a"),
        start(1),
        end_text(0, "a"),
        end_text(1, ""),
        {"type": "bogus"},
        usage(),
        finish(),
    ]
    stream = validated(source(chunks), on_violation="collect")
    got: list[Any] = []
    await drain(stream, got)
    assert len(got) == 7  # every chunk that parses, as a model; the bogus dict is not passed on
    assert all(not isinstance(c, dict) for c in got)
    assert [(v.rule, v.position) for v in stream.violations] == [("no-interleave", 2), ("schema", 5)]


async def test_dsh_profile_accepts_interleaving() -> None:
    chunks = [start(0), start(1), text(0, "a"), end_text(0, "a"), end_text(1, ""), usage(), finish()]
    got: list[Any] = []
    await drain(validated(source(chunks), profile="dsh"), got)
    assert len(got) == len(chunks)


async def test_sync_iterables_are_accepted() -> None:
    got: list[Any] = []
    await drain(validated(iter(SEED_CHUNKS)), got)
    assert len(got) == len(SEED_CHUNKS)
    assert isinstance(got[1], TextDelta)


async def test_an_exception_from_the_stream_propagates_unchanged_without_a_missing_finish_report() -> None:
    failure = LlmError("connection reset", "TRANSPORT")
    stream = validated(source(text_block(0, "a"), fail=failure))
    got: list[Any] = []
    with pytest.raises(LlmError) as caught:
        await drain(stream, got)
    assert caught.value is failure
    assert len(got) == 3
    assert stream.violations == []


def test_bad_on_violation_is_refused() -> None:
    with pytest.raises(ValueError, match="on_violation"):
        validated(source([]), on_violation="ignore")


async def test_raising_closes_a_sync_generator_source() -> None:
    closed: list[bool] = []

    def chunks() -> Iterator[Any]:
        try:
            yield from [*text_block(0, "a"), text(0, "late"), usage(), finish()]
        finally:
            closed.append(True)

    held = chunks()  # still referenced: only an explicit close() can finish it
    with pytest.raises(LlmError):
        await drain(validated(held), [])
    assert closed == [True]
