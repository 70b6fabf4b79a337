"""Fixtures for the notebook layer's tests (helpers live in ``nb_helpers``)."""

from __future__ import annotations

import pytest
from nb_helpers import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    """A fake monotonic clock: time moves only when a test moves it."""
    return FakeClock()
