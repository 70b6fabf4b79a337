"""Adapter tests' shared guard: in the hostile-input and real-shaped translator tests, every
``LlmError`` code raised stands in ``cs.ERROR_CODES`` or one of its documented families
(``HTTP_<status>``, ``<FINISH_REASON>``), so a policy written against the registry knows it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chunkscope.protocol import LlmError
from chunkscope.protocol._errors import ERROR_CODES, code_family

_GUARDED = {
    "test_hostile_input",
    "test_translators",
    "test_dialects",
    "test_anthropic_wire",
    "test_gemini_wire",
    "test_anthropic",
    "test_openai_compat",
    "test_reference_vectors",
    "test_sse_core",
    "test_bedrock_framing",
    "test_bedrock_wire",
}
"""The modules whose every raised code is checked against the registry."""


@pytest.fixture(autouse=True)
def _codes_stand_in_the_registry(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    if request.module.__name__.rpartition(".")[2] not in _GUARDED:
        yield
        return
    codes: list[str] = []
    original = LlmError.__init__

    def recording(self: LlmError, message: str, code: str, **kwargs: Any) -> None:
        codes.append(code)
        original(self, message, code, **kwargs)

    monkeypatch.setattr(LlmError, "__init__", recording)
    yield
    unregistered = sorted({c for c in codes if code_family(c) not in ERROR_CODES})
    assert not unregistered, f"codes outside cs.ERROR_CODES and its families: {unregistered}"
