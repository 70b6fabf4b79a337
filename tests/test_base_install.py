"""A plain install works as far as it goes, and says which extra the rest needs.

A fresh venv (from this interpreter's base Python, nothing inherited) gets ``pip install .``
of this checkout — no extra at all. Every path of ``tests/test_extras.py`` (there run with the
optional module blocked) runs again here for real: a CLI path prints one line naming the
extra and exits 2; a Python path raises ``MissingExtraError``. The same install shows that the
wheel carries ``LICENSE`` and the tutorials, and that ``chunkscope lab``'s notebook folder is
a copy in the user's home whose edits survive the next launch.

``test_lab_serves_the_shipped_notebooks_from_a_wheel`` runs the real ``chunkscope lab`` from a
wheel installed into a venv that borrows JupyterLab from this environment's site-packages (a
``.pth`` line), so it needs no download of JupyterLab. pip's cache is kept, so the installs
take seconds once the base dependencies are cached.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from test_extras import CLI_PATHS, ONE_LINE, PYTHON_PATHS, probe, write_inputs

REPO_ROOT = Path(__file__).resolve().parents[1]
BANNER = re.compile(r"chunkscope lab: serving (.*) at (http://127\.0\.0\.1:(\d+)/lab\?token=(\S+))")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _run(*command: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    argv = [str(part) for part in command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, **kwargs)  # type: ignore[call-overload, no-any-return]


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER"))}
    env["HOME"] = str(home)
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
        env[name] = str(home / "jupyter" / name.split("_")[1].lower())
    return env


def _venv(path: Path) -> Path:
    # the base interpreter, not this venv's: nothing of /work/venv's site-packages comes along
    base_python = Path(sys.base_prefix) / "bin" / Path(sys.executable).name
    done = _run(base_python if base_python.exists() else sys.executable, "-m", "venv", path)
    assert done.returncode == 0, done.stderr
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def base_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv's python with ``pip install .`` of this checkout and nothing else."""
    python = _venv(tmp_path_factory.mktemp("base") / "venv")
    done = _run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return python


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_inputs(tmp_path_factory.mktemp("inputs"))


def test_the_base_install_has_no_extra(base_install: Path) -> None:
    modules = ("numpy", "pandas", "traitlets", "jupyterlab", "hypothesis")
    code = f"import importlib.util as u; print([m for m in {modules!r} if u.find_spec(m)])"
    assert _run(base_install, "-c", code).stdout.strip() == "[]"


@pytest.mark.parametrize(("argv", "blocked", "extra"), CLI_PATHS, ids=lambda v: str(v))
def test_a_cli_path_of_the_base_install_prints_one_line_and_exits_2(
    base_install: Path, inputs: Path, tmp_path: Path, argv: list[str], blocked: tuple[str, ...], extra: str
) -> None:
    chunkscope = base_install.parent / "chunkscope"
    done = _run(chunkscope, *argv, cwd=inputs, env=_clean_env(tmp_path))
    lines = done.stderr.strip().splitlines()
    assert (done.returncode, len(lines)) == (2, 1), done.stderr
    match = ONE_LINE.match(lines[0])
    assert match and match[1] == match[3] == extra and lines[0].startswith(f"chunkscope {argv[0]}:"), lines


