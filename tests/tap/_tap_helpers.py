"""Helpers of the tap tests: the key every client sends, request bodies, id normalisation."""

from __future__ import annotations

import re

KEY = "sk-tap-test-4f9c2e7a1b"
"""The API key every client sends; no output of the tap may contain it."""

AUTH = {"authorization": f"Bearer {KEY}"}
ANTHROPIC_AUTH = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}

_IDS = re.compile(rb'("id":"|"id": ")(chatcmpl|msg)[-_A-Za-z0-9]+|"created":\s?\d+')


def normalised(body: bytes) -> bytes:
    """A response body with the per-response ids and timestamps the provider numbers replaced."""
    return _IDS.sub(b"<id>", body)


def stream_body(model: str, prompt: str = "hi", *, stream: bool = True) -> dict[str, object]:
    """A chat-completions request body for ``model`` (a scenario name)."""
    return {"model": model, "stream": stream, "messages": [{"role": "user", "content": prompt}]}


def anthropic_body(model: str, prompt: str = "hi", *, stream: bool = True) -> dict[str, object]:
    """A Messages request body for ``model``."""
    return {
        "model": model,
        "max_tokens": 64,
        "stream": stream,
        "messages": [{"role": "user", "content": prompt}],
    }
