"""Fixtures shared by every test folder (keep this small; layer fixtures live beside their tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout's root folder (README.md, notebooks/, docs/)."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """``test-artifacts/`` (gitignored): screenshots and logs a failing test leaves behind."""
    path = REPO_ROOT / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path
