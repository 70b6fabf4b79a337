"""The README's two commands work as written on a stock Debian machine.

The commands are read from README.md itself (the fenced ``bash`` blocks of "The two
commands"), so README and test cannot drift apart. They run in a fresh ``git clone`` of
this checkout's HEAD (commit what you want tested), in a folder of its own with nothing
beside it (no ``shared/`` spec or fixtures), as a new user would run them:
Debian's ``/usr/bin/python3`` first on ``PATH``, no virtualenv or conda env active, no
pyenv shims, no ``PYTHONPATH`` — that Python refuses ``pip install`` (PEP 668), so the
commands must make their own environment. The first command runs until JupyterLab lists
the notebooks at the URL of its banner, then is stopped; the second runs with one fast
test file, so it still lints, type-checks and runs pytest.

pip's download cache (``PIP_CACHE_DIR``, else pip's default) is kept: a warm cache makes
this about a minute of installing instead of several.
"""

from __future__ import annotations

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
# quick; the second reads the reference vectors, which must come from the clone itself
FAST_TEST_FILE = "tests/test_cli_serve.py tests/protocol/test_upstream_vectors.py"
NOTEBOOK = "01-streamchunk-protocol.ipynb"
BANNER = re.compile(r"chunkscope lab: serving .* at (http://127\.0\.0\.1:(\d+)/lab\?token=(\S+))")
INSTALL_TIMEOUT_S = 1200.0  # a cold pip cache downloads JupyterLab, pandas, pyarrow...

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
                        f"http://127.0.0.1:{banner[2]}/api/contents", params={"token": banner[3]}, timeout=10
                    )
                    if answer.status_code == 200:
                        listing = answer.json()
                except httpx.HTTPError:
                    pass  # the banner comes just before JupyterLab listens
            time.sleep(0.5)  # waiting for pip and a real JupyterLab to start
        assert banner is not None
        names = {item["name"] for item in listing["content"]}  # type: ignore[index, union-attr]
        assert NOTEBOOK in names, names
        page = httpx.get(banner[1], timeout=30)  # the banner's URL opens JupyterLab, no login page
        assert page.status_code == 200 and "JupyterLab" in page.text, page.status_code
        text = lab_log.read_text(errors="replace")
        assert "making the project's own .venv" in text, text[:3000]  # said in one line
        assert (repo / ".venv" / "bin" / "python").exists()
    finally:
        _stop(lab)

    # 2. the test command, with one fast test file: set-up, lint, type check and pytest still run
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
    assert (
        subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
        == ""
    ), "the commands left files git does not ignore"


def test_ci_runs_this_test_on_the_first_python_only_by_its_real_id() -> None:
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    [test_id] = re.findall(r'^README_TEST="([^"]+)"', ci, re.M)
    path, _, name = test_id.partition("::")
    assert (REPO_ROOT / path).resolve() == Path(__file__).resolve()
    assert name in globals() and callable(globals()[name]), (
        f".ci/run deselects {test_id}, which does not exist"
    )
