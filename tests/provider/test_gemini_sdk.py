"""The local provider's Gemini wire judged by the official ``google-genai`` SDK, offline.

The SDK is pointed at the provider (``HttpOptions(base_url=provider.url)``) and streams every
reply scenario with ``client.aio.models.generate_content_stream``; our ``GeminiAdapter`` streams
the same scenario. Both must agree on the text, the reasoning, the tool calls and the usage.
Where the SDK forgives a fault (it has no notion of a stream's end), the test says so.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from google import genai
from google.genai import errors, types

import chunkscope as cs
from chunkscope.protocol import StreamResult, collect
from chunkscope.provider import SCENARIOS, LocalProvider

API_KEY = "AIza-sdk-test-key-0123456789"
PROMPT = "Hi there, provider"
REPLIES = sorted(name for name, s in SCENARIOS.items() if not s.fault)


def sdk(provider: LocalProvider) -> genai.Client:
    return genai.Client(api_key=API_KEY, http_options=types.HttpOptions(base_url=provider.url))


def _set(target: dict[str, Any], path: str, value: Any, append: bool) -> None:
    """Apply one ``partialArgs`` patch to ``target`` (a test's own reading: names and indexes)."""
    keys: list[Any] = [
        int(k) if k.isdigit() else k for k in path[2:].replace("[", ".").replace("]", "").split(".")
    ]
    node: Any = target
    for key, following in itertools.pairwise(keys):
        if isinstance(node, list):
            while len(node) <= key:
                node.append([] if isinstance(following, int) else {})
            node = node[key]
        else:
            node = node.setdefault(key, [] if isinstance(following, int) else {})
    last = keys[-1]
    if isinstance(node, list):
        while len(node) <= last:
            node.append(None)
    if append and isinstance(node[last] if isinstance(node, list) else node.get(last), str):
        node[last] += value
    else:
        node[last] = value


async def sdk_reply(provider: LocalProvider, model: str) -> dict[str, Any]:
    """What the SDK streams for ``model``: text, reasoning, calls (name, args), the last usage."""
    text, reasoning, calls = [], [], []
    usage: Any = None
    streamed: dict[str, Any] | None = None
    async for chunk in await sdk(provider).aio.models.generate_content_stream(model=model, contents=PROMPT):
        usage = chunk.usage_metadata or usage
        for part in chunk.candidates[0].content.parts or []:  # type: ignore[index, union-attr]
            if part.text:
                (reasoning if part.thought else text).append(part.text)
            call = part.function_call
            if call is None:
                continue
            if call.partial_args or call.will_continue:  # the SDK hands the patches out as they are
                if call.name:
                    streamed = {"name": call.name, "args": {}}
                    calls.append(streamed)
                assert streamed is not None
                for patch in call.partial_args or []:
                    value = patch.string_value
                    if value is None:
                        value = patch.number_value if patch.number_value is not None else patch.bool_value
                    _set(streamed["args"], patch.json_path or "$", value, patch.string_value is not None)
            elif call.name:
                calls.append({"name": call.name, "args": call.args or {}})
    cached = usage.cached_content_token_count
    thoughts = usage.thoughts_token_count
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "calls": [(c["name"], c["args"]) for c in calls],
        "usage": (
            usage.prompt_token_count - (cached or 0),
            usage.candidates_token_count + (thoughts or 0),
            cached,
            thoughts,
        ),
    }


async def ours(provider: LocalProvider, model: str) -> StreamResult:
    async with cs.GeminiAdapter(provider.url, API_KEY) as adapter:
        return await collect(
            adapter.stream(cs.GenerateOptions("google", model, [{"role": "user", "content": PROMPT}]))
        )


@pytest.mark.parametrize("model", REPLIES)
async def test_the_sdk_and_our_adapter_read_the_same_reply(provider: LocalProvider, model: str) -> None:
    # short versions, to stay fast
    model = {"long": "long-30", "stall-recovers": "stall-recovers-20"}.get(model, model)
    theirs, mine = await sdk_reply(provider, model), await ours(provider, model)
    assert mine.error is None and mine.usage is not None
    assert (mine.text, mine.reasoning) == (theirs["text"], theirs["reasoning"])
    assert [(t.name, json.loads(t.arguments)) for t in mine.tool_calls] == theirs["calls"]
    usage = mine.usage
    assert (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.reasoning_tokens,
    ) == theirs["usage"]


async def test_partial_args_assembled_by_the_sdk_reader_are_the_arguments_we_stream(
    provider: LocalProvider,
) -> None:
    theirs = await sdk_reply(provider, "dialect-partial-args")
    [(name, args)] = theirs["calls"]
    assert name == "get_forecast" and args["units"] == {"temp": "celsius", "wind": "km/h"}
    assert args["alerts"] == ["rain", None]


