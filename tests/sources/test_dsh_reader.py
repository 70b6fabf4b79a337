"""read_dsh_session: DeepSeek Harness session logs → attempts, StreamResults (checked under dsh)."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope.protocol import (
    BlockStart,
    Finish,
    ReasoningBlock,
    ReasoningDelta,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    check,
    parse_message,
)
from chunkscope.sources.dsh import DshLogError, DshLogWriter, read_dsh_session
from chunkscope.usage import session_frame
from dsh_examples import (
    EXAMPLE_5A,
    EXAMPLE_5B_AND_RETRY,
    FAILED_STREAM,
    REASONING_STREAM,
    TOOL_STREAM,
    write,
    write_session,
)

# --- the format description's examples ----------------------------------------------------


def test_example_5a_reads_into_one_checked_step_with_usage_and_times(tmp_path: Path) -> None:
    session = read_dsh_session(write(tmp_path / "session.jsonl", EXAMPLE_5A))

    assert session.id == "sess-123"
    assert session.header["cwd"] == "/home/dev/demo"
    assert len(session.steps) == 1 and session.problems == []
    (attempt,) = session.attempts
    assert (attempt.turn, attempt.step, attempt.attempt, attempt.final) == (1, 1, 1, True)
    assert (attempt.provider, attempt.model) == ("deepseek-official", "deepseek-v4-flash")
    assert not attempt.synthesized and not attempt.usage_from_message
    result = attempt.result
    assert result.profile == "dsh" and result.violations == [] and result.ok
    assert [type(c).__name__ for c in result.chunks] == [
        "BlockStart",
        "ReasoningDelta",
        "ReasoningDelta",
        "ReasoningDelta",
        "BlockStart",
        "TextDelta",
        "TextDelta",
        "BlockEnd",
        "BlockEnd",
        "Usage",
        "Finish",
    ]
    assert [c.text for c in result.chunks[1:4]] == ["The", " user", " greets."]  # token boundaries kept
    assert result.blocks == [ReasoningBlock(text="The user greets."), TextBlock(text="Hi!")]
    assert result.usage == TokenUsage(
        input_tokens=120, output_tokens=9, cache_read_tokens=7680, reasoning_tokens=4
    )
    assert result.finish is not None and result.finish.kind == "stop"
    # The attempt starts at step/start (…002); packed members at time0 + the dt gaps.
    assert attempt.started_ms == 1784973850002
    assert result.timings.first_chunk_s == pytest.approx(0.198)
    assert result.timings.chunk_times[1:4] == pytest.approx([0.211, 0.224, 0.237])
    assert result.timings.total_s == pytest.approx(0.328)
    assert session.results == [result]
    assert session.turn_ends == {1: {"kind": "completed"}}


def test_example_5b_failed_attempt_and_its_retry_are_two_attempts_of_one_step(tmp_path: Path) -> None:
    session = read_dsh_session(write(tmp_path / "session.jsonl", EXAMPLE_5A + EXAMPLE_5B_AND_RETRY))

    assert [(s.turn, s.step, len(s.attempts)) for s in session.steps] == [(1, 1, 1), (2, 1, 2)]
    failed, retried = session.steps[1].attempts
    assert failed.call_id == retried.call_id == "sess-123:2:1"
    assert (failed.attempt, failed.final, retried.attempt, retried.final) == (1, False, 2, True)
    assert failed.retry is not None and failed.retry["delayMs"] == 512.3 and failed.retry["retry"] == 1
    assert failed.result.error_code == "TRANSPORT" and failed.result.usage is None
    assert failed.result.blocks == [TextBlock(text="par")]  # the open block, as far as it got
    assert failed.result.violations == []  # an open block at an error finish is fine under dsh
    assert not failed.synthesized
    assert retried.started_ms == 1784973855534  # llm/retry-started
    assert retried.result.ok and retried.result.text == "partial ok"
    assert retried.result.usage == TokenUsage(input_tokens=30, output_tokens=3)
    assert retried.result.timings.first_chunk_s == pytest.approx(0.066)
    assert session.steps[1].result is retried.result and session.steps[1].retries == 1


# --- written by the writer: packed / unpacked, plain / zstd ------------------------------------


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "unpacked"])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "zstd"])
def test_session_with_failed_attempt_and_retry_reads_the_same_in_every_layout(
    tmp_path: Path, packed: bool, compress: bool
) -> None:
    path = write_session(
        tmp_path / ("session.jsonl.zstd" if compress else "session.jsonl"), packed=packed, compress=compress
    )
    if compress:
        assert path.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    elif packed:
        kinds = [json.loads(line)["type"] for line in path.read_text().splitlines()]
        assert {"reasoning-chunks", "tool-call-chunks", "text-chunks"} <= set(kinds)

    session = read_dsh_session(path)

    rows = [
        (
            a.call_id,
            a.attempt,
            a.final,
            a.provider,
            a.model,
            a.result.finish.kind if a.result.finish else None,
            a.result.error_code,
        )
        for a in session.attempts
    ]
    assert rows == [
        ("sess-1:1:1", 1, True, "deepseek-official", "deepseek-v4-flash", "stop", None),
        ("sess-1:2:1", 1, False, "deepseek-official", "deepseek-v4-pro", "error", "SERVER"),
        ("sess-1:2:1", 2, True, "deepseek-official", "deepseek-v4-pro", "tool-calls", None),
        ("sess-1:2:2", 1, True, "deepseek-official", "deepseek-v4-pro", "stop", None),
    ]
    first, failed, tool, last = session.attempts
    assert [c.to_dict() for c in last.result.chunks] == REASONING_STREAM
    assert [c.to_dict() for c in first.result.chunks] == REASONING_STREAM
    assert [c.to_dict() for c in failed.result.chunks] == FAILED_STREAM
    assert [c.to_dict() for c in tool.result.chunks] == TOOL_STREAM
    assert isinstance(tool.result.chunks[1], ToolCallDelta)
    assert tool.result.tool_calls[0].arguments == '{"path":"a.txt"}'
    assert tool.result.usage == TokenUsage(input_tokens=50, output_tokens=12, cache_write_tokens=64)
    assert (
        failed.result.text == "abcd"
        and failed.retry is not None
        and failed.retry["failure"]["code"] == "SERVER"
    )
    for attempt in session.attempts:
        assert attempt.result.violations == []
        assert check(attempt.result.chunks, "dsh") == []
    # Times: 13 ms per event, the retry waits 512 ms.
    assert first.result.timings.chunk_times == pytest.approx([0.039 + 0.013 * k for k in range(11)])
    assert (
        tool.started_ms is not None
        and failed.ended_ms is not None
        and tool.started_ms - failed.ended_ms > 512
    )


def test_zstd_and_plain_give_identical_results(tmp_path: Path) -> None:
    plain = read_dsh_session(write_session(tmp_path / "session.jsonl"))
    packed = read_dsh_session(write_session(tmp_path / "session.jsonl.zstd", compress=True))
    assert [a.result.chunks for a in plain.attempts] == [a.result.chunks for a in packed.attempts]
    assert [a.result.timings for a in plain.attempts] == [a.result.timings for a in packed.attempts]


def test_log_without_seq_or_time_has_no_timings_but_the_same_chunks(tmp_path: Path) -> None:
    timed = read_dsh_session(write_session(tmp_path / "a.jsonl"))
    untimed = read_dsh_session(write_session(tmp_path / "b.jsonl", timed=False))
    assert [a.result.chunks for a in untimed.attempts] == [a.result.chunks for a in timed.attempts]
    for attempt in untimed.attempts:
        assert attempt.started_ms is None
        assert attempt.result.timings.first_chunk_s is None and attempt.result.timings.chunk_times == []


# --- hostile input ------------------------------------------------------------------------------


def test_malformed_line_raises_with_its_line_number_and_keeps_the_steps_before(tmp_path: Path) -> None:
    lines = EXAMPLE_5A.splitlines()
    path = write(
        tmp_path / "session.jsonl",
        "\n".join([*lines, '{"type":"turn/start","seq":19,', *EXAMPLE_5B_AND_RETRY.splitlines()]) + "\n",
    )

    with pytest.raises(DshLogError) as caught:
        read_dsh_session(path)

    error = caught.value
    assert (error.line, error.code, error.path) == (len(lines) + 1, "json", str(path))
    assert f"line {len(lines) + 1}" in str(error) and "not valid JSON" in str(error)
    assert error.session is not None and len(error.session.steps) == 1
    assert error.session.steps[0].result.text == "Hi!"

    lenient = read_dsh_session(path, strict=False)
    assert [(p.line, p.code) for p in lenient.problems] == [(len(lines) + 1, "json")]
    assert [len(s.attempts) for s in lenient.steps] == [1, 2]  # reading went on past the bad line


def test_a_step_cut_by_a_malformed_line_ends_with_a_synthesized_aborted_finish(tmp_path: Path) -> None:
    lines = EXAMPLE_5A.splitlines()
    path = write(tmp_path / "session.jsonl", "\n".join([*lines[:10], "[1, 2", *lines[10:]]) + "\n")
    with pytest.raises(DshLogError) as caught:
        read_dsh_session(path)
    (attempt,) = caught.value.session.attempts  # type: ignore[union-attr]
    assert attempt.synthesized
    assert attempt.result.finish is not None and attempt.result.finish.kind == "aborted"
    assert attempt.result.violations == []
    assert attempt.result.reasoning == "The user greets."


def test_invalid_utf8_is_an_error_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(EXAMPLE_5A.encode() + b'{"type":"turn/start","data":{"turn":"\xff\xfe"}}\n')
    with pytest.raises(DshLogError) as caught:
        read_dsh_session(path)
    assert (caught.value.line, caught.value.code) == (EXAMPLE_5A.count("\n") + 1, "utf8")
    assert len(caught.value.session.steps) == 1  # type: ignore[union-attr]


def test_over_long_line_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    huge = json.dumps({"type": "tool/result", "seq": 19, "time": 1, "data": {"text": "x" * 200_000}})
    path = write(tmp_path / "session.jsonl", EXAMPLE_5A + huge + "\n" + EXAMPLE_5B_AND_RETRY)
    with pytest.raises(DshLogError) as caught:
        read_dsh_session(path, max_line_bytes=4096)
    assert (caught.value.line, caught.value.code) == (EXAMPLE_5A.count("\n") + 1, "line-too-long")

    lenient = read_dsh_session(path, max_line_bytes=4096, strict=False)
    assert [p.code for p in lenient.problems] == ["line-too-long"]
    assert len(lenient.steps) == 2 and lenient.steps[1].result.text == "partial ok"


def test_deeply_nested_json_is_an_error_not_a_recursion_error(tmp_path: Path) -> None:
    deep = '{"type":"x","data":' + "[" * 100_000 + "]" * 100_000 + "}"
    path = write(tmp_path / "session.jsonl", EXAMPLE_5A + deep + "\n")
    with pytest.raises(DshLogError) as caught:
        read_dsh_session(path)
    assert (caught.value.line, caught.value.code) == (EXAMPLE_5A.count("\n") + 1, "too-deep")


def test_kept_values_nesting_past_the_limit_are_refused(tmp_path: Path) -> None:
    state: Any = 1
    for _ in range(200):
        state = [state]
    finish = {
        "type": "assistant/chunk",
        "data": {
            "turn": 3,
            "step": 1,
            "chunk": {"type": "finish", "reason": {"kind": "stop"}, "replayState": state},
        },
    }
    path = write(tmp_path / "session.jsonl", EXAMPLE_5A + json.dumps(finish) + "\n")
    with pytest.raises(DshLogError) as caught:
        read_dsh_session(path)
    assert caught.value.code == "too-deep" and caught.value.line == EXAMPLE_5A.count("\n") + 1


def test_truncated_zstd_is_a_clear_error_keeping_the_complete_lines(tmp_path: Path) -> None:
    path = write_session(tmp_path / "session.jsonl.zstd", compress=True)
    data = path.read_bytes()
    cut = tmp_path / "cut.jsonl.zstd"
    cut.write_bytes(data[: len(data) - 40])

    with pytest.raises(DshLogError) as caught:
        read_dsh_session(cut)
    assert caught.value.code == "truncated" and "truncated" in str(caught.value)
    partial = caught.value.session
    assert partial is not None and len(partial.steps) >= 2
    assert partial.steps[0].result.text == "Hi!"

    lenient = read_dsh_session(cut, strict=False)
    assert [p.code for p in lenient.problems] == ["truncated"]


def test_corrupt_zstd_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl.zstd"
    good = zstandard.ZstdCompressor(write_checksum=True).compress(EXAMPLE_5A.encode())
    path.write_bytes(good + b"this is not a zstd frame")
    with pytest.raises(DshLogError) as caught:
        read_dsh_session(path)
    assert caught.value.code == "zstd"
    assert len(caught.value.session.steps) == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("first_line", "code"),
    [
        ('{"type":"session","version":1,"id":"s","createdAt":0}', "version"),
        ('{"type":"text-delta","index":0,"text":"hi"}', "header"),
    ],
)
def test_header_must_be_a_version_0_session_header(tmp_path: Path, first_line: str, code: str) -> None:
    with pytest.raises(DshLogError) as caught:
        read_dsh_session(write(tmp_path / "session.jsonl", first_line + "\n"))
    assert (caught.value.line, caught.value.code) == (1, code)


def test_header_without_version_or_delegation_depth_is_accepted(tmp_path: Path) -> None:
    lines = EXAMPLE_5A.splitlines()
    session = read_dsh_session(
        write(tmp_path / "s.jsonl", "\n".join(['{"type":"session","id":"old"}', *lines[1:]]) + "\n")
    )
    assert session.id == "old" and len(session.steps) == 1


@pytest.mark.parametrize(
    "row",
    [
        {
            "type": "text-chunks",
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a", "b", "c"]},
        },
        {
            "type": "text-chunks",
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 2], "texts": ["a", 2, "c"]},
        },
        {
            "type": "tool-call-chunks",
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 2], "args": ["a", "b", "c"]},
        },
        {"type": "assistant/chunk", "data": {"turn": "1", "step": 1, "chunk": {}}},
        {"type": "assistant/chunk"},
    ],
    ids=["dt-count", "text-type", "tool-id", "turn-type", "no-data"],
)
def test_malformed_records_are_record_errors_with_line_numbers(tmp_path: Path, row: dict[str, Any]) -> None:
    path = write(tmp_path / "session.jsonl", EXAMPLE_5A + json.dumps(row) + "\n")
    with pytest.raises(DshLogError) as caught:
        read_dsh_session(path)
    assert (caught.value.line, caught.value.code) == (EXAMPLE_5A.count("\n") + 1, "record")


# --- what the committed logs show ------------------------------------------------------------------


def _event(kind: str, **data: Any) -> str:
    return json.dumps({"type": kind, "data": data})


HEADER = '{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}\n'


def test_cancelled_stream_gets_a_synthesized_aborted_finish_and_no_violation(tmp_path: Path) -> None:
    lines = [
        _event("step/start", turn=1, step=1),
        _event(
            "assistant/chunk", turn=1, step=1, chunk={"type": "block-start", "index": 0, "blockType": "text"}
        ),
        _event("assistant/chunk", turn=1, step=1, chunk={"type": "text-delta", "index": 0, "text": "half"}),
        _event(
            "assistant/message",
            turn=1,
            step=1,
            interrupted=True,
            message={
                "role": "assistant",
                "content": [{"type": "text", "text": "half"}],
                "source": {"kind": "model", "provider": "p", "model": "m"},
                "id": "x",
            },
        ),
        _event("step/end", turn=1, step=1),
        _event("turn/end", turn=1, reason={"kind": "aborted", "reason": {"kind": "user"}}),
    ]
    session = read_dsh_session(write(tmp_path / "s.jsonl", HEADER + "\n".join(lines) + "\n"))
    (attempt,) = session.attempts
    assert attempt.interrupted and attempt.synthesized
    assert (attempt.provider, attempt.model) == ("p", "m")
    finish = attempt.result.chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "aborted"
    assert finish.reason.failure is not None and finish.reason.failure.code == "ABORTED"
    assert attempt.result.violations == [] and attempt.result.usage is None
    assert session.turn_ends[1]["kind"] == "aborted"


def test_usage_falls_back_to_the_message_when_no_usage_chunk_was_logged(tmp_path: Path) -> None:
    lines = [
        _event(
            "assistant/chunk", turn=1, step=1, chunk={"type": "block-start", "index": 0, "blockType": "text"}
        ),
        _event(
            "assistant/chunk",
            turn=1,
            step=1,
            chunk={"type": "block-end", "index": 0, "block": {"type": "text", "text": ""}},
        ),
        _event("assistant/chunk", turn=1, step=1, chunk={"type": "finish", "reason": {"kind": "stop"}}),
        _event(
            "assistant/message",
            turn=1,
            step=1,
            usage={"inputTokens": 7, "outputTokens": 2},
            message={
                "role": "assistant",
                "content": [],
                "source": {"kind": "model", "provider": "p", "model": "m"},
                "id": "x",
            },
        ),
    ]
    (attempt,) = read_dsh_session(write(tmp_path / "s.jsonl", HEADER + "\n".join(lines) + "\n")).attempts
    assert attempt.result.usage == TokenUsage(input_tokens=7, output_tokens=2)
    assert attempt.usage_from_message


def test_retry_without_a_logged_attempt_becomes_a_synthesized_failed_attempt(tmp_path: Path) -> None:
    lines = [
        _event(
            "llm/retry",
            turn=1,
            step=1,
            retry=1,
            delayMs=100,
            failure={"message": "429", "code": "RATE_LIMIT", "status": 429},
        ),
        _event("assistant/chunk", turn=1, step=1, chunk={"type": "finish", "reason": {"kind": "stop"}}),
    ]
    session = read_dsh_session(write(tmp_path / "s.jsonl", HEADER + "\n".join(lines) + "\n"))
    failed, ok = session.attempts
    assert failed.synthesized and not failed.final and failed.result.error_code == "RATE_LIMIT"
    assert ok.attempt == 2 and ok.final and ok.result.finish is not None and ok.result.finish.kind == "stop"


def test_retry_without_llm_retry_event_is_split_at_the_finish(tmp_path: Path) -> None:
    finish_error = {
        "type": "finish",
        "reason": {"kind": "error", "failure": {"message": "too long", "code": "CONTEXT_WINDOW_EXCEEDED"}},
    }
    lines = [
        _event("assistant/chunk", turn=1, step=1, chunk=finish_error),
        _event("compaction/start", compactionId="c1"),
        _event("assistant/chunk", turn=1, step=1, chunk={"type": "finish", "reason": {"kind": "stop"}}),
    ]
    (step,) = read_dsh_session(write(tmp_path / "s.jsonl", HEADER + "\n".join(lines) + "\n")).steps
    assert [(a.attempt, a.final, a.result.error_code) for a in step.attempts] == [
        (1, False, "CONTEXT_WINDOW_EXCEEDED"),
        (2, True, None),
    ]


def test_insane_packed_gaps_are_clamped_and_flagged(tmp_path: Path) -> None:
    row = {
        "type": "text-chunks",
        "seq0": 1,
        "time0": 1000,
        "data": {
            "turn": 1,
            "step": 1,
            "index": 0,
            "dt": [-2_400_000_000, 1_800_000_000],
            "texts": ["a", "b", "c"],
        },
    }
    lines = [
        json.dumps(
            {
                "type": "assistant/chunk",
                "seq": 0,
                "time": 990,
                "data": {
                    "turn": 1,
                    "step": 1,
                    "chunk": {"type": "block-start", "index": 0, "blockType": "text"},
                },
            }
        ),
        json.dumps(row),
    ]
    (attempt,) = read_dsh_session(write(tmp_path / "s.jsonl", HEADER + "\n".join(lines) + "\n")).attempts
    assert attempt.result.timings.chunk_times == pytest.approx([0.0, 0.01, 0.01, 60.01, 60.01])
    assert attempt.timing_adjusted and attempt.synthesized  # EOF before a finish: aborted added


def test_forked_session_skips_its_inherited_seed_unless_asked(tmp_path: Path) -> None:
    seed = [
        _event("assistant/chunk", turn=1, step=1, chunk={"type": "finish", "reason": {"kind": "stop"}}),
        _event("session/end-seed"),
    ]
    own = [_event("assistant/chunk", turn=2, step=1, chunk={"type": "finish", "reason": {"kind": "stop"}})]
    header = '{"type":"session","version":0,"id":"child","createdAt":0,"seedLength":1,"parentSession":"s"}\n'
    path = write(tmp_path / "s.jsonl", header + "\n".join(seed + own) + "\n")
    assert [(s.turn, s.step) for s in read_dsh_session(path).steps] == [(2, 1)]
    assert [(s.turn, s.step) for s in read_dsh_session(path, include_seed=True).steps] == [(1, 1), (2, 1)]


def test_compaction_summary_with_usage_is_a_call_outside_any_step(tmp_path: Path) -> None:
    lines = [
        _event("turn/start", turn=3),
        _event(
            "compaction/summary",
            compactionId="c1",
            provider="deepseek-official",
            model="deepseek-v4-flash",
            summary=[{"type": "text", "text": "sum"}],
            rawOutput=[{"type": "text", "text": "raw sum"}],
            llmStreamCall=True,
            usage={"inputTokens": 900, "outputTokens": 40},
            shadowedRange={"start": 0, "end": 5},
            shadowedSeqs=[],
            shadowedTokenCount=1000,
        ),
    ]
    session = read_dsh_session(write(tmp_path / "s.jsonl", HEADER + "\n".join(lines) + "\n"))
    assert session.steps == []
    (call,) = session.attempts
    assert call.kind == "compaction" and call.synthesized and call.turn == 3
    assert call.result.text == "raw sum" and call.result.violations == []
    assert call.result.usage == TokenUsage(input_tokens=900, output_tokens=40)


def test_max_tokens_with_an_open_tool_call_reports_block_pairing(tmp_path: Path) -> None:
    chunks = [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": "c", "name": "n", "argumentsDelta": "{"},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "max-tokens"}},
    ]
    lines = [_event("assistant/chunk", turn=1, step=1, chunk=chunk) for chunk in chunks]
    (attempt,) = read_dsh_session(write(tmp_path / "s.jsonl", HEADER + "\n".join(lines) + "\n")).attempts
    assert [v.rule for v in attempt.result.violations] == ["block-pairing"]


def test_a_chunk_that_is_no_chunk_is_a_schema_violation_not_a_line_error(tmp_path: Path) -> None:
    lines = [
        _event("assistant/chunk", turn=1, step=1, chunk={"type": "text-delta", "index": 0}),
        _event("assistant/chunk", turn=1, step=1, chunk={"type": "finish", "reason": {"kind": "stop"}}),
    ]
    (attempt,) = read_dsh_session(write(tmp_path / "s.jsonl", HEADER + "\n".join(lines) + "\n")).attempts
    assert [v.rule for v in attempt.result.violations] == ["schema"]
    assert attempt.result.chunks[0] == {"type": "text-delta", "index": 0}


def test_older_content_provenance_message_shape_gives_provider_and_blocks(tmp_path: Path) -> None:
    lines = [
        _event(
            "assistant/message",
            turn=1,
            step=1,
            content=[{"type": "text", "text": "old"}],
            provenance={"kind": "model", "provider": "p", "model": "m"},
            usage={"inputTokens": 3, "outputTokens": 1},
        ),
    ]
    (attempt,) = read_dsh_session(write(tmp_path / "s.jsonl", HEADER + "\n".join(lines) + "\n")).attempts
    assert attempt.synthesized and (attempt.provider, attempt.model) == ("p", "m")
    assert attempt.result.text == "old" and attempt.result.violations == []
    assert attempt.result.usage == TokenUsage(input_tokens=3, output_tokens=1) and attempt.usage_from_message
    assert isinstance(attempt.result.chunks[0], BlockStart)


def test_record_into_hands_every_attempt_to_a_usage_sink(tmp_path: Path) -> None:
    class Sink:
        def __init__(self) -> None:
            self.calls: list[tuple[Any, dict[str, Any]]] = []

        def record(self, result: Any, **kwargs: Any) -> None:
            self.calls.append((result, kwargs))

    session = read_dsh_session(write_session(tmp_path / "session.jsonl"))
    sink = session.record_into(Sink(), tags={"team": "a"})
    assert [(kw["call_id"], kw["attempt"], kw["final"], kw["model"]) for _, kw in sink.calls] == [
        ("sess-1:1:1", 1, True, "deepseek-v4-flash"),
        ("sess-1:2:1", 1, False, "deepseek-v4-pro"),
        ("sess-1:2:1", 2, True, "deepseek-v4-pro"),
        ("sess-1:2:2", 1, True, "deepseek-v4-pro"),
    ]
    assert sink.calls[1][1]["tags"] == {
        "team": "a",
        "session": "sess-1",
        "turn": "2",
        "step": "1",
        "kind": "step",
    }
    assert sink.calls[0][0].chunks == session.attempts[0].result.chunks


def test_deltas_are_typed_models_that_a_timeline_can_render(tmp_path: Path) -> None:
    pytest.importorskip("anywidget")
    from chunkscope.notebook.timeline._state import state_from_result

    (attempt,) = read_dsh_session(write(tmp_path / "session.jsonl", EXAMPLE_5A)).attempts
    assert isinstance(attempt.result.chunks[1], ReasoningDelta) and isinstance(
        attempt.result.chunks[5], TextDelta
    )
    state = state_from_result(attempt.result, title="step 1")
    assert len(state["records"]) == 11 and state["status"] == "done" and state["violations"] == []


def test_line_longer_than_a_read_block_is_skipped_in_bounded_pieces(tmp_path: Path) -> None:
    huge = json.dumps({"type": "tool/result", "data": {"text": "y" * 3_000_000}})
    path = write(tmp_path / "session.jsonl", EXAMPLE_5A + huge + "\n" + EXAMPLE_5B_AND_RETRY)
    lenient = read_dsh_session(path, max_line_bytes=4096, strict=False)
    assert [(p.line, p.code) for p in lenient.problems] == [(EXAMPLE_5A.count("\n") + 1, "line-too-long")]
    assert [len(s.attempts) for s in lenient.steps] == [1, 2]
    assert lenient.lines == EXAMPLE_5A.count("\n") + 1 + EXAMPLE_5B_AND_RETRY.count("\n")


def test_last_line_without_newline_is_read(tmp_path: Path) -> None:
    session = read_dsh_session(write(tmp_path / "session.jsonl", EXAMPLE_5A.rstrip("\n")))
    assert session.turn_ends == {1: {"kind": "completed"}}


def test_the_error_is_the_sources_layers_on_the_top_level_face_and_the_reader_the_usage_layers() -> None:
    import chunkscope as cs
    from chunkscope import sources, usage

    assert cs.DshLogError is DshLogError is sources.DshLogError
    assert cs.read_dsh_session is usage.read_dsh_session


def test_a_session_has_its_frame_from_the_reader_that_read_it_never_from_an_import(tmp_path: Path) -> None:
    path = write(tmp_path / "session.jsonl", EXAMPLE_5A + EXAMPLE_5B_AND_RETRY)
    code = (
        "import sys\n"
        "from chunkscope.sources import read_dsh_session\n"
        f"plain = read_dsh_session({str(path)!r})\n"
        "try:\n"
        "    plain.to_frame()\n"
        "except TypeError as exc:\n"
        "    print('no frame:', exc)\n"
        "import chunkscope as cs\n"
        f"framed = cs.read_dsh_session({str(path)!r})\n"
        "print(len(framed.to_frame()), len(framed.attempts))\n"
        "try:\n"
        "    plain.to_frame()\n"  # importing the usage layer changed nothing for the first session
        "except TypeError:\n"
        "    print('still none')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    first, counts, last = out.stdout.strip().splitlines()
    assert first.startswith("no frame: DshSession.to_frame") and "cs.read_dsh_session" in first
    rows, attempts = counts.split()
    assert rows == attempts == "3"
    assert last == "still none"


def test_catching_the_session_log_error_needs_no_pandas(tmp_path: Path) -> None:
    bad = write(tmp_path / "session.jsonl", "not json\n")
    code = (
        "import sys\n"
        "sys.modules['pandas'] = sys.modules['numpy'] = None  # as a plain install: no usage extra\n"
        "import chunkscope as cs\n"
        "from chunkscope.sources import read_dsh_session\n"
        "try:\n"
        f"    read_dsh_session({str(bad)!r})\n"
        "except cs.DshLogError as exc:\n"
        "    print(type(exc).__name__, exc.code, sys.modules.get('pandas') is not None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["DshLogError", "json", "False"], out.stderr[-2000:]


def test_empty_file_is_a_header_error(tmp_path: Path) -> None:
    with pytest.raises(DshLogError) as caught:
        read_dsh_session(write(tmp_path / "session.jsonl", ""))
    assert (caught.value.line, caught.value.code) == (1, "header")


# --- fuzzing: whatever the bytes, a DshLogError or a session, never another exception -----------------

_FUZZ_BASE = (EXAMPLE_5A + EXAMPLE_5B_AND_RETRY).encode()


@given(
    edits=st.lists(st.tuples(st.integers(0, len(_FUZZ_BASE) - 1), st.integers(0, 255)), max_size=6),
    cut=st.integers(0, len(_FUZZ_BASE)),
)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_mangled_logs_give_a_session_or_a_dsh_log_error(
    tmp_path: Path, edits: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(_FUZZ_BASE[:cut])
    for position, value in edits:
        if position < len(data):
            data[position] = value
    path = tmp_path / "session.jsonl"
    path.write_bytes(bytes(data))
    for strict in (True, False):
        try:
            session = read_dsh_session(path, strict=strict)
        except DshLogError as exc:
            assert exc.line >= 1 and exc.code
            continue
        for attempt in session.attempts:
            result = attempt.result  # building every result never raises either
            assert result.profile == "dsh"
        session_frame(session)


@given(cut=st.integers(0, 4000))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_zstd_cut_anywhere_is_a_session_or_a_truncation_error(tmp_path: Path, cut: int) -> None:
    whole = tmp_path / "whole.jsonl.zstd"
    if not whole.exists():
        write_session(whole, compress=True)
    data = whole.read_bytes()
    path = tmp_path / "cut.jsonl.zstd"
    path.write_bytes(data[: min(cut, len(data))])
    try:
        session = read_dsh_session(path)
    except DshLogError as exc:
        assert exc.code in ("truncated", "header", "json", "zstd")
    else:
        assert cut >= len(data) or session.lines >= 1


def test_a_zstd_bomb_line_is_refused_with_bounded_memory(tmp_path: Path) -> None:
    # 64 MB of one byte with no newline compresses to a few KB; the reader never holds it whole.
    bomb = zstandard.ZstdCompressor().compress(b"x" * 64_000_000)
    header = zstandard.ZstdCompressor().compress(EXAMPLE_5A.encode())
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(header + bomb)
    tracemalloc.start()
    try:
        session = read_dsh_session(path, strict=False, max_line_bytes=1_000_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(p.line, p.code) for p in session.problems] == [(EXAMPLE_5A.count("\n") + 1, "line-too-long")]
    assert len(session.steps) == 1
    assert peak < 24_000_000


def test_the_first_token_times_skip_empty_deltas_as_the_harness_does(tmp_path: Path) -> None:
    # The harness's own time to first token (isTokenDelta) counts only deltas that carry output.
    stream: list[dict[str, Any]] = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": ""},
        {"type": "text-delta", "index": 0, "text": "Hi"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hi"}},
        {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    path = tmp_path / "session.jsonl"
    with DshLogWriter(path, packed=False) as log:
        log.turn_start(1)
        log.step(1, 1, stream)
        log.turn_end(1)
    timings = read_dsh_session(path).results[0].timings
    assert timings.first_chunk_s == timings.chunk_times[0]
    assert timings.first_content_s == timings.first_text_s == timings.chunk_times[2]
    assert timings.chunk_times[1] < timings.chunk_times[2]


_IMAGE = {
    "type": "image",
    "attachment": {
        "attachmentId": "sha256:5d41402a",
        "mediaType": "image/png",
        "bytes": 1834,
        "width": 120,
        "height": 80,
        "name": "chart.png",
        "originalDimensions": {"width": 1200, "height": 800},
    },
}


def test_a_log_whose_messages_and_chunks_hold_images_reads_clean_and_keeps_them(tmp_path: Path) -> None:
    # The harness's vocabulary: image blocks (user content; assistant content is forward compatible)
    # and keys its validator does not read. Its own logs pass under dsh and nothing is dropped.
    stream: list[dict[str, Any]] = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "A bar chart.", "providerIndex": 0},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "A bar chart."}},
        {"type": "block-start", "index": 1, "blockType": "image"},
        {"type": "block-end", "index": 1, "block": _IMAGE},
        {"type": "usage", "usage": {"inputTokens": 900, "outputTokens": 4}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    user = {"role": "user", "content": [{"type": "text", "text": "What is this?"}, _IMAGE]}
    path = tmp_path / "session.jsonl"
    with DshLogWriter(path, packed=False) as log:
        log.turn_start(1)
        log.event("user/message", {"turn": 1, "message": {"id": "m1", **user, "source": {"kind": "user"}}})
        log.event("step/start", {"turn": 1, "step": 1})
        for chunk in stream:  # as logged, unknown key included (the writer would normalize it)
            log.event("assistant/chunk", {"turn": 1, "step": 1, "chunk": chunk})
        # an older log: only the assistant/message, whose content holds an image
        log.event("step/start", {"turn": 1, "step": 2})
        answer = {"role": "assistant", "content": [{"type": "text", "text": "Here:"}, _IMAGE]}
        log.event("assistant/message", {"turn": 1, "step": 2, "message": answer})
        log.turn_end(1)
    session = read_dsh_session(path)
    assert session.problems == []
    streamed, rebuilt = session.results
    assert streamed.violations == [] and rebuilt.violations == []
    assert [b.type for b in streamed.blocks] == ["text", "image"] and streamed.text == "A bar chart."
    assert [b.type for b in rebuilt.blocks] == ["text", "image"]
    assert rebuilt.blocks[1].to_dict() == _IMAGE
    assert parse_message(user).content[1].to_dict() == _IMAGE  # the user's message parses, image and all
