"""DeepSeek Harness session logs (``session.jsonl`` / ``.jsonl.zstd``), read and written.

Split by job: ``_model`` (session, steps, attempts, problems), ``_lines`` (line
and zstd framing, bounded), ``_reader`` (the event state machine that splits
attempts), ``_materialize`` (chunk synthesis from logged items), ``_writer``
(``DshLogWriter``). The usage frame of a session is the usage layer's: a session read by
``chunkscope.usage.read_dsh_session`` carries its projection (``DshSession.to_frame``).
"""

from __future__ import annotations

from .._errors import DshLogError
from ._model import DshAttempt, DshProblem, DshSession, DshStep, FrameProjection
from ._reader import MAX_DEPTH, MAX_LINE_BYTES, iter_dsh_paths, read_dsh_session, read_dsh_stream
from ._writer import DshLogWriter

__all__ = [
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "DshAttempt",
    "DshLogError",
    "DshLogWriter",
    "DshProblem",
    "DshSession",
    "DshStep",
    "FrameProjection",
    "iter_dsh_paths",
    "read_dsh_session",
    "read_dsh_stream",
]
