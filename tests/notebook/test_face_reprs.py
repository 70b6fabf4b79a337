"""Under IPython, ``import chunkscope`` alone registers the inline reprs."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout


def test_importing_chunkscope_in_an_ipython_shell_gives_llm_error_its_html_repr() -> None:
    out = _run(
        """
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        import chunkscope as cs
        error = cs.LlmError("slow down", "RATE_LIMIT", status=429)
        data, _ = shell.display_formatter.format(error)
        print(data.get("text/html", "NO HTML"))
        """
    )
    assert "RATE_LIMIT" in out and "429" in out and "NO HTML" not in out


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
