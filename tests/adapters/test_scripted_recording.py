"""ScriptedAdapter, RecordingAdapter and ReplayAdapter: scripts, broken scripts, recordings, replays."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _openai_events import API_KEY, MockServer, chunk, options, sse, usage

from chunkscope.adapters._base import AbortController, GenerateOptions, LlmAdapter
from chunkscope.adapters.recording import FORMAT_VERSION, RecordingAdapter, RecordingFileError, ReplayAdapter
from chunkscope.adapters.scripted import ScriptedAdapter
from chunkscope.protocol import check, collect
from chunkscope.protocol._chunks import AnyChunk, parse_chunk
from chunkscope.protocol._errors import LlmError
from chunkscope.sources import ChunkFileError

EXAMPLE = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "Hello, "},
    {"type": "text-delta", "index": 0, "text": "world"},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hello, world"}},
    {"type": "block-start", "index": 1, "blockType": "tool-call"},
    {
        "type": "tool-call-delta",
        "index": 1,
        "id": "call-1",
        "name": "bash",
        "argumentsDelta": '{"cmd": "ls"}',
    },
    {
        "type": "block-end",
        "index": 1,
        "block": {"type": "tool-call", "id": "call-1", "name": "bash", "arguments": '{"cmd": "ls"}'},
    },
    {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 50}},
    {"type": "finish", "reason": {"kind": "stop"}},
]


def opts(**kwargs: Any) -> GenerateOptions:
    return GenerateOptions("scripted", "m", [{"role": "user", "content": "hi"}], **kwargs)


class FakeClock:
    """An injectable sleep that only advances a virtual clock."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)

    def clock(self) -> float:
        return self.now


# --- ScriptedAdapter -------------------------------------------------------------


async def test_scripted_adapter_plays_seed_dicts_as_typed_chunks_that_check_clean() -> None:
    adapter = ScriptedAdapter(EXAMPLE)
    result = await collect(adapter.stream(opts()))
    assert [c.to_dict() for c in result.chunks] == EXAMPLE
    assert result.ok and result.violations == []
    assert result.text == "Hello, world"


async def test_a_broken_dict_is_yielded_unchanged_so_the_checker_reports_schema() -> None:
    broken = {"type": "text-delta", "index": 0}  # no text
    adapter = ScriptedAdapter([EXAMPLE[0], broken, *EXAMPLE[2:]])
    result = await collect(adapter.stream(opts()))
    assert result.chunks[1] == broken and type(result.chunks[1]) is dict
    assert "schema" in {v.rule for v in result.violations}


