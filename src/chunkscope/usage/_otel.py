"""OpenTelemetry GenAI spans and metrics: ``otel_sink`` (live, a ``UsageSink``) and ``to_otel`` (replay).

One span per attempt, following the OpenTelemetry GenAI semantic conventions as
published in ``opentelemetry-semantic-conventions`` 0.66b2 (semantic conventions
1.44.0; ``gen_ai.provider.name``, not the older ``gen_ai.system``). Attribute and
metric names come from ``opentelemetry.semconv``; the few the conventions do not
name are ``chunkscope.*``. Token counts are converted from chunkscope's disjoint
input to the conventions' inclusive input in one place, ``_convert.inclusive_input``.
Protocol violations become span events (rule id, chunk position, message), at the
time the offending chunk arrived; a stream that broke a rule of error severity is
also an error span (status ``ERROR``, its first such rule the description), as a
failed one is. The agent loop's tool runs are ``execute_tool`` spans under their
step's span.

Never in an attribute: credentials, error messages, request ids, abort reasons
(``error.type`` is the ``LlmError`` code alone) and, unless ``capture_content=True``
(the conventions' opt-in), message contents.

Needs the ``otel`` extra.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.semconv.attributes import error_attributes, server_attributes
from opentelemetry.semconv.schemas import Schemas
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from chunkscope.protocol import StreamResult, TokenUsage

from ._convert import inclusive_input

__all__ = ["CONVENTION_VERSION", "OtelSink", "otel_sink", "to_otel"]

CONVENTION_VERSION = "1.44.0"
"""The OpenTelemetry semantic conventions version the spans follow (their ``schema_url``)."""

_SCHEMA_URL = Schemas.V1_44_0.value
_SCOPE = "chunkscope"
_CHAT = gen_ai.GenAiOperationNameValues.CHAT.value
_INVOKE_AGENT = gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value
_EXECUTE_TOOL = gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
_TOKEN_INPUT = gen_ai.GenAiTokenTypeValues.INPUT.value
_TOKEN_OUTPUT = gen_ai.GenAiTokenTypeValues.OUTPUT.value

# Names the conventions do not have (yet).
CALL_ID = "chunkscope.call_id"
ATTEMPT = "chunkscope.attempt"
FINAL = "chunkscope.final"
STEP = "chunkscope.agent.step"
CHUNKS = "chunkscope.chunks"
VIOLATIONS = "chunkscope.violations"
TAG_PREFIX = "chunkscope.tag."
VIOLATION_EVENT = "chunkscope.violation"
RULE = "chunkscope.violation.rule"
SEVERITY = "chunkscope.violation.severity"
POSITION = "chunkscope.violation.position"
MESSAGE = "chunkscope.violation.message"

_NS = 1_000_000_000
_REPLAY_SLICE = 10_000  # rows turned into dicts at a time by to_otel: memory stays flat for any frame
# Tags the agent loop and the session-log reader write: they become span structure, not attributes.
_RUN_TAG = "agent_run"
_STEP_TAG = "step"
_SESSION_TAG = "session"  # a DeepSeek Harness session log's rows: session -> turn -> step
_TURN_TAG = "turn"


def _version() -> str:
    # The instrumentation scope's version; the face (chunkscope.__version__) is not this layer's to import.
    try:
        return importlib.metadata.version("chunkscope")
    except importlib.metadata.PackageNotFoundError:
        return ""


def _tracer(tracer_provider: trace.TracerProvider | None) -> trace.Tracer:
    return trace.get_tracer(_SCOPE, _version() or None, tracer_provider, schema_url=_SCHEMA_URL)


def _server(target: Any) -> tuple[str, int | None] | None:
    """``(host, port)`` of a base URL or an adapter with ``base_url``; user and password never kept."""
    url = getattr(target, "base_url", target)
    if not isinstance(url, str) or not url:
        return None
    try:
        parts = urlsplit(url if "//" in url else f"//{url}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if host is None:
        return None
    if port is None and parts.scheme in ("http", "https"):
        port = 443 if parts.scheme == "https" else 80
    return host, port


def _result_attributes(result: StreamResult, attributes: dict[str, Any]) -> None:
    """The span attributes an attempt's result gives: its finish, time to first chunk, chunk
    and violation counts."""
    if result.finish is not None:
        attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] = (result.finish.kind,)
    first = result.timings.first_chunk_s
    if first is not None:
        attributes[gen_ai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = first
    attributes[CHUNKS] = result.chunk_count  # a windowed stream's dropped chunks too
    if result.violations:
        attributes[VIOLATIONS] = len(result.violations)


def _usage_attributes(usage: TokenUsage | None, out: dict[str, Any]) -> tuple[int | None, int | None]:
    """Add the usage attributes to ``out``; return the inclusive input and the output count."""
    if usage is None:
        return None, None
    return _count_attributes(
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.reasoning_tokens,
        out,
    )


def _count_attributes(
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read: int | None,
    cache_write: int | None,
    reasoning: int | None,
    out: dict[str, Any],
) -> tuple[int | None, int | None]:
    inclusive = inclusive_input(input_tokens, cache_read, cache_write)
    if inclusive is not None:
        out[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] = inclusive
    if output_tokens is not None:
        out[gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS] = output_tokens
    if cache_read is not None:
        out[gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = cache_read
    if cache_write is not None:
        out[gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = cache_write
    if reasoning is not None:
        out[gen_ai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = reasoning
    return inclusive, output_tokens


def _output_messages(result: StreamResult) -> str:
    """The conventions' ``gen_ai.output.messages`` JSON (only with ``capture_content``)."""
    parts: list[dict[str, Any]] = []
    if result.reasoning:
        parts.append({"type": "reasoning", "content": result.reasoning})
    if result.text:
        parts.append({"type": "text", "content": result.text})
    for call in result.tool_calls:
        parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments})
    finish = result.finish.kind if result.finish is not None else None
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": finish}], ensure_ascii=False)


