"""Usage that does not add up is a finding: each wire's raw counts against its provider's own
definitions (docs/usage.md), reported as USAGE_RULES warnings at the usage chunk, and shown where
violations are shown (the result, the frame, OTel events, ``chunkscope check`` of a tap recording).
The counts themselves stay as the provider sent them."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

import chunkscope as cs
from chunkscope.adapters.anthropic import AnthropicTranslator
from chunkscope.adapters.bedrock.translate import BedrockTranslator
from chunkscope.adapters.gemini import GeminiTranslator
from chunkscope.adapters.openai_compat import OpenAITranslator
from chunkscope.adapters.openai_responses import ResponsesTranslator
from chunkscope.adapters.recording import run_now
from chunkscope.protocol import USAGE_RULES, StreamResult, collect


def _result(chunks: list[Any]) -> StreamResult:
    return run_now(collect(iter(chunks)))


def _findings(result: StreamResult) -> list[tuple[str, str]]:
    return [(v.rule, v.message) for v in result.violations if v.rule in USAGE_RULES]


def chat(usage: dict[str, Any]) -> StreamResult:
    translator = OpenAITranslator()
    chunks: list[Any] = []
    for event in (
        {"choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": usage},
    ):
        chunks += translator.feed(("", json.dumps(event)))
    chunks += translator.feed(("", "[DONE]"))
    return _result(chunks)


def responses(usage: dict[str, Any]) -> StreamResult:
    translator = ResponsesTranslator()
    message = {"type": "message", "id": "m", "role": "assistant", "content": []}
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": message},
        {
            "type": "response.output_text.delta",
            "output_index": 0,
            "content_index": 0,
            "item_id": "m",
            "delta": "Hi",
        },
        {"type": "response.completed", "response": {"status": "completed", "usage": usage}},
    ]
    chunks: list[Any] = []
    for event in events:
        chunks += translator.feed((event["type"], json.dumps(event)))
    return _result(chunks)


def gemini(usage: dict[str, Any]) -> StreamResult:
    translator = GeminiTranslator()
    event = {
        "candidates": [{"content": {"parts": [{"text": "Hi"}]}, "finishReason": "STOP"}],
        "usageMetadata": usage,
    }
    chunks = translator.feed(("message", json.dumps(event))) + translator.end()
    return _result(chunks)


def bedrock(usage: dict[str, Any]) -> StreamResult:
    translator = BedrockTranslator()
    chunks: list[Any] = []
    for name, payload in [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "end_turn"}),
        ("metadata", {"usage": usage}),
    ]:
        chunks += translator.feed_event(name, payload)
    return _result(chunks)


def anthropic(start: dict[str, Any], *deltas: dict[str, Any]) -> StreamResult:
    translator = AnthropicTranslator()
    message = {"id": "msg", "type": "message", "role": "assistant", "content": [], "usage": start}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        *({"type": "message_delta", "delta": {"stop_reason": None}, "usage": d} for d in deltas[:-1]),
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": deltas[-1]},
        {"type": "message_stop"},
    ]
    chunks: list[Any] = []
    for event in events:
        chunks += translator.feed((event["type"], json.dumps(event)))
    return _result(chunks)


# Real usage as each provider sends it (shapes of recorded streams): none of them is a finding.
CLEAN = [
    (
        "deepseek",
        lambda: chat(
            {
                "prompt_tokens": 21,
                "completion_tokens": 264,
                "total_tokens": 285,
                "prompt_tokens_details": {"cached_tokens": 0},
                "prompt_cache_hit_tokens": 0,
                "prompt_cache_miss_tokens": 21,
                "completion_tokens_details": {"reasoning_tokens": 240},
            }
        ),
    ),
    (
        "openai chat",
        lambda: chat(
            {
                "prompt_tokens": 1117,
                "completion_tokens": 46,
                "total_tokens": 1163,
                "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
            }
        ),
    ),
    (
        "xai (reasoning beside the completion, its total says so)",
        lambda: chat(
            {
                "prompt_tokens": 10,
                "completion_tokens": 5,
                "total_tokens": 215,
                "completion_tokens_details": {"reasoning_tokens": 200},
            }
        ),
    ),
    (
        "responses",
        lambda: responses(
            {
                "input_tokens": 36,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 87,
                "output_tokens_details": {"reasoning_tokens": 64},
                "total_tokens": 123,
            }
        ),
    ),
    (
        "gemini 2.5 thinking",
        lambda: gemini(
            {
                "promptTokenCount": 8,
                "candidatesTokenCount": 10,
                "thoughtsTokenCount": 468,
                "totalTokenCount": 486,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 8}],
            }
        ),
    ),
    (
        "gemini cached, tool-use prompt",
        lambda: gemini(
            {
                "promptTokenCount": 2000,
                "cachedContentTokenCount": 1800,
                "candidatesTokenCount": 20,
                "toolUsePromptTokenCount": 30,
                "totalTokenCount": 2050,
            }
        ),
    ),
    (
        "bedrock with prompt caching",
        lambda: bedrock(
            {
                "inputTokens": 11,
                "outputTokens": 271,
                "totalTokens": 1434,
                "cacheReadInputTokens": 1152,
                "cacheWriteInputTokens": 0,
            }
        ),
    ),
    ("bedrock plain", lambda: bedrock({"inputTokens": 10, "outputTokens": 5, "totalTokens": 15})),
    (
        "anthropic",
        lambda: anthropic(
            {
                "input_tokens": 25,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
                "output_tokens": 1,
            },
            {"output_tokens": 15},
        ),
    ),
]


@pytest.mark.parametrize("make", [m for _, m in CLEAN], ids=[name for name, _ in CLEAN])
def test_real_usage_that_adds_up_is_no_finding(make: Any) -> None:
    result = make()
    assert result.ok and result.violations == [] and result.usage is not None


BROKEN = [
    (
        "usage-total",
        "total_tokens 20 is not prompt_tokens 12 + completion_tokens 9 (= 21)",
        lambda: chat({"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 20}),
    ),
    (
        "usage-cached-over-prompt",
        "cached_tokens 30 > prompt_tokens 12",
        lambda: chat(
            {"prompt_tokens": 12, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 30}}
        ),
    ),
    (
        "usage-reasoning-over-output",
        "reasoning_tokens 50 > completion_tokens 9",
        lambda: chat(
            {
                "prompt_tokens": 12,
                "completion_tokens": 9,
                "completion_tokens_details": {"reasoning_tokens": 50},
            }
        ),
    ),
    (
        "usage-cache-split",
        "prompt_cache_hit_tokens 8 + prompt_cache_miss_tokens 8 (= 16) is not prompt_tokens 12",
        lambda: chat(
            {
                "prompt_tokens": 12,
                "completion_tokens": 9,
                "prompt_cache_hit_tokens": 8,
                "prompt_cache_miss_tokens": 8,
            }
        ),
    ),
    (
        "usage-total",
        "total_tokens 100 is not input_tokens 36 + output_tokens 87 (= 123)",
        lambda: responses({"input_tokens": 36, "output_tokens": 87, "total_tokens": 100}),
    ),
    (
        "usage-reasoning-over-output",
        "reasoning_tokens 90 > output_tokens 87",
        lambda: responses(
            {
                "input_tokens": 36,
                "output_tokens": 87,
                "total_tokens": 123,
                "output_tokens_details": {"reasoning_tokens": 90},
            }
        ),
    ),
    (
        "usage-total",
        "totalTokenCount 18 is not promptTokenCount 8 + candidatesTokenCount 10 + thoughtsTokenCount 468 "
        "(= 486)",
        lambda: gemini(
            {
                "promptTokenCount": 8,
                "candidatesTokenCount": 10,
                "thoughtsTokenCount": 468,
                "totalTokenCount": 18,
            }
        ),
    ),
    (
        "usage-cached-over-prompt",
        "cachedContentTokenCount 90 > promptTokenCount 80",
        lambda: gemini(
            {
                "promptTokenCount": 80,
                "cachedContentTokenCount": 90,
                "candidatesTokenCount": 1,
                "totalTokenCount": 81,
            }
        ),
    ),
    (
        "usage-total",
        "totalTokens 99 is not inputTokens 11 + outputTokens 271 + cacheReadInputTokens 1152 (= 1434)",
        lambda: bedrock(
            {"inputTokens": 11, "outputTokens": 271, "totalTokens": 99, "cacheReadInputTokens": 1152}
        ),
    ),
    (
        "usage-decreased",
        "output_tokens went down from 15 to 3",
        lambda: anthropic(
            {"input_tokens": 25, "output_tokens": 1}, {"output_tokens": 15}, {"output_tokens": 3}
        ),
    ),
]


@pytest.mark.parametrize(
    ("rule", "says", "make"), BROKEN, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(BROKEN)]
)
def test_usage_that_contradicts_itself_is_a_warning_naming_the_relation_and_the_numbers(
    rule: str, says: str, make: Any
) -> None:
    result = make()
    ((found, message),) = _findings(result)
    assert found == rule and says in message
    assert [v.severity for v in result.violations] == ["warning"] and result.ok  # a finding, not a failure
    assert cs.check([c.to_dict() for c in result.chunks]) == []  # the JSON keeps the counts as sent


def test_a_finding_reaches_the_frame_and_the_otel_events(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from chunkscope.usage import UsageLog, otel_sink

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    broken = chat({"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 20})
    log = UsageLog()
    run_now(collect(iter(broken.chunks), log=log, provider="deepseek", model="deepseek-chat"))
    run_now(collect(iter(broken.chunks), log=otel_sink(provider), provider="deepseek", model="deepseek-chat"))
    frame = log.to_frame()
    assert frame["warnings"].tolist() == [1] and frame["violations"].tolist() == [0]
    assert frame["input_tokens"].tolist() == [12] and frame["output_tokens"].tolist() == [9]  # as sent
    (span,) = exporter.get_finished_spans()
    events = [dict(e.attributes or {}) for e in span.events]
    assert any(e.get("chunkscope.violation.rule") == "usage-total" for e in events)
    provider.shutdown()


def test_chunkscope_check_of_a_tap_recording_reports_the_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chunkscope.cli import main
    from chunkscope.tap import Tap

    # A real-shaped chat stream whose usage does not add up (total 20, but 12 + 9 = 21).
    events = [
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        },
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 20},
        },
    ]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"

    with cs.LocalProvider() as provider, Tap(upstream=provider.url, record=tmp_path) as tap:
        with httpx.Client(base_url=tap.base_url, timeout=10) as client:
            client.post(
                "/v1/chat/completions",
                json={
                    "model": "text",
                    "messages": [{"role": "user", "content": "hi"}],
                    "stream": True,
                    "stream_options": {"include_usage": True},
                },
                headers={"authorization": "Bearer sk-test-0123456789"},
            )
        assert tap.calls[0].wait(5)
    # The local provider's usage adds up: the recording's one read is swapped for the stream above,
    # as a provider that contradicts itself would have sent it (the header stays the tap's).
    (path,) = tmp_path.glob("*.jsonl")
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    rewritten = [lines[0], json.dumps({"t": 0.01, "read": base64.b64encode(body.encode()).decode()})]
    path.write_text("\n".join(rewritten) + "\n")
    assert header["tap"]["streaming"] is True
    assert main(["check", str(path)]) == 0  # a warning, not an error
    out = capsys.readouterr().out
    assert (
        "usage-total" in out and "total_tokens 20 is not prompt_tokens 12 + completion_tokens 9 (= 21)" in out
    )
    frame = cs.read_recordings(tmp_path)
    assert frame["warnings"].tolist() == [1]


def test_a_finding_is_shown_in_the_timeline_where_it_occurs() -> None:
    from chunkscope.notebook import Timeline

    broken = chat({"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 20})
    timeline = Timeline("usage")
    run_now(timeline.consume(iter(broken.chunks)))
    usage_at = next(n for n, c in enumerate(broken.chunks) if c.type == "usage")
    shown = timeline.static_html()  # the mark on the violations lane, at the usage chunk
    assert f'data-rule="usage-total" data-position="{usage_at}" data-severity="warning"' in shown
    assert "total_tokens 20 is not prompt_tokens 12 + completion_tokens 9 (= 21)" in shown
    assert "usage-total" in json.dumps(timeline.state(), default=str)  # the live widget's state
    assert any(v.rule == "usage-total" and v.position == usage_at for v in timeline.result.violations)
