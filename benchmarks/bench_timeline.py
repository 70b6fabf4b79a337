"""The timeline at the speed of the screen: real JupyterLab + Chromium, timeline vs plain output.

Run: ``python benchmarks/bench_timeline.py [--sizes 10000,100000,1000000] [--timeout S]``

For each size N (default 10k, 100k and 1M text deltas of ``"w<i> "``), in one run and
the same JupyterLab server, each case in a fresh page and kernel:

- **timeline**: ``Timeline().consume(stream)`` of the N deltas (a ``block-start``, the
  deltas, ``block-end``, usage, finish), the stream yielding to the event loop every 50
  chunks as a network read would. Measured: the time from the kernel handing over its last
  chunk (written by the kernel to a file, wall clock) to the end marker on screen (the live
  widget's ``data-state="done"``, which the page sets only once every chunk is drawn; taken
  by a MutationObserver in the page, same machine clock);
- **plain**: the floor a user knows, the same text written piece by piece to ``sys.stdout``
  (a plain output area) with the same pacing, then an end marker line; measured from the
  last write to the marker appearing in the output area.

For both: the page's long tasks (``PerformanceObserver`` ``longtask``: the page not
answering input for over 50 ms) while the cell ran and until the kernel went idle (so the
final state sync and static copy the kernel sends after the end count too), the longest of
them, the comm messages the page received while the cell ran, and the page's JS heap after
it (``performance.memory`` with precise memory info). After the timeline case, the replay
slider is moved to the middle: the time until the picture shows that frame whole.

Targets (issue 28): 100k deltas within 1 s and within 2x of the plain floor; 1M with no long
task over 100 ms. The machine may be shared and noisy: no assertion is made; the figures are
printed (and written as JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path
from typing import Any

from _lab_browser import Lab, lab_and_browser

SETUP = """\
import asyncio, json, sys, time
from pathlib import Path
import chunkscope as cs
N = {n}
words = [f'w{{i}} ' for i in range(N)]
"""

TIMELINE_SETUP = """\
chunks = [cs.BlockStart(index=0, block_type='text')]
chunks += [cs.TextDelta(index=0, text=w) for w in words]
chunks += [cs.BlockEnd(index=0, block=cs.TextBlock(text=''.join(words))),
           cs.Usage(usage=cs.TokenUsage(input_tokens=5, output_tokens=N)),
           cs.Finish(reason=cs.FinishReason(kind='stop'))]
async def paced():
    for i, chunk in enumerate(chunks):
        if i % 50 == 0:
            await asyncio.sleep(0)  # like a network read: let the event loop run
        yield chunk
    Path('ended.json').write_text(json.dumps(time.time()))
"""

# live: the same N deltas streamed by the local provider (scenario ``long-<N>``, one text token
# an SSE event) through the OpenAI-compatible adapter, in the kernel, as a real model's would be
LIVE_SETUP = """\
provider = cs.LocalProvider().start()
adapter = cs.OpenAICompatAdapter(base_url=provider.base_url, api_key='sk-local')
options = cs.GenerateOptions(provider='local', model=f'long-{{N}}',
                             messages=[{{'role': 'user', 'content': 'go'}}])
async def paced():
    async for chunk in adapter.stream(options):
        yield chunk
    Path('ended.json').write_text(json.dumps(time.time()))
"""

TIMELINE_RUN = """\
tl = cs.Timeline()
display(tl)
await tl.consume(paced())
"""

PLAIN_RUN = """\
for i, w in enumerate(words):
    if i % 50 == 0:
        await asyncio.sleep(0)
    sys.stdout.write(w)
