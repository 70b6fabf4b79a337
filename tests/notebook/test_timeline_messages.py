"""What the Timeline sends to the browser: loss-free, frame-rate batched, linear in size, resyncable."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from nb_helpers import (
    BROKEN,
    CLEAN,
    Captured,
    FakeClock,
    delta,
    end,
    paced,
    start,
    stream_of,
    text_stream,
    timeline_with_capture,
)

from chunkscope.notebook import FRAME_INTERVAL, Timeline
from chunkscope.notebook._base import StaticCopyWidget
from chunkscope.notebook.timeline import _widget as widget_module
from chunkscope.notebook.timeline._records import decode_record, expand
from chunkscope.notebook.timeline._view import derive
from chunkscope.protocol import collect
from chunkscope.protocol._chunks import chunk_to_dict
from chunkscope.protocol._errors import LlmError


def reassemble(captured: Captured, run: int = 1) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """Apply the batches of ``run`` as the front end does; fail on any hole."""
    records: list[list[Any]] = []
    violations: list[list[Any]] = []
    batches = [m for m in captured.batches if m["run"] == run]
    assert [m["seq"] for m in batches] == list(range(len(batches))), "seq must count from 0 without holes"
    for m in batches:
        assert m["c0"] == len(records), "each batch starts where the previous one ended"
        assert m["v0"] == len(violations)
        records.extend(m["r"])
        violations.extend(m["v"])
    return [decode_record(r) for r in records], violations


async def test_batches_reassemble_to_exactly_the_chunks_consumed(clock: FakeClock) -> None:
    chunks = CLEAN * 1  # a clean stream of every kind
    timeline, captured = timeline_with_capture(clock)
    result = await timeline.consume(paced(chunks, clock, step=0.004))

    decoded, violations = reassemble(captured)
    assert decoded == [chunk_to_dict(c) for c in chunks]
    assert violations == []
    assert result.ok and result.text == "Hello world"
    assert captured.batches[0].get("start") is True
    assert captured.batches[-1]["end"]["status"] == "done"
    assert sum(1 for m in captured.batches if "end" in m) == 1


async def test_arrival_times_in_the_records_are_the_results_chunk_times(clock: FakeClock) -> None:
    timeline, captured = timeline_with_capture(clock)
    result = await timeline.consume(paced(CLEAN, clock, step=0.0125))
    times = [r[0] for m in captured.batches for r in m["r"]]
    assert times == [pytest.approx(t * 1000) for t in result.timings.chunk_times]
    assert times[0] == pytest.approx(12.5)
    assert times == sorted(times)


async def test_violations_travel_with_the_batch_of_their_chunk(clock: FakeClock) -> None:
    timeline, captured = timeline_with_capture(clock)
    result = await timeline.consume(paced(BROKEN, clock, step=0.1))  # every chunk its own batch
    _, violations = reassemble(captured)
    assert [(v[0], v[1]) for v in violations] == [(v.position, v.rule) for v in result.violations]
    assert {v[1] for v in violations} >= {"no-interleave", "block-pairing"}
    for m in captured.batches:
        for position, *_ in m["v"]:
            assert position is None or m["c0"] <= position < m["c0"] + len(m["r"])


async def test_messages_for_10000_deltas_are_bounded_by_the_frame_rate(clock: FakeClock) -> None:
    chunks = text_stream(10_000)
    timeline, captured = timeline_with_capture(clock)
    await timeline.consume(paced(chunks, clock, step=0.001))  # 10 s of stream at 1 kHz

    duration = clock.now
    bound = duration / FRAME_INTERVAL + 3  # + the start batch, the end batch, rounding
    assert len(captured.messages) <= bound
    assert len(captured.messages) >= duration / FRAME_INTERVAL / 2  # and it did stream, not hold back
    decoded, _ = reassemble(captured)
    assert len(decoded) == len(chunks)


async def test_a_burst_of_chunks_goes_out_in_a_constant_number_of_messages(clock: FakeClock) -> None:
    timeline, captured = timeline_with_capture(clock)
    await timeline.consume(stream_of(text_stream(10_000)))  # the clock never moves
    # the start batch and one end batch (then the final records, in one piece: see below)
    assert [m["type"] for m in captured.messages] == ["batch", "batch", "records"]
    assert len(captured.messages[1]["r"]) == 10_004


async def test_a_long_block_end_reaches_the_page_cut_when_its_deltas_drew_the_block(
    clock: FakeClock, tmp_path: Path
) -> None:
    # a million-delta answer's block-end holds all its text (megabytes the page parsed in one task)
    words = [f"w{i} " for i in range(1_000)]
    text = "".join(words)
    chunks = [
        start(0, "text"),
        *[delta(0, w) for w in words],
        end(0, type="text", text=text),
        start(1, "text"),
        end(1, type="text", text=text),  # no deltas: the page draws this block from its block-end
    ]
    timeline, captured = timeline_with_capture(clock)
    await timeline.consume(stream_of(chunks))
    wire = [r for m in captured.batches for r in m["wire"]]
    cut, whole = (r for r in wire if r[1] == "x" and r[2]["type"] == "block-end")
    assert cut[2]["block"]["text"] == text[:2_000] and cut[3] == len(text) - 2_000
    assert len(whole) == 3 and whole[2]["block"]["text"] == text
    # the same picture on the page; the kernel's state and static copy keep the whole chunk
    page = derive({"records": expand(wire), "status": "done"})
    assert [seg.text for seg in page.segments] == [text, text]
    assert timeline.state()["records"][1_001][2]["block"]["text"] == text
    assert text in timeline.to_html(tmp_path / "timeline.html").read_text("utf-8")


async def test_a_burst_of_deltas_travels_as_one_record_per_block_with_its_exact_text(
    clock: FakeClock,
) -> None:
    timeline, captured = timeline_with_capture(clock)
    chunks = [
        start(0, "reasoning"),
        *[delta(0, f"r{i} ", "reasoning") for i in range(5_000)],
        end(0, type="reasoning", text=""),
        start(1, "text"),
        *[delta(1, f"ü{i}\n") for i in range(5_000)],
        end(1, type="text", text=""),
    ]
    await timeline.consume(stream_of(chunks))
    wire = captured.messages[1]["wire"]
    # what goes to the page grows with the blocks on screen, not with the 10,000 deltas
    assert [r[1] for r in wire] == ["x", "R", "x", "x", "T", "x"]
    assert "".join(wire[4][3]) == "".join(f"ü{i}\n" for i in range(5_000))
    decoded, _ = reassemble(captured)
    assert decoded[1:5_001] == chunks[1:5_001] and decoded[5_003:10_003] == chunks[5_003:10_003]


async def test_a_backlog_goes_out_in_pieces_the_page_parses_quickly_and_long_states_save_coalesced(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(widget_module, "_RECORDS_PIECE", 100_000)  # 1 MiB in use: a 40k stream is smaller
    timeline, captured = timeline_with_capture(clock)
    chunks = text_stream(40_000)
    await timeline.consume(stream_of(chunks))  # the clock never moves: one backlog at the end
    batches = captured.batches
    assert all(len(m["r"]) <= 16_384 for m in batches) and len(batches) >= 4
    decoded, _ = reassemble(captured)
    assert len(decoded) == len(chunks) and sum(1 for m in batches if "end" in m) == 1
    synced = timeline.get_state()
    saved = json.loads(synced["_state"])
    # the records of a long stream travel as a binary buffer, its deltas coalesced
    assert saved["records"] == [] and saved["recordsInBuffer"] is True
    saved["records"] = json.loads(bytes(synced["_state_records"]).decode("utf-8"))
    assert len(saved["records"]) < 10  # one run record for the 40,000 deltas
    assert derive(saved).segments[0].text == derive(timeline.state()).segments[0].text
    assert derive(saved).deltas == 40_000
    # those records reached the page before `_state` said so, in pieces it receives in a short task each
    pieces = [m for m in captured.messages if m["type"] == "records"]
    assert len(pieces) >= 3 and [m["part"] for m in pieces] == list(range(pieces[0]["parts"]))
    assert b"".join(captured.buffers[captured.messages.index(m)] for m in pieces) == synced["_state_records"]
    assert all(len(captured.buffers[captured.messages.index(m)]) <= 100_000 for m in pieces)
    # ... and the trait's own sync (one message of all of it) is left out; a page asking for all gets it
    sent_states: list[Any] = []
    monkeypatch.setattr(StaticCopyWidget, "send_state", lambda self, key=None: sent_states.append(key))
    timeline.send_state({"_state", "_state_records"})
    timeline.send_state()
    assert sent_states == [["_state"], None]


async def test_a_slow_stream_sends_each_chunk_without_waiting_for_the_next(clock: FakeClock) -> None:
    timeline, captured = timeline_with_capture(clock)
    await timeline.consume(paced(CLEAN, clock, step=0.5))
    assert [len(m["r"]) for m in captured.batches[1:-1]] == [1] * len(CLEAN)


async def test_records_before_a_pause_are_sent_within_a_frame() -> None:
    # Real time is the point here: a timer, not the next chunk, must flush the batch.
    captured = Captured()
    timeline = Timeline(interval=0.01)
    timeline.send = captured  # type: ignore[method-assign]
    seen_before_resume: list[int] = []

    async def pausing() -> Any:
        yield start(0, "text")
        yield delta(0, "before the pause")
        await asyncio.sleep(0.2)
        seen_before_resume.append(sum(len(m["r"]) for m in captured.batches))
        yield delta(0, " after")

    await timeline.consume(pausing())
    assert seen_before_resume == [2]


async def test_bytes_sent_grow_linearly_with_the_stream() -> None:
    sizes = {}
    for n in (10_000, 20_000):
        clock = FakeClock()
        timeline, captured = timeline_with_capture(clock)
        await timeline.consume(paced(text_stream(n, piece="token "), clock, step=0.002))
        sizes[n] = captured.total_bytes
    ratio = sizes[20_000] / sizes[10_000]
    assert 1.9 <= ratio <= 2.1, sizes
    assert sizes[10_000] < 10_000 * 60  # a delta costs tens of bytes, never the accumulated text


async def test_resync_answers_a_gap_with_everything_from_the_missing_batch(clock: FakeClock) -> None:
    timeline, captured = timeline_with_capture(clock)
    chunks = text_stream(300)
    await timeline.consume(paced(chunks, clock, step=0.01))
    batches = list(captured.batches)
    assert len(batches) > 10

    # the front end got batches 0..4, lost 5, and asks from 5
    timeline._on_front_end_msg(timeline, {"type": "resync", "from": 5, "run": 1}, [])
    reply = captured.messages[-1]
    assert reply["type"] == "resync"
    assert reply["seq"] == batches[-1]["seq"]
    assert reply["c0"] == batches[5]["c0"]
    assert reply["end"]["status"] == "done"
    received = [r for m in batches[:5] for r in m["r"]] + reply["r"]
    assert [decode_record(r) for r in received] == [chunk_to_dict(c) for c in chunks]


async def test_resync_for_another_run_sends_the_current_run_from_its_start(clock: FakeClock) -> None:
    timeline, captured = timeline_with_capture(clock)
    await timeline.consume(paced(CLEAN, clock, step=0.01))
    await timeline.consume(paced(BROKEN, clock, step=0.01))
    timeline._on_front_end_msg(timeline, {"type": "resync", "from": 7, "run": 1}, [])
    reply = captured.messages[-1]
    assert (reply["run"], reply["c0"]) == (2, 0)
    assert [decode_record(r) for r in reply["r"]] == [chunk_to_dict(c) for c in BROKEN]


async def test_resync_while_streaming_sends_what_was_sent_and_keeps_seq_contiguous(clock: FakeClock) -> None:
    timeline, captured = timeline_with_capture(clock)
    chunks = text_stream(200)

    async def with_a_resync_midway() -> Any:
        for n, chunk in enumerate(chunks):
            clock.advance(0.01)
            if n == 100:
                timeline._on_front_end_msg(timeline, {"type": "resync", "from": 0, "run": 1}, [])
            yield chunk

    await timeline.consume(with_a_resync_midway())
    reply = next(m for m in captured.messages if m["type"] == "resync")
    assert "end" not in reply
    before = captured.messages[: captured.messages.index(reply)]
    sent_before = sum(len(m["r"]) for m in before if m["type"] == "batch")
    assert len(reply["r"]) == sent_before
    decoded, _ = reassemble(captured)  # asserts seq contiguity of the batches around it
    assert len(decoded) == len(chunks)


async def test_a_second_run_restarts_seq_under_a_new_run_number(clock: FakeClock) -> None:
    timeline, captured = timeline_with_capture(clock)
    await timeline.consume(paced(CLEAN, clock, step=0.01))
    await timeline.consume(paced(BROKEN, clock, step=0.01))
    assert reassemble(captured, run=2)[0] == [chunk_to_dict(c) for c in BROKEN]
    assert timeline.state()["run"] == 2
    assert len(timeline.state()["records"]) == len(BROKEN)


async def test_the_result_equals_what_collect_returns() -> None:
    for chunks in (CLEAN, BROKEN, text_stream(50)):
        timeline, _ = timeline_with_capture(FakeClock())
        shown = await timeline.consume(stream_of(chunks))
        collected = await collect(stream_of(chunks))
        assert shown.blocks == collected.blocks
        assert shown.usage == collected.usage
        assert shown.finish == collected.finish
        assert [(v.rule, v.position) for v in shown.violations] == [
            (v.rule, v.position) for v in collected.violations
        ]
        assert shown.chunks == collected.chunks
        assert len(shown.timings.chunk_times) == len(chunks)


async def test_a_sync_iterable_of_models_is_consumed_too(clock: FakeClock) -> None:
    from chunkscope.protocol._chunks import parse_chunk

    models = [parse_chunk(c) for c in CLEAN]
    timeline, captured = timeline_with_capture(clock)
    result = await timeline.consume(models)
    assert result.ok
    assert reassemble(captured)[0] == [chunk_to_dict(c) for c in CLEAN]


async def test_inputs_that_are_no_chunk_are_kept_as_schema_violations(clock: FakeClock) -> None:
    bad = {"type": "text-delta", "index": "zero", "text": 5}
    chunks = [start(0, "text"), bad, "not a chunk", object(), *text_stream(1)[1:]]
    timeline, captured = timeline_with_capture(clock)
    result = await timeline.consume(stream_of(chunks))
    records = [r for m in captured.batches for r in m["r"]]
    assert [r[1] for r in records[1:4]] == ["?", "?", "?"]
    assert records[1][2] == bad and records[2][2] == "not a chunk"
    assert records[3][2].startswith("<object object")  # not JSON: kept as its repr
    assert {v.position for v in result.violations if v.rule == "schema"} == {1, 2, 3}
    assert result.chunks[1] == bad
    assert timeline.state()["status"] == "done"


async def test_an_llm_error_from_the_stream_is_kept_with_the_partial_output(clock: FakeClock) -> None:
    error = LlmError("peer closed connection", "TRANSPORT", status=502, request_id="req-9")

    async def failing() -> Any:
        yield start(0, "text")
        yield delta(0, "partial ")
        raise error

    timeline, captured = timeline_with_capture(clock)
    result = await timeline.consume(failing())  # not re-raised
    assert result.error is error
    assert result.text == "partial "
    end = captured.batches[-1]["end"]
    assert end["status"] == "error"
    facts = (end["error"]["code"], end["error"]["status"], end["error"]["requestId"])
    assert facts == ("TRANSPORT", 502, "req-9")
    assert timeline.state()["status"] == "error"
    assert len(timeline.state()["records"]) == 2


async def test_a_foreign_exception_becomes_unknown_with_its_cause(clock: FakeClock) -> None:
    async def failing() -> Any:
        yield start(0, "text")
        raise ValueError("adapter bug")

    timeline, _ = timeline_with_capture(clock)
    result = await timeline.consume(failing())
    assert result.error is not None and result.error.code == "UNKNOWN"
    assert isinstance(result.error.cause, ValueError)
    assert timeline.state()["error"]["causes"] == ["ValueError: adapter bug"]


async def test_cancellation_propagates_and_the_timeline_is_finalised(clock: FakeClock) -> None:
    gate = asyncio.Event()

    async def endless() -> Any:
        yield start(0, "text")
        yield delta(0, "so far")
        gate.set()
        await asyncio.Event().wait()
        yield delta(0, "never")

    timeline, captured = timeline_with_capture(clock)
    task = asyncio.ensure_future(timeline.consume(endless()))
    await gate.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    state = timeline.state()
    assert state["status"] == "error"
    assert state["error"]["code"] == "ABORTED"
    assert len(state["records"]) == 2
    assert captured.batches[-1]["end"]["status"] == "error"
    assert reassemble(captured)[0] == [start(0, "text"), delta(0, "so far")]


async def test_one_timeline_consumes_one_stream_at_a_time(clock: FakeClock) -> None:
    timeline, _ = timeline_with_capture(clock)
    gate = asyncio.Event()

    async def waiting() -> Any:
        yield start(0, "text")
        await gate.wait()

    first = asyncio.ensure_future(timeline.consume(waiting()))
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="already consuming"):
        await timeline.consume(stream_of(CLEAN))
    gate.set()
    await first
    assert (await timeline.consume(stream_of(CLEAN))).ok  # free again once the first run ended


async def test_a_batch_with_a_lone_surrogate_in_model_text_still_goes_out(clock: FakeClock) -> None:
    timeline, captured = timeline_with_capture(clock)
    await timeline.consume(paced([start(0, "text"), delta(0, "bad \ud800 half"), end(0, type="text")], clock))
    records = [r for m in captured.batches for r in m["r"]]
    assert [r[3] for r in records if r[1] == "t"] == ["bad \ud800 half"]