class _Run:
    __slots__ = ("span", "steps")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.steps: dict[str, Span] = {}


class OtelSink:
    """A ``UsageSink`` that emits one OpenTelemetry GenAI ``chat`` span per attempt, and the metrics.

    Made by ``cs.otel_sink(...)``; use it wherever a ``UsageLog`` goes
    (``collect(..., log=)``, ``show``, ``batch``, ``LlmRuntime(log=)``,
    ``AgentLoop(log=)``). The agent loop's attempts nest under an
    ``invoke_agent`` span and one span per step (the loop tells the sink when
    runs and steps start and end). ``servers`` maps a provider name to its base
    URL or adapter, for ``server.address`` / ``server.port``.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        *,
        capture_content: bool = False,
        servers: Mapping[str, Any] | None = None,
    ) -> None:
        self.capture_content = capture_content
        self._tracer = _tracer(tracer_provider)
        meter = metrics.get_meter(_SCOPE, _version(), meter_provider, schema_url=_SCHEMA_URL)
        self._token_usage = gen_ai_metrics.create_gen_ai_client_token_usage(meter)
        self._duration = gen_ai_metrics.create_gen_ai_client_operation_duration(meter)
        self._ttfc = gen_ai_metrics.create_gen_ai_client_operation_time_to_first_chunk(meter)
        self._servers: dict[str, tuple[str, int | None]] = {}
        for provider, target in (servers or {}).items():
            found = _server(target)
            if found is not None:
                self._servers[provider] = found
        self._lock = threading.Lock()
        self._runs: dict[str, _Run] = {}

    def __repr__(self) -> str:
        return f"OtelSink(capture_content={self.capture_content}, open_runs={len(self._runs)})"

    # --- UsageSink ------------------------------------------------------------------

    def record(
        self,
        result: StreamResult,
        *,
        provider: str,
        model: str,
        tags: Mapping[str, str] | None = None,
        call_id: str | None = None,
        attempt: int = 1,
        final: bool = True,
    ) -> str:
        """Emit the attempt's span (at its real start and end) and its metrics; return its call id."""
        if call_id is None:
            call_id = uuid.uuid4().hex[:16]
        timings = result.timings
        total_ns = int(timings.total_s * _NS)
        started_at = timings.started_at
        start = int(started_at * _NS) if started_at is not None else time.time_ns() - total_ns
        error_code = result.error_code
        common = _chat_attributes(provider, model, self._servers.get(provider), error_code)
        attributes = dict(common)
        inclusive, output = _usage_attributes(result.usage, attributes)
        _result_attributes(result, attributes)
        first = timings.first_chunk_s
        attributes[CALL_ID] = call_id
        attributes[ATTEMPT] = attempt
        attributes[FINAL] = final
        parent = self._parent(tags, attributes)
        if self.capture_content:
            attributes[gen_ai.GEN_AI_OUTPUT_MESSAGES] = _output_messages(result)
        span = self._tracer.start_span(
            f"{_CHAT} {model}", parent, SpanKind.CLIENT, attributes, start_time=start
        )
        _add_violation_events(span, result, start)
        broken = next((v.rule for v in result.violations if v.severity == "error"), None)
        if error_code is not None:
            span.set_status(Status(StatusCode.ERROR, error_code))
        elif broken is not None:  # a stream that breaks the protocol is no healthy call
            span.set_status(Status(StatusCode.ERROR, broken))
        span.end(end_time=start + total_ns)
        self._record_metrics(common, timings.total_s, first, inclusive, output)
        return call_id

    def _record_metrics(
        self,
        common: dict[str, Any],
        duration_s: float,
        first: float | None,
        inclusive: int | None,
        output: int | None,
    ) -> None:
        """An attempt's duration, time to first chunk and input/output tokens, on the GenAI metrics."""
        self._duration.record(duration_s, common)
        if first is not None:
            self._ttfc.record(first, common)
        if inclusive is not None:
            self._token_usage.record(inclusive, {**common, gen_ai.GEN_AI_TOKEN_TYPE: _TOKEN_INPUT})
        if output is not None:
            self._token_usage.record(output, {**common, gen_ai.GEN_AI_TOKEN_TYPE: _TOKEN_OUTPUT})

    def _parent(self, tags: Mapping[str, str] | None, attributes: dict[str, Any]) -> Context | None:
        """The open agent step's context for an agent-loop attempt; other tags become attributes."""
        if not tags:
            return None
        parent = None
        run_id = tags.get(_RUN_TAG)
        if run_id is not None:
            with self._lock:
                run = self._runs.get(run_id)
                step = run.steps.get(tags.get(_STEP_TAG, "")) if run is not None else None
            if step is not None:
                parent = trace.set_span_in_context(step)
        for key, value in tags.items():
            attributes[TAG_PREFIX + key] = value
        return parent

    def set_progress(self, done: int, total: int) -> None:
        """``batch`` reports its progress to its log; a trace has no progress bar, so it is dropped."""

    # --- the agent loop's hooks (duck-typed: the runtime never imports this layer) -----------

    def agent_run_started(self, run_id: str, *, provider: str, model: str) -> None:
        """Open the ``invoke_agent`` span of run ``run_id``."""
        attributes: dict[str, Any] = {
            gen_ai.GEN_AI_OPERATION_NAME: _INVOKE_AGENT,
            gen_ai.GEN_AI_PROVIDER_NAME: provider,
            gen_ai.GEN_AI_REQUEST_MODEL: model,
            gen_ai.GEN_AI_AGENT_ID: run_id,
            gen_ai.GEN_AI_CONVERSATION_ID: run_id,
        }
        span = self._tracer.start_span(_INVOKE_AGENT, None, SpanKind.INTERNAL, attributes)
        with self._lock:
            self._runs[run_id] = _Run(span)

    def agent_step_started(self, run_id: str, step: int) -> None:
        """Open step ``step``'s span under the run's span."""
        with self._lock:
            run = self._runs.get(run_id)
        if run is None:
            return
        span = self._tracer.start_span(
            f"step {step}", trace.set_span_in_context(run.span), SpanKind.INTERNAL, {STEP: step}
        )
        with self._lock:
            run.steps[str(step)] = span

    def agent_step_ended(self, run_id: str, step: int, *, error_code: str | None = None) -> None:
        """Close step ``step``'s span (after its tools ran)."""
        with self._lock:
            run = self._runs.get(run_id)
            span = run.steps.pop(str(step), None) if run is not None else None
        if span is not None:
            _end(span, error_code)

    def agent_tool_ran(
        self,
        run_id: str,
        step: int,
        *,
        name: str,
        call_id: str,
        duration_s: float,
        error_type: str | None = None,
    ) -> None:
        """An ``execute_tool`` span (GenAI conventions) under step ``step``'s span, ending now.

        ``error_type`` (the failure's kind, never its text) makes it an error span.
        """
        with self._lock:
            run = self._runs.get(run_id)
            step_span = run.steps.get(str(step)) if run is not None else None
        if step_span is None:
            return
        attributes: dict[str, Any] = {
            gen_ai.GEN_AI_OPERATION_NAME: _EXECUTE_TOOL,
            gen_ai.GEN_AI_TOOL_NAME: name,
            gen_ai.GEN_AI_TOOL_CALL_ID: call_id,
            gen_ai.GEN_AI_TOOL_TYPE: "function",
            STEP: step,
        }
        end = time.time_ns()
        span = self._tracer.start_span(
            f"{_EXECUTE_TOOL} {name}",
            trace.set_span_in_context(step_span),
            SpanKind.INTERNAL,
            attributes,
            start_time=end - int(max(duration_s, 0.0) * _NS),
        )
        _end(span, error_type, end_time=end)

    def agent_run_ended(self, run_id: str, *, outcome: str, error_code: str | None = None) -> None:
        """Close the run's span (and any step a cancellation left open)."""
        with self._lock:
            run = self._runs.pop(run_id, None)
        if run is None:
            return
        for span in run.steps.values():
            _end(span, error_code)
        run.span.set_attribute("chunkscope.agent.outcome", outcome)
        _end(run.span, error_code)


