"""OpenTelemetry GenAI spans: ``cs.otel_sink`` (live) and ``cs.to_otel`` (replay), read back from the SDK.

Spans go to the SDK's ``InMemorySpanExporter``, metrics to its ``InMemoryMetricReader``;
one test sends them over OTLP/HTTP to a receiver on 127.0.0.1 that decodes the protobuf.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes, server_attributes
from opentelemetry.trace import SpanKind, StatusCode
from usage_helpers import StepClock, text_chunks

import chunkscope as cs
from chunkscope.adapters import AbortController, GenerateOptions, OpenAICompatAdapter, ScriptedAdapter
from chunkscope.protocol import LlmError, UsageSink, collect
from chunkscope.provider import LocalProvider
from chunkscope.usage import OTEL_ATTRIBUTES, UsageLog, otel_sink, to_otel

KEY = "sk-otel-test-SECRET-4242"
USAGE = {
    "inputTokens": 100,
    "outputTokens": 20,
    "cacheReadTokens": 900,
    "cacheWriteTokens": 50,
    "reasoningTokens": 5,
}
NS = 1_000_000_000


class Telemetry:
    """A tracer provider and a meter provider that keep everything in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def sink(self, **kwargs: Any) -> cs.usage.OtelSink:
        return otel_sink(self.tracer_provider, self.meter_provider, **kwargs)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def metrics(self) -> dict[str, list[Any]]:
        data = self.reader.get_metrics_data()
        out: dict[str, list[Any]] = {}
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    out.setdefault(metric.name, []).extend(metric.data.data_points)
        return out


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    telemetry = Telemetry()
    yield telemetry
    telemetry.tracer_provider.shutdown()
    telemetry.meter_provider.shutdown()


