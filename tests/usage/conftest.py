"""The local provider the usage tests call (helpers live in usage_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chunkscope.provider import LocalProvider


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as p:
        yield p
