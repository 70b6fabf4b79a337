"""The pytest plugin and ``chunkscope conformance`` on a small adapter package in a temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
SKELETON = (Path(__file__).resolve().parent / "skeleton.py").read_text(encoding="utf-8")

GOOD = """\
from chunkscope.adapters import OpenAICompatAdapter

def make(base_url, api_key):
    return OpenAICompatAdapter(base_url, api_key, idle_timeout=1.5)
"""

# Cases the built-in adapter holds on every branch (the dialect cases are another issue's work).
SUBSET = ["text", "tool-call", "fault-429", "fault-truncated", "abort", "refuse-unsupported-options"]


@pytest.fixture
def package(tmp_path: Path) -> Path:
    pkg = tmp_path / "myadapters"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "good.py").write_text(GOOD)
    (pkg / "skeleton.py").write_text(SKELETON)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # its own rootdir: not this project's settings
    return tmp_path


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{cwd}{os.pathsep}{SRC}", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def pytest_args(target: str) -> list[str]:
    return [
        "-m",
        "pytest",
        "-p",
        "chunkscope.conformance_kit.pytest_plugin",
        f"--chunkscope-conformance={target}",
    ]


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    pyproject = tomllib.loads((SRC.parent / "pyproject.toml").read_text(encoding="utf-8"))
    entry = pyproject["project"]["entry-points"]["pytest11"]
    assert entry == {"chunkscope": "chunkscope.conformance_kit.pytest_plugin"}


def test_the_plugin_turns_each_case_into_a_passing_test(package: Path) -> None:
    keep = ["-k", " or ".join(SUBSET)]
    done = run([*pytest_args("myadapters.good:make"), "-v", "-p", "no:cacheprovider", *keep], package)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in SUBSET:
        assert f"chunkscope-conformance[openai]::{name} PASSED" in done.stdout, done.stdout


def test_the_plugin_fails_the_skeleton_with_a_readable_message(package: Path) -> None:
    done = run([*pytest_args("myadapters.skeleton:make_skeleton"), "-k", "fault-401 or refuse"], package)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "chunkscope-conformance[openai]::fault-401 FAILED" in out or "2 failed" in out, out
    assert "fault-401 (openai wire: 401 invalid API key) fails 2 of" in out
    assert "✗ outcome: Raise LlmError with code AUTH" in out
    assert "observed: raised LlmError PROVIDER_HTTP_ERROR" in out
    assert "✗ refusal: Call self.prepare(options)" in out
    assert "Traceback" not in out


def test_the_plugin_reports_a_bad_target_in_one_line(package: Path) -> None:
    done = run(pytest_args("myadapters.nothing:make"), package)
    assert done.returncode != 0
    assert "--chunkscope-conformance: cannot import module 'myadapters.nothing'" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def command(target: str, *extra: str) -> list[str]:
    cases = [arg for name in SUBSET for arg in ("--case", name)]
    return ["-m", "chunkscope.cli", "conformance", target, *cases, *extra]


def test_the_command_exits_0_when_the_adapter_conforms_and_writes_junit(package: Path) -> None:
    done = run(command("myadapters.good:make", "--junit", "out.xml"), package)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("OpenAICompatAdapter conforms on the openai wire: 6/6 cases clean")
    suite = ET.parse(package / "out.xml").getroot()
    assert suite.get("failures") == "0" and len(suite.findall("testcase")) == len(SUBSET)


def test_the_command_exits_1_and_says_what_to_fix_when_it_does_not(package: Path) -> None:
    done = run(command("myadapters.skeleton:make_skeleton"), package)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("HttpAdapter does not conform on the openai wire:")
    assert any(
        line.startswith("  ✗ fault-429 · outcome: Raise LlmError with code RATE_LIMIT") for line in lines
    )


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("myadapters.good", "'myadapters.good' is not module:factory"),
        ("myadapters.none:make", "cannot import module 'myadapters.none'"),
        ("myadapters.good:nope", "module 'myadapters.good' has no attribute 'nope'"),
        ("myadapters.good:OpenAICompatAdapter.__doc__", "not a callable factory"),
    ],
)
def test_a_bad_module_factory_is_one_clear_line_never_a_traceback(
    package: Path, target: str, message: str
) -> None:
    done = run(["-m", "chunkscope.cli", "conformance", target], package)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"chunkscope conformance: {done.stderr.strip().split(': ', 1)[1]}"
    ]
    assert message in done.stderr
    assert "Traceback" not in done.stderr