async def test_the_sdk_reads_a_non_streaming_answer_as_we_do(provider: LocalProvider) -> None:
    answer = await sdk(provider).aio.models.generate_content(model="reasoning-text-tools", contents=PROMPT)
    parts = answer.candidates[0].content.parts  # type: ignore[index, union-attr]
    assert [p.text for p in parts if p.thought] == ["Two lookups needed."]  # type: ignore[union-attr]
    assert [p.function_call.name for p in parts if p.function_call] == ["get_weather", "get_time"]  # type: ignore[union-attr]
    assert answer.candidates[0].finish_reason == types.FinishReason.STOP  # type: ignore[index]


@pytest.mark.parametrize(
    ("model", "status", "sdk_status", "code"),
    [
        ("fault-401", 401, "UNAUTHENTICATED", "AUTH"),
        ("fault-402", 402, "RESOURCE_EXHAUSTED", "QUOTA"),
        ("fault-429", 429, "RESOURCE_EXHAUSTED", "RATE_LIMIT"),
        ("fault-500", 500, "INTERNAL", "SERVER"),
        ("fault-context", 400, "INVALID_ARGUMENT", "CONTEXT_WINDOW_EXCEEDED"),
    ],
)
async def test_status_faults_are_the_sdks_api_errors_and_our_codes(
    provider: LocalProvider, model: str, status: int, sdk_status: str, code: str
) -> None:
    with pytest.raises(errors.APIError) as raised:
        async for _ in await sdk(provider).aio.models.generate_content_stream(model=model, contents=PROMPT):
            pass
    assert (raised.value.code, raised.value.status) == (status, sdk_status)
    mine = await ours(provider, model)
    assert mine.error is not None and (mine.error.code, mine.error.status) == (code, status)


async def test_the_in_stream_error_object_is_a_server_error_for_both(provider: LocalProvider) -> None:
    text = []
    with pytest.raises(errors.ServerError) as raised:
        async for chunk in await sdk(provider).aio.models.generate_content_stream(
            model="fault-in-stream-error", contents=PROMPT
        ):
            text.append(chunk.text or "")
    assert raised.value.status == "UNAVAILABLE" and "".join(text) == "Hello!"
    mine = await ours(provider, "fault-in-stream-error")
    assert mine.error is not None and mine.error.code == "SERVER" and mine.text == "Hello!"


@pytest.mark.parametrize(
    ("model", "code"),
    [("fault-truncated", "STREAM_CLOSED"), ("fault-cut-before-usage", "STREAM_CLOSED")],
)
async def test_a_stream_cut_before_its_finish_reason_the_sdk_forgives(
    provider: LocalProvider, model: str, code: str
) -> None:
    # The SDK yields each event as it comes and has no notion of a stream's end (Gemini has no
    # end marker), so a body that stops before any finishReason reads to it as a short reply.
    chunks = [
        c async for c in await sdk(provider).aio.models.generate_content_stream(model=model, contents=PROMPT)
    ]
    assert all(c.candidates[0].finish_reason is None for c in chunks)  # type: ignore[index]
    mine = await ours(provider, model)
    assert mine.error is not None and mine.error.code == code
    assert mine.text == "".join(c.text or "" for c in chunks)


@pytest.mark.parametrize(
    ("model", "reason", "code"),
    [
        ("fault-content-filter", types.FinishReason.SAFETY, "CONTENT_FILTER"),
        ("fault-empty", types.FinishReason.STOP, "EMPTY_RESPONSE"),
    ],
)
async def test_in_band_stops_the_sdk_reports_as_a_finish_reason_we_report_as_error_finishes(
    provider: LocalProvider, model: str, reason: types.FinishReason, code: str
) -> None:
    # The SDK raises nothing here: the finishReason is data for the caller to read.
    chunks = [
        c async for c in await sdk(provider).aio.models.generate_content_stream(model=model, contents=PROMPT)
    ]
    assert chunks[-1].candidates[0].finish_reason == reason  # type: ignore[index]
    mine = await ours(provider, model)
    assert mine.error is None and mine.finish is not None and mine.finish.failure is not None
    assert mine.finish.failure.code == code


async def test_the_sdk_refuses_the_malformed_event_as_we_do(provider: LocalProvider) -> None:
    with pytest.raises(Exception) as raised:
        async for _ in await sdk(provider).aio.models.generate_content_stream(
            model="fault-malformed", contents=PROMPT
        ):
            pass
    assert isinstance(raised.value, (ValueError, errors.APIError))
    mine = await ours(provider, "fault-malformed")
    assert mine.error is not None and mine.error.code == "MALFORMED_RESPONSE" and mine.text == "Hello!"


async def test_the_key_reaches_the_provider_in_its_header_only(provider: LocalProvider) -> None:
    before = provider.requests[-1].number if provider.requests else 0
    await ours(provider, "text")
    [sent] = [r for r in provider.requests if r.number > before]
    assert sent.path == "/v1beta/models/text:streamGenerateContent" and sent.model == "text"
    assert sent.headers["x-goog-api-key"] == "<redacted>"
