"""A count a wire sends as 0 is 0 everywhere it is shown or stored: the chunk, the frame, the span,
Parquet. Only a count the wire did not send is absent (``<NA>``). Every wire, through its real
adapter against the local provider, which answers the ``zero-counts`` model below with usage that
reports 0 cache reads and 0 reasoning tokens in each wire's own fields."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

import chunkscope as cs
from chunkscope.adapters import GenerateOptions
from chunkscope.adapters.wires import WIRES
from chunkscope.protocol import collect
from chunkscope.provider import LocalProvider
from chunkscope.provider import _scenarios as scenarios

ZERO = "zero-counts"


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    text = scenarios.SCENARIOS["text"]
    script = replace(text.script(), usage=scenarios.WireUsage(prompt=12, completion=8, cached=0, reasoning=0))
    zero = replace(text, name=ZERO, _build=lambda prompt: script)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(scenarios.SCENARIOS, ZERO, zero)
        with LocalProvider() as served:
            yield served


@pytest.mark.parametrize("wire", list(WIRES))
async def test_a_count_sent_as_zero_is_zero_in_the_chunk_the_frame_the_span_and_parquet(
    provider: LocalProvider, wire: str, tmp_path: Path
) -> None:
    row = WIRES[wire]
    reasoning_sent = row.facts.reasoning_tokens  # Bedrock's usage has no reasoning field: not sent
    async with row.adapter(base_url=row.base_url(provider.url), api_key="sk-local") as adapter:  # type: ignore[call-arg]
        options = GenerateOptions(row.facts.provider, ZERO, [{"role": "user", "content": "hi"}])
        result = await collect(adapter.stream(options))
    assert result.error is None, result.error
    (usage_chunk,) = [c for c in result.chunks if c.type == "usage"]
    assert usage_chunk.usage.cache_read_tokens == 0
    assert usage_chunk.usage.reasoning_tokens == (0 if reasoning_sent else None)

    log = cs.UsageLog()
    log.record(result, provider=row.facts.provider, model=ZERO)
    frame = log.to_frame()
    stored = cs.read_parquet(cs.to_parquet(frame, tmp_path / "usage"))
    for shown in (frame, stored):
        assert shown["cache_read_tokens"].tolist() == [0]
        assert shown["reasoning_tokens"].isna().tolist() == [not reasoning_sent]
        if reasoning_sent:
            assert shown["reasoning_tokens"].tolist() == [0]
        assert shown["cache_hit_rate"].tolist() == [0.0]  # a known 0%, not an unknown rate

    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    cs.to_otel(frame, tracer)
    (span,) = exporter.get_finished_spans()
    assert span.attributes is not None
    assert span.attributes[gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 0
