"""The README's code runs as written and prints what its comments say; its tables are the registries.

Each Python block's first line names what it needs installed (``# needs: chunkscope[usage], openai``),
and each block runs alone: in its own namespace here, and in a fresh ``python -m asyncio`` where
only the modules of that install (pyproject's extras, followed through their dependencies) can be
imported. A ``print(...)  # text`` line in a Python block must print exactly ``text`` (once); every
``print`` in the README carries such a comment. The rules, error-code, scenario and provider tables
must be ``RULES``, ``ERROR_CODES``, ``SCENARIOS`` and the wire table row for row: on a mismatch the
test prints the table to paste. The two commands stand on the first screen of GitHub's rendering at
1280 by 800 (a fast estimate here, Chromium's measure under the ``browser`` marker).
"""

from __future__ import annotations

import ast
import code
import contextlib
import functools
import inspect
import io
import json
import re
import sys
import tokenize
import tomllib
from collections import Counter
from importlib.metadata import packages_distributions
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from chunkscope.protocol import ERROR_CODES, RULES, USAGE_RULES

README = Path(__file__).resolve().parents[1] / "README.md"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _python_blocks() -> list[str]:
    return _PYTHON_BLOCK.findall(README.read_text(encoding="utf-8"))


def test_readme_has_python_examples() -> None:
    assert len(_python_blocks()) >= 3


