"""Every tutorial notebook runs top to bottom in a real kernel (its cells assert their claims),
and a saved, executed notebook still shows its timelines without a live kernel.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

import chunkscope as cs

NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
CELL_TIMEOUT_S = 180  # two shared cores; the slowest cell starts a server and streams over HTTP

pytestmark = pytest.mark.notebook

REAL_KEYS = ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture(autouse=True)
def _no_real_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels inherit no real key: a notebook's real-provider section must skip, never call out."""
    for name in REAL_KEYS:
        monkeypatch.delenv(name, raising=False)


_executed: dict[Path, Any] = {}


def _execute(path: Path, tmp_path: Path) -> Any:
    """``path`` executed and saved (under ``tmp_path``), read back; executed once per session."""
    if path in _executed:
        return _executed[path]
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=True,
    )
    client.execute()  # raises CellExecutionError with the traceback if any cell fails
    saved = tmp_path / path.name
    nbformat.write(nb, saved)
    _executed[path] = nbformat.read(saved, as_version=4)
    return _executed[path]


def test_there_are_tutorial_notebooks() -> None:
    assert any(p.name.startswith("01-") for p in NOTEBOOKS), f"no 01 notebook in {NOTEBOOKS_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    code = [(i, cell) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    dirty = [i for i, cell in code if cell.outputs or cell.execution_count]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs; clear them before committing"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path: Path, tmp_path: Path) -> None:
    saved = _execute(path, tmp_path)
    assert all(cell.execution_count for cell in saved.cells if cell.cell_type == "code")


