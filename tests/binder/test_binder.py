"""binder/ works the way mybinder.org uses it: a fresh virtual environment, ``pip install -r
binder/requirements.txt``, then ``binder/postBuild`` run from the repository root — and in that
environment, with a kernel of its own Python, a tutorial notebook runs top to bottom.

Nothing of the test runner's own environment is reused: the venv is made without system site
packages, the kernel is proved to run the venv's interpreter, and chunkscope is proved to be
imported from this checkout. pip's cache is kept (``requirements.txt`` installs through it; the
files are the same, only the download is skipped); ``postBuild`` runs verbatim.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BINDER = REPO / "binder"
NOTEBOOK = REPO / "notebooks" / "01-streamchunk-protocol.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.notebook]

# Runs inside the fresh venv: execute the notebook with that venv's kernel, report what ran it.
_RUNNER = textwrap.dedent(
    """
    import json, sys
    import nbformat
    from nbclient import NotebookClient

    path, out = sys.argv[1], sys.argv[2]
    nb = nbformat.read(path, as_version=4)
    probe = "import sys, chunkscope; print(sys.executable); print(chunkscope.__file__)"
    nb.cells.insert(0, nbformat.v4.new_code_cell(probe))
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(__import__("pathlib").Path(path).parent)}})
    client.execute()
    lines = "".join(o.get("text", "") for o in nb.cells[0].outputs).split()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    json.dump({"kernel_python": lines[0], "chunkscope_file": lines[1], "errors": len(errors),
               "executed": sum(1 for c in nb.cells if c.cell_type == "code" and c.execution_count)},
              open(out, "w"))
    """
)


def _run(command: list[str], *, env: dict[str, str], cwd: Path, what: str, timeout: float = 1200) -> None:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        tail = (done.stdout[-3000:] + "\n" + done.stderr[-3000:]).strip()
        pytest.fail(f"{what} failed (exit {done.returncode}):\n{tail}")


@pytest.mark.timeout(2400)
def test_binder_environment_runs_the_protocol_notebook(tmp_path: Path) -> None:
    assert (BINDER / "requirements.txt").is_file() and (BINDER / "postBuild").is_file()
    venv = tmp_path / "venv"
    # the tested interpreter, as mybinder would pick it (binder/runtime.txt names a version when present)
    _run([sys.executable, "-m", "venv", str(venv)], env=dict(os.environ), cwd=tmp_path, what="python -m venv")
    bin_dir = venv / "bin"
    python = bin_dir / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"  # postBuild's `python` is the venv's
    env["VIRTUAL_ENV"] = str(venv)
    # kernels: only the venv's own (no user or system kernelspec may stand in for it)
    env["JUPYTER_DATA_DIR"] = str(tmp_path / "jupyter-data")
    env["JUPYTER_PATH"] = str(venv / "share" / "jupyter")
    env["JUPYTER_CONFIG_DIR"] = str(tmp_path / "jupyter-config")
    env["MPLCONFIGDIR"] = str(tmp_path / "mpl")

    _run(
        [str(python), "-m", "pip", "install", "-q", "-r", str(BINDER / "requirements.txt")],
        env=env,
        cwd=REPO,
        what="pip install -r binder/requirements.txt",
    )
    bash = shutil.which("bash") or "/bin/bash"
    _run([bash, str(BINDER / "postBuild")], env=env, cwd=REPO, what="binder/postBuild")

    runner = tmp_path / "run_notebook.py"
    runner.write_text(_RUNNER, encoding="utf-8")
    report_path = tmp_path / "report.json"
    _run(
        [str(python), str(runner), str(NOTEBOOK), str(report_path)],
        env=env,
        cwd=tmp_path,
        what=f"executing {NOTEBOOK.name} in the binder environment",
        timeout=900,
    )
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert Path(report["kernel_python"]).parent == bin_dir, report  # the venv's kernel ran it…
    assert Path(report["chunkscope_file"]).is_relative_to(REPO / "src"), report  # …on this checkout
    assert report["errors"] == 0 and report["executed"] > 10, report