@pytest.mark.parametrize(("code", "blocked", "extra"), PYTHON_PATHS, ids=lambda v: str(v)[:40])
def test_a_python_path_of_the_base_install_raises_missing_extra_error(
    base_install: Path, tmp_path: Path, code: str, blocked: tuple[str, ...], extra: str
) -> None:
    done = _run(base_install, "-c", probe(code), cwd=tmp_path, env=_clean_env(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    got_extra, message = done.stdout.strip().splitlines()
    if extra == "dask" or code.startswith("from chunkscope.usage import"):
        extra = "usage"  # dask builds on usage, and chunkscope.usage needs usage itself: missing first
    assert got_extra == extra and message.endswith(f'pip install "chunkscope[{extra}]"'), done.stdout


def test_the_base_install_checks_a_chunk_log(base_install: Path, inputs: Path, tmp_path: Path) -> None:
    chunkscope = base_install.parent / "chunkscope"
    done = _run(chunkscope, "check", "run.jsonl", cwd=inputs, env=_clean_env(tmp_path))
    assert done.returncode == 0 and "clean" in done.stdout, done.stdout + done.stderr


def test_the_base_install_catches_a_session_log_error(base_install: Path, tmp_path: Path) -> None:
    (tmp_path / "session.jsonl").write_text("not json\n", encoding="utf-8")
    code = (
        "import chunkscope as cs\n"
        "from chunkscope.sources import read_dsh_session\n"
        "try:\n"
        "    read_dsh_session('session.jsonl')\n"
        "except cs.DshLogError as exc:\n"
        "    print(exc.code, exc.line)\n"
    )
    done = _run(base_install, "-c", code, cwd=tmp_path, env=_clean_env(tmp_path))
    assert (done.returncode, done.stdout.split()) == (0, ["json", "1"]), done.stderr[-3000:]


def test_the_install_carries_the_license_and_the_tutorials_copied_without_overwriting_edits(
    base_install: Path, tmp_path: Path
) -> None:
    code = (
        "import importlib.metadata as m, sys\n"
        "from chunkscope.cli.lab import SHIPPED_NOTEBOOKS, _notebook_root\n"
        "print([f.name for f in m.files('chunkscope') if f.name == 'LICENSE'])\n"
        "print(sorted(p.name for p in SHIPPED_NOTEBOOKS.glob('*.ipynb')))\n"
        "print(_notebook_root(None))\n"
    )
    home = tmp_path / "home"
    first = _run(base_install, "-c", code, cwd=tmp_path, env=_clean_env(home))
    assert first.returncode == 0, first.stderr
    license_files, shipped, folder = first.stdout.strip().splitlines()
    assert license_files == "['LICENSE']"
    expected = sorted(p.name for p in (REPO_ROOT / "notebooks").glob("*.ipynb"))
    assert shipped == str(expected)
    assert Path(folder) == home / "chunkscope-notebooks"
    assert sorted(p.name for p in Path(folder).glob("*.ipynb")) == expected
    assert f"copied {len(expected)} tutorial notebooks" in first.stderr, first.stderr
    edited = Path(folder) / expected[0]
    edited.write_text("my edits", encoding="utf-8")
    again = _run(base_install, "-c", code, cwd=tmp_path, env=_clean_env(home))
    assert again.returncode == 0 and "copied" not in again.stderr, again.stderr
    assert edited.read_text(encoding="utf-8") == "my edits"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("wheel")
    done = _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", target, REPO_ROOT)
    assert done.returncode == 0, done.stderr
    [built] = target.glob("chunkscope-*.whl")
    return built


def test_the_wheel_lists_the_license_and_the_notebooks(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names), names
    shipped = sorted(name.rsplit("/", 1)[1] for name in names if name.startswith("chunkscope/_notebooks/"))
    assert shipped == sorted(p.name for p in (REPO_ROOT / "notebooks").glob("*.ipynb"))


def test_lab_serves_the_shipped_notebooks_from_a_wheel(wheel: Path, tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv")
    done = _run(python, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", wheel)
    assert done.returncode == 0, done.stderr
    # JupyterLab and the rest from this environment, appended after the venv's own chunkscope
    own = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip())
    (own / "zz_borrowed.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n", encoding="utf-8"
    )
    home = tmp_path / "home"
    where = _run(python, "-c", "import chunkscope; print(chunkscope.__file__)", env=_clean_env(home))
    location = where.stdout.strip()
    assert location.startswith(str(own)), location  # the wheel's chunkscope, not the checkout's
    work = tmp_path / "work"  # no notebooks/ here or above: only the shipped ones can be found
    work.mkdir()
    log = tmp_path / "lab.log"
    with log.open("wb") as out:
        lab = subprocess.Popen(
            [python.parent / "chunkscope", "lab", "--no-browser", "--port", "0"],
            cwd=work,
            env=_clean_env(home),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        listing = None
        while listing is None:
            text = log.read_text(errors="replace")
            assert lab.poll() is None, text[-4000:]
            assert time.monotonic() < deadline, text[-4000:]
            banner = BANNER.search(text)
            if banner:
                try:
                    answer = httpx.get(
                        f"http://127.0.0.1:{banner[3]}/api/contents", params={"token": banner[4]}, timeout=10
                    )
                    if answer.status_code == 200:
                        listing = answer.json()
                except httpx.HTTPError:
                    pass
            time.sleep(0.5)  # a real JupyterLab starting
        assert banner and Path(banner[1]) == home / "chunkscope-notebooks", text
        names = sorted(item["name"] for item in listing["content"])
        assert names == sorted(p.name for p in (REPO_ROOT / "notebooks").glob("*.ipynb"))
    finally:
        try:
            os.killpg(lab.pid, signal.SIGTERM)
            lab.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(lab.pid, signal.SIGKILL)
