"""The tap's table and the usage summary with thousands of calls: real JupyterLab + Chromium.

Run: ``python benchmarks/bench_live_tables.py [--calls 5000] [--rows 10000] [--timeout S]``

Two cases, each in a fresh page and kernel of one JupyterLab server:

- **tap**: a displayed ``Tap`` (its live ``TapTable``) in front of the local provider, and
  ``--calls`` streamed calls (scenario ``text``) through it from four client threads;
- **usage**: a displayed ``UsageLog`` (its live ``UsageSummary``) and ``cs.batch`` of
  ``--rows`` local-provider calls (concurrency 16) recording into it.

For each: the messages that reached the page for the widget (its state syncs and the output's
static copy updates) per second while the calls ran, the largest of them and the bytes in all;
the page's long tasks (``PerformanceObserver`` ``longtask``: the page not answering input for
over 50 ms) from the first call until the kernel went idle, the longest of them; the rows in
the table's DOM; the page's JS heap after it; and the time from the kernel seeing the last call
end to the page showing it. What reaches the page has to follow the screen (a bounded rate and
size), never the number of calls. No assertion is made: the figures are printed (``--json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from _lab_browser import Lab, lab_and_browser

TAP_SETUP = """\
import json, threading, time
from pathlib import Path
import httpx
import chunkscope as cs
%load_ext chunkscope
N = {n}
provider = cs.LocalProvider().start()
tap = cs.Tap(upstream=provider.url).start()
tap
"""

TAP_RUN = """\
def post_many(k):
    body = {"model": "text", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    headers = {"authorization": "Bearer sk-local"}
    with httpx.Client(timeout=60) as client:
        for _ in range(k):
            with client.stream("POST", f"{tap.base_url}/v1/chat/completions", json=body,
                               headers=headers) as r:
                for _ in r.iter_raw():
                    pass
threads = [threading.Thread(target=post_many, args=(N // 4,)) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
assert all(call.wait(30) for call in list(tap.calls))  # the last keep_calls of the N
Path('ended.json').write_text(json.dumps(time.time()))
"""

USAGE_SETUP = """\
import json, time
from pathlib import Path
import chunkscope as cs
%load_ext chunkscope
N = {n}
provider = cs.LocalProvider().start()
log = cs.UsageLog()
log
"""

USAGE_RUN = """\
requests = [cs.GenerateOptions(provider="deepseek", model="text",
                               messages=[{"role": "user", "content": "hi"}]) for _ in range(N)]
adapter = cs.OpenAICompatAdapter(base_url=provider.base_url, api_key="sk-local")
results = await cs.batch(adapter, requests, concurrency=16, log=log)
Path('ended.json').write_text(json.dumps(time.time()))
"""

# In the page, before the cells run: long tasks, the messages for the first cell's widget, the end.
WATCH = """([kind, n]) => {
    const w = window.__cs_bench = {longtasks: [], msgs: [], endAt: null, first: null};
    new PerformanceObserver((list) => {
        for (const e of list.getEntries()) w.longtasks.push([e.startTime, e.duration]);
    }).observe({type: 'longtask', buffered: false});
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    kernel.anyMessage.connect((_, args) => {
        const m = args.msg;
        const type = m.header.msg_type;
        if (args.direction !== 'recv' || (type !== 'comm_msg' && type !== 'update_display_data')) return;
        let bytes = JSON.stringify(m.content).length;
        for (const b of m.buffers || []) bytes += b.byteLength;
        w.msgs.push([performance.now(), type, bytes]);
    });
    const check = () => {
        if (w.endAt !== null) return;
        const cell = document.querySelectorAll('.jp-CodeCell')[0];
        if (!cell) return;
        if (kind === 'tap') {
            const rows = cell.querySelectorAll('.cs-tap-table tbody tr');
            const last = rows[rows.length - 1];
            if (!last || Number(last.dataset.callId) !== n || last.className === 'cs-tap-running') return;
        } else {
            const el = cell.querySelector('.cs-usage.cs-live');
            if (!el || Number(el.dataset.calls) !== n || Number(el.dataset.done) !== n) return;
        }
        w.endAt = Date.now();
        w.endPerf = performance.now();
    };
    new MutationObserver(check).observe(document.body, {subtree: true, childList: true, characterData: true,
        attributes: true});
}"""


def run_case(
    browser: Any, server: Any, artifacts: Path, kind: str, n: int, timeout_s: float
) -> dict[str, Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    lab = Lab(server, page, artifacts)
    name = f"bench-{kind}-{n}.ipynb"
    ended = server.root / "ended.json"
    ended.unlink(missing_ok=True)
    setup, run = (TAP_SETUP, TAP_RUN) if kind == "tap" else (USAGE_SETUP, USAGE_RUN)
    out: dict[str, Any] = {"kind": kind, "n": n}
    try:
        lab.write_notebook(name, [setup.format(n=n), run])
        lab.open(name)
        page.evaluate(WATCH, [kind, n])
        started = time.monotonic()
        try:
            lab.run_all(timeout_ms=int(timeout_s * 1000))
            page.wait_for_function("() => window.__cs_bench.endAt !== null", timeout=timeout_s * 1000)
        except Exception as exc:
            out["error"] = str(exc).splitlines()[0][:200]
            return out
        out["run_s"] = time.monotonic() - started
        page.wait_for_timeout(1000)  # what arrives after the end (a last push, the static copy) counts too
        w = page.evaluate("() => window.__cs_bench")
        out["end_ms"] = w["endAt"] - json.loads(ended.read_text()) * 1000.0
        msgs = w["msgs"]
        span_s = max((msgs[-1][0] - msgs[0][0]) / 1000.0, 1e-3) if msgs else 1e-3
        out["messages"] = len(msgs)
        out["display_updates"] = sum(1 for m in msgs if m[1] == "update_display_data")
        out["per_s"] = len(msgs) / span_s
        out["busiest_s"] = _busiest_second(msgs)
        out["max_bytes"] = max((m[2] for m in msgs), default=0)
        out["bytes"] = sum(m[2] for m in msgs)
        tasks = [d for _, d in w["longtasks"]]
        out["longtasks"] = len(tasks)
        out["longest_ms"] = max(tasks, default=0.0)
        out["heap_mb"] = page.evaluate(
            "() => performance.memory ? performance.memory.usedJSHeapSize / 1e6 : null"
        )
        out["dom_rows"] = page.evaluate(
            "() => document.querySelectorAll('.jp-CodeCell')[0].querySelectorAll('tbody tr').length"
        )
        return out
    finally:
        for session in server.api("GET", "/api/sessions").json():
            server.api("DELETE", f"/api/sessions/{session['id']}")
        context.close()


def _busiest_second(msgs: list[list[Any]]) -> int:
    """The most messages received within any one second."""
    times = [m[0] for m in msgs]
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while t - times[lo] > 1000.0:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls through the tap")
    parser.add_argument("--rows", type=int, default=10000, help="calls in the usage batch")
    parser.add_argument("--kinds", default="tap,usage")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a case may take")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    results = []
    with lab_and_browser("bench-tables-") as (browser, server, artifacts):
        for kind in args.kinds.split(","):
            n = args.calls if kind == "tap" else args.rows
            result = run_case(browser, server, artifacts, kind, n, args.timeout)
            results.append(result)
            print(json.dumps(result), flush=True)

    print()
    print(
        f"{'case':<6} {'calls':>7} {'ran':>7} {'msgs':>6} {'of which display':>16} {'per s':>6} "
        f"{'busiest s':>9} "
        f"{'largest':>9} {'long tasks':>10} {'longest':>8} {'DOM rows':>8} {'heap':>7} {'end on screen':>13}"
    )
    for r in results:
        if "error" in r:
            print(f"{r['kind']:<6} {r['n']:>7,} did not finish: {r['error']}")
            continue
        print(
            f"{r['kind']:<6} {r['n']:>7,} {r['run_s']:>6.0f}s {r['messages']:>6} {r['display_updates']:>16} "
            f"{r['per_s']:>6.1f} {r['busiest_s']:>9} {r['max_bytes'] / 1000:>7.0f}kB {r['longtasks']:>10} "
            f"{r['longest_ms']:>5.0f} ms {r['dom_rows']:>8} {r['heap_mb']:>4.0f} MB {r['end_ms']:>10.0f} ms"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