def _end(span: Span, error_code: str | None, end_time: int | None = None) -> None:
    if error_code is not None:
        span.set_attribute(error_attributes.ERROR_TYPE, error_code)
        span.set_status(Status(StatusCode.ERROR, error_code))
    span.end(end_time=end_time)


def otel_sink(
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: metrics.MeterProvider | None = None,
    *,
    capture_content: bool = False,
    servers: Mapping[str, Any] | None = None,
) -> OtelSink:
    """A ``UsageSink`` emitting OpenTelemetry GenAI spans and metrics (the global providers when None).

    ``capture_content`` (off by default, the conventions' opt-in) adds the
    output messages as ``gen_ai.output.messages``; ``servers`` maps a provider
    name to its base URL or adapter (``server.address`` / ``server.port``).
    """
    return OtelSink(tracer_provider, meter_provider, capture_content=capture_content, servers=servers)


# --- replay ------------------------------------------------------------------------------


def _value(row: Mapping[str, Any], name: str) -> Any:
    value = row.get(name)
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return value


def _int(row: Mapping[str, Any], name: str) -> int | None:
    value = _value(row, name)
    return None if value is None else int(value)


def _structure(tags: Mapping[str, str]) -> tuple[str, str] | None:
    """A row's ``(run, step)``: the loop's ``agent_run`` / ``step``, a session log's session / turn.step."""
    if _RUN_TAG in tags:
        return tags[_RUN_TAG], tags.get(_STEP_TAG, "")
    if _SESSION_TAG in tags:
        return tags[_SESSION_TAG], f"{tags.get(_TURN_TAG, '')}.{tags.get(_STEP_TAG, '')}"
    return None


