"""Fixtures that write the files ``chunkscope check`` / ``show`` read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cli_streams import write_log, write_recording


@pytest.fixture
def make_log(tmp_path: Path) -> Callable[[str, list[dict[str, Any]]], Path]:
    return lambda name, chunks: write_log(tmp_path / name, chunks)


@pytest.fixture
def make_recording(tmp_path: Path) -> Callable[..., Path]:
    return lambda name, chunks, error=None: write_recording(tmp_path / name, chunks, error)
