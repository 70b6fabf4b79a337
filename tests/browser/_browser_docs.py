"""The README's pictures: screenshots the browser tests take, copied into ``docs/``."""

from __future__ import annotations

import os
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def docs_screenshot(shot: Path, name: str) -> None:
    """Copy an artifact to ``docs/<name>`` (committed, shown in the README) when asked or missing.

    ``CHUNKSCOPE_UPDATE_SCREENSHOTS=1`` refreshes the committed pictures from this run.
    """
    target = DOCS / name
    if os.environ.get("CHUNKSCOPE_UPDATE_SCREENSHOTS") == "1" or not target.exists():
        target.write_bytes(shot.read_bytes())
