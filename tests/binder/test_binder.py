"""binder/ works the way mybinder.org uses it: a fresh virtual environment, ``pip install -r
binder/requirements.txt``, then ``binder/postBuild`` run from the repository root — and in that
environment, with a kernel of its own Python, every tutorial notebook runs top to bottom.

Nothing of the test runner's own environment is reused: the venv is made without system site
packages, the notebooks run under the venv's own interpreter and nbclient
(``tests/notebooks/execute_in_env.py``), each kernel is proved to run the venv's interpreter,
and chunkscope is proved to be imported from this checkout. pip's cache is kept
(``requirements.txt`` installs through it; the files are the same, only the download is
skipped); ``postBuild`` runs verbatim. Building the environment takes minutes: ``.ci/run``
runs this test in its first run only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BINDER = REPO / "binder"
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
RUNNER = REPO / "tests" / "notebooks" / "execute_in_env.py"
REAL_KEYS = (
    "DEEPSEEK_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
)

pytestmark = [pytest.mark.slow, pytest.mark.notebook]


def _run(command: list[str], *, env: dict[str, str], cwd: Path, what: str, timeout: float = 1200) -> None:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        tail = (done.stdout[-3000:] + "\n" + done.stderr[-3000:]).strip()
        pytest.fail(f"{what} failed (exit {done.returncode}):\n{tail}")


@pytest.mark.timeout(3000)
def test_binder_environment_runs_every_tutorial_notebook(tmp_path: Path) -> None:
    assert (BINDER / "requirements.txt").is_file() and (BINDER / "postBuild").is_file()
    venv = tmp_path / "venv"
    # the tested interpreter, as mybinder would pick it (binder/runtime.txt names a version when present)
    _run([sys.executable, "-m", "venv", str(venv)], env=dict(os.environ), cwd=tmp_path, what="python -m venv")
    bin_dir = venv / "bin"
    python = bin_dir / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    for name in REAL_KEYS:  # the notebooks' real-provider sections skip: nothing leaves the machine
        env.pop(name, None)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"  # postBuild's `python` is the venv's
    env["VIRTUAL_ENV"] = str(venv)
    # kernels: only the venv's own (no user or system kernelspec may stand in for it)
    env["JUPYTER_DATA_DIR"] = str(tmp_path / "jupyter-data")
    env["JUPYTER_PATH"] = str(venv / "share" / "jupyter")
    env["JUPYTER_CONFIG_DIR"] = str(tmp_path / "jupyter-config")
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "jupyter-runtime")
    env["MPLCONFIGDIR"] = str(tmp_path / "mpl")

    _run(
        [str(python), "-m", "pip", "install", "-q", "-r", str(BINDER / "requirements.txt")],
        env=env,
        cwd=REPO,
        what="pip install -r binder/requirements.txt",
    )
    bash = shutil.which("bash") or "/bin/bash"
    _run([bash, str(BINDER / "postBuild")], env=env, cwd=REPO, what="binder/postBuild")

    # mybinder serves the repository itself: the notebooks run where they are, saved elsewhere here
    executed, report_path = tmp_path / "executed", tmp_path / "report.json"
    executed.mkdir()
    _run(
        [str(python), str(RUNNER), str(report_path), str(executed), *map(str, NOTEBOOKS)],
        env=env,
        cwd=tmp_path,
        what="executing the notebooks in the binder environment",
        timeout=1800,
    )
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert sorted(report) == [path.name for path in NOTEBOOKS] and len(report) >= 5, report
    for name, ran in report.items():
        assert ran["failure"] is None and ran["errors"] == 0, f"{name} failed in binder's environment:\n{ran}"
        assert ran["executed"] == ran["cells"] > 0, (name, ran)
        assert Path(ran["kernel_python"]).parent == bin_dir, (name, ran)  # the venv's kernel ran it…
        assert Path(ran["chunkscope_file"]).is_relative_to(REPO / "src"), (name, ran)  # …on this checkout
