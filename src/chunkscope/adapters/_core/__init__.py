"""The one streaming-adapter core, split by concern: everything a wire adapter needs but its wire.

A wire format supplies these (see ``EventStreamAdapter``):

- a **request builder**: ``GenerateOptions`` → JSON body, plus its headers;
- its **framing** (``framing``: ``SseDecoder`` by default; Gemini's CRLF, Bedrock's frames);
- a **pure translator** (``Translator``): ``feed(event) -> chunks`` for each event
  (``(event_name, data_text)`` on SSE wires) and ``end() -> chunks`` at the end of the body.
  No I/O, no clock: testable with a list of payloads.

The core owns the rest, once for every wire, one module per concern:

- ``credential``: the API key, never in ``repr``/``vars``/pickles;
- ``framing``: SSE framing (``max_event_bytes``);
- ``reader``: ``WireReader``, the one sans-IO reading of a response — head and raw reads in,
  chunks and an ending out: bounded inflate (``max_body_bytes``), framing, translation,
  end-of-body rules, an error answer's code. The adapter loop, the tap and every replay
  drive it, so they cannot read the same bytes two ways;
- ``payload``: an event's JSON on the hot path (pydantic-core's parser, ``json`` the reference);
- ``guard``: idle timeout, optional total deadline, abort, the drain after a complete response;
- ``loop``: ``EventStreamAdapter`` (formerly ``SseAdapter``) — endpoint, client slot,
  attribution headers, redirects (never followed: a credential never reaches another
  origin), the I/O around the reader, redaction;
- failures (status and body → code, bounded and redacted messages) stay in
  ``adapters/_failures.py``, shared with the non-SSE adapters.
"""

from __future__ import annotations

from .credential import Credential
from .framing import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_EVENT_BYTES, SseDecoder, SseEvent
from .guard import DRAIN_SECONDS
from .loop import EventStreamAdapter, SseAdapter, StreamOptions
from .reader import Decoder, Inflater, Translator, WireReader

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_EVENT_BYTES",
    "DRAIN_SECONDS",
    "Credential",
    "Decoder",
    "EventStreamAdapter",
    "Inflater",
    "SseAdapter",
    "StreamOptions",
    "SseDecoder",
    "SseEvent",
    "Translator",
    "WireReader",
]
