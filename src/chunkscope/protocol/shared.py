"""What the protocol layer shares with chunkscope's other layers — not the user's API.

The face (``chunkscope.protocol``) is what users import; this module is the seam the layers
below it use for what is theirs alone: building chunk models without re-validation on the
adapters' hot path, the wire's own moments of a stream, message wording, and the error code
families. Every other layer imports these from here, never from a private module of this
layer (tests/test_layers.py checks it); the names may change together with the layers that
use them.
"""

from __future__ import annotations

from typing import Final

from ._assembly import join_pieces
from ._chunks import (
    UsageFinding,
    _new,
    _set_dict,
    _set_extra,
    _set_fields_set,
    _set_private,
    attach_usage_findings,
    describe_invalid,
    parse_chunk_ignoring_unknown_keys,
    trusted,
    usage_findings,
)
from ._clock import WireMarks, current_marks, marking
from ._errors import FINISH_REASON_FAMILY, HTTP_STATUS_FAMILY, is_unmapped
from ._words import a, plural, type_phrase

__all__ = [
    "FINISH_REASON_FAMILY",
    "HTTP_STATUS_FAMILY",
    "UsageFinding",
    "WireMarks",
    "a",
    "attach_usage_findings",
    "current_marks",
    "describe_invalid",
    "is_unmapped",
    "join_pieces",
    "marking",
    "new_chunk",
    "parse_chunk_ignoring_unknown_keys",
    "plural",
    "set_dict",
    "set_extra",
    "set_fields",
    "set_private",
    "trusted",
    "type_phrase",
    "usage_findings",
]

# A chunk model's pieces set one by one (``trusted`` spelled out), for a translator's per-event
# fast path to inline: ``chunk = new_chunk(TextDelta); set_dict(chunk, fields); ...``.
new_chunk: Final = _new
set_dict: Final = _set_dict
set_fields: Final = _set_fields_set
set_extra: Final = _set_extra
set_private: Final = _set_private
