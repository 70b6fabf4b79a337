"""Execute tutorial notebooks in the environment of the Python running this script.

Run by the tests that prove an environment made as a user makes it (``scripts/lab.sh``'s,
binder's ``postBuild``) runs every tutorial: that environment's own interpreter runs this
script, with that environment's nbclient, and each notebook gets a kernel of the same
interpreter — nothing of the test runner's environment comes along. Not a test module
(pytest does not collect it); it needs only nbclient and nbformat, which JupyterLab installs.

    python execute_in_env.py REPORT.json OUT_DIR NOTEBOOK...

Each notebook runs top to bottom in its own folder (as JupyterLab runs it), the widgets'
state stored as JupyterLab saves it, and is written executed to ``OUT_DIR``. A failing cell
does not stop the others' notebooks: ``REPORT.json`` has, for each notebook, the kernel's
``sys.executable``, the ``chunkscope`` module's file, the cells executed and any error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

CELL_TIMEOUT_S = 300  # a shared two-core machine; the slowest cell starts a server and streams over HTTP
PROBE = "import sys, chunkscope\nprint(sys.executable)\nprint(chunkscope.__file__)"


def execute(path: Path, out_dir: Path) -> dict[str, Any]:
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(PROBE))  # what ran it: taken out before saving
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=True,
    )
    failure = None
    try:
        client.execute()
    except CellExecutionError as exc:
        failure = str(exc)[-4000:]
    probe = nb.cells.pop(0)
    printed = "".join(output.get("text", "") for output in probe.get("outputs", [])).split()
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    errors = [output for cell in code for output in cell.outputs if output.output_type == "error"]
    nbformat.write(nb, out_dir / path.name)
    return {
        "kernel_python": printed[0] if printed else None,
        "chunkscope_file": printed[1] if len(printed) > 1 else None,
        "cells": len(code),
        "executed": sum(1 for cell in code if cell.execution_count),
        "errors": len(errors),
        "failure": failure,
    }


def main(argv: list[str]) -> int:
    report_path, out_dir, *notebooks = argv
    report = {Path(name).name: execute(Path(name), Path(out_dir)) for name in notebooks}
    Path(report_path).write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
