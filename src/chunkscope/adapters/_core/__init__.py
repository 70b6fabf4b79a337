"""The one streaming-adapter core, split by concern: everything an SSE wire adapter needs but its wire.

A wire format supplies two things (see ``SseAdapter``):

- a **request builder**: ``GenerateOptions`` → JSON body, plus its headers;
- a **pure translator** (``Translator``): ``feed(event) -> chunks`` for each SSE event
  ``(event_name, data_text)`` and ``end() -> chunks`` at the end of the body. No I/O, no
  clock: testable with a list of payloads.

The core owns the rest, once for every wire, one module per concern:

- ``credential``: the API key, never in ``repr``/``vars``/pickles;
- ``framing``: SSE framing and bounded body decoding (``max_event_bytes``, ``max_body_bytes``);
- ``payload``: an event's JSON on the hot path (pydantic-core's parser, ``json`` the reference);
- ``guard``: idle timeout, optional total deadline, abort, the drain after a complete response;
- ``loop``: ``SseAdapter`` — endpoint, client slot, attribution headers, redirects (never
  followed: a credential never reaches another origin), the read loop, redaction;
- failures (status and body → code, bounded and redacted messages) stay in
  ``adapters/_failures.py``, shared with the non-SSE adapters.
"""

from __future__ import annotations

from .credential import Credential
from .framing import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_EVENT_BYTES, SseDecoder, SseEvent
from .guard import DRAIN_SECONDS
from .loop import SseAdapter, Translator

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
