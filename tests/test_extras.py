"""Every part names what it needs: direct imports are declared, a missing extra is one line and exit 2.

The declaration test reads the package's imports with ``ast`` (as ``test_layers.py`` does) and
``pyproject.toml``: each third-party module is a base dependency or in ``OPTIONAL_MODULES``, whose
extra must list the module's distribution itself (not only through another package). The
missing-extra paths run in a child interpreter where the optional module is blocked
(``sys.modules[name] = None`` makes its import fail exactly as an absent package does);
``tests/test_base_install.py`` runs them again in a real venv with no extras. The tutorials and
the README's examples import only what the ``lab`` extra installs (``tests/test_readme_commands.py``
runs every notebook in the environment ``scripts/lab.sh`` makes, ``tests/binder`` in binder's).
"""

from __future__ import annotations

import ast
import json
import pickle
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from chunkscope._extras import OPTIONAL_MODULES, MissingExtraError, as_missing_extra
from test_layers import PACKAGE, SOURCES, imports_of, package_of

REPO_ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
ONE_LINE = re.compile(
    r'^chunkscope \w+: needs the "(\w+)" extra \((\w+) is not installed\): '
    r'pip install "chunkscope\[(\w+)\]"$'
)


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def third_party_imports() -> dict[str, set[str]]:
    """Top-level third-party module -> the package files that import it."""
    found: dict[str, set[str]] = {}
    for path in [*SOURCES, PACKAGE / "__init__.py"]:
        for _, target in imports_of(path.read_text(encoding="utf-8"), package_of(path)):
            top = target.split(".")[0]
            if top and top != "chunkscope" and top not in sys.stdlib_module_names:
                found.setdefault(top, set()).add(str(path.relative_to(PACKAGE)))
    return found


def test_every_third_party_import_is_declared_directly_where_it_is_needed() -> None:
    base = _names(PYPROJECT["project"]["dependencies"])
    extras = {name: _names(reqs) for name, reqs in PYPROJECT["project"]["optional-dependencies"].items()}
    distributions = packages_distributions()
    undeclared = []
    for module, files in sorted(third_party_imports().items()):
        if module in OPTIONAL_MODULES:
            extra, distribution = OPTIONAL_MODULES[module]
            if distribution not in extras.get(extra, set()):
                undeclared.append(f"{module} ({sorted(files)}): not in the {extra!r} extra")
            continue
        owners = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if not owners & base:
            undeclared.append(f"{module} ({sorted(files)}): neither a dependency nor in OPTIONAL_MODULES")
    assert undeclared == []


def test_the_optional_modules_table_names_only_real_extras() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {extra for extra, _ in OPTIONAL_MODULES.values()} <= set(extras)
    assert _names(extras["testing"]) == {"hypothesis"}  # chunkscope.testing needs only what it imports


def test_missing_extra_error_is_one_line_that_names_the_extra_and_pickles() -> None:
    error = MissingExtraError("usage", "numpy", "chunkscope.UsageLog")
    assert str(error) == (
        'chunkscope.UsageLog needs the "usage" extra (numpy is not installed): '
        'pip install "chunkscope[usage]"'
    )
    assert isinstance(error, ModuleNotFoundError) and error.name == "numpy" and error.extra == "usage"
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), str(again), again.extra) == (MissingExtraError, str(error), "usage")


def test_only_optional_modules_become_missing_extra_errors() -> None:
    assert as_missing_extra(ModuleNotFoundError("x", name="pandas.core")).extra == "usage"  # type: ignore[union-attr]
    assert as_missing_extra(ModuleNotFoundError("x", name="mypkg")) is None  # a user's own module: untouched
    assert as_missing_extra(ValueError("x")) is None