def _print_comments(source: str) -> dict[int, str]:
    """Line number -> the comment on a line that calls ``print`` (every such line must have one)."""
    comments = {
        tok.start[0]: tok.string[1:].strip()
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    lines: dict[int, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
            assert node.lineno in comments, f"line {node.lineno}: a print without its expected output"
            lines[node.lineno] = comments[node.lineno]
    return lines


@pytest.mark.parametrize("number", range(1, len(_python_blocks()) + 1))
async def test_each_readme_python_block_runs_alone_and_prints_what_its_comments_say(number: int) -> None:
    # a namespace of its own, top-level await allowed: as in a fresh notebook or `python -m asyncio`
    source = _python_blocks()[number - 1]
    name = f"README.md python block {number}"
    printed: dict[int, list[str]] = {}

    def record(*args: Any, sep: str = " ", **_: Any) -> None:
        line = sys._getframe(1).f_lineno  # the block's line that called print
        printed.setdefault(line, []).append(sep.join(str(arg) for arg in args))

    namespace: dict[str, object] = {"__name__": "__readme__", "print": record}
    code = compile(source, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    outcome = eval(code, namespace)
    if inspect.isawaitable(outcome):
        await outcome
    expected = _print_comments(source)
    got = {line: printed.get(line, []) for line in expected}
    assert got == {line: [text] for line, text in expected.items()}, name


def test_the_readme_print_check_catches_a_wrong_comment() -> None:
    assert _print_comments("x = 1\nprint(x + 1)  # 2\n") == {2: "2"}
    with pytest.raises(AssertionError, match="without its expected output"):
        _print_comments("print(1)\n")


def _table_after(heading: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    lines = section.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("|"))
    end = next((k for k in range(start, len(lines)) if not lines[k].startswith("|")), len(lines))
    return lines[start:end]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def rules_table() -> list[str]:
    """The README's rules table, rendered from ``RULES``."""
    rows = ["| id | severity | profiles | rule |", "|---|---|---|---|"]
    for r in RULES.values():
        rows.append(f"| `{r.id}` | {r.severity} | {', '.join(r.profiles)} | {_cell(r.description)} |")
    return rows


def usage_rules_table() -> list[str]:
    """The usage-arithmetic table (README and docs/usage.md), rendered from ``USAGE_RULES``."""
    rows = ["| id | severity | rule |", "|---|---|---|"]
    for r in USAGE_RULES.values():
        rows.append(f"| `{r.id}` | {r.severity} | {_cell(r.description)} |")
    return rows


def test_the_usage_arithmetic_tables_are_the_usage_rules_registry() -> None:
    expected = usage_rules_table()
    for name in ("README.md", "docs/usage.md"):
        lines = (README.parent / name).read_text(encoding="utf-8").splitlines()
        start = lines.index(expected[0])
        end = next((k for k in range(start, len(lines)) if not lines[k].startswith("|")), len(lines))
        assert lines[start:end] == expected, f"paste into {name}:\n" + "\n".join(expected)


def error_codes_table() -> list[str]:
    """The README's error-code table, rendered from ``ERROR_CODES``."""
    rows = ["| code | when | retryable |", "|---|---|---|"]
    for c in ERROR_CODES.values():
        rows.append(f"| `{c.code}` | {_cell(c.description)} | {'yes' if c.retryable else 'no'} |")
    return rows


def test_the_readme_rules_table_is_the_rules_registry() -> None:
    expected = rules_table()
    assert _table_after("## Rules") == expected, "paste into README.md:\n" + "\n".join(expected)


def test_the_readme_error_code_table_is_the_code_registry() -> None:
    expected = error_codes_table()
    assert _table_after("## Error codes") == expected, "paste into README.md:\n" + "\n".join(expected)


@pytest.mark.parametrize("command", ["bash scripts/lab.sh", "bash scripts/test.sh"], ids=["lab", "test"])
def test_readme_names_the_two_commands(command: str) -> None:
    assert command in README.read_text(encoding="utf-8")


def test_ci_runs_the_readme_test_command() -> None:
    ci = (README.parent / ".ci" / "run").read_text()
    assert re.search(r"^\s*bash scripts/test\.sh\b", ci, re.M), ci
    assert "set -euo pipefail" in ci


def test_the_readme_scenario_table_is_the_providers_scenarios() -> None:
    from chunkscope.provider import SCENARIOS

    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Local provider scenarios") :].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        for line in section.splitlines()
        if line.startswith("| `")
    ]
    assert [name.strip("`") for name, *_ in rows] == list(SCENARIOS), "paste the table from SCENARIOS"
    for name, description, codes in rows:
        scenario = SCENARIOS[name.strip("`")]
        assert description.replace("\\|", "|") == scenario.description, name
        assert codes == scenario_codes_cell(scenario.expected_codes), name


def scenario_codes_cell(codes: dict[str, str] | None) -> str:
    """The README's code cell of a scenario: the code every wire gives, then each wire that differs."""
    if not codes:
        return ""
    common = Counter(codes.values()).most_common(1)[0][0]
    others = ", ".join(f"{wire}: `{code}`" for wire, code in codes.items() if code != common)
    return f"`{common}`" + (f" ({others})" if others else "")


def test_the_scenario_code_cell_names_the_wires_that_differ() -> None:
    assert scenario_codes_cell(None) == ""
    assert scenario_codes_cell({"openai": "AUTH", "anthropic": "AUTH"}) == "`AUTH`"
    codes = {"openai": "CONTENT_FILTER", "anthropic": "REFUSAL", "gemini": "CONTENT_FILTER"}
    cell = scenario_codes_cell(codes)
    assert cell == "`CONTENT_FILTER` (anthropic: `REFUSAL`)"


class _PasteConsole(code.InteractiveConsole):
    """``python -m asyncio``'s console, compiling only: what a user pasting a block would get."""

    def __init__(self) -> None:
        super().__init__()
        self.compile.compiler.flags |= ast.PyCF_ALLOW_TOP_LEVEL_AWAIT  # as asyncio's REPL sets it
        self.statements = 0
        self.errors: list[str] = []

    def runcode(self, code: Any) -> None:
        self.statements += 1  # compiled: a statement the console would run

    def showsyntaxerror(self, filename: str | None = None, **_: Any) -> None:
        error = sys.exc_info()[1]
        self.errors.append(f"{type(error).__name__}: {error}")


def pasted_errors(source: str) -> list[str]:
    """The syntax errors an interactive console reports for ``source`` pasted line by line."""
    console = _PasteConsole()
    for line in [*source.splitlines(), ""]:
        console.push(line)
    return console.errors


def test_the_paste_check_catches_a_missing_blank_line_after_a_for_body() -> None:
    assert pasted_errors("for x in []:\n    pass\nprint(1)\n") != []
    assert pasted_errors("for x in []:\n    pass\n\nprint(1)\n") == []
    assert pasted_errors("async with x:\n    await y\n\nprint(1)\n") == []  # top-level await is allowed


@pytest.mark.parametrize("number", range(1, len(_python_blocks()) + 1))
def test_each_readme_python_block_pastes_into_an_interactive_console(number: int) -> None:
    source = _python_blocks()[number - 1]
    assert pasted_errors(source) == [], f"README.md python block {number}, pasted into `python -m asyncio`"


def test_readme_and_docs_spell_installs_one_way() -> None:
    # users: pip install "chunkscope[extra]" (quoted: zsh globs brackets); -e only for a checkout
    for path in [README, *sorted((README.parent / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        checkout = re.search(r"^## The two commands\n(.*?)(?=^## )", text, re.M | re.S)
        outside = text.replace(checkout[1], "") if checkout else text
        assert not re.search(r"pip install chunkscope\[", text), path.name
        for line in outside.splitlines():
            assert "pip install -e" not in line or "checkout" in line, f"{path.name}: -e for users: {line}"


@functools.cache
def _piped_asyncio_repl_takes_a_compound_statement() -> bool:
    """False on CPython 3.13.0, whose asyncio REPL compiles each piped line on its own."""
    import subprocess

    probe = subprocess.run(
        [sys.executable, "-m", "asyncio"],
        input="if True:\n    print('in' + 'side')\n\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    return "inside" in probe.stdout


_ANSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|[()][0-9A-B]|[=>])")


def _paste_in_a_terminal(blocks: list[str], env: dict[str, str], cwd: Path) -> str:
    """``python -m asyncio`` on a pseudo-terminal, each block pasted as a terminal pastes it.

    A terminal wraps a paste in bracketed-paste marks; the new REPL (3.13) takes the block
    whole, and Enter runs it. Returns everything the terminal showed, escape codes removed.
    """
    import fcntl
    import os
    import select
    import struct
    import subprocess
    import termios
    import time

    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 240, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "asyncio"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=cwd,
        env={**env, "TERM": "xterm", "PYTHON_COLORS": "0"},
        start_new_session=True,
    )
    os.close(follower)
    shown = bytearray()

    def read_until_prompt(limit: float) -> None:
        # the REPL is ready for the next paste when a fresh prompt has stood for a moment
        deadline = time.monotonic() + limit
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.05)
            if ready:
                try:
                    shown.extend(os.read(leader, 65536))
                except OSError:
                    return
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > 0.5:
                tail = _ANSI.sub("", shown[-400:].decode("utf-8", "replace")).rstrip(" \r\n")
                if tail.endswith(">>>"):
                    return
        seen = shown[-3000:].decode("utf-8", "replace")
        raise AssertionError(f"the REPL did not come back to its prompt: {seen}")

    try:
        read_until_prompt(60)
        for source in blocks:
            os.write(leader, b"\x1b[200~" + source.encode() + b"\x1b[201~\r\r")
            read_until_prompt(120)
        os.write(leader, b"\x04")  # Ctrl-D: leave the REPL
        with contextlib.suppress(AssertionError):
            read_until_prompt(5)
    finally:
        process.kill()
        process.wait(10)
        os.close(leader)
    return _ANSI.sub("", shown.decode("utf-8", "replace")).replace("\r", "")


# --- each block alone, after the install it names ---------------------------------------------

_NEEDS = re.compile(r"^# needs: (\S.*)$")
PYPROJECT = tomllib.loads((README.parent / "pyproject.toml").read_text(encoding="utf-8"))


def block_needs(source: str) -> list[Requirement]:
    """What a block's first line, ``# needs: chunkscope[usage], openai``, says to install."""
    first = source.split("\n", 1)[0]
    match = _NEEDS.match(first)
    assert match, f"the block's first line must say what it needs (# needs: chunkscope[...], ...): {first!r}"
    needs = [Requirement(part.strip()) for part in match[1].split(",")]
    assert [n.name for n in needs].count("chunkscope") == 1, f"{first!r}: name chunkscope with its extras"
    return needs


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_closure(needs: list[Requirement]) -> set[str]:
    """The distributions ``pip install`` of ``needs`` brings (canonical names), chunkscope's from pyproject.

    chunkscope's own requirements are read from this checkout's ``pyproject.toml`` (its extras
    expanded, ``chunkscope[x]`` inside an extra too); every other distribution's from its installed
    metadata, with the markers of the extras asked for.
    """
    from importlib.metadata import PackageNotFoundError, distribution

    extras = PYPROJECT["project"]["optional-dependencies"]
    found: set[str] = set()
    todo: list[Requirement] = list(needs)
    while todo:
        need = todo.pop()
        name = _canonical(need.name)
        if name == "chunkscope":
            for extra in need.extras:
                assert extra in extras, f"chunkscope has no extra {extra!r} (pyproject.toml)"
            todo += [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
            todo += [Requirement(r) for extra in need.extras for r in extras[extra]]
            continue
        key = f"{name}[{','.join(sorted(need.extras))}]"
        if key in found:
            continue
        found.add(key)
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue  # not in this environment: nothing of it can be imported here either
        for text in requires:
            requirement = Requirement(text)
            marker = requirement.marker
            asked = ["", *need.extras]
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in asked):
                todo.append(requirement)
    return {key.split("[", 1)[0] for key in found}


def importable_modules(needs: list[Requirement]) -> set[str]:
    """The top-level modules a fresh environment with only ``needs`` installed could import."""
    closure = installed_closure(needs)
    modules = {
        module
        for module, owners in packages_distributions().items()
        if any(_canonical(owner) in closure for owner in owners)
    }
    return modules | {"chunkscope"} | set(sys.stdlib_module_names)


def test_each_readme_python_block_names_what_it_needs_and_imports_nothing_else() -> None:
    for number, source in enumerate(_python_blocks(), start=1):
        importable = importable_modules(block_needs(source))
        imported = {
            (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]  # type: ignore[union-attr]
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        }
        assert imported <= importable, (number, "imported but not named", imported - importable)


def test_the_install_closure_follows_chunkscopes_extras_and_their_dependencies() -> None:
    base = installed_closure([Requirement("chunkscope")])
    usage = installed_closure([Requirement("chunkscope[usage]")])
    assert {"pydantic", "httpx", "pydantic-core"} <= base and "pandas" not in base
    assert {"pandas", "numpy", "pyarrow"} <= usage  # and pandas' own dependencies:
    assert "python-dateutil" in usage
    assert "openai" not in usage
    assert "openai" in installed_closure([Requirement("chunkscope"), Requirement("openai")])
    with pytest.raises(AssertionError, match="no extra 'nope'"):
        installed_closure([Requirement("chunkscope[nope]")])
    with pytest.raises(AssertionError, match="must say what it needs"):
        block_needs("import chunkscope as cs\n")


# a fresh interpreter where only the named install can be imported: every finder on sys.meta_path
# answers None for the other top-level modules of this environment, so their import fails and
# ``importlib.util.find_spec`` says None, exactly as for a package that is not installed
_BLOCKER = """\
import json, os, sys


class _OnlyTheInstall:
    def __init__(self, finder, absent):
        self.finder, self.absent = finder, absent

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.absent:
            return None
        return self.finder.find_spec(name, path, target)

    def __getattr__(self, name):
        return getattr(self.finder, name)


_absent = frozenset(json.load(open(os.environ["CHUNKSCOPE_README_ABSENT"])))
sys.meta_path[:] = [_OnlyTheInstall(finder, _absent) for finder in sys.meta_path]
"""


def _absent_modules(needs: list[Requirement]) -> list[str]:
    importable = importable_modules(needs)
    return sorted(set(packages_distributions()) - importable)


def _run_alone(number: int, source: str, tmp_path: Path) -> tuple[str, str]:
    """Block ``number`` in a fresh ``python -m asyncio``, with only what it names importable.

    Returns what it printed (its stdout) and everything it showed (stdout and stderr).
    """
    import os
    import subprocess

    folder = tmp_path / f"block-{number}"
    (folder / "site").mkdir(parents=True)
    (folder / "site" / "sitecustomize.py").write_text(_BLOCKER, encoding="utf-8")
    absent = folder / "absent.json"
    absent.write_text(json.dumps(_absent_modules(block_needs(source))), encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": f"{folder / 'site'}{os.pathsep}{README.parent / 'src'}",
        "CHUNKSCOPE_README_ABSENT": str(absent),
    }
    if _piped_asyncio_repl_takes_a_compound_statement():
        done = subprocess.run(
            [sys.executable, "-m", "asyncio"],
            input=source + "\n",  # the blank line that ends a pasted compound statement
            capture_output=True,
            text=True,
            cwd=folder,
            env=env,
            timeout=240,
        )
        return done.stdout, done.stdout + done.stderr
    # CPython 3.13.0: piped input cannot hold a block, so paste as into a terminal; the terminal
    # echoes the pasted source, so what the block printed is what is left without the print lines
    output = _paste_in_a_terminal([source], env, folder)
    return "\n".join(line for line in output.splitlines() if "print(" not in line), output


@pytest.mark.slow  # about 20 s on two cores: nine fresh interpreters, providers and a conformance run
def test_each_readme_python_block_runs_alone_in_a_fresh_python_m_asyncio_after_the_install_it_names(
    tmp_path: Path,
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    blocks = _python_blocks()
    with ThreadPoolExecutor(max_workers=3) as pool:  # processes: the threads only wait on them
        runs = list(pool.map(lambda numbered: _run_alone(*numbered, tmp_path), enumerate(blocks, start=1)))
    for number, (source, (printed, output)) in enumerate(zip(blocks, runs, strict=True), start=1):
        failed = "Traceback" in output or re.search(r"^\w*Error: ", output, re.M)
        assert not failed, f"README.md python block {number}, alone:\n{output[-4000:]}"
        for expected in _print_comments(source).values():
            assert expected in printed, (number, expected, printed[-3000:])


def test_a_block_that_uses_a_package_it_does_not_name_fails_alone(tmp_path: Path) -> None:
    source = "# needs: chunkscope\nimport pandas\nprint(pandas.__name__)  # pandas\n"
    _, output = _run_alone(1, source, tmp_path)
    assert re.search(r"^ModuleNotFoundError: .*\bpandas\b", output, re.M), output
    source = "# needs: chunkscope\nimport chunkscope as cs\ncs.UsageLog()\n"
    _, output = _run_alone(2, source, tmp_path)
    assert 'needs the "usage" extra' in output, output  # a path that needs an extra, found by running it


# --- the first screen --------------------------------------------------------------------------

FIRST_SCREEN = (1280, 800)
"""The window a newcomer opens the README in: a laptop's browser, 1280 by 800 CSS pixels."""

# GitHub's README styles that decide heights (github-markdown-css: the page is 980 px wide with
# 45 px of padding, 16 px text at line-height 1.5, headings, code blocks at 85 % with 16 px of
# padding, 16 px between blocks, pictures scaled to the column's width)
GITHUB_CSS = """
body { margin: 0; background: #fff; }
.markdown-body { box-sizing: border-box; min-width: 200px; max-width: 980px; margin: 0 auto; padding: 45px;
  font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
  font-size: 16px; line-height: 1.5; color: #1f2328; word-wrap: break-word; }
.markdown-body > *:first-child { margin-top: 0 !important; }
.markdown-body p, .markdown-body pre, .markdown-body table, .markdown-body ul, .markdown-body ol {
  margin-top: 0; margin-bottom: 16px; }
.markdown-body h1, .markdown-body h2, .markdown-body h3 { margin-top: 24px; margin-bottom: 16px;
  font-weight: 600; line-height: 1.25; }
.markdown-body h1 { font-size: 2em; padding-bottom: .3em; border-bottom: 1px solid #d1d9e0b3; }
.markdown-body h2 { font-size: 1.5em; padding-bottom: .3em; border-bottom: 1px solid #d1d9e0b3; }
.markdown-body h3 { font-size: 1.25em; }
.markdown-body code, .markdown-body pre { font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo,
  Consolas, "Liberation Mono", monospace; font-size: 85%; }
.markdown-body code { padding: .2em .4em; background: #818b981f; border-radius: 6px; }
.markdown-body pre { padding: 16px; overflow: auto; line-height: 1.45; background: #f6f8fa;
  border-radius: 6px; }
.markdown-body pre code { padding: 0; background: transparent; font-size: 100%; }
.markdown-body img { max-width: 100%; box-sizing: content-box; }
.markdown-body img[src^="https://mybinder.org/"] { height: 20px; }  /* the badge: 20 px tall, offline here */
.markdown-body table { display: block; width: max-content; max-width: 100%; overflow: auto;
  border-collapse: collapse; }
.markdown-body td, .markdown-body th { padding: 6px 13px; border: 1px solid #d1d9e0; }
"""


def readme_html() -> str:
    """README.md as a page styled as GitHub shows a README (pictures from the checkout's docs/)."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(README.read_text(encoding="utf-8"))
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><base href="{README.parent.as_uri()}/">'
        f"<style>{GITHUB_CSS}</style></head>"
        f'<body><article class="markdown-body">{body}</article></body></html>'
    )


# what GitHub's styles give each kind of block, in CSS pixels (GITHUB_CSS): the column is
# 980 - 2 * 45 = 890 px wide; a line of 16 px text is 24 px tall and holds at most ~100 characters
# (Chromium's sans-serif averages 8.3 px a character in the README's prose); blocks are 16 px apart
_COLUMN_PX = 890
_PROSE_CHARS_PER_LINE = 100
_LINE_PX = 24
_GAP_PX = 16
_HEADING_PX = {
    "h1": 2 * 16 * 1.25 + 0.3 * 32 + 1 + _GAP_PX,
    "h2": 24 + 1.5 * 16 * 1.25 + 0.3 * 24 + 1 + _GAP_PX,
}
_CODE_LINE_PX = 0.85 * 16 * 1.45
_CODE_PADDING_PX = 2 * 16


def _picture_height(src: str, width: str | None) -> float:
    """A picture's height in the column: its own size, scaled to ``width`` or to fit the column."""
    import struct

    with (README.parent / src).open("rb") as png:
        own_width, own_height = struct.unpack(">II", png.read(24)[16:24])  # the PNG's IHDR
    shown = min(float(width) if width else own_width, _COLUMN_PX)
    return own_height * shown / own_width


def first_screen_estimate(readme: str) -> float:
    """How far down GitHub's rendering of ``readme`` the second command's block ends, in CSS pixels.

    A model of GITHUB_CSS, block by block, from the page's top padding (45 px): each heading's
    height, each paragraph's lines at 100 characters a line (its rendered text, markup removed),
    each picture at its scaled size and each code block's lines with its padding, plus the 16 px
    between blocks. The browser test below measures the same page in Chromium and holds the model
    to it (the estimate may not fall short of the measure): 788 px estimated, 750 px measured.
    """
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(readme)
    height = 45.0
    commands = 0
    for k, token in enumerate(tokens):
        if token.type == "heading_open":
            height += _HEADING_PX.get(token.tag, _HEADING_PX["h2"])
        elif token.type == "paragraph_open":
            shown = [
                child.content
                for child in tokens[k + 1].children or []
                if child.type in ("text", "code_inline")
            ]
            lines = max(1, -(-len("".join(shown)) // _PROSE_CHARS_PER_LINE))
            height += lines * _LINE_PX + _GAP_PX
        elif token.type == "html_block" and (
            picture := re.search(r'<img src="([^"]+)"(?: width="(\d+)")?', token.content)
        ):
            height += (
                _picture_height(picture[1], picture[2]) + _LINE_PX / 4 + _GAP_PX
            )  # an inline box's descent
        elif token.type == "fence":
            height += token.content.count("\n") * _CODE_LINE_PX + _CODE_PADDING_PX
            if token.info == "bash" and token.content.startswith("bash scripts/"):
                commands += 1
                if commands == 2:
                    return height
            height += _GAP_PX
    raise AssertionError("the README has no second command")


def test_the_two_commands_are_on_the_readmes_first_screen() -> None:
    """At 1280 by 800, GitHub's rendering shows what chunkscope is and both commands unscrolled.

    The estimate is ``first_screen_estimate``'s model of GitHub's README styles (checked against
    Chromium by the browser test below); the second command's block must end within the 800 px
    window, so a newcomer sees both commands without scrolling, after one picture.
    """
    readme = README.read_text(encoding="utf-8")
    assert first_screen_estimate(readme) <= FIRST_SCREEN[1]
    before = readme[: readme.index("bash scripts/test.sh")]
    assert len(re.findall(r"<img |!\[", before)) == 1, "one picture before the commands says what it is"


def test_the_first_screen_estimate_grows_with_what_comes_first() -> None:
    readme = README.read_text(encoding="utf-8")
    longer = readme.replace(
        "\n## The two commands", "\n" + "A line of prose. " * 60 + "\n\n## The two commands", 1
    )
    assert first_screen_estimate(longer) > first_screen_estimate(readme) + 10 * _LINE_PX - 1
    assert first_screen_estimate(longer) > FIRST_SCREEN[1]


@pytest.mark.browser
def test_chromium_shows_the_two_commands_on_the_readmes_first_screen(tmp_path: Path) -> None:
    """The README rendered with GitHub's styles, in headless Chromium at 1280 by 800: both commands'
    blocks end above the fold, the picture is whole above them, and the estimate the fast test
    uses is not below what Chromium measures. The screenshot stays in ``test-artifacts/``."""
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "README.html"
    page_file.write_text(readme_html(), encoding="utf-8")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": FIRST_SCREEN[0], "height": FIRST_SCREEN[1]})
            page.goto(page_file.as_uri())
            page.wait_for_load_state("load")
            boxes = page.evaluate(
                """() => {
                    const bottom = (el) => el.getBoundingClientRect().bottom;
                    const blocks = [...document.querySelectorAll('pre')];
                    const lab = blocks.find((b) => b.textContent.trim() === 'bash scripts/lab.sh');
                    const test = blocks.find((b) => b.textContent.trim() === 'bash scripts/test.sh');
                    const picture = document.querySelector('img[src="docs/timeline.png"]');
                    return {lab: bottom(lab), test: bottom(test), picture: bottom(picture),
                            loaded: picture.complete && picture.naturalWidth > 0};
                }"""
            )
            artifacts = README.parent / "test-artifacts"
            artifacts.mkdir(exist_ok=True)
            page.screenshot(path=str(artifacts / "readme-first-screen.png"))
        finally:
            browser.close()
    assert boxes["loaded"], "the picture loads from docs/"
    assert boxes["picture"] < boxes["lab"] < boxes["test"] <= FIRST_SCREEN[1], boxes
    estimate = first_screen_estimate(README.read_text(encoding="utf-8"))
    assert estimate >= boxes["test"], (estimate, boxes)


def test_the_readme_provider_table_has_a_row_for_every_wire_of_the_table() -> None:
    from chunkscope.adapters.wires import WIRES

    rows = _table_after("## Use a real provider")[2:]
    adapters = [re.search(r"`cs\.(\w+)`", row)[1] for row in rows]  # type: ignore[index]
    assert adapters == [wire.adapter.__name__ for wire in WIRES.values()], (
        "one row per wire, in the table's order"
    )
    for row, wire in zip(rows, WIRES.values(), strict=True):
        assert all(f"`{key}`" in row for key in wire.facts.key_variables[:1]), (wire.name, row)


# --- the README as an index page shows it ------------------------------------------------------

_TARGETS = re.compile(r'\]\(([^)\s]+)\)|<img src="([^"]+)"')


@pytest.mark.slow  # a wheel built as pip builds it (hatchling and its readme plugin from the index or cache)
def test_the_wheels_description_is_the_readme_with_every_picture_and_link_absolute(tmp_path: Path) -> None:
    import email
    import subprocess
    import zipfile

    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(README.parent)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    [wheel] = tmp_path.glob("chunkscope-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_string(archive.read(name).decode("utf-8"))
    assert metadata["Description-Content-Type"] == "text/markdown"
    description = metadata.get_payload()
    homepage = PYPROJECT["project"]["urls"]["Homepage"]
    repository = homepage.removeprefix("https://github.com/")
    raw = f"https://raw.githubusercontent.com/{repository}/HEAD/"
    page = f"{homepage}/blob/HEAD/"
    targets = [link or picture for link, picture in _TARGETS.findall(description)]
    pictures = [t for t in targets if t.startswith(raw)]
    assert len(pictures) >= 4, targets  # the README's pictures, served from the repository
    for target in targets:
        assert re.match(r"https://|#", target), f"a relative link on the index page: {target}"
        if target.startswith((raw, page)):
            assert (README.parent / target.removeprefix(raw).removeprefix(page)).is_file(), target
    # nothing else changed: without the prefixes it is the README itself
    readme = README.read_text(encoding="utf-8")
    assert description.replace(raw, "").replace(page, "").strip() == readme.strip()
