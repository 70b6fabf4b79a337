"""Replaying a recording into a timeline: the chunks arrive at their recorded times."""

from __future__ import annotations

from pathlib import Path

import pytest
from nb_helpers import CLEAN, FakeClock, timeline_with_capture

from chunkscope.adapters._base import GenerateOptions
from chunkscope.adapters.recording import RecordingAdapter, ReplayAdapter
from chunkscope.adapters.scripted import ScriptedAdapter


def options() -> GenerateOptions:
    return GenerateOptions(provider="scripted", model="m", messages=[{"role": "user", "content": "hi"}])


async def test_a_replayed_recording_keeps_its_recorded_timing(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_clock = FakeClock()
    delays = [0.05 * (n % 3 + 1) for n in range(len(CLEAN))]  # 50, 100 or 150 ms apart

    async def recording_sleep(seconds: float) -> None:
        record_clock.advance(seconds)

    scripted = ScriptedAdapter(CLEAN, delay=delays, sleep=recording_sleep)
    async for _ in RecordingAdapter(scripted, path, clock=record_clock).stream(options()):
        pass

    replay_clock = FakeClock()

    async def replay_sleep(seconds: float) -> None:
        replay_clock.advance(seconds)

    timeline, captured = timeline_with_capture(replay_clock, title="replay")
    result = await timeline.consume(ReplayAdapter(path, sleep=replay_sleep).stream(options()))

    assert result.ok and result.text == "Hello world"
    recorded = [sum(delays[: n + 1]) for n in range(len(CLEAN))]
    times_ms = [r[0] for m in captured.batches for r in m["r"]]
    assert times_ms == [pytest.approx(t * 1000, abs=0.01) for t in recorded]
    assert timeline.state()["status"] == "done"