def to_otel(
    frame: Any,
    tracer_provider: trace.TracerProvider | None = None,
    *,
    servers: Mapping[str, Any] | None = None,
) -> int:
    """Replay a usage frame (or anything with ``to_frame()``, e.g. a ``DshSession``) as spans.

    One ``chat`` span per row at the row's own ``started_at`` and
    ``duration_s``, with the same attributes ``otel_sink`` writes (violations as
    a count: a frame keeps no violation details). Rows tagged ``agent_run`` /
    ``step`` nest under an ``invoke_agent`` span and step spans spanning their
    attempts (a session log's rows: under one ``invoke_agent`` span per session
    and one span per turn and step). Rows without a start time are skipped.
    Returns the spans emitted.
    """
    frame = _usage_frame(frame)
    tracer = _tracer(tracer_provider)
    known = {provider: found for provider, target in (servers or {}).items() if (found := _server(target))}
    n = len(frame)
    if n == 0 or "started_at" not in frame.columns:
        return 0
    # Pass 1, column-wise (no row dicts held): every row's start and end, and its run and step.
    valid, start_ns, end_ns = _row_times(frame)
    tags_of = _TagsReader(frame["tags"].tolist() if "tags" in frame.columns else [None] * n)
    runs, steps = _structure_bounds(valid, tags_of, start_ns, end_ns)
    emitted = 0
    run_spans, step_spans = _open_structure(tracer, runs, steps)
    # Pass 2, a slice of rows at a time: the spans themselves.
    for first in range(0, n, _REPLAY_SLICE):
        records = frame.iloc[first : first + _REPLAY_SLICE].to_dict("records")
        for j, row in enumerate(records, start=first):
            if valid[j]:
                tags = tags_of(j)
                _replay_row(tracer, row, tags, int(start_ns[j]), int(end_ns[j]), known, step_spans)
                emitted += 1
    return emitted + _end_structure(run_spans, step_spans, runs, steps)


