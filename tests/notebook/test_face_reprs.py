"""Under IPython, ``import chunkscope`` changes nothing in its host; a notebook path registers the reprs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# A live shell's formatters, as data: every type and by-name hook of every formatter.
SNAPSHOT = """
def snapshot(shell):
    formatters = dict(shell.display_formatter.formatters)
    formatters["ipython_display"] = shell.display_formatter.ipython_display_formatter
    return {
        kind: (dict(f.type_printers), dict(f.deferred_printers)) for kind, f in formatters.items()
    }
"""


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SNAPSHOT + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def test_importing_chunkscope_in_a_live_shell_leaves_its_formatters_as_they_were() -> None:
    out = _run(
        """
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        before = snapshot(shell)
        import sys
        import chunkscope as cs
        error = cs.LlmError("slow down", "RATE_LIMIT", status=429)
        data, _ = shell.display_formatter.format(error)
        print(snapshot(shell) == before, "text/html" in data)
        print(sorted(m for m in sys.modules if m.startswith("chunkscope.notebook")))
        """
    )
    assert out.split("\n")[:2] == ["True False", "[]"]


def test_using_a_notebook_name_registers_the_reprs() -> None:
    out = _run(
        """
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        import chunkscope as cs
        before = snapshot(shell)
        cs.show  # the notebook layer's first use
        error = cs.LlmError("slow down", "RATE_LIMIT", status=429)
        data, _ = shell.display_formatter.format(error)
        print(snapshot(shell) != before)
        print(data.get("text/html", "NO HTML"))
        """
    )
    changed, html = out.split("\n", 1)
    assert changed == "True"
    assert "RATE_LIMIT" in html and "429" in html and "NO HTML" not in html


def test_load_ext_registers_the_reprs_in_that_shell() -> None:
    out = _run(
        """
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "chunkscope")
        import chunkscope as cs
        data, _ = shell.display_formatter.format(cs.LlmError("slow down", "RATE_LIMIT", status=429))
        print(data.get("text/html", "NO HTML"))
        """
    )
    assert "RATE_LIMIT" in out and "NO HTML" not in out


def test_importing_chunkscope_outside_ipython_loads_no_notebook_code() -> None:
    out = _run(
        """
        import sys
        import chunkscope as cs
        cs.check([])
        print(sorted(m for m in sys.modules if m.startswith(("chunkscope.notebook", "IPython", "anywidget"))))
        """
    )
    assert out.strip() == "[]"
