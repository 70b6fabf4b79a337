"""Tap test fixtures: a local provider as the upstream, a tap in front of it (all on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import chunkscope as cs
from chunkscope.tap import Tap


@pytest.fixture(scope="module")
def provider() -> Iterator[cs.LocalProvider]:
    with cs.LocalProvider() as running:
        yield running


@pytest.fixture
def tap(provider: cs.LocalProvider, tmp_path: Path) -> Iterator[Tap]:
    with Tap(upstream=provider.url, record=tmp_path / "recordings") as running:
        yield running