def _usage_frame(frame: Any) -> pd.DataFrame:
    """``frame`` as a usage frame of disjoint counts (a session log through its ``to_frame()``)."""
    if not isinstance(frame, pd.DataFrame) and callable(getattr(frame, "to_frame", None)):
        frame = frame.to_frame()
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"to_otel needs a usage frame or a session log, not {type(frame).__name__}")
    if frame.attrs.get("token_convention") == "inclusive":
        raise ValueError("to_otel needs the frame's disjoint counts (this one went through to_inclusive)")
    return frame


def _row_times(frame: pd.DataFrame) -> tuple[Any, Any, Any]:
    """Which rows have a start time, and every row's start and end in ns since the epoch."""
    started = pd.to_datetime(frame["started_at"], utc=True)
    valid = started.notna().to_numpy()
    start_ns = started.dt.as_unit("ns").array.asi8
    if "duration_s" in frame.columns:
        duration = np.nan_to_num(frame["duration_s"].to_numpy(dtype=float, na_value=np.nan), nan=0.0)
    else:
        duration = np.zeros(len(frame))
    return valid, start_ns, start_ns + (duration * _NS).astype(np.int64)


class _TagsReader:
    """Row ``j``'s tags from their JSON text; each distinct text is parsed once."""

    def __init__(self, texts: list[Any]) -> None:
        self._texts = texts
        self._parsed: dict[Any, dict[str, str]] = {}

    def __call__(self, j: int) -> dict[str, str]:
        text = self._texts[j]
        found = self._parsed.get(text)
        if found is None:
            try:
                found = json.loads(text) if isinstance(text, str) and text else {}
            except ValueError:
                found = None
            if not isinstance(found, dict):
                raise ValueError(f"to_otel: a row's tags are not a JSON object: {str(text)[:80]!r}")
            self._parsed[text] = found
        return found


def _structure_bounds(
    valid: Any, tags_at: Callable[[int], dict[str, str]], start_ns: Any, end_ns: Any
) -> tuple[dict[str, list[int]], dict[tuple[str, str], list[int]]]:
    """The ``[start, end]`` in ns of each agent run and step: from its rows' first start to last end."""
    runs: dict[str, list[int]] = {}
    steps: dict[tuple[str, str], list[int]] = {}
    for j in np.flatnonzero(valid).tolist():
        step_key = _structure(tags_at(j))
        if step_key is None:
            continue
        start, end = int(start_ns[j]), int(end_ns[j])
        for bounds in (runs.setdefault(step_key[0], [start, end]), steps.setdefault(step_key, [start, end])):
            bounds[0], bounds[1] = min(bounds[0], start), max(bounds[1], end)
    return runs, steps


def _open_structure(
    tracer: trace.Tracer, runs: Mapping[str, list[int]], steps: Mapping[tuple[str, str], list[int]]
) -> tuple[dict[str, Span], dict[tuple[str, str], Span]]:
    """An ``invoke_agent`` span per run and a span per step under it, each opened at its first start."""
    run_spans: dict[str, Span] = {}
    for run_id, (start, _end_ns) in runs.items():
        run_spans[run_id] = tracer.start_span(
            _INVOKE_AGENT,
            None,
            SpanKind.INTERNAL,
            {gen_ai.GEN_AI_OPERATION_NAME: _INVOKE_AGENT, gen_ai.GEN_AI_AGENT_ID: run_id},
            start_time=start,
        )
    step_spans: dict[tuple[str, str], Span] = {}
    for (run_id, step), (start, _end_ns) in steps.items():
        step_spans[(run_id, step)] = tracer.start_span(
            f"step {step}",
            trace.set_span_in_context(run_spans[run_id]),
            SpanKind.INTERNAL,
            {STEP: int(step)} if step.isdigit() else {},
            start_time=start,
        )
    return run_spans, step_spans


def _end_structure(
    run_spans: Mapping[str, Span],
    step_spans: Mapping[tuple[str, str], Span],
    runs: Mapping[str, list[int]],
    steps: Mapping[tuple[str, str], list[int]],
) -> int:
    """End every step span, then every run span, at its last row's end; return how many were ended."""
    for step_key, step_span in step_spans.items():
        step_span.end(end_time=steps[step_key][1])
    for run_id, run_span in run_spans.items():
        run_span.end(end_time=runs[run_id][1])
    return len(step_spans) + len(run_spans)


