"""Usage-layer benchmarks, side by side in one run.

1. 1,000,000 usage records → DataFrame: ``UsageLog.to_frame()`` (column-wise,
   from typed arrays) against building the same frame row by row,
   ``pd.DataFrame(list_of_dicts)`` — bare, and cast to the same dtypes.
   Targets: to_frame under 1.5 s, and at least 3x faster than row by row.
2. ``summary()`` on those 1,000,000 rows (by provider and model).
3. reading a 100 MB DeepSeek Harness session log (generated at run time)
   against a plain ``json.loads`` loop over its lines; target: within 2x.
4. emitting OpenTelemetry spans per attempt (``otel_sink``) against a plain
   ``UsageLog``; target: at most 20 µs per attempt more.
5. pricing those 1,000,000 rows (four models, start times spread over two
   years, so dated and off-peak prices apply): ``PriceTable.from_genai_prices()``
   against a hand-written table of the same models; target: within 2x.
6. stream cadence (``cs.cadence``): over a usage frame of 1,000,000 timed rows (each attempt's
   largest gap), against the ``to_frame()`` that builds that frame; and over 1,000,000 gaps of
   recorded calls (10,000 calls of 101 chunks, every gap), against recording the same calls
   into a ``UsageLog`` and building its frame. Reported as ratios (cadence time / frame time).
7. the prompt-cache report (``cache_report``) over 10,000 recorded tap calls (conversations
   of 20 turns, a ~1,600-token system prompt that changes per conversation) against building
   the plain usage frame of the same folder (``read_recordings``); the ratio is printed.

Run: ``PYTHONPATH=src python benchmarks/bench_usage.py [--rows N] [--only NAME]``
(``--only cache``: just section 7). Times are
the best of ``--repeat`` runs; the machine may be shared, so compare the ratios.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from chunkscope.protocol import (
    FinishReason,
    LlmError,
    ReasoningBlock,
    StreamResult,
    TextBlock,
    Timings,
    TokenUsage,
)
from chunkscope.usage import COLUMNS, Price, PriceTable, UsageLog, summary

MODELS = [
    ("deepseek", "deepseek-chat"),
    ("deepseek", "deepseek-reasoner"),
    ("anthropic", "claude"),
    ("local", "text"),
]


def results() -> list[StreamResult]:
    """A handful of attempts of every shape, cycled through the records."""
    t = Timings(first_chunk_s=0.21, chunk_times=[], total_s=1.7, started_at=1_780_000_000.0)
    stop = FinishReason(kind="stop")
    return [
        StreamResult(
            blocks=[TextBlock(text="hi")],
            usage=TokenUsage(input_tokens=120, output_tokens=40, cache_read_tokens=7680),
            finish=stop,
            timings=t,
        ),
        StreamResult(
            blocks=[ReasoningBlock(text="hm"), TextBlock(text="ok")],
            usage=TokenUsage(input_tokens=12, output_tokens=300, reasoning_tokens=200),
            finish=stop,
            timings=t,
        ),
        StreamResult(blocks=[TextBlock(text="par")], error=LlmError("dropped", "TRANSPORT"), timings=t),
        StreamResult(error=LlmError("slow down", "RATE_LIMIT", status=429), timings=Timings(total_s=0.05)),
        StreamResult(blocks=[TextBlock(text="x")], finish=stop, timings=t),  # usage missing
    ]


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times = []
    value = None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), value


def fill_log(rows: int) -> tuple[UsageLog, float]:
    prices = PriceTable(
        [Price("*", "deepseek-chat", cache_miss_input=0.27, cache_hit_input=0.07, output=1.1)]
    )
    log = UsageLog(prices=prices)
    shapes = results()
    start = time.perf_counter()
    record = log.record
    n_shapes, n_models = len(shapes), len(MODELS)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unpriced models warn once each
        for i in range(rows):
            provider, model = MODELS[i % n_models]
            record(
                shapes[i % n_shapes],
                provider=provider,
                model=model,
                call_id=f"c{i // 2}",
                attempt=i % 2 + 1,
                final=bool(i % 2),
            )
    return log, time.perf_counter() - start


def as_dicts(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The same rows as plain Python dicts — what a row-by-row collector would have built."""
    columns = {name: frame[name].astype(object).where(frame[name].notna(), None).tolist() for name in frame}
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def row_by_row(rows: list[dict[str, Any]], typed: bool) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    if typed:
        frame = frame.astype({name: dtype for name, dtype in COLUMNS.items() if name != "started_at"})
        frame["started_at"] = pd.to_datetime(frame["started_at"], utc=True).astype(COLUMNS["started_at"])
    return frame


