"""The README's two commands work as written on a stock Debian machine.

The commands are read from README.md itself (the fenced ``bash`` blocks of "The two
commands"), so README and test cannot drift apart. They run in a fresh ``git clone`` of
this checkout's HEAD (commit what you want tested), in a folder of its own with nothing
beside it (no ``shared/`` spec or fixtures), as a new user would run them:
Debian's ``/usr/bin/python3`` first on ``PATH``, no virtualenv or conda env active, no
pyenv shims, no ``PYTHONPATH`` — that Python refuses ``pip install`` (PEP 668), so the
commands must make their own environment. The first command runs until JupyterLab lists
the notebooks at the URL of its banner; then, as a user in JupyterLab would, every tutorial
runs top to bottom in the environment that command made (its ``.venv``'s own interpreter
and kernel, ``tests/notebooks/execute_in_env.py``) and is saved through the server, with a
checkpoint, into the folder it serves. That proves the ``lab`` extra runs every notebook.
The first command is stopped and the second runs with a few fast test files, so it still
lints, type-checks and runs pytest — among them the checks a run of the tutorials used to
break (notebooks committed without outputs, no checkpoint in the wheel) — and ``git status``
stays empty.

pip's download cache (``PIP_CACHE_DIR``, else pip's default) is kept: a warm cache makes
this about a minute of installing instead of several.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DEBIAN_PYTHON = "/usr/bin/python3"
# quick; the second reads the reference vectors, which must come from the clone itself; the last two
# failed after the tutorials had been run in the checkout itself
FAST_TEST_FILE = " ".join(
    (
        "tests/test_cli_serve.py",
        "tests/protocol/test_upstream_vectors.py",
        "tests/notebooks/test_notebooks.py::test_notebook_is_committed_without_outputs",
        "tests/test_base_install.py::test_the_wheel_lists_the_license_and_the_notebooks",
    )
)
NOTEBOOK = "01-streamchunk-protocol.ipynb"
BANNER = re.compile(r"chunkscope lab: serving (.*) at (http://127\.0\.0\.1:(\d+)/lab\?token=(\S+))")
WORKING_COPY = "my-notebooks"  # where `chunkscope lab` serves a checkout's tutorials
REAL_KEYS = (
    "DEEPSEEK_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
)
INSTALL_TIMEOUT_S = 1200.0  # a cold pip cache downloads JupyterLab, pandas, pyarrow...
NOTEBOOKS_TIMEOUT_S = 1500.0  # the six tutorials, one kernel each, on a shared machine

pytestmark = [pytest.mark.readme_commands, pytest.mark.slow, pytest.mark.timeout(3000)]


def readme_commands(readme: str) -> tuple[str, str]:
    """The set-up-and-open-the-lab command and the test command, from README's "The two commands"."""
    section = re.search(r"^## The two commands\n(.*?)(?=^## )", readme, re.M | re.S)
    assert section, 'README.md has no "## The two commands" section'
    blocks = [block.strip() for block in re.findall(r"^```bash\n(.*?)^```", section[1], re.M | re.S)]
    assert len(blocks) == 2, f"expected two bash blocks under 'The two commands', found {blocks}"
    assert all("\n" not in block for block in blocks), blocks  # each is one command a user pastes
    return blocks[0], blocks[1]


def test_readme_commands_come_from_the_two_commands_section() -> None:
    lab, test = readme_commands((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
    assert lab == "bash scripts/lab.sh"
    assert test == "bash scripts/test.sh"


def _new_user_env(home: Path) -> dict[str, str]:
    """This process's environment as a new user's shell on Debian would have it."""
    dropped_prefixes = ("VIRTUAL_ENV", "CONDA", "PYENV", "PYTHON", "PYTEST", "JUPYTER", "_CONDA")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped_prefixes)}
    env.pop("PIP_NO_CACHE_DIR", None)
    env.pop("PIP_REQUIRE_VIRTUALENV", None)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    # no venv, conda env, pyenv or this test's own interpreter on PATH: Debian's python3 comes first
    own_bins = {str(Path(sys.executable).parent), str(Path(sys.prefix) / "bin")}
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if os.environ.get(var):
            own_bins.add(str(Path(os.environ[var]) / "bin"))
    kept = [
        part
        for part in os.environ.get("PATH", "").split(os.pathsep)
        if part
        and part != "/usr/bin"
        and ".pyenv" not in part
        and "conda" not in part
        and part not in own_bins
    ]
    env["PATH"] = os.pathsep.join(["/usr/bin", *kept])
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")
    env["BROWSER"] = "true"  # the lab command opens a browser: here a no-op instead of a text browser
    # Jupyter's per-user folders in the test's own tmp folder (the cookie secret, the launch's settings)
    for name, folder in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data")):
        env[name] = str(home / "jupyter" / folder)
    env["JUPYTER_RUNTIME_DIR"] = str(home / "jupyter" / "runtime")
    env["MPLCONFIGDIR"] = str(home / "matplotlib")
    for name in REAL_KEYS:  # the notebooks' real-provider sections skip: nothing leaves the machine
        env.pop(name, None)
    return env


