"""The one error family of the stored-stream readers: what to catch when a file cannot be read.

Every reader under ``chunkscope.sources`` raises a ``SourceError``; one
``except cs.SourceError`` serves chunk logs, recordings, session logs and the
kind detection in front of them::

    ValueError
     └── SourceError               a stored stream that cannot be read (.path, .line)
          ├── ChunkFileError       a chunk log line that is not a chunk (.column)
          │    └── RecordingFileError   a recording that cannot be replayed
          ├── DshLogError          a DeepSeek Harness session-log line (.code, .session)
          └── UnreadableSourceError    a file ``load_streams`` cannot take at all:
                                   too big, binary, not UTF-8, empty, of no known kind

Inside the session-log reader, three signals of the zstd framing (``sources/dsh/_lines.py``) never
reach a caller; each becomes a ``DshLogError`` or an ``UnreadableSourceError`` where it is caught::

    Exception
     ├── Truncated    the zstd stream ends inside a frame
     ├── Corrupt      the zstd stream cannot be decompressed
     └── TooBig       the decompressed log is longer than the reader's bound

``line`` is 1-based (0 when the problem is the file as a whole). The
subclasses keep the names, codes and messages they had before this family
existed, so code catching them is unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .dsh._model import DshSession

__all__ = ["ChunkFileError", "DshLogError", "RecordingFileError", "SourceError", "UnreadableSourceError"]


class SourceError(ValueError):
    """A stored stream that cannot be read; ``path`` and ``line`` (1-based, 0: the whole file) say where."""

    def __init__(self, message: str, path: str, line: int = 0) -> None:
        super().__init__(message)
        self.path = path
        self.line = line

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.path, self.line))


class ChunkFileError(SourceError):
    """A line of a chunk file that is not a chunk; ``path``, ``line`` (1-based) and ``column`` say where.

    ``column`` is the 1-based character in the line where the problem starts,
    when one is known (invalid UTF-8, a JSON syntax error), else None.
    """

    def __init__(self, message: str, path: str, line: int, column: int | None = None) -> None:
        super().__init__(message, path, line)
        self.column = column

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.path, self.line, self.column))


class RecordingFileError(ChunkFileError):
    """A recording file that cannot be replayed; ``path`` and ``line`` (1-based) say where.

    A ``ChunkFileError`` (and so a ``ValueError``): one ``except`` serves chunk files and recordings.
    """


class DshLogError(SourceError):
    """A session log line that cannot be read.

    ``path`` and ``line`` (1-based) say where, ``code`` why (stable: ``json``,
    ``utf8``, ``line-too-long``, ``too-deep``, ``record``, ``header``,
    ``version``, ``zstd``, ``truncated``, ``too-big``); ``session`` is everything read before
    the line (attempts still open at that point end with a synthesized
    ``aborted`` finish).
    """

    def __init__(
        self, message: str, path: str, line: int, code: str, session: DshSession | None = None
    ) -> None:
        super().__init__(message, path, line)
        self.code = code
        self.session = session

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.path, self.line, self.code, self.session))


class UnreadableSourceError(SourceError):
    """A file ``load_streams`` cannot take: ``str()`` is one sentence naming the file (and line)."""