Path('ended.json').write_text(json.dumps(time.time()))
print('\\nEND-OF-STREAM')
"""

# In the page, before the cells run: long tasks, comm messages, and the moment the end marker shows.
WATCH = """([kind, n]) => {
    const w = window.__cs_bench = {longtasks: [], comms: 0, endAt: null, done: false};
    new PerformanceObserver((list) => {
        for (const e of list.getEntries()) w.longtasks.push([e.startTime, e.duration]);
    }).observe({type: 'longtask', buffered: false});
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    kernel.anyMessage.connect((_, args) => {
        if (args.direction === 'recv' && args.msg.header.msg_type === 'comm_msg') w.comms += 1;
    });
    const check = () => {
        if (w.endAt !== null) return;
        const cell = document.querySelectorAll('.jp-CodeCell')[1];
        if (!cell) return;
        if (kind !== 'plain') {
            const el = cell.querySelector('.cs-timeline:not(.cs-static)');
            if (!el || el.dataset.state !== 'done' || Number(el.dataset.deltas) !== n) return;
        } else {
            const out = cell.querySelector('.jp-OutputArea-output pre');
            if (!out || !out.textContent.trimEnd().endsWith('END-OF-STREAM')) return;
        }
        w.endAt = Date.now();
        w.endPerf = performance.now();
    };
    new MutationObserver(check).observe(document.body, {subtree: true, childList: true, characterData: true,
        attributes: true, attributeFilter: ['data-state']});
}"""

SCRUB = """(el) => new Promise((resolve) => {
    const scrub = el.querySelector('.cs-scrub');
    const target = Math.floor(Number(scrub.max) / 2);
    const t0 = performance.now();
    scrub.value = String(target);
    scrub.dispatchEvent(new Event('input', {bubbles: true}));
    const wait = () => {
        if (Number(el.dataset.chunks) === target) resolve([target, performance.now() - t0]);
        else requestAnimationFrame(wait);
    };
    requestAnimationFrame(wait);
})"""


TRACE_CATEGORIES = [
    "devtools.timeline",
    "disabled-by-default-devtools.timeline",
    "v8",
    "v8.execute",
    "blink.user_timing",
    "disabled-by-default-v8.cpu_profiler",
    "disabled-by-default-v8.gc",
]


def long_task_report(trace: Any, threshold_ms: float = 50.0, top: int = 4) -> list[dict[str, Any]]:
    """Each task of the page's main thread over ``threshold_ms`` in a Chrome trace: when, how long,
    the longest trace events inside it (GC, parse, layout, the JS entry point) and the JS functions
    the sampling profiler found running (self time)."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    mains = {
        (e["pid"], e["tid"])
        for e in events
        if e.get("name") == "thread_name" and e.get("args", {}).get("name") == "CrRendererMain"
    }
    spans = [e for e in events if (e.get("pid"), e.get("tid")) in mains and e.get("ph") == "X"]
    samples = _profile_samples(events)
    report = []
    origin = min((e["ts"] for e in spans), default=0)
    tasks = [e for e in spans if e["name"] == "RunTask" and e.get("dur", 0) >= threshold_ms * 1000]
    for task in sorted(tasks, key=lambda e: e["ts"]):
        t0, t1 = task["ts"], task["ts"] + task["dur"]
        inner = sorted(
            (e for e in spans if t0 <= e["ts"] < t1 and e is not task and e.get("dur", 0) >= 1000),
            key=lambda e: -e["dur"],
        )
        if any(e["name"] == "CpuProfiler::StartProfiling" for e in inner):
            continue  # the trace's own start (before the cell runs), not the page's work
        self_us: dict[str, float] = {}
        for pid, points in samples.items():
            if pid != task["pid"]:
                continue
            for (t, name), (t_next, _) in itertools.pairwise(points):
                if t0 <= t < t1:
                    self_us[name] = self_us.get(name, 0.0) + (t_next - t)
        report.append(
            {
                "at_ms": round((t0 - origin) / 1000),
                "ms": round(task["dur"] / 1000, 1),
                "events": [
                    f"{e['name']} {e['dur'] / 1000:.0f} ms {_event_detail(e)}".rstrip() for e in inner[:top]
                ],
                "js_self": [
                    f"{name} {us / 1000:.0f} ms"
                    for name, us in sorted(self_us.items(), key=lambda kv: -kv[1])[:top]
                ],
            }
        )
    return report


def _event_detail(event: dict[str, Any]) -> str:
    data = (event.get("args") or {}).get("data") or {}
    return str(data.get("functionName") or data.get("type") or str(data.get("url", ""))[-40:])


def _profile_samples(events: list[dict[str, Any]]) -> dict[int, list[tuple[float, str]]]:
    """The V8 sampling profiler's samples in a trace, per process: (time µs, function at the top)."""
    frames: dict[tuple[int, Any], dict[int, str]] = {}
    clock: dict[tuple[int, Any], float] = {}
    out: dict[int, list[tuple[float, str]]] = {}
    for e in events:
        key = (e.get("pid", 0), e.get("id"))
        if e.get("name") == "Profile":
            clock[key] = e["args"]["data"]["startTime"]
        elif e.get("name") == "ProfileChunk":
            data = e["args"]["data"]
            profile = data.get("cpuProfile", {})
            names = frames.setdefault(key, {})
            for node in profile.get("nodes", []):
                frame = node["callFrame"]
                where = str(frame.get("url", "")).rsplit("/", 1)[-1][:30]
                function = frame.get("functionName") or "(anonymous)"
                names[node["id"]] = f"{function}@{where}:{frame.get('lineNumber', '')}"
            t = clock.get(key, 0.0)
            for sample, delta in zip(profile.get("samples", []), data.get("timeDeltas", []), strict=False):
                t += delta
                out.setdefault(key[0], []).append((t, names.get(sample, "?")))
            clock[key] = t
    return out


