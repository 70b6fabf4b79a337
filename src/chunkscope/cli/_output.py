"""What every subcommand's output shares: file content made safe for a terminal, and ``| head``.

Every string read from a file reaches the terminal through :func:`printable`;
every subcommand that prints a report runs under :func:`pipe_safe`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable

__all__ = ["pipe_safe", "printable"]

# C0/C1 controls (ESC starts terminal escape sequences), DEL, the bidirectional overrides that can
# reorder what a terminal shows, and lone surrogates (JSON "\ud800" escapes; no encoding can print
# them): none of them may reach the terminal from a file's content.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str, *, newlines: bool = False) -> str:
    """``text`` safe for a terminal: control characters shown as ``\\xNN`` escapes.

    Newlines and tabs stay when ``newlines`` is true, else become ``⏎`` and a space.
    """
    out = _UNSAFE.sub(_escape, text)
    if not newlines:
        out = out.replace("\n", "⏎").replace("\t", " ")
    return out


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def pipe_safe(run: Callable[[], int]) -> int:
    """``run()``, but a reader that stopped reading (``| head``) ends it quietly with status 141.

    141 is what a shell reports for a process killed by SIGPIPE; Python turns that signal
    into ``BrokenPipeError``, which would otherwise end in a traceback.
    """
    try:
        status = run()
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # stdout is gone: point it at /dev/null so the interpreter's final flush stays quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141
