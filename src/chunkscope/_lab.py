"""``chunkscope lab``: JupyterLab on the tutorial notebooks, on loopback, offline.

The notebooks start their own :class:`~chunkscope.LocalProvider` inside the
kernel, so nothing here talks to a model provider: this module only finds the
notebooks folder and runs ``jupyter lab`` on 127.0.0.1 with it as root, with
JupyterLab's news feed and update check turned off (no network needed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["add_lab_parser", "find_notebooks_dir", "lab_command", "run_lab"]

LAB_HELP = "start JupyterLab on the tutorial notebooks (127.0.0.1, offline)"


def find_notebooks_dir(start: Path | None = None) -> Path | None:
    """The ``notebooks/`` folder to serve: under the current directory or one of its
    parents, else the one beside the source checkout (editable install); None if none.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "notebooks"
        if candidate.is_dir() and any(candidate.glob("*.ipynb")):
            return candidate
    checkout = Path(__file__).resolve().parents[2] / "notebooks"  # src/chunkscope/_lab.py → repo root
    return checkout if checkout.is_dir() else None


def lab_command(
    root_dir: Path, *, port: int = 8888, open_browser: bool = True, extra: Sequence[str] = ()
) -> list[str]:
    """The ``jupyter lab`` command line that :func:`run_lab` runs."""
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        f"--ServerApp.root_dir={root_dir}",
        # offline: no announcements feed, no version check against PyPI
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if not open_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # containers and CI machines run as root
    command.extend(extra)
    return command


def run_lab(
    *,
    port: int = 8888,
    open_browser: bool = True,
    notebook_dir: Path | None = None,
    extra: Sequence[str] = (),
) -> int:
    """Run JupyterLab until it exits; returns its exit status (2 if no notebooks folder).

    On POSIX the process *becomes* JupyterLab (``exec``), so Ctrl-C and signals
    reach the server directly and nothing is left running behind it.
    """
    root = notebook_dir or find_notebooks_dir()
    if root is None or not root.is_dir():
        print(
            "chunkscope lab: no notebooks/ folder found here or beside the package; "
            "run it from a chunkscope checkout or pass --notebook-dir",
            file=sys.stderr,
        )
        return 2
    command = lab_command(root.resolve(), port=port, open_browser=open_browser, extra=extra)
    print(f"chunkscope lab: serving {root} on http://127.0.0.1:{port}/lab", file=sys.stderr, flush=True)
    if os.name == "posix":
        sys.stdout.flush()
        os.execv(command[0], command)
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:  # Ctrl-C already reached JupyterLab, which shuts itself down
        return 130


def add_lab_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``chunkscope lab`` on a CLI's subparsers; sets ``func`` to a handler."""
    parser = subparsers.add_parser("lab", help=LAB_HELP, description=LAB_HELP)
    parser.add_argument("--port", type=int, default=8888, help="port on 127.0.0.1 (default 8888)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a web browser")
    parser.add_argument(
        "--notebook-dir", type=Path, default=None, help="folder to serve (default: the notebooks/ folder)"
    )
    parser.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    return run_lab(port=args.port, open_browser=not args.no_browser, notebook_dir=args.notebook_dir)
