"""The tap forwards byte for byte and records each call checked, with usage and timings."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from _tap_helpers import ANTHROPIC_AUTH, AUTH, KEY, anthropic_body, normalised, stream_body

import chunkscope as cs
from chunkscope._wires import WIRE_FACTS
from chunkscope.tap import WIRES, Tap, detect_wire


def only_call(tap: Tap) -> cs.tap.TapCall:
    assert len(tap.calls) == 1
    call = tap.calls[0]
    assert call.wait(5)
    return call


@pytest.mark.parametrize("model", ["text", "reasoning-text-tools", "cache-hit"])
def test_openai_stream_bytes_identical_with_and_without_the_tap(
    provider: cs.LocalProvider, tap: Tap, model: str
) -> None:
    body = {**stream_body(model), "stream_options": {"include_usage": True}}
    direct = httpx.post(f"{provider.base_url}/chat/completions", json=body, headers=AUTH)
    through = httpx.post(f"{tap.base_url}/v1/chat/completions", json=body, headers=AUTH)
    assert through.status_code == direct.status_code == 200
    assert normalised(through.content) == normalised(direct.content)
    assert through.headers["content-type"] == direct.headers["content-type"]
    call = only_call(tap)
    assert call.raw == through.content  # what the tap kept is exactly what the client got
    assert call.wire == "openai" and call.model == model and call.streaming
    assert call.result is not None and call.result.ok, call.result
    assert call.result.usage is not None and call.result.usage.output_tokens > 0
    assert len(tap.usage) == 1
    row = tap.usage.to_frame().iloc[0]
    assert row["model"] == model and row["output_tokens"] == call.result.usage.output_tokens
    t = call.timings
    assert t.headers_s is not None and t.first_byte_s is not None and t.first_event_s is not None
    assert t.headers_s <= t.first_byte_s <= t.first_event_s <= (t.first_content_s or 0) <= (t.total_s or 0)


@pytest.mark.parametrize("model", ["text", "reasoning-text-tools"])
def test_anthropic_stream_bytes_identical_with_and_without_the_tap(
    provider: cs.LocalProvider, tap: Tap, model: str
) -> None:
    body = anthropic_body(model)
    direct = httpx.post(f"{provider.url}/v1/messages", json=body, headers=ANTHROPIC_AUTH)
    through = httpx.post(f"{tap.base_url}/v1/messages", json=body, headers=ANTHROPIC_AUTH)
    assert normalised(through.content) == normalised(direct.content)
    call = only_call(tap)
    assert call.raw == through.content
    assert call.wire == "anthropic"
    assert call.result is not None and call.result.ok and call.result.usage is not None


def test_a_non_streaming_call_passes_through_with_its_usage(provider: cs.LocalProvider, tap: Tap) -> None:
    body = stream_body("text", stream=False)
    direct = httpx.post(f"{provider.base_url}/chat/completions", json=body, headers=AUTH)
    through = httpx.post(f"{tap.base_url}/v1/chat/completions", json=body, headers=AUTH)
    assert normalised(through.content) == normalised(direct.content)
    call = only_call(tap)
    assert not call.streaming and call.result is not None and call.result.error is None
    wire_usage = json.loads(through.content)["usage"]
    assert call.result.usage is not None
    assert call.result.usage.output_tokens == wire_usage["completion_tokens"]
    assert call.result.finish is not None and call.result.finish.kind == "stop"
    assert tap.usage.to_frame().iloc[0]["output_tokens"] == wire_usage["completion_tokens"]


def test_a_client_asking_for_gzip_gets_the_plain_body_the_tap_asked_for(tap: Tap) -> None:
    # httpx asks for gzip by default; the tap asks the upstream for identity (so it can mask a key
    # echoed in the body) and whatever the upstream chose reaches the client unchanged.
    with httpx.stream(
        "POST",
        f"{tap.base_url}/v1/chat/completions",
        json=stream_body("text"),
        headers={**AUTH, "accept-encoding": "gzip"},
    ) as response:
        raw = b"".join(response.iter_raw())
    call = only_call(tap)
    assert call.raw == raw
    kept = [name for name, _ in call.response_headers]
    assert ("content-encoding" in response.headers) == ("content-encoding" in kept)
    assert "content-encoding" not in response.headers and call.withheld_encoding is None
    assert call.result is not None and call.result.text


def test_the_recording_replays_with_the_calls_chunks_at_their_times(tap: Tap) -> None:
    httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("slow-tokens"), headers=AUTH)
    call = only_call(tap)
    assert call.recording is not None and call.result is not None
    replay = cs.ReplayAdapter(call.recording, speed=None)
    recording = replay.read()
    assert [c for _, c in recording.entries] == call.result.chunks
    assert [t for t, _ in recording.entries] == pytest.approx(call.result.timings.chunk_times, abs=1e-6)
    options = cs.GenerateOptions(provider="replay", model="slow-tokens", messages=[])
    replayed = asyncio.run(cs.collect(replay.stream(options)))
    assert replayed.text == call.result.text
    assert KEY not in Path(call.recording).read_text()


def test_the_wire_is_detected_by_a_table_or_fixed(provider: cs.LocalProvider) -> None:
    assert [w.name for w in WIRES] == list(WIRE_FACTS)  # every wire of the table, in its order
    assert detect_wire("/v1/chat/completions").name == "openai"  # type: ignore[union-attr]
    assert detect_wire("/chat/completions").name == "openai"  # type: ignore[union-attr]
    assert detect_wire("/v1/messages").name == "anthropic"  # type: ignore[union-attr]
    assert detect_wire("/v1/responses").name == "responses"  # type: ignore[union-attr]
    bedrock = detect_wire("/model/us.anthropic.claude-sonnet-4%3A0/converse-stream")
    assert bedrock is not None and bedrock.name == "bedrock"
    assert bedrock.model_of("/model/us.anthropic.claude-sonnet-4%3A0/converse-stream") == (
        "us.anthropic.claude-sonnet-4:0"
    )
    gemini = detect_wire("/v1beta/models/gemini-2.5-flash:streamGenerateContent")
    assert gemini is not None and gemini.name == "gemini"
    assert gemini.model_of("/v1beta/models/gemini-2.5-flash:streamGenerateContent") == "gemini-2.5-flash"
    assert detect_wire("/v1/models") is None
    with pytest.raises(ValueError, match="unknown wire 'grpc'"):
        Tap(upstream=provider.url, wire="grpc")


def test_an_unknown_path_is_forwarded_unparsed(provider: cs.LocalProvider, tap: Tap) -> None:
    direct = httpx.get(f"{provider.url}/v1/models")
    through = httpx.get(f"{tap.base_url}/v1/models")
    assert through.content == direct.content and through.status_code == 200
    call = only_call(tap)
    assert call.wire is None and call.raw == through.content


def test_calls_are_bounded_and_usage_keeps_every_row(provider: cs.LocalProvider) -> None:
    with Tap(upstream=provider.url, keep_calls=2) as tap:
        for _ in range(3):
            httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("text"), headers=AUTH)
        assert all(call.wait(5) for call in tap.calls)
    assert [call.id for call in tap.calls] == [2, 3]
    assert len(tap.usage) == 3
