"""The browser benchmarks' JupyterLab and Chromium: the browser tests' harness (tests/browser),
started once for a whole run."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))  # the browser tests' JupyterLab harness

from conftest import CHROMIUM, CHROMIUM_ARGS, Lab, _start_server, _stop_server  # noqa: E402

__all__ = ["Lab", "lab_and_browser"]


@contextmanager
def lab_and_browser(prefix: str) -> Iterator[tuple[Any, Any, Path]]:
    """``(browser, server, artifacts)``: a JupyterLab server on a temporary folder and a headless
    Chromium that reports precise memory, both stopped (and the folder removed) on exit."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        base = Path(tmp)
        (base / "artifacts").mkdir()
        server = _start_server(base / "lab", base / "artifacts")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM,
                    headless=True,
                    args=[*CHROMIUM_ARGS, "--enable-precise-memory-info"],
                )
                try:
                    yield browser, server, base / "artifacts"
                finally:
                    browser.close()
        finally:
            _stop_server(server)