def _clone(target: Path) -> Path:
    git = shutil.which("git")
    assert git, "git is needed to clone the repository"
    assert (REPO_ROOT / ".git").exists(), f"{REPO_ROOT} is not a git checkout: nothing to clone"
    subprocess.run([git, "clone", "--quiet", "--no-hardlinks", str(REPO_ROOT), str(target)], check=True)
    return target


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the command and everything it started (it runs in a process group of its own)."""
    for sig, wait_s in ((signal.SIGTERM, 30), (signal.SIGKILL, 30)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _run_and_save_every_notebook(
    repo: Path, served: Path, tutorials: list[str], env: dict[str, str], tmp_path: Path, base: str, token: str
) -> None:
    """Execute every tutorial with the clone's ``.venv`` (its kernel), then save each through the
    server into ``served`` and make a checkpoint, as JupyterLab's "Save" does."""
    venv_python = repo / ".venv" / "bin" / "python"
    executed, report_path = tmp_path / "executed", tmp_path / "notebooks-report.json"
    executed.mkdir()
    run_env = dict(env)
    run_env["JUPYTER_PATH"] = str(repo / ".venv" / "share" / "jupyter")  # that env's kernel, no other
    done = subprocess.run(
        [
            str(venv_python),
            str(repo / "tests" / "notebooks" / "execute_in_env.py"),
            str(report_path),
            str(executed),
            *(str(served / name) for name in tutorials),
        ],
        cwd=served,
        env=run_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=NOTEBOOKS_TIMEOUT_S,
    )
    assert done.returncode == 0, f"running the notebooks failed:\n{done.stdout[-3000:]}{done.stderr[-5000:]}"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert sorted(report) == tutorials, report
    for name, ran in report.items():
        assert ran["failure"] is None and ran["errors"] == 0, f"{name} failed in lab.sh's environment:\n{ran}"
        assert ran["executed"] == ran["cells"] > 0, (name, ran)
        assert Path(ran["kernel_python"]).parent == venv_python.parent, (name, ran)  # that env's kernel…
        assert Path(ran["chunkscope_file"]).is_relative_to(repo / "src"), (name, ran)  # …on the clone

    for name in tutorials:
        content = json.loads((executed / name).read_text(encoding="utf-8"))
        url = f"{base}/api/contents/{name}"
        saved = httpx.put(
            url,
            params={"token": token},
            json={"type": "notebook", "format": "json", "content": content},
            timeout=60,
        )
        assert saved.status_code in (200, 201), (name, saved.status_code, saved.text[:500])
        checkpoint = httpx.post(f"{url}/checkpoints", params={"token": token}, timeout=60)
        assert checkpoint.status_code == 201, (name, checkpoint.status_code, checkpoint.text[:500])
        on_disk = json.loads((served / name).read_text(encoding="utf-8"))
        assert any(cell.get("outputs") for cell in on_disk["cells"]), f"{name} was saved without outputs"
        assert (served / ".ipynb_checkpoints" / name.replace(".ipynb", "-checkpoint.ipynb")).is_file()


