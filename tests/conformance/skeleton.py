"""The source text's ``HttpAdapter`` skeleton, translated to Python: it yields only a ``finish``.

Faithful to the original: POST ``{model, messages}`` to the endpoint with the
attribution headers merged in, the caller's signal passed to the request (an
abort cancels it, and the request fails as ``fetch`` does, with a plain
``AbortError``), a non-2xx becomes ``LlmError`` ``PROVIDER_HTTP_ERROR``, and
then "a real adapter parses the response body here": it does not.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import httpx

from chunkscope.adapters import AbortSignal, GenerateOptions, LlmAdapter, attribution_headers
from chunkscope.protocol import LlmError


class AbortError(Exception):
    """What ``fetch`` rejects with when its signal aborts (a DOMException, not an LlmError)."""


async def _with_signal(
    request: Coroutine[Any, Any, httpx.Response], signal: AbortSignal | None
) -> httpx.Response:
    task = asyncio.ensure_future(request)
    if signal is None:
        return await task
    aborted = asyncio.ensure_future(signal.wait())
    done, _ = await asyncio.wait({task, aborted}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        aborted.cancel()
        return task.result()
    task.cancel()
    raise AbortError("The operation was aborted.")


class HttpAdapter(LlmAdapter):
    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint

    async def stream(self, options: GenerateOptions) -> AsyncIterator[Any]:
        async with httpx.AsyncClient() as client:
            response = await _with_signal(
                client.post(
                    self.endpoint,
                    headers={"content-type": "application/json", **attribution_headers()},
                    json={
                        "model": options.model,
                        "messages": [m.model_dump(mode="json", by_alias=True) for m in options.messages],
                    },
                ),
                options.signal,
            )
        if not response.is_success:
            raise LlmError(f"Provider API error: {response.status_code}", "PROVIDER_HTTP_ERROR")
        # A real adapter parses the response body here and emits the complete chunk sequence.
        yield {"type": "finish", "reason": {"kind": "stop"}}


def make_skeleton(base_url: str, api_key: str) -> HttpAdapter:
    return HttpAdapter(base_url + "/chat/completions")
