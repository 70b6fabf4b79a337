"""The sources layer: every stream stored on disk, read (and written) in one place.

* chunk logs — ``read_chunks`` / ``write_chunks`` (``chunk_log``);
* recordings — the format ``RecordingAdapter`` writes and ``ReplayAdapter``
  replays (``recording``);
* DeepSeek Harness session logs, plain or zstd — ``read_dsh_session``,
  ``DshLogWriter`` (``dsh/``);
* format detection by first bytes (``_detect``) and ``load_streams(path)``,
  the one entry point the command line and the usage frames read through;
* the one strict JSON reader (``_json``: ``strict_loads``, and ``json_line`` its writer)
  and one error family, ``SourceError``
  (``_errors``, whose docstring draws the tree).

Imports only the protocol layer (and zstandard, lazily, for zstd logs).
"""

from __future__ import annotations

from ._detect import CHUNK_TYPES, ZSTD_MAGIC, detect_kind
from ._errors import ChunkFileError, DshLogError, RecordingFileError, SourceError, UnreadableSourceError
from ._json import MAX_LINE_BYTES, json_line, strict_loads
from ._load import MAX_BYTES, LoadedStream, load_streams
from .chunk_log import read_chunks, write_chunks
from .dsh import (
    DshAttempt,
    DshLogWriter,
    DshProblem,
    DshSession,
    DshStep,
    iter_dsh_paths,
    read_dsh_session,
)
from .recording import FORMAT_VERSION, Recording

__all__ = [
    "CHUNK_TYPES",
    "FORMAT_VERSION",
    "MAX_BYTES",
    "MAX_LINE_BYTES",
    "ZSTD_MAGIC",
    "ChunkFileError",
    "DshAttempt",
    "DshLogError",
    "DshLogWriter",
    "DshProblem",
    "DshSession",
    "DshStep",
    "LoadedStream",
    "Recording",
    "RecordingFileError",
    "SourceError",
    "UnreadableSourceError",
    "detect_kind",
    "iter_dsh_paths",
    "json_line",
    "load_streams",
    "read_chunks",
    "read_dsh_session",
    "strict_loads",
    "write_chunks",
]