def test_both_readme_commands_work_as_written_with_debians_python3(tmp_path: Path) -> None:
    assert Path(DEBIAN_PYTHON).is_file(), f"this test is about Debian's {DEBIAN_PYTHON}, which is missing"
    repo = _clone(tmp_path / "alone" / "chunkscope")
    # nothing beside the clone (no shared/ spec or fixtures): the repository must stand on its own
    assert [p.name for p in repo.parent.iterdir()] == ["chunkscope"]
    assert not any((folder / "shared").exists() for folder in repo.parents), "a shared/ folder above"
    lab_command, test_command = readme_commands((repo / "README.md").read_text(encoding="utf-8"))
    env = _new_user_env(tmp_path)
    assert shutil.which("python3", path=env["PATH"]) == DEBIAN_PYTHON, env["PATH"]
    # the machine is the issue's: this python3 refuses `pip install` outside a virtual environment
    stdlib = subprocess.run(
        [DEBIAN_PYTHON, "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert (Path(stdlib) / "EXTERNALLY-MANAGED").is_file(), f"{DEBIAN_PYTHON} is not PEP 668 managed"

    # 1. the lab command, until JupyterLab lists the notebooks at the banner's URL
    lab_log = tmp_path / "lab.log"
    with lab_log.open("wb") as log:
        lab = subprocess.Popen(
            ["bash", "-c", lab_command],
            cwd=repo,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopping it stops JupyterLab and kernels
        )
    try:
        deadline = time.monotonic() + INSTALL_TIMEOUT_S
        listing: dict[str, object] | None = None
        while listing is None:
            text = lab_log.read_text(errors="replace")
            assert lab.poll() is None, f"`{lab_command}` exited with {lab.returncode}:\n{text[-6000:]}"
            assert time.monotonic() < deadline, f"`{lab_command}` never served the notebooks:\n{text[-6000:]}"
            banner = BANNER.search(text)
            if banner:
                try:
                    answer = httpx.get(
                        f"http://127.0.0.1:{banner[3]}/api/contents", params={"token": banner[4]}, timeout=10
                    )
                    if answer.status_code == 200:
                        listing = answer.json()
                except httpx.HTTPError:
                    pass  # the banner comes just before JupyterLab listens
            time.sleep(0.5)  # waiting for pip and a real JupyterLab to start
        assert banner is not None
        names = {item["name"] for item in listing["content"]}  # type: ignore[index, union-attr]
        tutorials = sorted(path.name for path in (repo / "notebooks").glob("*.ipynb"))
        assert NOTEBOOK in names and set(tutorials) <= names, names
        served = Path(banner[1])
        assert served == repo / WORKING_COPY, text  # a working copy, not the committed tutorials
        page = httpx.get(banner[2], timeout=30)  # the banner's URL opens JupyterLab, no login page
        assert page.status_code == 200 and "JupyterLab" in page.text, page.status_code
        text = lab_log.read_text(errors="replace")
        assert "making the project's own .venv" in text, text[:3000]  # said in one line
        assert (repo / ".venv" / "bin" / "python").exists()
        assert "token=..." not in text, text  # only the banner's working URL, not Jupyter's masked one

        # every tutorial, run in the environment the command made and saved as JupyterLab saves it
        _run_and_save_every_notebook(
            repo, served, tutorials, env, tmp_path, f"http://127.0.0.1:{banner[3]}", banner[4]
        )
    finally:
        _stop(lab)

    # 2. the test command, with a few fast test files: set-up, lint, type check and pytest still run
    tested = subprocess.run(
        ["bash", "-c", f"{test_command} {FAST_TEST_FILE}"],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    output = tested.stdout + tested.stderr
    assert tested.returncode == 0, f"`{test_command} {FAST_TEST_FILE}` failed:\n{output[-8000:]}"
    assert "using the project's own .venv" in output, output[-4000:]
    assert "==> ruff check src tests" in output and "==> mypy src" in output, output[-4000:]
    assert re.search(r"\d+ passed", output), output[-4000:]
    assert not re.search(r"\d+ (failed|errors?)\b", output), output[-4000:]
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo, capture_output=True, text=True
    ).stdout
    assert status == "", f"the commands, or running the notebooks, left files git does not ignore:\n{status}"
    assert not (repo / "notebooks" / ".ipynb_checkpoints").exists(), "a checkpoint beside the tutorials"


def test_ci_runs_this_test_on_the_first_python_only_by_its_real_id() -> None:
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    [block] = re.findall(r"^FIRST_RUN_ONLY=\((.*?)^\)", ci, re.M | re.S)
    test_ids = re.findall(r'^\s*"([^"]+)"\s*$', block, re.M)
    this = test_both_readme_commands_work_as_written_with_debians_python3.__name__
    assert f"tests/test_readme_commands.py::{this}" in test_ids, test_ids
    for test_id in test_ids:  # a deselected id that does not exist would silently run in both runs
        path, _, name = test_id.partition("::")
        source = (REPO_ROOT / path).read_text(encoding="utf-8")
        defined = re.search(rf"^def {re.escape(name)}\(", source, re.M)
        assert defined, f".ci/run deselects {test_id}, which does not exist"