def _replay_row(
    tracer: trace.Tracer,
    row: Mapping[str, Any],
    tags: Mapping[str, str],
    start: int,
    end: int,
    known: Mapping[str, tuple[str, int | None]],
    step_spans: Mapping[tuple[str, str], Span],
) -> None:
    """One frame row as its ``chat`` span (the attributes ``OtelSink.record`` writes)."""
    provider = str(_value(row, "provider") or "unknown")
    model = str(_value(row, "model") or "unknown")
    found_code = _value(row, "error_code")
    error_code = None if found_code is None else str(found_code)
    attributes = _chat_attributes(provider, model, known.get(provider), error_code)
    _count_attributes(
        _int(row, "input_tokens"),
        _int(row, "output_tokens"),
        _int(row, "cache_read_tokens"),
        _int(row, "cache_write_tokens"),
        _int(row, "reasoning_tokens"),
        attributes,
    )
    _row_outcome(row, attributes)
    _row_attempt(row, attributes)
    for key, value in tags.items():
        attributes[TAG_PREFIX + key] = str(value)
    structure = _structure(tags)
    parent_span = step_spans.get(structure) if structure is not None else None
    parent = trace.set_span_in_context(parent_span) if parent_span is not None else None
    span = tracer.start_span(f"{_CHAT} {model}", parent, SpanKind.CLIENT, attributes, start_time=start)
    broken = _int(row, "violations")
    if error_code is None and broken:  # a frame keeps the count of error-severity findings, not their rules
        span.set_status(Status(StatusCode.ERROR, f"{broken} protocol violation{'s' if broken > 1 else ''}"))
    _end(span, error_code, end)


def _row_outcome(row: Mapping[str, Any], attributes: dict[str, Any]) -> None:
    """A row's finish, first-chunk time and rule findings (violations and warnings, one count)."""
    finish = _value(row, "finish")
    if finish is not None:
        attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] = (str(finish),)
    ttfc = _value(row, "ttfc_s")
    if ttfc is not None:
        attributes[gen_ai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = float(ttfc)
    violations = _int(row, "violations")
    warnings = _int(row, "warnings")
    if violations or warnings:
        attributes[VIOLATIONS] = (violations or 0) + (warnings or 0)


def _row_attempt(row: Mapping[str, Any], attributes: dict[str, Any]) -> None:
    """A row's call id, attempt number, chunk count and final flag."""
    for column, name in (("call_id", CALL_ID), ("attempt", ATTEMPT), ("chunks", CHUNKS)):
        value = _value(row, column)
        if value is not None:
            attributes[name] = value if isinstance(value, str) else int(value)
    final = _value(row, "final")
    if final is not None:
        attributes[FINAL] = bool(final)


def _chat_attributes(
    provider: str, model: str, server: tuple[str, int | None] | None, error_code: str | None
) -> dict[str, Any]:
    """The attributes a ``chat`` span shares with its metrics: operation, provider, model, server, error."""
    attributes: dict[str, Any] = {
        gen_ai.GEN_AI_OPERATION_NAME: _CHAT,
        gen_ai.GEN_AI_PROVIDER_NAME: provider,
        gen_ai.GEN_AI_REQUEST_MODEL: model,
        # The protocol carries no separate response model: the adapter's model is the one that answered.
        gen_ai.GEN_AI_RESPONSE_MODEL: model,
    }
    if server is not None:
        attributes[server_attributes.SERVER_ADDRESS] = server[0]
        if server[1] is not None:
            attributes[server_attributes.SERVER_PORT] = server[1]
    if error_code is not None:
        attributes[error_attributes.ERROR_TYPE] = error_code
    return attributes


def _add_violation_events(span: Span, result: StreamResult, start: int) -> None:
    """One event per violation on ``span``, at its chunk's time (the stream's end for a stream-wide one)."""
    timings = result.timings
    chunk_times = timings.chunk_times
    for violation in result.violations:
        at = violation.position
        offset = chunk_times[at] if at is not None and 0 <= at < len(chunk_times) else timings.total_s
        event: dict[str, Any] = {
            RULE: violation.rule,
            SEVERITY: violation.severity,
            MESSAGE: violation.message,
        }
        if at is not None:
            event[POSITION] = at
        span.add_event(VIOLATION_EVENT, event, timestamp=start + int(offset * _NS))