def bench_frame(rows: int, repeat: int, report: dict[str, Any]) -> None:
    log, record_s = fill_log(rows)
    print(f"recorded {rows:,} attempts in {record_s:.2f} s ({record_s / rows * 1e6:.2f} µs per record)")
    frame_s, frame = best(log.to_frame, repeat)
    dicts = as_dicts(frame)
    bare_s, _ = best(lambda: row_by_row(dicts, typed=False), repeat)
    typed_s, typed = best(lambda: row_by_row(dicts, typed=True), repeat)
    dicts.clear()  # free the million dicts before the next section
    assert list(typed.columns) == list(frame.columns)
    pd.testing.assert_frame_equal(typed, frame, check_categorical=False)  # the same frame, both ways
    print(f"\n{rows:,} records -> DataFrame")
    print(f"  UsageLog.to_frame()                       {frame_s:8.3f} s   (target < 1.5 s)")
    print(f"  pd.DataFrame(list_of_dicts)               {bare_s:8.3f} s   {bare_s / frame_s:6.1f}x slower")
    print(
        f"  pd.DataFrame(list_of_dicts) + dtypes      {typed_s:8.3f} s   {typed_s / frame_s:6.1f}x slower"
        "   (target >= 3x)"
    )
    report["frame"] = frame
    report["to_frame_s"] = frame_s


def bench_summary(rows: int, repeat: int, report: dict[str, Any]) -> None:
    frame = report["frame"]
    summary_s, table = best(lambda: summary(frame, by=["provider", "model"]), repeat)
    overall_s, _ = best(lambda: summary(frame, by=[]), repeat)
    print(f"\nsummary() on {len(frame):,} rows")
    print(f"  by provider, model ({len(table)} groups)        {summary_s:8.3f} s")
    print(f"  overall                                   {overall_s:8.3f} s")


# --- session log (issue 9 section 7; the i9-dsh branch) -----------------------------------


def bench_session_log(rows: int, repeat: int, report: dict[str, Any]) -> None:
    """read_dsh_session on a ~100 MB session.jsonl vs a plain json.loads loop (target within 2x).

    The log (packed rows, the harness's default) is generated at run time in a
    temporary directory by ``bench_dsh.generate``; ``CHUNKSCOPE_BENCH_SESSION_MB``
    sets its size. ``benchmarks/bench_dsh.py`` has the fuller table (unpacked, zstd).
    """
    import os
    import tempfile

    from bench_dsh import generate, json_loop, measure, read_frame, read_only, read_results

    megabytes = float(os.environ.get("CHUNKSCOPE_BENCH_SESSION_MB", "100"))
    with tempfile.TemporaryDirectory(prefix="bench-usage-dsh-") as folder:
        path = os.path.join(folder, "session.jsonl")
        generate(path, megabytes, packed=True)
        size = os.path.getsize(path)
        # The rows that build millions of chunk models run after the light ones (memory footprint).
        times = measure(
            {"json.loads loop": lambda: json_loop(path), "read_dsh_session": lambda: read_only(path)}, repeat
        )
        times.update(
            measure(
                {
                    "read_dsh_session + to_frame": lambda: read_frame(path),
                    "read_dsh_session + every StreamResult": lambda: read_results(path),
                },
                repeat,
            )
        )
    base = times["json.loads loop"]
    print(f"\nsession log, {size / 1e6:.0f} MB (packed rows)")
    for name, seconds in times.items():
        print(f"  {name:<40} {seconds:8.3f} s  {seconds / base:5.2f}x")
    report["session_log_ratio"] = times["read_dsh_session"] / base


