"""The live usage summary as a person sees it: a batch of 30 local-provider calls with faults.

The summary and its progress bar update while the batch runs (every change of
``data-done`` / ``data-calls`` on the widget is recorded in the page as it
happens), and the final numbers on the page equal ``summary(log.to_frame())``
computed in the kernel.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import Lab

pytestmark = pytest.mark.browser

SETUP = """\
import json, warnings
import pandas as pd
from pathlib import Path
import chunkscope as cs
%load_ext chunkscope
from chunkscope.usage import summary

provider = cs.LocalProvider(token_delay=0.03).start()  # spread each call over a few frames
prices = cs.PriceTable([
    cs.Price("*", name, cache_miss_input=0.27, cache_hit_input=0.07, output=1.10)
    for name in ("text", "cache-hit", "fault-content-filter")
])  # "reasoning" is left unpriced on purpose
warnings.simplefilter("ignore", cs.UnpricedModelWarning)
log = cs.UsageLog(prices=prices)
log
"""

BATCH = """\
models = ["text", "fault-500", "cache-hit", "fault-drop", "reasoning", "fault-content-filter"] * 5
requests = [
    cs.GenerateOptions(provider="deepseek", model=m, messages=[{"role": "user", "content": "hi"}])
    for m in models
]
adapter = cs.OpenAICompatAdapter(base_url=provider.base_url, api_key="sk-local", idle_timeout=20.0)
results = await cs.batch(adapter, requests, concurrency=3, log=log)
await adapter.aclose()
provider.stop()
assert len(results) == 30
"""

FINAL = """\
row = summary(log.to_frame(), by=[]).loc["all"]
count = lambda v: None if pd.isna(v) else int(v)  # a count no row reported is unknown (<NA>), not 0
final = {
    "calls": int(row["calls"]), "attempts": int(row["attempts"]), "errors": int(row["errors"]),
    "input": count(row["input_tokens"]), "cacheRead": count(row["cache_read_tokens"]),
    "cacheWrite": count(row["cache_write_tokens"]), "output": count(row["output_tokens"]),
    "reasoning": count(row["reasoning_tokens"]),
    "cacheHitRate": float(row["cache_hit_rate"]), "cost": float(row["cost"]),
    "errorsByCode": {c.removeprefix("errors_"): int(row[c]) for c in row.index if c.startswith("errors_")},
}
_ = Path("usage-final.json").write_text(json.dumps(final))
"""

RECORD_CHANGES = """() => {
    window.__csUsage = [];
    new MutationObserver((mutations) => {
        for (const m of mutations) {
            const el = m.target;
            if (!el.classList || !el.classList.contains('cs-live')) continue;
            window.__csUsage.push({attr: m.attributeName, done: el.dataset.done, calls: el.dataset.calls});
        }
    }).observe(document.body,
               {subtree: true, attributes: true, attributeFilter: ['data-done', 'data-calls']});
}"""


def _values(widget: Any) -> dict[str, str]:
    pairs: list[list[str]] = widget.locator("[data-field]").evaluate_all(
        "els => els.map(el => [el.dataset.field, el.textContent])"
    )
    return dict(pairs)


def test_a_batch_of_thirty_calls_updates_the_live_summary_and_ends_on_the_summarys_numbers(lab: Lab) -> None:
    lab.write_notebook("usage.ipynb", [SETUP, BATCH, FINAL])
    lab.open("usage.ipynb")
    lab.page.evaluate(RECORD_CHANGES)
    lab.run_all()

    widget = lab.page.locator(".jp-CodeCell").nth(0).locator(".cs-usage.cs-live")
    widget.first.wait_for(state="attached")
    assert widget.count() == 1
    widget = widget.first
    lab.page.wait_for_function("el => el.dataset.done === '30'", arg=widget.element_handle(), timeout=30_000)

    changes: list[dict[str, Any]] = lab.page.evaluate("window.__csUsage")
    done_seen = [int(c["done"]) for c in changes if c["attr"] == "data-done" and c["done"] is not None]
    calls_seen = [int(c["calls"]) for c in changes if c["attr"] == "data-calls" and c["calls"] is not None]
    # the progress bar moved through intermediate values, only forward, to the end
    assert done_seen == sorted(done_seen) and done_seen[-1] == 30, done_seen
    assert len({d for d in done_seen if 0 < d < 30}) >= 3, done_seen
    assert len({c for c in calls_seen if 0 < c < 30}) >= 3, calls_seen
    assert widget.locator(".cs-usage-fill").evaluate("el => el.style.width") == "100%"
    assert widget.locator(".cs-usage-progress-text").text_content() == "30 / 30 calls"

    final = json.loads((lab.server.root / "usage-final.json").read_text())
    shown = _values(widget)
    assert shown["calls"] == f"{final['calls']:,}" == "30"
    assert shown["attempts"] == f"{final['attempts']:,}"
    assert shown["errors"] == f"{final['errors']:,}" == "15"
    for key in ("input", "cacheRead", "cacheWrite", "output", "reasoning"):
        assert shown[f"tokens.{key}"] == ("-" if final[key] is None else f"{final[key]:,}"), key
    assert shown["cacheHitRate"] == f"{final['cacheHitRate'] * 100:.1f}%"
    assert shown["cost"] == f"{final['cost']:.6f} USD"
    codes = widget.locator(".cs-usage-code").evaluate_all(
        "els => Object.fromEntries(els.map(el => "
        "[el.dataset.code, Number(el.querySelector('b').textContent)]))"
    )
    assert (
        codes
        == {code: n for code, n in final["errorsByCode"].items() if n}
        == {"SERVER": 5, "TRANSPORT": 5, "CONTENT_FILTER": 5}
    )
    assert "5 attempts of unpriced models" in widget.text_content()
    lab.screenshot("usage-summary.png", widget)

    # the saved notebook keeps an escaped static copy of the final summary
    lab.save()
    saved = lab.read_saved("usage.ipynb")
    html = "".join(
        "".join(output["data"]["text/html"])
        if isinstance(output["data"]["text/html"], list)
        else output["data"]["text/html"]
        for output in saved["cells"][0]["outputs"]
        if "text/html" in output.get("data", {})
    )
    assert 'class="cs-usage cs-static"' in html
    assert 'data-calls="30"' in html and 'data-done="30"' in html
    assert "<script" not in html