def _blocked(code: str, *modules: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def write_inputs(folder: Path) -> Path:
    """A clean chunk log ``run.jsonl`` and a session log ``session.jsonl`` (its header only) in ``folder``."""
    (folder / "run.jsonl").write_text(
        '{"type":"block-start","index":0,"blockType":"text"}\n'
        '{"type":"text-delta","index":0,"text":"hi"}\n'
        '{"type":"block-end","index":0,"block":{"type":"text","text":"hi"}}\n'
        '{"type":"usage","usage":{"inputTokens":1,"outputTokens":1}}\n'
        '{"type":"finish","reason":{"kind":"stop"}}\n',
        encoding="utf-8",
    )
    (folder / "session.jsonl").write_text(
        '{"type":"session","version":0,"id":"s","createdAt":0}\n', encoding="utf-8"
    )
    return folder


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_inputs(tmp_path_factory.mktemp("inputs"))


CLI_PATHS = [
    (["usage", "run.jsonl"], ("numpy", "pandas"), "usage"),
    (["lab", "--no-browser"], ("jupyterlab",), "lab"),
]


@pytest.mark.parametrize(("argv", "blocked", "extra"), CLI_PATHS, ids=lambda v: str(v))
def test_a_cli_path_without_its_extra_prints_one_line_and_exits_2(
    inputs: Path, argv: list[str], blocked: tuple[str, ...], extra: str
) -> None:
    done = _blocked(f"from chunkscope.cli import main; sys.exit(main({argv!r}))", *blocked, cwd=inputs)
    lines = done.stderr.strip().splitlines()
    assert (done.returncode, len(lines)) == (2, 1), done.stderr
    match = ONE_LINE.match(lines[0])
    assert match and match[1] == match[3] == extra and lines[0].startswith(f"chunkscope {argv[0]}:"), lines


@pytest.mark.parametrize("command", ["check", "show"])
def test_check_and_show_read_a_session_log_without_the_usage_extra(inputs: Path, command: str) -> None:
    # session logs are read by chunkscope.sources, which needs neither pandas nor numpy
    done = _blocked(
        f"from chunkscope.cli import main; sys.exit(main([{command!r}, 'session.jsonl']))",
        "numpy",
        "pandas",
        cwd=inputs,
    )
    assert "extra" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "session log" in done.stderr or done.returncode in (0, 1), done.stderr


PYTHON_PATHS = [
    ("cs.UsageLog().to_frame()", ("numpy", "pandas"), "usage"),
    ("cs.summary", ("numpy", "pandas"), "usage"),
    ("cs.read_dsh_session", ("numpy", "pandas"), "usage"),
    ("import asyncio; asyncio.run(cs.show([]))", ("traitlets", "anywidget"), "notebook"),
    ("cs.ConformanceGrid", ("anywidget",), "notebook"),
    ("cs.read_dsh_sessions(write_session(), dask=True)", ("dask",), "dask"),
    ("cs.otel_sink()", ("opentelemetry",), "otel"),
    # with usage missing too, the message still names otel, which brings usage with it
    ("cs.otel_sink()", ("numpy", "pandas", "opentelemetry"), "otel"),
    ("cs.to_otel", ("opentelemetry",), "otel"),
    ("cs.cadence(cs.UsageLog()).plot()", ("matplotlib",), "usage"),
    ("from chunkscope.usage import to_otel", ("opentelemetry",), "otel"),
    ("import chunkscope.testing", ("hypothesis",), "testing"),
    (
        "from chunkscope.conformance_kit._report import ConformanceReport; "
        "ConformanceReport(adapter='A', wire='openai', cases=[]).to_frame()",
        ("pandas",),
        "usage",
    ),
]


def probe(code: str) -> str:
    """A script that runs ``code`` and prints the extra a ``MissingExtraError`` names, then its line."""
    return (
        "import chunkscope as cs\n"
        "def write_session():\n"
        "    open('s.jsonl', 'w').write("
        '\'{"type":"session","version":0,"id":"s","createdAt":0}\\n\')\n'
        "    return 's.jsonl'\n"
        "try:\n"
        f"    {code}\n"
        "except cs.MissingExtraError as exc:\n"
        "    print(exc.extra); print(exc)\n"
    )


@pytest.mark.parametrize(("code", "blocked", "extra"), PYTHON_PATHS, ids=lambda v: str(v)[:40])
def test_a_python_path_without_its_extra_raises_missing_extra_error(
    tmp_path: Path, code: str, blocked: tuple[str, ...], extra: str
) -> None:
    done = _blocked(probe(code), *blocked, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    got_extra, message = done.stdout.strip().splitlines()
    assert got_extra == extra and message.endswith(f'pip install "chunkscope[{extra}]"'), done.stdout


GATED_PROBE = """
import importlib.abc, json, sys, traceback

class Absent(importlib.abc.MetaPathFinder):  # as if never installed (a None in sys.modules is "imported")
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Absent())
import chunkscope as cs
found = {}
for name in cs.__all__:
    try:
        getattr(cs, name)
    except cs.MissingExtraError as exc:
        found[name] = [str(exc), "".join(traceback.format_exception(exc))]
print(json.dumps(found))
"""
MESSAGE = re.compile(
    r'^(\S+) needs the "(\w+)" extra \((\w+) is not installed\): pip install "chunkscope\[(\w+)\]"$'
)


def test_every_gated_name_without_its_extra_is_one_standalone_error_in_one_wording(tmp_path: Path) -> None:
    """With no optional module installed, each public name that needs one raises a short traceback
    (no chained ``ModuleNotFoundError``, none of the import machinery) whose line names it and its extra."""
    code = f"BLOCKED = {sorted(OPTIONAL_MODULES)!r}\n{GATED_PROBE}"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    gated: dict[str, list[str]] = json.loads(done.stdout)
    assert {"UsageLog", "summary", "Timeline", "ConformanceGrid", "to_otel", "read_parquet"} <= set(gated)
    extras = PYPROJECT["project"]["optional-dependencies"]
    for name, (message, shown) in gated.items():
        match = MESSAGE.match(message)
        assert match is not None, message
        assert match[1] == f"chunkscope.{name}" and match[2] == match[4] in extras
        assert match[3] in OPTIONAL_MODULES
        assert "During handling" not in shown and "direct cause" not in shown, shown
        # the caller's frame and chunkscope's one (3.13 also prints the caller's source under its frame)
        assert "importlib" not in shown and shown.count('  File "') <= 2, shown
        assert shown.rstrip().endswith(message)


# --- the lab extra runs every tutorial and the README's examples ---------------------------------

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))


