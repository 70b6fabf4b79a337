"""One local provider for the provider tests (its server runs in its own thread)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chunkscope.provider import LocalProvider


@pytest.fixture(scope="session")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as p:
        yield p
