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
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))  # the browser tests' JupyterLab harness

from conftest import CHROMIUM, CHROMIUM_ARGS, Lab, _start_server, _stop_server  # noqa: E402

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
        if (kind === 'timeline') {
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


def run_case(
    browser: Any, server: Any, artifacts: Path, kind: str, n: int, timeout_s: float
) -> dict[str, Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    lab = Lab(server, page, artifacts)
    name = f"bench-{kind}-{n}.ipynb"
    ended = server.root / "ended.json"
    ended.unlink(missing_ok=True)
    cells = [
        SETUP.format(n=n) + (TIMELINE_SETUP if kind == "timeline" else ""),
        TIMELINE_RUN if kind == "timeline" else PLAIN_RUN,
    ]
    out: dict[str, Any] = {"kind": kind, "n": n}
    try:
        lab.write_notebook(name, cells)
        lab.open(name)
        page.evaluate(WATCH, [kind, n])
        try:
            lab.run_all(timeout_ms=int(timeout_s * 1000))
            page.wait_for_function("() => window.__cs_bench.endAt !== null", timeout=timeout_s * 1000)
        except Exception as exc:  # a floor that never finishes is a figure too
            out["error"] = str(exc).splitlines()[0][:200]
            return out
        page.wait_for_timeout(2000)  # what arrives after the end (final state, static copy) counts too
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
        if kind == "timeline":
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
    parser.add_argument("--kinds", default="plain,timeline", help="which cases (quick runs: timeline)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    from playwright.sync_api import sync_playwright

    results = []
    with tempfile.TemporaryDirectory(prefix="bench-timeline-") as tmp:
        base = Path(tmp)
        (base / "artifacts").mkdir()
        server = _start_server(base / "lab", base / "artifacts")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM,
                    headless=True,
                    args=[*CHROMIUM_ARGS, "--enable-precise-memory-info"],
                )
                try:
                    for n in sizes:
                        for kind in args.kinds.split(","):
                            started = time.monotonic()
                            result = run_case(browser, server, base / "artifacts", kind, n, args.timeout)
                            result["case_s"] = time.monotonic() - started
                            results.append(result)
                            print(json.dumps(result), flush=True)
                finally:
                    browser.close()
        finally:
            _stop_server(server)

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
        ratio = f"{r['end_ms'] / floor[r['n']]:.2f}x" if r["kind"] == "timeline" and floor.get(r["n"]) else ""
        scrub = f"{r['scrub_ms']:.0f} ms" if "scrub_ms" in r else ""
        heap = f"{r['heap_mb']:.0f} MB" if r.get("heap_mb") else "?"
        print(
            f"{r['n']:>9,}  {r['kind']:<8} {r['end_ms']:>11.0f} ms {ratio:>9} {r['longtasks']:>10} "
            f"{r['longest_ms']:>6.0f} ms {r['comms']:>9} {heap:>8} {scrub:>16}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