def chat_spans(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return [s for s in spans if s.attributes and s.attributes.get(gen_ai.GEN_AI_OPERATION_NAME) == "chat"]


async def test_one_chat_span_per_attempt_with_inclusive_counts_at_the_attempts_real_times(
    otel: Telemetry,
) -> None:
    sink = otel.sink(servers={"deepseek": "https://api.deepseek.com/v1"})
    assert isinstance(sink, UsageSink)
    result = await collect(
        text_chunks(usage=USAGE), log=sink, provider="deepseek", model="deepseek-chat", clock=StepClock(0.25)
    )
    (span,) = otel.spans()
    a = dict(span.attributes or {})
    assert span.name == "chat deepseek-chat" and span.kind is SpanKind.CLIENT
    assert a[gen_ai.GEN_AI_OPERATION_NAME] == "chat"
    assert a[gen_ai.GEN_AI_PROVIDER_NAME] == "deepseek"
    assert a[gen_ai.GEN_AI_REQUEST_MODEL] == a[gen_ai.GEN_AI_RESPONSE_MODEL] == "deepseek-chat"
    # inclusive input: 100 uncached + 900 read + 50 written
    assert a[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] == 1050
    assert a[gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS] == 20
    assert a[gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 900
    assert a[gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] == 50
    assert a[gen_ai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] == 5
    assert tuple(a[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS]) == ("stop",)  # type: ignore[arg-type]
    server = (a[server_attributes.SERVER_ADDRESS], a[server_attributes.SERVER_PORT])
    assert server == ("api.deepseek.com", 443)
    assert error_attributes.ERROR_TYPE not in a
    assert gen_ai.GEN_AI_OUTPUT_MESSAGES not in a  # contents are opt-in
    timings = result.timings
    assert timings.started_at is not None
    assert span.start_time == int(timings.started_at * NS)
    assert span.end_time is not None and span.end_time - span.start_time == int(timings.total_s * NS)
    assert a[gen_ai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] == timings.first_chunk_s == 0.25


async def test_the_metrics_are_token_usage_duration_and_time_to_first_chunk(otel: Telemetry) -> None:
    sink = otel.sink()
    results = [
        await collect(text_chunks(usage=USAGE), log=sink, provider="p", model="m", clock=StepClock(0.25))
        for _ in range(2)
    ]
    found = otel.metrics()
    tokens = {p.attributes[gen_ai.GEN_AI_TOKEN_TYPE]: p for p in found["gen_ai.client.token.usage"]}
    assert (tokens["input"].sum, tokens["input"].count) == (2100, 2)
    assert (tokens["output"].sum, tokens["output"].count) == (40, 2)
    (duration,) = found["gen_ai.client.operation.duration"]
    assert duration.count == 2 and duration.sum == pytest.approx(sum(r.timings.total_s for r in results))
    (ttfc,) = found["gen_ai.client.operation.time_to_first_chunk"]
    assert ttfc.count == 2 and ttfc.sum == pytest.approx(0.5)
    assert duration.attributes[gen_ai.GEN_AI_PROVIDER_NAME] == "p"


async def test_protocol_violations_become_span_events_at_the_offending_chunk(otel: Telemetry) -> None:
    chunks = [
        {"type": "text-delta", "index": 0, "text": "orphan"},  # no block-start: a violation at chunk 0
        *text_chunks(usage=USAGE),
    ]
    result = await collect(chunks, log=otel.sink(), provider="p", model="m", clock=StepClock(0.25))
    assert result.violations
    (span,) = otel.spans()
    events = [e for e in span.events if e.name == "chunkscope.violation"]
    assert len(events) == len(result.violations)
    for event, violation in zip(events, result.violations, strict=True):
        attributes = dict(event.attributes or {})
        assert attributes["chunkscope.violation.rule"] == violation.rule
        assert attributes["chunkscope.violation.message"] == violation.message
        assert attributes["chunkscope.violation.severity"] == violation.severity
        if violation.position is not None:
            assert attributes["chunkscope.violation.position"] == violation.position
            offset = result.timings.chunk_times[violation.position]
            assert event.timestamp == span.start_time + int(offset * NS)  # type: ignore[operator]
    assert events[0].attributes["chunkscope.violation.position"] == 0  # type: ignore[index]


async def test_a_stream_that_broke_an_error_rule_is_an_error_span_named_by_its_first_rule(
    otel: Telemetry,
) -> None:
    """Phoenix and every backend list error spans by status: a stream that broke the protocol is
    one, its first error-severity rule the description; its violations stay events. A warning alone
    (no usage) leaves the span healthy, and so does its replay from the frame."""
    broken = [{"type": "text-delta", "index": 0, "text": "orphan"}, *text_chunks(usage=USAGE)]
    log = UsageLog()
    result = await collect(broken, log=otel.sink(), provider="p", model="m")
    log.record(result, provider="p", model="m")
    first = next(v for v in result.violations if v.severity == "error")
    warned = await collect(text_chunks(usage=None), log=otel.sink(), provider="p", model="w")
    log.record(warned, provider="p", model="w")
    assert warned.violations and all(v.severity == "warning" for v in warned.violations)
    live = {s.name: s for s in otel.spans()}
    assert live["chat m"].status.status_code is StatusCode.ERROR
    assert live["chat m"].status.description == first.rule
    assert error_attributes.ERROR_TYPE not in (live["chat m"].attributes or {})  # no LlmError code: none
    events = [e for e in live["chat m"].events if e.name == "chunkscope.violation"]
    assert len(events) == len(result.violations)
    assert live["chat w"].status.status_code is StatusCode.UNSET
    otel.exporter.clear()
    to_otel(log.to_frame(), otel.tracer_provider)
    replayed = {s.name: s for s in otel.spans()}
    assert replayed["chat m"].status.status_code is StatusCode.ERROR
    assert replayed["chat w"].status.status_code is StatusCode.UNSET


async def test_an_error_is_error_type_the_llm_error_code_and_an_error_status(otel: Telemetry) -> None:
    adapter = ScriptedAdapter(text_chunks()[:2], error=LlmError("slow down", "RATE_LIMIT", status=429))
    options = GenerateOptions("scripted", "m", [{"role": "user", "content": "hi"}])
    await collect(adapter.stream(options), log=otel.sink(), provider="scripted", model="m")
    (span,) = otel.spans()
    assert (span.attributes or {})[error_attributes.ERROR_TYPE] == "RATE_LIMIT"
    assert span.status.status_code is StatusCode.ERROR and span.status.description == "RATE_LIMIT"
    (duration,) = otel.metrics()["gen_ai.client.operation.duration"]
    assert duration.attributes[error_attributes.ERROR_TYPE] == "RATE_LIMIT"


async def test_capture_content_is_the_opt_in_for_the_output_messages(otel: Telemetry) -> None:
    await collect(text_chunks("the answer"), log=otel.sink(capture_content=True), provider="p", model="m")
    (span,) = otel.spans()
    messages = (span.attributes or {})[gen_ai.GEN_AI_OUTPUT_MESSAGES]
    assert isinstance(messages, str) and "the answer" in messages and '"role": "assistant"' in messages


def tool_then_answer() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    call = [
        {"type": "block-start", "index": 0, "blockType": "tool-call", "id": "c1", "name": "add"},
        {"type": "tool-call-delta", "index": 0, "argumentsDelta": '{"a": 1, "b": 2}'},
        {
            "type": "block-end",
            "index": 0,
            "block": {"type": "tool-call", "id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'},
        },
        {"type": "usage", "usage": {"inputTokens": 10, "outputTokens": 3}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ]
    return call, text_chunks("3", usage={"inputTokens": 20, "outputTokens": 1})


class TwoSteps(ScriptedAdapter):
    """A tool call on the first stream, the answer on the second."""

    def __init__(self) -> None:
        first, second = tool_then_answer()
        super().__init__(first)
        self.second = ScriptedAdapter(second)

    def stream(self, options: GenerateOptions) -> Any:
        if self.calls:  # the first stream has run (and recorded its call): answer now
            self.calls.append(options)
            return self.second.stream(options)
        return super().stream(options)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_the_agent_loop_nests_attempts_under_step_spans_under_an_invoke_agent_span(
    otel: Telemetry,
) -> None:
    loop = cs.AgentLoop(TwoSteps(), [add], log=otel.sink())
    result = await loop.run("1+2?", model="m").finish()
    assert result.ok and len(result.steps) == 2
    spans = otel.spans()
    (run,) = [s for s in spans if s.name == "invoke_agent"]
    steps = sorted((s for s in spans if s.name.startswith("step ")), key=lambda s: s.name)
    chats = chat_spans(spans)
    assert [s.name for s in steps] == ["step 1", "step 2"] and len(chats) == 2
    assert (run.attributes or {})[gen_ai.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert run.parent is None
    assert run.context is not None
    for step, chat in zip(steps, sorted(chats, key=lambda s: s.start_time or 0), strict=True):
        assert step.parent is not None and step.parent.span_id == run.context.span_id
        assert chat.parent is not None and step.context is not None
        assert chat.parent.span_id == step.context.span_id
        assert chat.context is not None and chat.context.trace_id == run.context.trace_id
        assert step.start_time <= chat.start_time and chat.end_time <= step.end_time  # type: ignore[operator]
    assert [(c.attributes or {})[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] for c in chats] == [10, 20]
    # the steps' own tools ran inside step 1's span, and the run spans them all
    assert run.start_time <= steps[0].start_time and steps[1].end_time <= run.end_time  # type: ignore[operator]


def failing_add() -> Any:
    def add(a: int, b: int) -> int:  # the name the model calls
        """Add two numbers (and fail)."""
        raise ArithmeticError("no adding today")

    return add


@pytest.mark.parametrize(("tool", "failure"), [(add, None), (failing_add(), "ArithmeticError")])
async def test_each_tool_run_is_an_execute_tool_span_under_its_step(
    otel: Telemetry, tool: Any, failure: str | None
) -> None:
    """The GenAI conventions' ``execute_tool`` span: the tool's name and call id, under the step
    whose answer asked for it, within its time; a tool that failed is an error span naming the
    failure's kind (never its text)."""
    loop = cs.AgentLoop(TwoSteps(), [tool], log=otel.sink())
    result = await loop.run("1+2?", model="m").finish()
    assert len(result.steps) == 2
    spans = otel.spans()
    (step1,) = [s for s in spans if s.name == "step 1"]
    (run_tool,) = [s for s in spans if s.name.startswith("execute_tool")]
    attributes = dict(run_tool.attributes or {})
    assert run_tool.name == "execute_tool add" and attributes[gen_ai.GEN_AI_OPERATION_NAME] == "execute_tool"
    assert attributes[gen_ai.GEN_AI_TOOL_NAME] == "add" and attributes[gen_ai.GEN_AI_TOOL_CALL_ID] == "c1"
    assert attributes[gen_ai.GEN_AI_TOOL_TYPE] == "function"
    assert step1.context is not None and run_tool.parent is not None
    assert run_tool.parent.span_id == step1.context.span_id
    assert step1.start_time <= run_tool.start_time <= run_tool.end_time <= step1.end_time  # type: ignore[operator]
    if failure is None:
        assert run_tool.status.status_code is StatusCode.UNSET
    else:
        assert run_tool.status.status_code is StatusCode.ERROR
        assert attributes[error_attributes.ERROR_TYPE] == failure
        assert "no adding today" not in str(attributes) and run_tool.status.description == failure


async def test_a_usage_log_still_works_in_the_agent_loop_and_replays_with_the_same_nesting(
    otel: Telemetry,
) -> None:
    log = UsageLog()
    await cs.AgentLoop(TwoSteps(), [add], log=log).run("1+2?", model="m").finish()
    frame = log.to_frame()
    assert len(frame) == 2
    assert to_otel(frame, otel.tracer_provider) == 2 + 2 + 1
    spans = otel.spans()
    (run,) = [s for s in spans if s.name == "invoke_agent"]
    chats = sorted(chat_spans(spans), key=lambda s: s.start_time or 0)
    steps = {s.context.span_id: s for s in spans if s.name.startswith("step ")}  # type: ignore[union-attr]
    for chat, (_, row) in zip(chats, frame.sort_values("started_at").iterrows(), strict=True):
        # the original times, to the microsecond the frame keeps
        assert chat.start_time == row["started_at"].value
        assert chat.end_time == chat.start_time + int(row["duration_s"] * NS)  # type: ignore[operator]
        assert chat.parent is not None and steps[chat.parent.span_id].parent.span_id == run.context.span_id  # type: ignore[union-attr]


async def test_to_otel_replays_a_frame_with_the_live_sinks_attributes(otel: Telemetry) -> None:
    live = Telemetry()
    log = UsageLog()
    for target in (log, live.sink()):
        await collect(text_chunks(usage=USAGE), log=target, provider="deepseek", model="m", clock=StepClock())
    assert to_otel(log.to_frame(), otel.tracer_provider) == 1
    (replayed,) = otel.spans()
    (original,) = live.spans()
    genai = {k: v for k, v in (original.attributes or {}).items() if k.startswith(("gen_ai.", "error."))}
    assert {k: v for k, v in (replayed.attributes or {}).items() if k in genai} == genai
    with pytest.raises(ValueError, match="disjoint"):
        to_otel(cs.to_inclusive(log.to_frame()), otel.tracer_provider)
    with pytest.raises(TypeError, match="usage frame"):
        to_otel([1, 2], otel.tracer_provider)
    broken = log.to_frame().astype({"tags": object})
    broken.loc[0, "tags"] = "not json"
    with pytest.raises(ValueError, match="not a JSON object"):
        to_otel(broken, otel.tracer_provider)


def test_the_frame_attribute_table_uses_the_conventions_names() -> None:
    assert OTEL_ATTRIBUTES["billed_input_tokens"] == gen_ai.GEN_AI_USAGE_INPUT_TOKENS
    assert OTEL_ATTRIBUTES["output_tokens"] == gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
    assert OTEL_ATTRIBUTES["cache_read_tokens"] == gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS
    assert OTEL_ATTRIBUTES["cache_write_tokens"] == gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
    assert OTEL_ATTRIBUTES["reasoning_tokens"] == gen_ai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS
    assert OTEL_ATTRIBUTES["provider"] == gen_ai.GEN_AI_PROVIDER_NAME
    assert OTEL_ATTRIBUTES["finish"] == gen_ai.GEN_AI_RESPONSE_FINISH_REASONS
    assert OTEL_ATTRIBUTES["error_code"] == error_attributes.ERROR_TYPE


def everything_exported(spans: list[ReadableSpan]) -> str:
    parts: list[str] = []
    for span in spans:
        parts += [span.name, repr(dict(span.attributes or {})), repr(span.status.description)]
        parts += [repr((e.name, dict(e.attributes or {}))) for e in span.events]
    return "\n".join(parts)


async def test_no_credential_reaches_a_span_not_from_the_config_the_request_id_or_the_abort_reason(
    otel: Telemetry,
) -> None:
    sink = otel.sink(servers={"deepseek": f"http://user:{KEY}@127.0.0.1:9/v1"})
    with LocalProvider() as provider:
        async with OpenAICompatAdapter(provider.base_url, KEY, idle_timeout=20.0) as adapter:
            for model in ("text", "fault-429", "fault-401"):
                options = GenerateOptions("deepseek", model, [{"role": "user", "content": "hi"}])
                await collect(adapter.stream(options), log=sink, provider="deepseek", model=model)
            controller = AbortController()
            options = GenerateOptions(
                "deepseek", "slow-tokens", [{"role": "user", "content": "hi"}], signal=controller.signal
            )
            stream = adapter.stream(options)

            async def abort_after_first() -> Any:
                async for chunk in stream:
                    controller.abort(f"stop, key {KEY}")
                    yield chunk

            await collect(abort_after_first(), log=sink, provider="deepseek", model="slow-tokens")
    scripted = ScriptedAdapter(
        text_chunks()[:1],
        error=LlmError("failed", "SERVER", status=500, request_id=f"req-{KEY}", cause=RuntimeError(KEY)),
    )
    options = GenerateOptions("scripted", "m", [{"role": "user", "content": "hi"}])
    await collect(scripted.stream(options), log=sink, provider="deepseek", model="m")
    spans = otel.spans()
    assert len(spans) == 5
    codes = [(s.attributes or {}).get(error_attributes.ERROR_TYPE) for s in spans]
    assert codes == [None, "RATE_LIMIT", "AUTH", "ABORTED", "SERVER"]
    exported = everything_exported(spans)
    assert KEY not in exported and "SECRET" not in exported
    assert (spans[0].attributes or {})[server_attributes.SERVER_ADDRESS] == "127.0.0.1"
    to_otel(UsageLog().to_frame(), otel.tracer_provider)  # an empty frame replays as nothing
    assert len(otel.spans()) == 5


class _Receiver(BaseHTTPRequestHandler):
    requests: list[ExportTraceServiceRequest]
    paths: list[str]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.requests.append(request)
        self.paths.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # keep the test output clean
        pass


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in any_value.array_value.values)
    return getattr(any_value, kind)


async def test_end_to_end_over_otlp_http_to_a_loopback_receiver(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy"):  # a proxy set in the environment must not see the spans
        monkeypatch.setenv(name, "127.0.0.1")
    handler = type("Receiver", (_Receiver,), {"requests": [], "paths": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        provider = TracerProvider()
        endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=10)))
        sink = otel_sink(provider, MeterProvider())
        chunks = [{"type": "text-delta", "index": 0, "text": "x"}, *text_chunks(usage=USAGE)]
        # SimpleSpanProcessor: the span is POSTed as the attempt is recorded
        await collect(chunks, log=sink, provider="deepseek", model="deepseek-chat")
        provider.force_flush(10_000)
        provider.shutdown()
    finally:
        server.shutdown()
        server.server_close()
    assert handler.paths == ["/v1/traces"]
    (request,) = handler.requests
    (resource_spans,) = request.resource_spans
    (scope_spans,) = resource_spans.scope_spans
    assert scope_spans.scope.name == "chunkscope"
    assert scope_spans.schema_url == "https://opentelemetry.io/schemas/1.44.0"
    (span,) = scope_spans.spans
    attributes = {a.key: _value(a.value) for a in span.attributes}
    assert span.name == "chat deepseek-chat"
    assert attributes[gen_ai.GEN_AI_OPERATION_NAME] == "chat"
    assert attributes[gen_ai.GEN_AI_PROVIDER_NAME] == "deepseek"
    assert attributes[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] == 1050
    assert attributes[gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS] == 20
    assert attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    event = next(e for e in span.events if e.name == "chunkscope.violation")
    event_attributes = {a.key: _value(a.value) for a in event.attributes}
    assert event_attributes["chunkscope.violation.position"] == 0
    assert event_attributes["chunkscope.violation.rule"]


def test_the_example_in_docs_usage_md_runs() -> None:
    from usage_helpers import doc_examples, run_doc_example

    examples = doc_examples("OpenTelemetry spans")
    assert examples, "the OpenTelemetry section has no example"
    run_doc_example(examples[0])


async def test_batch_and_a_runtime_take_the_sink_as_their_log(otel: Telemetry) -> None:
    sink = otel.sink()
    adapter = ScriptedAdapter(text_chunks(usage={"inputTokens": 5, "outputTokens": 1}))
    requests = [GenerateOptions("scripted", "m", [{"role": "user", "content": f"q{n}"}]) for n in range(3)]
    results = await cs.batch(adapter, requests, log=sink)  # type: ignore[arg-type]
    assert [r.error for r in results] == [None] * 3
    runtime = cs.LlmRuntime(log=sink)
    runtime.register_adapter("scripted", adapter)
    await runtime.generate(requests[0])
    spans = chat_spans(otel.spans())
    assert len(spans) == 4
    assert {(s.attributes or {})[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] for s in spans} == {5}


def test_a_session_log_replays_under_one_invoke_agent_span_with_a_span_per_step(
    otel: Telemetry, tmp_path: Path
) -> None:
    from dsh_examples import write_session

    session = cs.read_dsh_session(write_session(tmp_path / "s.jsonl"))
    frame = session.to_frame()
    assert frame["started_at"].notna().all() and len(frame) == 4  # three steps, one retried
    assert to_otel(session, otel.tracer_provider) == 4 + 3 + 1
    spans = otel.spans()
    (run,) = [s for s in spans if s.name == "invoke_agent"]
    assert (run.attributes or {})[gen_ai.GEN_AI_AGENT_ID] == session.id
    steps = {s.context.span_id: s for s in spans if s.name.startswith("step ")}  # type: ignore[union-attr]
    assert sorted(s.name for s in steps.values()) == ["step 1.1", "step 2.1", "step 2.2"]
    chats = chat_spans(spans)
    assert len(chats) == 4
    for chat in chats:
        assert chat.parent is not None and chat.parent.span_id in steps
        step = steps[chat.parent.span_id]
        assert step.start_time <= chat.start_time and chat.end_time <= step.end_time  # type: ignore[operator]
    errors = [(c.attributes or {}).get(error_attributes.ERROR_TYPE) for c in chats]
    assert sum(code is not None for code in errors) == 1  # the failed attempt keeps its code


async def test_an_aborted_agent_run_ends_every_span_it_opened_with_the_abort_code(otel: Telemetry) -> None:
    controller = AbortController()

    async def no_wait(seconds: float) -> None:  # the pauses pass at once: only the order matters
        await asyncio.sleep(0)

    adapter = ScriptedAdapter(text_chunks("a long answer"), delay=1.0, sleep=no_wait)
    run = cs.AgentLoop(adapter, log=otel.sink()).run("go", model="m", signal=controller.signal)
    async for event in run:
        if event.type == "chunk":
            controller.abort(f"stop, key {KEY}")
    assert run.result is not None and run.result.aborted
    spans = otel.spans()
    assert sorted(s.name for s in spans) == ["chat m", "invoke_agent", "step 1"]  # all ended, so exported
    for span in spans:
        assert (span.attributes or {})[error_attributes.ERROR_TYPE] == "ABORTED"
        assert span.status.status_code is StatusCode.ERROR
    assert KEY not in everything_exported(spans)


MEMORY_PROBE = """
import sys, tracemalloc
sys.path.insert(0, {src!r})
from opentelemetry.trace import NoOpTracerProvider
from chunkscope.protocol import StreamResult, Timings, TokenUsage, FinishReason
from chunkscope.usage import UsageLog, to_otel
log = UsageLog()
result = StreamResult(usage=TokenUsage(input_tokens=5, output_tokens=1), finish=FinishReason(kind="stop"),
                      timings=Timings(first_chunk_s=0.1, total_s=0.5, started_at=1_780_000_000.0))
for i in range({rows}):
    log.record(result, provider="p", model="m", tags={{"agent_run": "r", "step": str(i % 50)}})
frame = log.to_frame()
del log
tracemalloc.start()
emitted = to_otel(frame, NoOpTracerProvider())
print(emitted, tracemalloc.get_traced_memory()[1])
"""


@pytest.mark.slow  # ~15 s: 100,000 spans through the no-op tracer
def test_replaying_a_big_frame_keeps_memory_flat() -> None:
    import subprocess
    import sys

    rows = 100_000
    src = str(Path(__file__).resolve().parents[2] / "src")
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE.format(src=src, rows=rows)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    emitted, peak = map(int, done.stdout.split())
    assert emitted == rows + 50 + 1
    # measured: ~38 MiB; every row as a dict at once (the naive replay) peaks at ~140 MiB
    assert peak < 80 * 2**20, f"peak {peak / 2**20:.0f} MiB"


# --- cs.fan_out: one log= for a Parquet-backed log and live spans ----------------------------


async def test_fan_out_gives_a_parquet_log_and_live_spans_the_same_attempts(
    otel: Telemetry, tmp_path: Path
) -> None:
    """The agent loop into ``fan_out(UsageLog(path=...), otel_sink())``: the dataset on disk has a
    row per attempt, the trace has its run, steps, tool and chat spans, and each row's call id is
    its span's."""
    log = UsageLog(path=str(tmp_path / "usage"))
    sink = cs.fan_out(log, otel.sink())
    result = await cs.AgentLoop(TwoSteps(), [add], log=sink).run("1+2?", model="m").finish()
    sink.close()
    assert result.ok and len(result.steps) == 2
    spans = otel.spans()
    assert len([s for s in spans if s.name == "invoke_agent"]) == 1
    assert len([s for s in spans if s.name.startswith("execute_tool")]) == 1
    chats = chat_spans(spans)
    on_disk = cs.read_parquet(str(tmp_path / "usage"))
    assert len(on_disk) == len(log.to_frame()) == len(chats) == 2
    assert sorted(on_disk["call_id"]) == sorted((c.attributes or {})["chunkscope.call_id"] for c in chats)
    assert sorted(on_disk["input_tokens"]) == [10, 20]
    assert repr(sink) == "FanOut(UsageLog, OtelSink)"


class _BrokenSink:
    def record(self, result: Any, **kwargs: Any) -> None:
        raise OSError("disk full")


async def test_a_failing_sink_keeps_no_attempt_from_the_others_and_its_error_is_raised(
    otel: Telemetry,
) -> None:
    log = UsageLog()
    with pytest.raises(OSError, match="disk full"):
        await collect(text_chunks(), log=cs.fan_out(_BrokenSink(), log, otel.sink()), provider="p", model="m")
    assert len(log.to_frame()) == 1 and len(otel.spans()) == 1


async def test_a_batch_through_fan_out_shows_its_progress_on_the_log(otel: Telemetry) -> None:
    log = UsageLog()
    seen: list[tuple[int, int] | None] = []
    log.subscribe(lambda changed: seen.append(changed.progress))
    options = [GenerateOptions("scripted", "m", [{"role": "user", "content": str(n)}]) for n in range(3)]
    await cs.batch(ScriptedAdapter(text_chunks()), options, concurrency=2, log=cs.fan_out(otel.sink(), log))
    assert (3, 3) in seen and len(log.to_frame()) == 3 and len(chat_spans(otel.spans())) == 3


def test_fan_out_takes_only_usage_sinks() -> None:
    with pytest.raises(TypeError, match="at least one usage sink"):
        cs.fan_out()
    with pytest.raises(TypeError, match="not str"):
        cs.fan_out(UsageLog(), "usage.parquet")  # type: ignore[arg-type]
