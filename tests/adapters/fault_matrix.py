"""The fault matrix, reusable by every wire adapter's tests.

Each fault scenario of the local provider (``docs/scenarios.md``) must end
with the documented code for the adapter's wire, within a bounded time (for
``fault-stall`` the idle timeout is set well under its silence, and must not
fire before it is due; every other scenario gets a generous one, so that a
loaded machine cannot turn a slow event into a TIMEOUT), keeping the partial
output sent before the fault (as ``collect`` sees it), with every chunk clean
under the ``strict`` profile, no API key in any error text, and no connection
left open in the client's pool (one whose body was read to its end stays
pooled for reuse).

An adapter's tests use it like this::

    from fault_matrix import FAULTS, run_fault_case

    def factory(provider, client, idle_timeout):
        return MyAdapter(provider.base_url, API_KEY, http_client=client, idle_timeout=idle_timeout)

    @pytest.mark.parametrize("scenario", FAULTS)
    async def test_fault(provider, scenario):
        await run_fault_case(factory, provider, scenario, wire="openai", api_key=API_KEY)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from chunkscope.adapters._base import GenerateOptions, LlmAdapter
from chunkscope.protocol import StreamResult, check, collect
from chunkscope.provider import SCENARIOS, LocalProvider

AdapterFactory = Callable[[LocalProvider, httpx.AsyncClient, float], LlmAdapter]
"""``(provider, http_client, idle_timeout) -> adapter`` talking to that provider through that client."""

FAULTS = sorted(name for name, s in SCENARIOS.items() if s.fault)
REPLIES = sorted(name for name, s in SCENARIOS.items() if not s.fault)


def sdk_readable(replies: list[str], wire: str) -> list[str]:
    """The replies the official SDK of ``wire`` can read: a provider dialect on its own wire is a shape
    the SDK does not know (that is why the adapters read it), so SDK comparisons leave it out."""
    return [name for name in replies if wire not in SCENARIOS[name].wires or SCENARIOS[name].dialect is None]


STALL = "fault-stall"
"""The one scenario whose point is the idle timeout firing."""
STALL_IDLE_TIMEOUT = 0.3
"""Seconds: well under ``fault-stall``'s 30 s of silence."""
IDLE_TIMEOUT = 20.0
"""Seconds, for every other scenario: no pause of a healthy stream comes near it, however loaded."""
TIME_BOUND = 5.0
"""Seconds any fault case may take, the stall included."""


def idle_timeout_for(scenario: str) -> float:
    """The idle timeout a test gives ``scenario``: short only where the timeout is what is tested."""
    return STALL_IDLE_TIMEOUT if scenario == STALL else IDLE_TIMEOUT


IN_BAND = frozenset({"CONTENT_FILTER", "REFUSAL", "EMPTY_RESPONSE"})
"""Codes delivered as an ``error`` finish, not raised."""


def open_connections(client: httpx.AsyncClient) -> list[Any]:
    """The connections of ``client``'s pool that are neither idle nor closed (a leak after a stream)."""
    pool = client._transport._pool  # type: ignore[attr-defined]
    return [c for c in pool.connections if not (c.is_idle() or c.is_closed())]


def pool_size(client: httpx.AsyncClient) -> int:
    """How many connections ``client``'s pool holds (idle ones included)."""
    return len(client._transport._pool.connections)  # type: ignore[attr-defined]


async def cancel_after_first_chunk(stream: AsyncIterator[Any]) -> None:
    """Consume ``stream`` in a task, cancel the task once a chunk arrived; the cancellation propagates."""
    started = asyncio.Event()

    async def consume() -> None:
        async for _ in stream:
            started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), TIME_BOUND)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def assert_no_secret(result: StreamResult, secret: str) -> None:
    """The key appears in no error text: str, repr, the failure's JSON, the cause chain."""
    error = result.error
    texts = [repr(c) for c in result.chunks]
    while error is not None:
        texts += [str(error), repr(error)]
        failure = getattr(error, "failure", None)
        if failure is not None:
            texts.append(failure.model_dump_json())
        error = error.__cause__  # type: ignore[assignment]
    for text in texts:
        assert secret not in text, text


async def run_fault_case(
    factory: AdapterFactory,
    provider: LocalProvider,
    scenario: str,
    *,
    wire: str,
    api_key: str,
    prompt: str = "hello",
) -> StreamResult:
    """Run one fault scenario through a fresh client and assert everything the matrix promises."""
    expected_code = SCENARIOS[scenario].expected_codes[wire]  # type: ignore[index]
    expected = SCENARIOS[scenario].expected_for(prompt)
    idle_timeout = idle_timeout_for(scenario)
    async with httpx.AsyncClient() as client:
        adapter = factory(provider, client, idle_timeout)
        options = GenerateOptions(wire, scenario, [{"role": "user", "content": prompt}])
        start = time.perf_counter()
        result = await collect(adapter.stream(options))
        elapsed = time.perf_counter() - start

        assert result.error_code == expected_code, (scenario, result.error, result.finish)
        if expected_code in IN_BAND:
            assert result.error is None, result.error
            assert result.finish is not None and result.finish.kind == "error"
        else:
            assert result.error is not None and result.error.code == expected_code
        assert elapsed < TIME_BOUND, f"{scenario} took {elapsed:.2f} s"
        if expected_code == "TIMEOUT":
            assert idle_timeout < TIME_BOUND, f"{scenario} expects TIMEOUT: give it a short idle timeout"
            assert elapsed >= idle_timeout, f"{scenario} timed out after {elapsed:.2f} s, too early"
        # the partial output sent before the fault is delivered and kept
        assert result.text == expected.text, (scenario, result.text, expected.text)
        assert result.reasoning == expected.reasoning
        errors = [v for v in check(result.chunks, "strict") if v.severity == "error"]
        if result.error is None:
            assert errors == [], [str(v) for v in errors]
        else:
            # a raised stream has no finish; only end-of-stream rules may complain about that
            assert [v for v in errors if v.position is not None] == [], [str(v) for v in errors]
        assert_no_secret(result, api_key)
        assert open_connections(client) == [], f"{scenario} left a connection open"
        if result.error is None or SCENARIOS[scenario].http_fault is not None:
            # an in-band finish or an error answer: the body was read to its end, the connection kept
            assert pool_size(client) == 1, f"{scenario} dropped a reusable connection"
    return result