def run_case(
    browser: Any,
    server: Any,
    artifacts: Path,
    kind: str,
    n: int,
    timeout_s: float,
    trace: Path | None = None,
) -> dict[str, Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    lab = Lab(server, page, artifacts)
    name = f"bench-{kind}-{n}.ipynb"
    ended = server.root / "ended.json"
    ended.unlink(missing_ok=True)
    setup = {"timeline": TIMELINE_SETUP, "live": LIVE_SETUP}.get(kind, "")
    cells = [SETUP.format(n=n) + setup.format(n=n), PLAIN_RUN if kind == "plain" else TIMELINE_RUN]
    out: dict[str, Any] = {"kind": kind, "n": n}
    try:
        lab.write_notebook(name, cells)
        lab.open(name)
        page.evaluate(WATCH, [kind, n])
        if trace is not None:
            browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
        try:
            lab.run_all(timeout_ms=int(timeout_s * 1000))
            page.wait_for_function("() => window.__cs_bench.endAt !== null", timeout=timeout_s * 1000)
        except Exception as exc:  # a floor that never finishes is a figure too
            out["error"] = str(exc).splitlines()[0][:200]
            return out
        page.wait_for_timeout(2000)  # what arrives after the end (final state, static copy) counts too
        if trace is not None:
            out["trace"] = str(trace / f"trace-{kind}-{n}.json")
            Path(out["trace"]).write_bytes(browser.stop_tracing())
            out["tasks"] = long_task_report(json.loads(Path(out["trace"]).read_text()))
        w = page.evaluate("() => window.__cs_bench")
        ended_ms = json.loads(ended.read_text()) * 1000.0
        out["end_ms"] = w["endAt"] - ended_ms
        out["comms"] = w["comms"]
        tasks = [d for _, d in w["longtasks"]]
        before_end = [d for start, d in w["longtasks"] if start < w["endPerf"]]
        out["longtasks"] = len(tasks)
        out["longest_ms"] = max(tasks, default=0.0)
        out["longest_before_end_ms"] = max(before_end, default=0.0)
        out["heap_mb"] = page.evaluate(
            "() => performance.memory ? performance.memory.usedJSHeapSize / 1e6 : null"
        )
        if kind != "plain":
            el = page.locator(".jp-CodeCell").nth(1).locator(".cs-timeline:not(.cs-static)").element_handle()
            page.evaluate("() => { window.__cs_bench.longtasks = []; }")
            target, scrub_ms = page.evaluate(SCRUB, el)
            out["scrub_to"] = target
            out["scrub_ms"] = scrub_ms
            out["scrub_longest_ms"] = max(
                (d for _, d in page.evaluate("() => window.__cs_bench.longtasks")), default=0.0
            )
            out["dom_chars"] = page.evaluate(
                "(el) => el.querySelector('.cs-seg-text').textContent.length", el
            )
        return out
    finally:
        for session in server.api("GET", "/api/sessions").json():
            server.api("DELETE", f"/api/sessions/{session['id']}")
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a case may take")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--kinds",
        default="plain,timeline,live",
        help="which cases: plain, timeline (a replayed list), live (the local provider)",
    )
    parser.add_argument(
        "--trace", type=Path, help="record a Chrome trace of each case here and list its tasks over 50 ms"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    with lab_and_browser("bench-timeline-") as (browser, server, artifacts):
        for n in sizes:
            for kind in args.kinds.split(","):
                started = time.monotonic()
                result = run_case(browser, server, artifacts, kind, n, args.timeout, args.trace)
                result["case_s"] = time.monotonic() - started
                results.append(result)
                print(json.dumps(result), flush=True)

    print()
    print(
        f"{'deltas':>9}  {'case':<8} {'end on screen':>14} {'vs plain':>9} {'long tasks':>10} "
        f"{'longest':>9} {'comm msgs':>9} {'heap':>8} {'replay to middle':>16}"
    )
    floor = {r["n"]: r.get("end_ms") for r in results if r["kind"] == "plain"}
    for r in results:
        if "error" in r:
            print(f"{r['n']:>9,}  {r['kind']:<8} did not finish: {r['error']}")
            continue
        ratio = f"{r['end_ms'] / floor[r['n']]:.2f}x" if r["kind"] != "plain" and floor.get(r["n"]) else ""
        scrub = f"{r['scrub_ms']:.0f} ms" if "scrub_ms" in r else ""
        heap = f"{r['heap_mb']:.0f} MB" if r.get("heap_mb") else "?"
        print(
            f"{r['n']:>9,}  {r['kind']:<8} {r['end_ms']:>11.0f} ms {ratio:>9} {r['longtasks']:>10} "
            f"{r['longest_ms']:>6.0f} ms {r['comms']:>9} {heap:>8} {scrub:>16}"
        )
        for task in r.get("tasks", []):
            print(
                f"{'':>11}task at {task['at_ms']} ms, {task['ms']} ms: {'; '.join(task['events'])}"
                f" | JS: {'; '.join(task['js_self'])}"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
