"""Format detection: which kind of stored stream a file holds, told by its first bytes, never its name.

* a **zstd** frame (the magic bytes ``28 b5 2f fd``): a compressed DeepSeek
  Harness session log (``session.jsonl.zstd``);
* SQLite's header (``SQLite format 3\0``): the ``llm`` tool's ``logs.db``
  (read by ``cs.read_llm_logs``, not a stream of chunks);
* otherwise JSON lines, told by the first non-blank line:

  - a **recording** (``RecordingAdapter``'s JSONL): ``{"recording": "chunkscope", ...}``;
  - a **chunk log** (``write_chunks`` / the TypeScript harness): a chunk object,
    its ``type`` one of :data:`CHUNK_TYPES`;
  - a **session log** (``session.jsonl``): ``{"type": "session", ...}``.
"""

from __future__ import annotations

from typing import Any, Literal

from chunkscope.protocol import CHUNK_TYPES as _CHUNK_MODELS

from .dsh._lines import ZSTD_MAGIC
from .llm_logs import SQLITE_MAGIC, is_sqlite

__all__ = ["CHUNK_TYPES", "SQLITE_MAGIC", "ZSTD_MAGIC", "Kind", "detect_kind", "is_sqlite", "is_zstd"]

Kind = Literal["recording", "chunks", "dsh"]

CHUNK_TYPES = frozenset(_CHUNK_MODELS)
"""The ``type`` of a chunk log's first line. Only these: other JSONL files with a ``type`` field
(a DeepSeek Harness session log starts with ``{"type": "session", ...}``) are not chunk logs."""


def is_zstd(first_bytes: bytes) -> bool:
    """True when the file's first bytes are a zstd frame's magic number, or all a cut-short file
    has of it (the zstd reader then reports the file as truncated)."""
    start = first_bytes[:4]
    return bool(start) and ZSTD_MAGIC.startswith(start)


def detect_kind(first: Any) -> Kind | None:
    """The kind of file whose first non-blank line parses to ``first``: ``"recording"``,
    ``"chunks"``, ``"dsh"`` (a DeepSeek Harness session log), or None when it is none of them.
    """
    if not isinstance(first, dict):
        return None
    if first.get("recording") == "chunkscope":
        return "recording"
    if first.get("type") in CHUNK_TYPES:
        return "chunks"
    if first.get("type") == "session":
        return "dsh"
    return None
