"""The SSE adapter core's former single module: its names now live in ``adapters/_core/``
(credential, framing, guard, the adapter loop), re-exported here for existing imports."""

from __future__ import annotations

from ._core import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_EVENT_BYTES,
    DRAIN_SECONDS,
    Credential,
    SseAdapter,
    SseDecoder,
    SseEvent,
    Translator,
)

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_EVENT_BYTES",
    "DRAIN_SECONDS",
    "Credential",
    "SseAdapter",
    "SseDecoder",
    "SseEvent",
    "Translator",
]