async def test_a_deliberately_interleaved_script_is_played_as_written() -> None:
    script = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "block-start", "index": 1, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "a"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "a"}},
        {"type": "block-end", "index": 1, "block": {"type": "text", "text": ""}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    result = await collect(ScriptedAdapter(script).stream(opts()))
    assert "no-interleave" in {v.rule for v in result.violations}


async def test_scripted_delays_use_the_injected_sleep_per_chunk() -> None:
    fake = FakeClock()
    adapter = ScriptedAdapter(EXAMPLE[:3], delay=[0.0, 0.5, 0.25], sleep=fake.sleep)
    assert [c async for c in adapter.stream(opts())] == [parse_chunk(c) for c in EXAMPLE[:3]]
    assert fake.sleeps == [0.5, 0.25]
    fake2 = FakeClock()
    async for _ in ScriptedAdapter(EXAMPLE[:3], delay=0.1, sleep=fake2.sleep).stream(opts()):
        pass
    assert fake2.sleeps == [0.1, 0.1, 0.1]
    with pytest.raises(ValueError):
        ScriptedAdapter(EXAMPLE[:3], delay=[0.1])


async def test_a_scripted_error_is_raised_after_the_last_chunk() -> None:
    error = LlmError("the server went away", "TRANSPORT")
    result = await collect(ScriptedAdapter(EXAMPLE[:2], error=error).stream(opts()))
    assert result.error is error
    assert len(result.chunks) == 2


async def test_a_scripted_error_raised_on_every_call_does_not_pile_up_tracebacks() -> None:
    adapter = ScriptedAdapter(EXAMPLE[:1], error=LlmError("the server went away", "TRANSPORT"))
    depths = []
    for _ in range(3):
        error = (await collect(adapter.stream(opts()))).error
        assert error is adapter.error
        depth, tb = 0, error.__traceback__
        while tb is not None:
            depth, tb = depth + 1, tb.tb_next
        depths.append(depth)
    assert depths[0] == depths[1] == depths[2]


async def test_scripted_adapter_records_the_options_it_was_given() -> None:
    adapter = ScriptedAdapter(EXAMPLE)
    options = opts(temperature=0.1, system="s")
    await collect(adapter.stream(options))
    assert adapter.calls == [options]


async def test_scripted_adapter_honours_an_abort_during_a_pause_within_100_ms() -> None:
    adapter = ScriptedAdapter(EXAMPLE, delay=10.0)  # the real sleep: the abort must cut it short
    controller = AbortController()
    loop = asyncio.get_running_loop()
    fired: list[float] = []

    def abort() -> None:
        fired.append(loop.time())
        controller.abort()

    loop.call_later(0.02, abort)
    result = await collect(adapter.stream(opts(signal=controller.signal)))
    assert result.error_code == "ABORTED"
    assert loop.time() - fired[0] < 0.1


# --- RecordingAdapter ------------------------------------------------------------


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


async def test_recording_writes_a_header_then_one_timed_line_per_chunk(tmp_path: Path) -> None:
    fake = FakeClock()
    inner = ScriptedAdapter(EXAMPLE, delay=0.1, sleep=fake.sleep)
    path = tmp_path / "rec.jsonl"
    adapter = RecordingAdapter(inner, path, clock=fake.clock)
    result = await collect(adapter.stream(opts(purpose="title")))
    assert result.ok
    lines = read_lines(path)
    header = lines[0]
    assert header["recording"] == "chunkscope" and header["version"] == FORMAT_VERSION
    assert (header["provider"], header["model"], header["adapter"], header["purpose"]) == (
        "scripted",
        "m",
        "ScriptedAdapter",
        "title",
    )
    assert [line["chunk"] for line in lines[1:]] == EXAMPLE
    assert [line["t"] for line in lines[1:]] == pytest.approx([0.1 * (i + 1) for i in range(len(EXAMPLE))])


async def test_recording_is_flushed_per_chunk_so_it_can_be_read_mid_stream(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    stream = RecordingAdapter(ScriptedAdapter(EXAMPLE), path).stream(opts())
    await stream.__anext__()
    await stream.__anext__()
    lines = read_lines(path)  # the stream is still open
    assert [line.get("chunk") for line in lines[1:]] == EXAMPLE[:2]
    await stream.aclose()


async def test_recording_writes_an_error_line_and_reraises(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    error = LlmError("slow down", "RATE_LIMIT", status=429, retry_after_ms=2000, request_id="r-1")
    adapter = RecordingAdapter(ScriptedAdapter(EXAMPLE[:2], error=error), path)
    result = await collect(adapter.stream(opts()))
    assert result.error is error
    last = read_lines(path)[-1]
    assert last["error"] == {
        "message": "slow down",
        "code": "RATE_LIMIT",
        "status": 429,
        "providerRetryAfterMs": 2000,
        "requestId": "r-1",
    }


async def test_a_recording_of_a_real_adapter_never_contains_the_api_key(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    body = sse(chunk(content="hi"), chunk(finish="stop"), chunk(no_choices=True, usage=usage()))
    adapter = RecordingAdapter(MockServer(body).adapter(), path)
    assert (await collect(adapter.stream(options()))).ok
    failing = RecordingAdapter(
        MockServer(b'{"error": {"message": "bad key ' + API_KEY.encode() + b'"}}', status=401).adapter(),
        tmp_path / "fail.jsonl",
    )
    assert (await collect(failing.stream(options()))).error_code == "AUTH"
    for file in (path, tmp_path / "fail.jsonl"):
        text = file.read_text(encoding="utf-8")
        assert API_KEY not in text and "Authorization" not in text and "Bearer" not in text


async def test_recording_passes_task_cancellation_through_without_an_error_line(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    pausing = asyncio.Event()

    async def pause_forever(seconds: float) -> None:
        pausing.set()
        await asyncio.Event().wait()

    adapter = RecordingAdapter(ScriptedAdapter(EXAMPLE, delay=1.0, sleep=pause_forever), path)

    async def consume() -> None:
        async for _ in adapter.stream(opts()):
            pass

    task = asyncio.create_task(consume())
    await pausing.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [line for line in read_lines(path) if "error" in line] == []


@pytest.mark.parametrize("cut", [KeyboardInterrupt, asyncio.CancelledError])
async def test_a_recording_cut_by_ctrl_c_ends_with_an_aborted_finish_so_check_blames_no_one(
    tmp_path: Path, cut: type[BaseException]
) -> None:
    from chunkscope.sources import load_streams

    path = tmp_path / "rec.jsonl"
    calls = 0

    async def interrupt_on_the_third_pause(seconds: float) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise cut

    adapter = RecordingAdapter(ScriptedAdapter(EXAMPLE, delay=0.01, sleep=interrupt_on_the_third_pause), path)
    with pytest.raises(cut):
        async for _ in adapter.stream(opts()):
            pass
    lines = read_lines(path)
    assert lines[-1]["synthesized"] is True and lines[-1]["chunk"]["reason"]["kind"] == "aborted"
    assert [line for line in lines if "error" in line] == []  # being cut is not a failure of the stream
    (stream,) = load_streams(path)
    assert len(stream.chunks) == 3  # the two recorded chunks, then the aborted finish
    assert [v.rule for v in check(stream.chunks)] == []


# --- ReplayAdapter ---------------------------------------------------------------


async def record(tmp_path: Path, inner: LlmAdapter, fake: FakeClock) -> Path:
    path = tmp_path / "rec.jsonl"
    await collect(RecordingAdapter(inner, path, clock=fake.clock).stream(opts()))
    return path


async def test_replay_reproduces_the_chunks_at_their_recorded_times_scaled_by_speed(tmp_path: Path) -> None:
    recorder = FakeClock()
    path = await record(tmp_path, ScriptedAdapter(EXAMPLE, delay=0.2, sleep=recorder.sleep), recorder)
    player = FakeClock()
    chunks = [c async for c in ReplayAdapter(path, speed=2.0, sleep=player.sleep).stream(opts())]
    assert [c.to_dict() for c in chunks] == EXAMPLE
    assert player.sleeps == pytest.approx([0.1] * len(EXAMPLE))
    instant = FakeClock()
    for speed in (None, math.inf):
        again = [c async for c in ReplayAdapter(path, speed=speed, sleep=instant.sleep).stream(opts())]
        assert again == chunks
    assert instant.sleeps == []


async def test_replay_raises_the_recorded_error_at_the_end(tmp_path: Path) -> None:
    recorder = FakeClock()
    error = LlmError("cut", "TRANSPORT")
    path = await record(
        tmp_path, ScriptedAdapter(EXAMPLE[:3], delay=0.1, error=error, sleep=recorder.sleep), recorder
    )
    result = await collect(ReplayAdapter(path, speed=None).stream(opts()))
    assert result.error is not None and (result.error.code, result.error.message) == ("TRANSPORT", "cut")
    assert len(result.chunks) == 3


async def test_replay_of_a_broken_recording_replays_it_broken(tmp_path: Path) -> None:
    broken = {"type": "text-delta", "index": 0}
    recorder = FakeClock()
    path = await record(tmp_path, ScriptedAdapter([EXAMPLE[0], broken]), recorder)
    result = await collect(ReplayAdapter(path, speed=None).stream(opts()))
    assert result.chunks[1] == broken
    assert "schema" in {v.rule for v in result.violations}


async def test_replay_honours_an_abort_during_a_pause(tmp_path: Path) -> None:
    recorder = FakeClock()
    path = await record(tmp_path, ScriptedAdapter(EXAMPLE, delay=5.0, sleep=recorder.sleep), recorder)
    controller = AbortController()

    async def pause_until_aborted(seconds: float) -> None:
        controller.abort()  # the caller gives up during the first pause
        await asyncio.Event().wait()

    replay = ReplayAdapter(path, sleep=pause_until_aborted)
    result = await collect(replay.stream(opts(signal=controller.signal)))
    assert result.error_code == "ABORTED"
    assert result.chunks == []


async def test_record_then_replay_round_trips_a_real_http_stream(tmp_path: Path) -> None:
    body = sse(
        chunk(reasoning="hmm"),
        chunk(content="Hi"),
        chunk(finish="stop"),
        chunk(no_choices=True, usage=usage()),
    )
    path = tmp_path / "rec.jsonl"
    live = await collect(RecordingAdapter(MockServer(body).adapter(), path).stream(options()))
    replayed = await collect(ReplayAdapter(path, speed=None).stream(options()))
    assert replayed.chunks == live.chunks
    assert replayed.ok and check(replayed.chunks) == []


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('{"type": "finish"}\n', 1),
        ('{"recording": "chunkscope", "version": 1}\n{bad\n', 2),
        ('{"recording": "chunkscope", "version": 1}\n{"t": 0, "chunk": 5}\n', 2),
        ('{"recording": "chunkscope", "version": 1}\n{"t": -1, "chunk": {}}\n', 2),
        ('{"recording": "chunkscope", "version": 99}\n', 1),
    ],
)
def test_a_file_that_is_not_a_recording_is_refused_with_its_line(
    tmp_path: Path, text: str, line: int
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ChunkFileError) as info:  # a RecordingFileError is a ChunkFileError
        ReplayAdapter(path).read()
    assert isinstance(info.value, RecordingFileError)
    assert (info.value.path, info.value.line) == (str(path), line)


async def test_stopping_a_recording_early_closes_the_inner_stream(tmp_path: Path) -> None:
    closed: list[bool] = []

    class Inner(ScriptedAdapter):
        async def stream(self, options: GenerateOptions) -> AsyncIterator[AnyChunk]:
            try:
                async for c in super().stream(options):
                    yield c
            finally:
                closed.append(True)

    stream = RecordingAdapter(Inner(EXAMPLE), tmp_path / "rec.jsonl").stream(opts())
    await stream.__anext__()
    await stream.aclose()  # type: ignore[attr-defined]
    assert closed == [True]