# --- pricing (issue 18) -------------------------------------------------------------------

PRICED_MODELS = [
    ("deepseek", "deepseek-chat"),
    ("deepseek", "deepseek-reasoner"),
    ("anthropic", "claude-sonnet-4-0"),
    ("openai", "o3"),  # a price cut on 2025-06-10, inside the spread of start times
]


def pricing_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with models both tables know and start times spread over 2024-09 .. 2026-09."""
    n = len(frame)
    pick = pd.Series(range(n)) % len(PRICED_MODELS)
    two_years = 63_072_000
    seconds = 1_725_000_000 + pd.Series(range(n)) * two_years // max(n, 1)
    spread = pd.to_datetime(seconds, unit="s", utc=True)
    return frame.assign(
        provider=pick.map(lambda i: PRICED_MODELS[i][0]).astype("category"),
        model=pick.map(lambda i: PRICED_MODELS[i][1]).astype("category"),
        started_at=spread.astype(frame["started_at"].dtype),
    )


def bench_pricing(rows: int, repeat: int, report: dict[str, Any]) -> None:
    frame = pricing_frame(report["frame"])
    by_hand = PriceTable(
        Price(provider, model, cache_miss_input=1.0, cache_hit_input=0.1, output=4.0, effective="2025-01-01")
        for provider, model in PRICED_MODELS
    )
    hand_s, _ = best(lambda: by_hand.add_costs(frame), repeat)
    cold_start = time.perf_counter()
    genai = PriceTable.from_genai_prices()
    priced = genai.add_costs(frame)
    cold_s = time.perf_counter() - cold_start
    genai_s, _ = best(lambda: genai.add_costs(frame), repeat)
    assert priced["cost"].notna().sum() == frame["input_tokens"].notna().sum()  # every row priced
    print(f"\npricing {len(frame):,} rows ({priced['price_source'].nunique()} genai-prices periods/sources)")
    print(f"  hand-written PriceTable.add_costs         {hand_s:8.3f} s")
    print(
        f"  from_genai_prices().add_costs             {genai_s:8.3f} s   {genai_s / hand_s:6.2f}x"
        f"   (target <= 2x; first call, data loaded: {cold_s:.3f} s)"
    )
    report["pricing_ratio"] = genai_s / hand_s


# ------------------------------------------------------------------------------------------


def bench_otel(rows: int, repeat: int, report: dict[str, Any]) -> None:
    """Per attempt: ``otel_sink`` (a span, its events and four metric points) against a plain ``UsageLog``.

    The spans go through a ``BatchSpanProcessor`` (what a real set-up uses) to an exporter that drops
    them; the metrics into an SDK ``MeterProvider``. Target: at most 20 µs per attempt over UsageLog.
    """
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from chunkscope.usage import otel_sink

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    attempts = max(1, min(rows, 50_000))
    shapes = results()

    def run(make: Callable[[], Any]) -> float:
        sink = make()
        record = sink.record
        start = time.perf_counter()
        for i in range(attempts):
            provider, model = MODELS[i % len(MODELS)]
            record(shapes[i % len(shapes)], provider=provider, model=model, call_id=f"c{i}")
        return time.perf_counter() - start

    providers: list[Any] = []

    def make_otel() -> Any:
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(BatchSpanProcessor(Drop(), max_queue_size=attempts + 1))
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        providers.extend((tracer_provider, meter_provider))
        return otel_sink(tracer_provider, meter_provider)

    def make_noop() -> Any:
        from opentelemetry.metrics import NoOpMeterProvider
        from opentelemetry.trace import NoOpTracerProvider

        return otel_sink(NoOpTracerProvider(), NoOpMeterProvider())

    def sdk_floor() -> float:
        # What the SDK itself costs per attempt with no attributes: one span, four histogram points.
        tracer_provider, meter_provider = make_otel()._tracer, providers[-1].get_meter("floor")
        histogram = meter_provider.create_histogram("floor")
        start = time.perf_counter()
        for _ in range(attempts):
            tracer_provider.start_span("chat", start_time=1).end(end_time=2)
            for _ in range(4):
                histogram.record(1.0)
        return time.perf_counter() - start

    log_s, _ = best(lambda: run(UsageLog), repeat)
    otel_s, _ = best(lambda: run(make_otel), repeat)
    noop_s, _ = best(lambda: run(make_noop), repeat)
    floor_s, _ = best(sdk_floor, repeat)
    for provider in providers:
        provider.shutdown()
    per_log = log_s / attempts * 1e6
    per_otel = otel_s / attempts * 1e6
    print(f"\nemitting spans, {attempts:,} attempts:")
    print(f"  UsageLog.record                           {per_log:8.2f} µs / attempt")
    print(f"  otel_sink().record (span + metrics)       {per_otel:8.2f} µs / attempt")
    print(f"  otel_sink, no-op providers (own work)     {noop_s / attempts * 1e6:8.2f} µs / attempt")
    print(f"  SDK floor: bare span + 4 points           {floor_s / attempts * 1e6:8.2f} µs / attempt")
    extra = per_otel - per_log
    print(f"  otel over UsageLog                        {extra:8.2f} µs / attempt   (target ≤ 20 µs)")
    report["otel_over_log_us"] = per_otel - per_log


def timed_results(chunks: int) -> list[StreamResult]:
    """Attempts of ``chunks`` chunks at 20-60 ms apart, one with a 1.5 s stall mid-stream."""
    body: list[Any] = [{"type": "text-delta", "index": 0, "text": "x"}] * chunks
    shapes = []
    for shape in range(5):
        times = [0.3 + 0.02 * k + 0.01 * ((k * (shape + 3)) % 5) for k in range(chunks)]
        if shape == 4:
            times = [t + (1.5 if k >= chunks // 2 else 0.0) for k, t in enumerate(times)]
        timings = Timings.of_arrivals(times, total_s=times[-1] + 0.01, started_at=1_780_000_000.0)
        shapes.append(StreamResult(chunks=body, timings=timings, finish=FinishReason(kind="stop")))
    return shapes


@dataclass
class RecordedCall:
    """What ``cs.cadence`` reads of a tap's call (``TapCall``): its result, wire, model and id."""

    id: int
    wire: str
    model: str
    result: StreamResult
    chunk_times: list[float]


