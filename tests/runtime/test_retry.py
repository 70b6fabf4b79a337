"""RetryPolicy inside the agent loop, with a fake sleep: nothing here waits for real."""

from __future__ import annotations

import asyncio

import pytest

import chunkscope as cs
from chunkscope.adapters import AbortController
from chunkscope.protocol import LlmError
from chunkscope.runtime import LoopEnd, OutputDiscarded, RetryScheduled

from ._fakes import Call, FakeSleep, SequenceAdapter, llm_error, text_reply

PARTIAL = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "half"},
]


def loop_with(calls: list[Call], **policy: object) -> tuple[cs.AgentLoop, SequenceAdapter, FakeSleep]:
    sleep = FakeSleep()
    adapter = SequenceAdapter(calls)
    loop = cs.AgentLoop(adapter, retry=cs.RetryPolicy(seed=7, sleep=sleep, **policy))  # type: ignore[arg-type]
    return loop, adapter, sleep


async def test_a_429_with_retry_after_2_waits_2_seconds_then_succeeds() -> None:
    loop, adapter, sleep = loop_with(
        [Call(error=llm_error("RATE_LIMIT", status=429, retry_after_ms=2000)), Call(text_reply("ok"))]
    )
    run = loop.run("hi", model="m")
    events = [e async for e in run]
    result = run.result
    assert result is not None and result.ok and result.text == "ok"
    assert sleep.waits == [2.0]
    retry = next(e for e in events if isinstance(e, RetryScheduled))
    assert (retry.delay_ms, retry.error.code, retry.from_retry_after, retry.retry) == (
        2000,
        "RATE_LIMIT",
        True,
        1,
    )
    assert len(adapter.calls) == 2 and len(result.steps[0].attempts) == 2
    assert [u.final for u in result.usage] == [False, True]


async def test_auth_is_not_retried() -> None:
    loop, adapter, sleep = loop_with([Call(error=llm_error("AUTH", status=401)), Call(text_reply("never"))])
    result = await loop.run("hi", model="m")
    assert result.outcome == "error" and result.error is not None and result.error.code == "AUTH"
    assert result.error.status == 401
    assert len(adapter.calls) == 1 and sleep.waits == [] and result.retries == []


async def test_server_five_times_then_gives_up_with_the_last_error_kept() -> None:
    errors = [LlmError(f"server {i}", "SERVER", status=500 + i, request_id=f"req-{i}") for i in range(6)]
    loop, adapter, sleep = loop_with([Call(error=e) for e in errors], max_retries=5)
    result = await loop.run("hi", model="m")
    assert len(adapter.calls) == 6 and len(sleep.waits) == 5
    assert result.outcome == "error" and result.error is errors[5]
    assert (result.error.status, result.error.request_id) == (505, "req-5")
    assert [r.retry for r in result.retries] == [1, 2, 3, 4, 5]
    # exponential backoff within the jitter band: 500, 1000, 2000, 4000, 8000 ms ± 10%
    for delay, base in zip((r.delay_ms for r in result.retries), (500, 1000, 2000, 4000, 8000), strict=True):
        assert base * 0.9 <= delay <= base * 1.1


async def test_the_same_seed_gives_the_same_delays() -> None:
    def delays() -> list[float]:
        policy = cs.RetryPolicy(seed=42)
        return [policy.local_delay_ms(n) for n in range(1, 6)]

    assert delays() == delays()


async def test_always_mode_goes_on_until_success() -> None:
    calls = [Call(error=llm_error(code)) for code in ("AUTH", "QUOTA", "INVALID_REQUEST")] * 4
    loop, adapter, sleep = loop_with([*calls, Call(text_reply("finally"))], mode="always")
    result = await loop.run("hi", model="m")
    assert result.ok and result.text == "finally" and len(adapter.calls) == 13 and len(sleep.waits) == 12
    assert max(sleep.waits) <= 10.0  # capped at max_delay_ms


async def test_always_mode_goes_on_until_abort() -> None:
    controller = AbortController()
    sleep = FakeSleep()

    async def counting_sleep(seconds: float) -> None:
        await sleep(seconds)
        if len(sleep.waits) == 20:
            controller.abort("enough")

    loop = cs.AgentLoop(
        SequenceAdapter([Call(error=llm_error("AUTH"))]),
        retry=cs.RetryPolicy(mode="always", sleep=counting_sleep),
    )
    result = await loop.run("hi", model="m", signal=controller.signal)
    assert result.aborted and result.error is not None and result.error.code == "ABORTED"
    assert len(sleep.waits) == 20