def _top_level_imports(code: str) -> set[str]:
    """The top-level modules ``code`` imports (absolute imports; top-level ``await`` allowed)."""
    tree = compile(code, "<cell>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def _cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    # IPython's magics and shell lines are not Python
    return [
        "\n".join(line for line in cell.splitlines() if not line.lstrip().startswith(("%", "!")))
        for cell in code
    ]


def _readme_blocks() -> list[str]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", readme, re.M | re.S)


def example_imports() -> dict[str, set[str]]:
    """Third-party top-level module -> the notebooks (and README) that import it."""
    found: dict[str, set[str]] = {}
    sources = [(path.name, cell) for path in NOTEBOOKS for cell in _cells(path)]
    sources += [("README.md", block) for block in _readme_blocks()]
    for where, code in sources:
        for module in _top_level_imports(code):
            if module != "chunkscope" and module not in sys.stdlib_module_names:
                found.setdefault(module, set()).add(where)
    return found


def extra_closure(extra: str) -> set[str]:
    """The distributions ``chunkscope[extra]`` names, through the extras it includes."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    names: set[str] = set()
    todo, seen = [extra], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for requirement in extras[current]:
            included = re.fullmatch(r"chunkscope\[([\w,\s-]+)\]", requirement.strip())
            if included:
                todo.extend(part.strip() for part in included[1].split(","))
            else:
                names |= _names([requirement])
    return names


def test_the_lab_extra_names_every_module_the_notebooks_and_the_readme_import() -> None:
    found = example_imports()
    assert {"anthropic", "openai", "duckdb"} <= set(found), sorted(found)  # the parser sees the imports
    provided = extra_closure("lab") | _names(PYPROJECT["project"]["dependencies"])
    distributions = packages_distributions()
    missing = []
    for module, where in sorted(found.items()):
        owners = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if not owners & provided:
            missing.append(f"{module} (imported by {', '.join(sorted(where))}): not in the lab extra")
    assert missing == []


def test_the_lab_closure_follows_included_extras() -> None:
    closure = extra_closure("lab")
    assert {"jupyterlab", "pandas", "anywidget", "genai-prices", "opentelemetry-sdk", "dask"} <= closure
    assert "pytest" not in closure  # nothing of the test extra
