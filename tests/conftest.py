"""Fixtures shared by every test folder (keep this small; layer fixtures live beside their tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
UPSTREAM_CASES = REPO_ROOT / "tests" / "fixtures" / "upstream" / "upstream-cases.json"


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


@pytest.fixture(scope="session")
def upstream_cases() -> dict[str, Any]:
    """Test vectors produced by running the TypeScript reference (``tests/fixtures/upstream/``).

    Their source repository, commit and license stand beside the file. A missing file fails the
    tests that need it: a skipped parity test would hide a missing feature.
    """
    if not UPSTREAM_CASES.is_file():
        pytest.fail(f"reference vectors not found at {UPSTREAM_CASES}")
    cases: dict[str, Any] = json.loads(UPSTREAM_CASES.read_text(encoding="utf-8"))
    return cases
