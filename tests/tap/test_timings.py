"""The timing points against the local provider's scripted timings (loopback, a little slack for load)."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

import httpx
import pytest
from _tap_helpers import AUTH, stream_body

import chunkscope as cs
from chunkscope.provider._scenarios import FIRST_BYTE_SECONDS, SLOW_TOKEN_DELAY
from chunkscope.tap import Tap, TapCall

SLACK = 0.025  # seconds: scheduling noise of a shared, loaded 2-core machine; typically under 3 ms
MEDIAN_SLACK = 0.004


def timed(tap: Tap, model: str) -> TapCall:
    httpx.post(
        f"{tap.base_url}/v1/chat/completions", json=stream_body("text"), headers=AUTH
    )  # warm connection
    httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body(model), headers=AUTH)
    call = tap.calls[-1]
    assert call.wait(5) and call.result is not None and call.result.ok
    return call


def test_slow_first_byte_is_measured_from_the_requests_start(tap: Tap) -> None:
    t = timed(tap, "slow-first-byte").timings
    assert t.headers_s is not None and t.first_byte_s is not None
    assert FIRST_BYTE_SECONDS <= t.headers_s <= FIRST_BYTE_SECONDS + SLACK
    assert t.headers_s <= t.first_byte_s <= t.first_event_s == t.first_text_s  # type: ignore[operator]


def test_slow_tokens_reads_arrive_at_the_scripted_pace(tap: Tap) -> None:
    call = timed(tap, "slow-tokens")
    gaps = [b - a for (a, _), (b, _) in zip(call.reads, call.reads[1:], strict=False)]
    assert len(gaps) >= 9
    assert abs(statistics.median(gaps) - SLOW_TOKEN_DELAY) <= MEDIAN_SLACK
    # most reads within the slack; one read the machine delayed makes its own gap long and the next short
    near = [gap for gap in gaps if abs(gap - SLOW_TOKEN_DELAY) <= SLACK]
    assert len(near) >= len(gaps) - 2
    t = call.timings
    assert t.first_event_s is not None and t.first_text_s is not None
    # the role-only event comes at once, the first text one scripted delay later
    assert abs(t.first_text_s - t.first_event_s - SLOW_TOKEN_DELAY) <= SLACK
    chunk_times = call.result.timings.chunk_times  # type: ignore[union-attr]
    assert chunk_times == sorted(chunk_times) and chunk_times[0] == t.first_text_s


@pytest.fixture
def paced_tap() -> Iterator[Tap]:
    with cs.LocalProvider(token_delay=SLOW_TOKEN_DELAY) as provider, Tap(upstream=provider.url) as running:
        yield running


def test_reasoning_before_text_separates_first_content_from_first_text(paced_tap: Tap) -> None:
    call = timed(paced_tap, "reasoning-text-tools")
    t = call.timings
    assert t.first_content_s is not None and t.first_text_s is not None
    # three reasoning events, each a scripted delay apart, before the first text
    expected = 3 * SLOW_TOKEN_DELAY
    assert abs(t.first_text_s - t.first_content_s - expected) <= SLACK
    assert call.result is not None and call.result.reasoning and call.result.text
