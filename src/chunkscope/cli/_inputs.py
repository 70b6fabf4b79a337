"""What ``chunkscope check``, ``show`` and ``usage`` read: the recorded streams in any file a user names.

The reading itself is ``chunkscope.sources.load_streams`` (the one entry
point: chunk logs, recordings and DeepSeek Harness session logs, plain or
zstd, told apart by their first bytes, each file read once as a stream, so a
pipe or ``<(…)`` works). This module only bounds it by :data:`MAX_BYTES` and
turns what goes wrong into a :class:`~chunkscope.cli._args.CommandLineError` —
one sentence naming the file (and line), never a traceback.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ._args import CommandLineError

# The chunkscope layers load when a file is read, not at import: `chunkscope --help` and
# `chunkscope lab` stay as quick to start as they were before these subcommands.
if TYPE_CHECKING:
    from chunkscope import StreamResult
    from chunkscope.sources import LoadedStream

__all__ = ["MAX_BYTES", "analyze", "load_streams", "read_bounded"]

MAX_BYTES = 256 * 1024 * 1024
"""The most a file ``check``/``show``/``usage`` read (256 MiB, decompressed): a bigger one is refused,
not half-read."""


def load_streams(path: str | os.PathLike[str]) -> list[LoadedStream]:
    """Every recorded stream in ``path``, whatever its kind; ``CommandLineError`` if it cannot be read."""
    from chunkscope.sources import SourceError
    from chunkscope.sources import load_streams as load

    try:
        return load(path, max_bytes=MAX_BYTES)
    except SourceError as exc:
        raise CommandLineError(str(exc)) from None
    except ModuleNotFoundError as exc:  # zstandard, for a zstd log: the one line names the extra
        raise CommandLineError(f"{os.fspath(path)}: {exc}") from None
    except RecursionError:
        raise CommandLineError(f"{os.fspath(path)}: JSON nested too deeply") from None


def read_bounded(path: str, limit: int = 16 * 1024 * 1024) -> bytes:
    """The bytes of ``path`` read once, as a stream (a pipe works), at most ``limit`` of them.

    ``OSError`` if it cannot be opened or read, ``ValueError`` naming the limit when it holds more.
    """
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory", path)
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"over the {limit:,}-byte limit; not read")
    return data


def analyze(stream: LoadedStream, profile: str) -> StreamResult:
    """Check and assemble a loaded stream under ``profile``, as ``collect`` does a live one.

    A recorded failure ends it as the live stream ended (``result.error``), so a missing
    finish after it is not reported: the error explains it. A tap's recording is read again
    from its raw reads (``recording_result``, as ``read_recordings`` and ``TapReplay`` read it),
    so what only the wire's raw counts show (usage that does not add up) is found here too.
    """
    from chunkscope import collect
    from chunkscope.adapters.recording import recorded_reader, recording_result, run_now
    from chunkscope.sources import Recording

    recording = stream.source
    if isinstance(recording, Recording) and recorded_reader(recording, "") is not None:
        label = f"the recording {os.path.basename(stream.path)}"
        return recording_result(recording, profile=profile, label=label)
    return run_now(collect(stream.replay(), profile=profile))