async def test_an_abort_during_a_backoff_wait_ends_at_once() -> None:
    controller = AbortController()
    blocking = FakeSleep(block=True)  # a wait that would never end by itself
    loop = cs.AgentLoop(
        SequenceAdapter([Call(error=llm_error("SERVER"))]), retry=cs.RetryPolicy(sleep=blocking, seed=1)
    )
    run = loop.run("hi", model="m", signal=controller.signal)
    seen = []

    async def consume() -> None:
        async for event in run:
            seen.append(event)
            if isinstance(event, RetryScheduled):
                asyncio.get_running_loop().call_soon(controller.abort, "stop")

    await asyncio.wait_for(consume(), 5)  # the wait itself would never end
    assert run.result is not None and run.result.aborted
    retry = next(e for e in seen if isinstance(e, RetryScheduled))
    assert blocking.waits == [pytest.approx(retry.delay_ms / 1000)]  # the one wait, cut short
    assert isinstance(seen[-1], LoopEnd)


async def test_no_retry_once_a_chunk_reached_the_consumer() -> None:
    loop, adapter, sleep = loop_with([Call(PARTIAL, llm_error("SERVER")), Call(text_reply("second"))])
    result = await loop.run("hi", model="m")
    assert result.outcome == "error" and len(adapter.calls) == 1 and sleep.waits == []
    assert result.steps[0].result.text == "half"  # the partial output stays available


async def test_restart_after_output_is_opt_in_and_announces_the_discarded_output() -> None:
    loop, _adapter, _sleep = loop_with(
        [Call(PARTIAL, llm_error("SERVER")), Call(text_reply("second"))], restart_after_output=True
    )
    run = loop.run("hi", model="m")
    events = [e async for e in run]
    discarded = [e for e in events if isinstance(e, OutputDiscarded)]
    assert len(discarded) == 1 and discarded[0].chunks == 2
    assert run.result is not None and run.result.ok and run.result.text == "second"


async def test_an_in_band_empty_response_finish_is_retried() -> None:
    empty = [
        {
            "type": "finish",
            "reason": {"kind": "error", "failure": {"message": "empty", "code": "EMPTY_RESPONSE"}},
        }
    ]
    loop, _adapter, _sleep = loop_with([Call(empty), Call(text_reply("ok"))], restart_after_output=True)
    result = await loop.run("hi", model="m")
    assert result.ok and result.retries[0].error.code == "EMPTY_RESPONSE"


def test_invalid_policies_are_refused_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="maxRetries must be a non-negative safe integer"):
        cs.RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError, match="initialDelayMs must be less than or equal to maxDelayMs"):
        cs.RetryPolicy(initial_delay_ms=20, max_delay_ms=10)


@pytest.mark.parametrize("retry", [1, 2, 1024, 1025, 1026, 10**6, 10**18])
def test_backoff_never_overflows_however_many_retries_always_mode_made(retry: int) -> None:
    # 2.0 ** 1024 overflows a float: "always" mode used to end in an OverflowError at retry 1025.
    policy = cs.RetryPolicy(mode="always", initial_delay_ms=500, max_delay_ms=10_000, jitter=0.1)
    decision = policy.decide(LlmError("down", "SERVER"), retry - 1, sample=1.0)
    assert decision is not None and decision.retry == retry
    expected = {1: 550.0, 2: 1100.0}.get(retry, 10_000.0)  # from retry 6 on: the cap
    assert decision.delay_ms == pytest.approx(expected)
    assert 0 < policy.local_delay_ms(retry, sample=0.0) <= 10_000


def test_a_tiny_initial_delay_still_grows_past_retry_1024() -> None:
    policy = cs.RetryPolicy(mode="always", initial_delay_ms=1e-300, max_delay_ms=10_000, jitter=0)
    assert policy.local_delay_ms(1000, sample=0.5) == pytest.approx(1e-300 * 2.0**999)
    assert policy.local_delay_ms(1030, sample=0.5) == 10_000
