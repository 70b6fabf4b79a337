"""The provider records what it received (secrets never), and how each exchange ended."""

from __future__ import annotations

import asyncio
import contextlib

import httpx

from chunkscope.provider import LocalProvider


async def test_a_request_is_recorded_with_its_body_and_headers_but_never_its_key() -> None:
    async with LocalProvider() as provider, httpx.AsyncClient() as client:
        await client.post(
            provider.base_url + "/chat/completions",
            json={"model": "text", "messages": [], "temperature": 0.5},
            headers={"Authorization": "Bearer sk-live-123", "User-Agent": "probe/1 (+https://x)"},
        )
        await client.post(
            provider.url + "/v1/messages",
            json={"model": "text", "messages": []},
            headers={"x-api-key": "sk-ant-456"},
        )
        first, second = provider.requests
    assert (first.number, first.path, first.model, first.status) == (1, "/v1/chat/completions", "text", 200)
    assert first.body["temperature"] == 0.5
    assert first.headers["user-agent"] == "probe/1 (+https://x)"
    assert first.headers["authorization"] == "<redacted>"
    assert second.headers["x-api-key"] == "<redacted>"
    assert "sk-live-123" not in repr(provider.requests) and "sk-ant-456" not in repr(provider.requests)
    assert first.outcome == second.outcome == "complete"


async def test_a_client_that_closes_mid_stream_is_seen_disconnecting_at_once() -> None:
    async with LocalProvider() as provider, httpx.AsyncClient() as client:
        request = client.build_request(
            "POST", provider.base_url + "/chat/completions", json={"model": "fault-stall", "stream": True}
        )
        response = await client.send(request, stream=True)
        # aclosing: a generator left to the garbage collector would close the connection late, elsewhere
        async with contextlib.aclosing(response.aiter_bytes()) as body:
            async for _ in body:
                break  # the two deltas before the 30 s stall
        await response.aclose()
        (record,) = provider.requests
        assert await asyncio.to_thread(record.wait_ended, 5.0)
        assert record.outcome == "disconnected"
        # a pooled connection is reused: the next request comes from the same client port
        await client.post(provider.base_url + "/chat/completions", json={"model": "text"})
        await client.post(provider.base_url + "/chat/completions", json={"model": "text"})
        _, second, third = provider.requests
        assert second.client == third.client != record.client


async def test_a_dropped_connection_is_recorded_as_failed() -> None:
    async with LocalProvider() as provider, httpx.AsyncClient() as client:
        with contextlib.suppress(httpx.HTTPError):
            await client.post(
                provider.base_url + "/chat/completions", json={"model": "fault-drop", "stream": True}
            )
        (record,) = provider.requests
        assert await asyncio.to_thread(record.wait_ended, 5.0)
        assert record.outcome == "failed"