def bench_cadence(rows: int, repeat: int, report: dict[str, Any]) -> None:
    """Section 6: ``cs.cadence`` side by side with the frame building it starts from."""
    from chunkscope.usage import cadence

    shapes = timed_results(21)
    log = UsageLog()
    for i in range(rows):
        provider, model = MODELS[i % len(MODELS)]
        log.record(shapes[i % len(shapes)], provider=provider, model=model, call_id=f"c{i}")
    frame_s, frame = best(log.to_frame, repeat)
    cadence_s, found = best(lambda: cadence(frame), repeat)
    assert len(found.stalls) == rows // len(shapes)  # one stall per stalling attempt
    print(f"\ncadence over a usage frame of {rows:,} timed rows (each attempt's largest gap)")
    print(f"  UsageLog.to_frame()                       {frame_s:8.3f} s")
    print(
        f"  cs.cadence(frame)                         {cadence_s:8.3f} s   "
        f"{cadence_s / frame_s:6.2f}x to_frame"
    )
    calls_n = max(rows // 100, 1)
    shapes = timed_results(101)
    calls = [
        RecordedCall(i, MODELS[i % len(MODELS)][0], MODELS[i % len(MODELS)][1], r, r.timings.chunk_times)
        for i, r in ((i, shapes[i % len(shapes)]) for i in range(calls_n))
    ]

    def plain_frame() -> pd.DataFrame:
        plain = UsageLog()
        for call in calls:
            plain.record(call.result, provider=call.wire, model=call.model, call_id=str(call.id))
        return plain.to_frame()

    plain_s, _ = best(plain_frame, repeat)
    every_s, every = best(lambda: cadence(calls), repeat)
    assert len(every.gaps) == calls_n * 100
    print(f"\ncadence over {calls_n * 100:,} gaps of {calls_n:,} recorded calls (every gap)")
    print(f"  UsageLog.record x {calls_n:,} + to_frame()     {plain_s:8.3f} s")
    print(
        f"  cs.cadence(calls)                         {every_s:8.3f} s   {every_s / plain_s:6.2f}x the frame"
    )
    report["cadence_frame_ratio"] = cadence_s / frame_s
    report["cadence_gaps_ratio"] = every_s / plain_s


def _cache_recordings(folder: Path, calls: int) -> None:
    """``calls`` tap recordings: one real call through the tap to the local provider, then its
    file again with the request of each turn of 20-turn conversations (the system prompt names
    its conversation, so each conversation's first call misses). Every copy keeps the base
    call's answer (cached 0), so later turns read as unexplained misses: the work is the same."""
    import openai

    from chunkscope.provider import LocalProvider
    from chunkscope.tap import Tap

    base = folder / "base"
    rules = "long-standing rules: answer briefly, cite sources, never guess. " * 100
    with LocalProvider() as provider, Tap(upstream=provider.url, record=base) as tap:
        with openai.OpenAI(base_url=f"{tap.base_url}/v1", api_key="sk-bench-0000000000") as client:
            stream = client.chat.completions.create(
                model="text",
                messages=[{"role": "user", "content": rules}],
                stream=True,
                stream_options={"include_usage": True},
            )
            for _ in stream:
                pass
        tap.calls[0].wait(5)
    header_line, *rest = next(base.glob("*.jsonl")).read_text().splitlines(keepends=True)
    header = json.loads(header_line)
    for i in range(calls):
        conversation, turn = divmod(i, 20)
        messages: list[dict[str, str]] = [
            {"role": "system", "content": f"Conversation {conversation}. {rules}"}
        ]
        for k in range(turn + 1):
            messages += [
                {"role": "user", "content": f"question {k}"},
                {"role": "assistant", "content": "ok " * 40},
            ]
        header["tap"]["request_body"] = json.dumps({"model": "text", "messages": messages[:-1]})
        header["started"] = f"2026-01-01T00:00:00.{i:06d}+00:00"[:32]
        (folder / f"{i:06d}-openai-text.jsonl").write_text(json.dumps(header) + "\n" + "".join(rest))


def bench_cache_report(rows: int, repeat: int, report: dict[str, Any]) -> None:
    """The cache report against the plain usage frame of the same recordings."""
    import tempfile

    from chunkscope.usage import cache_report, read_recordings

    calls = max(100, min(10_000, rows // 100))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _cache_recordings(folder, calls)
        frame_s, frame = best(lambda: read_recordings(folder), repeat)
        cache_s, cached = best(lambda: cache_report(folder), repeat)
    assert len(frame) == len(cached) == calls
    verdicts = cached["verdict"].value_counts().to_dict()
    print(f"\nprompt-cache report, {calls:,} recorded calls:")
    print(f"  read_recordings (the plain usage frame)   {frame_s:8.3f} s")
    print(
        f"  cache_report                              {cache_s:8.3f} s   ({cache_s / frame_s:.2f}x the frame)"
    )
    print(f"  verdicts: {verdicts}")
    report["cache_report_ratio"] = cache_s / frame_s


SECTIONS: dict[str, Callable[[int, int, dict[str, Any]], None]] = {
    "frame": bench_frame,
    "summary": bench_summary,
    "session-log": bench_session_log,
    "otel": bench_otel,
    "pricing": bench_pricing,
    "cadence": bench_cadence,
    "cache": bench_cache_report,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=sorted(SECTIONS), default=None, help="run one section")
    args = parser.parse_args()
    report: dict[str, Any] = {}
    for name, section in SECTIONS.items():
        if args.only in (None, name):
            section(args.rows, args.repeat, report)
    figures: dict[str, Any] = {"rows": args.rows}
    for name, digits in (
        ("to_frame_s", 3),
        ("otel_over_log_us", 1),
        ("cadence_frame_ratio", 2),
        ("cadence_gaps_ratio", 2),
        ("cache_report_ratio", 2),
    ):
        if name in report:
            figures[name] = round(report[name], digits)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