def _timelines(nb: Any) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(cell number, output data, the Timeline model's saved ``_state``) for each timeline shown."""
    states = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    found = []
    for number, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW not in data:
                continue
            model = states.get(data[WIDGET_VIEW]["model_id"])
            assert model is not None, f"cell {number}: the widget's model is not in the saved widget state"
            saved = model["state"].get("_state")
            if saved:  # the Timeline's final picture: a JSON text (or, in older files, an object)
                found.append((number, data, json.loads(saved) if isinstance(saved, str) else saved))
    return found


def _grids(nb: Any) -> dict[str, dict[str, Any]]:
    """The saved picture (``grid_state``) of each conformance grid in the notebook, by adapter name."""
    states = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    found = {}
    for model in states.values():
        grid = model.get("state", {}).get("_grid")
        if grid:
            picture = json.loads(grid)
            found[picture["headline"].split()[0]] = picture
    return found


@pytest.mark.slow
def test_saved_protocol_notebook_keeps_every_final_timeline(tmp_path: Path) -> None:
    saved = _execute(NOTEBOOKS_DIR / "01-streamchunk-protocol.ipynb", tmp_path)
    timelines = _timelines(saved)
    assert len(timelines) >= 18, f"only {len(timelines)} timelines were saved"

    # every timeline finished, and its output also has the static HTML (shown without JavaScript)
    for number, data, state in timelines:
        assert state["status"] in ("done", "error"), f"cell {number} saved a timeline still {state['status']}"
        assert "cs-timeline" in data.get("text/html", ""), f"cell {number} has no static text/html timeline"

    # the protocol's example: 9 chunks, clean, and its text readable in the saved HTML
    _, example_html, example = timelines[0]
    assert (example["status"], len(example["records"]), example["violations"]) == ("done", 9, [])
    assert "サンプル" in example_html["text/html"]

    # each broken rule left its violation in the saved state
    rules = {v[1] for _, _, state in timelines for v in state["violations"]}
    assert set(cs.RULES) <= rules, f"rules never shown: {set(cs.RULES) - rules}"

    # the dropped connection: partial text kept, TRANSPORT on the badge
    by_title = {state["title"]: (data, state) for _, data, state in timelines}
    last_html, last = by_title["local provider · fault-drop"]
    assert last["status"] == "error" and last["error"]["code"] == "TRANSPORT"
    assert sum(1 for record in last["records"] if record[1] == "t") == 3
    assert "TRANSPORT" in last_html["text/html"]

    # the self-test answers: the minimal text block is clean, usage after finish is flagged
    _, minimal = by_title["self-test 1 · the minimal text block"]
    assert (minimal["status"], len(minimal["records"]), minimal["violations"]) == ("done", 5, [])
    _, swapped = by_title["self-test 2 · usage after finish"]
    assert [(v[1], v[0]) for v in swapped["violations"]] == [("usage-before-finish", 4)]


@pytest.mark.slow
def test_saved_adapter_notebook_shows_each_step_fault_and_abort(tmp_path: Path) -> None:
    saved = _execute(NOTEBOOKS_DIR / "02-debug-an-adapter.ipynb", tmp_path)
    by_title = {state["title"]: (data, state) for _, data, state in _timelines(saved)}

    # the skeleton: one finish, and the checker's verdict on it
    _, skeleton = by_title["HttpAdapter (the skeleton) · text"]
    assert len(skeleton["records"]) == 1
    assert [(v[1], v[0]) for v in skeleton["violations"]] == [("finish-consistency", 0), ("usage-missing", 0)]

    # the fixed adapter's replies are clean
    for title in ("step 1 · text", "step 2 · tool-call", "step 2 · reasoning", "step 2 · parallel-tools"):
        assert by_title[title][1]["status"] == "done" and by_title[title][1]["violations"] == [], title

    # every fault scenario, through both adapters, with its code on the timeline
    faults = [name for name, scenario in cs.SCENARIOS.items() if scenario.fault]
    assert len(faults) >= 10
    for name in faults:
        code = cs.SCENARIOS[name].expected_codes["openai"]  # type: ignore[index]
        for adapter in ("RealAdapter", "OpenAICompatAdapter"):
            html, state = by_title[f"{adapter} · {name}"]
            assert state["status"] == "error" and state["violations"] == [], (adapter, name)
            assert code in html["text/html"], (adapter, name, code)
            if state["error"] is not None:
                assert state["error"]["code"] == code, (adapter, name)

    # record, replay: the same chunks; abort: ABORTED with the partial text
    recorded = by_title["recorded live (40 ms per event)"][1]
    replayed = by_title["replayed at the original timing"][1]
    assert [r[1:] for r in replayed["records"]] == [r[1:] for r in recorded["records"]]
    for adapter in ("RealAdapter", "OpenAICompatAdapter"):
        _, aborted = by_title[f"{adapter} · aborted after 3 words"]
        assert aborted["error"]["code"] == "ABORTED"
        assert sum(1 for record in aborted["records"] if record[1] == "t") == 3

    # the conformance kit: step 3's grid red in the named cells, step 4's and the reference's green
    grids = _grids(saved)
    assert set(grids) == {"RealAdapter", "ConformingAdapter"}, list(grids)
    red, green = grids["RealAdapter"], grids["ConformingAdapter"]
    assert not red["ok"] and green["ok"]
    assert red["headline"].startswith("RealAdapter does not conform on the openai wire")
    red_rows = {row["name"] for row in red["rows"] if not row["ok"]}
    assert red_rows == {
        "interleaved-tools",
        "dialect-content-parts",
        "dialect-reasoning-details",
        "dialect-xai-usage",
        "dialect-done-no-blank-line",
        "abort",
    }
    cases = len(green["rows"])  # the kit's cases grow with the local provider's scenarios
    clean = f"ConformingAdapter conforms on the openai wire: {cases}/{cases} cases clean"
    assert green["headline"].startswith(clean)
    assert all(row["ok"] for row in green["rows"]) and len(green["rows"]) == len(red["rows"])
    printed = "".join(output.get("text", "") for cell in saved.cells for output in cell.get("outputs", []))
    assert "OpenAICompatAdapter conforms on the openai wire" in printed

    # no key in the kernel: the real-endpoint section says it skipped, and drew nothing
    last = [cell for cell in saved.cells if cell.cell_type == "code"][-1]
    printed = "".join(output.get("text", "") for output in last.outputs)
    assert printed.startswith("DEEPSEEK_API_KEY is not set: skipping the real DeepSeek endpoint")
    assert not any(title.endswith("DeepSeek deepseek-chat") for title in by_title)


@pytest.mark.slow
def test_saved_usage_notebook_draws_the_session_log_and_summarises_it_on_dask(tmp_path: Path) -> None:
    saved = _execute(NOTEBOOKS_DIR / "03-token-usage.ipynb", tmp_path)
    by_title = {state["title"]: (data, state) for _, data, state in _timelines(saved)}
    titles = [t for t in by_title if t.startswith("sess-1 · ")]
    assert titles == [
        "sess-1 · turn 1 step 1 attempt 1",
        "sess-1 · turn 2 step 1 attempt 1",
        "sess-1 · turn 2 step 1 attempt 2",
    ]
    for title in titles:
        assert by_title[title][1]["violations"] == [], title
    cut_html, _ = by_title["sess-1 · turn 2 step 1 attempt 1"]
    assert "RATE_LIMIT" in cut_html["text/html"]  # the cut attempt's failure code, on its timeline
    printed = "".join(output.get("text", "") for cell in saved.cells for output in cell.get("outputs", []))
    assert "DataFrame with 4 partitions" in printed


def _html_outputs(nb: Any, marker: str) -> list[str]:
    """The text/html of every output that contains ``marker``, in notebook order."""
    return [
        output["data"]["text/html"]
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if marker in output.get("data", {}).get("text/html", "")
    ]


@pytest.mark.slow
def test_saved_cache_and_cadence_notebook_shows_the_timestamp_miss_the_fix_and_the_stall(
    tmp_path: Path,
) -> None:
    saved = _execute(NOTEBOOKS_DIR / "06-cache-and-cadence.ipynb", tmp_path)

    # the three cache views: the timestamp's miss, the fix, the cleared cache
    views = _html_outputs(saved, "class='cs-cache'")
    verdicts = [re.findall(r'class="cs-v-([a-z-]+)"', html) for html in views]
    assert verdicts == [
        ["miss-explained", "hit", "miss-explained", "hit"],
        ["miss-explained", "hit", "hit", "hit"],
        ["miss-explained", "hit", "hit", "hit", "miss-unexplained"],
    ]
    timestamp = views[0]
    assert "first change: <b>system, field content</b>" in timestamp
    assert "09:0<del>0</del>" in timestamp and "09:0<ins>1</ins>" in timestamp  # the diff marks the minute
    assert "rules that could apply" in views[2]

    # `chunkscope cache DIR` printed the same verdicts and the section that changed
    printed = "".join(output.get("text", "") for cell in saved.cells for output in cell.get("outputs", []))
    assert "prompt cache: 4 calls" in printed and "system · content" in printed

    # the cadence report: its suggestion with the reasoning, the stall, the plot
    [report] = _html_outputs(saved, "class='cs-cadence'")
    assert "Suggested idle timeout" in report and "stall-recovers" in report
    assert "Stalls</b> (1, the longest first)" in report
    outputs = [output for cell in saved.cells for output in cell.get("outputs", [])]
    assert any("image/png" in output.get("data", {}) for output in outputs)  # the cadence plot
    frames = _html_outputs(saved, "max_gap_at")
    assert any("p99_gap_s" in html and "stall-recovers" in html for html in frames)
