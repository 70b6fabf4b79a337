"""Every tutorial notebook runs top to bottom in a real kernel (its cells assert their claims),
and a saved, executed notebook still shows its timelines without a live kernel.
"""

from __future__ import annotations

import json
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


@pytest.mark.slow
def test_saved_protocol_notebook_keeps_every_final_timeline(tmp_path: Path) -> None:
    saved = _execute(NOTEBOOKS_DIR / "01-streamchunk-protocol.ipynb", tmp_path)
    timelines = _timelines(saved)
    assert len(timelines) >= 18, f"only {len(timelines)} timelines were saved"

    # every timeline finished, and its output also has the static HTML (shown without JavaScript)
    for number, data, state in timelines:
        assert state["status"] in ("done", "error"), f"cell {number} saved a timeline still {state['status']}"
        assert "cs-timeline" in data.get("text/html", ""), f"cell {number} has no static text/html timeline"

    # the seed's example: 9 chunks, clean, and its text readable in the saved HTML
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
    assert [(v[1], v[0]) for v in swapped["violations"]] == [("usage-missing", 3), ("finish-last", 4)]
