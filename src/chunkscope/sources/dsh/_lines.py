"""Line and zstd framing of a session log: bytes in, batches of lines out, bounded.

``_ZstdFrames`` decompresses concatenated frames piece by piece (a cut-off
frame is reported, a decompressed size over the bound is refused);
``line_batches`` splits bytes into lines a block at a time, passing over a
line longer than the bound without keeping it and over runs of blank lines at
the speed of ``bytes.count``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import IO, Any

__all__ = [
    "TOO_LONG",
    "ZSTD_MAGIC",
    "Corrupt",
    "TooBig",
    "Truncated",
    "bounded",
    "line_batches",
    "reader_of",
]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
"""The first four bytes of a zstd frame: a compressed session log (``session.jsonl.zstd``)."""

_BLOCK = 1 << 20  # bytes read (or decompressed) at a time
_FEED = 256  # compressed bytes fed per zstd call: bounds what one call can produce (a few MiB at most)


class _ZstdFrames:
    """Decompresses concatenated zstd frames piece by piece; a cut-off frame raises ``Truncated``.

    The zstandard package's own stream reader ends silently at a truncated
    frame; this one tracks each frame's end. Input is fed ``_FEED`` bytes at a
    time, which bounds what one call can produce.
    """

    def __init__(self, source: IO[bytes]) -> None:
        try:
            import zstandard
        except ModuleNotFoundError:
            raise ModuleNotFoundError(
                'reading a zstd session log needs zstandard: pip install "chunkscope[usage]"',
                name="zstandard",
            ) from None

        self._zstd = zstandard
        self._source = source
        self._dctx = zstandard.ZstdDecompressor()
        self._obj = self._dctx.decompressobj()
        self._in_frame = False
        self._error: Corrupt | None = None  # raised once the output before it has been read

    def read_block(self, size: int = _BLOCK) -> bytes:
        """The next decompressed bytes: at least ``size`` unless the stream ends; b"" at the end.

        Input goes in ``_FEED``-byte pieces, so one piece of a decompression bomb
        adds at most a few MiB before the caller sees it.
        """
        out: list[bytes] = []
        total = 0
        while total < size:
            if self._error is not None:
                if out:
                    break  # the output before the corruption first
                raise self._error
            data = self._source.read(_FEED)
            if not data:
                if self._in_frame and not out:
                    raise Truncated("the zstd stream ends inside a frame (the file is truncated)")
                break
            piece = self._feed(data)
            if piece:
                out.append(piece)
                total += len(piece)
        return b"".join(out)

    def _feed(self, data: bytes) -> bytes:
        out: list[bytes] = []
        while data:
            try:
                out.append(self._obj.decompress(data))
            except self._zstd.ZstdError as exc:
                self._error = Corrupt(f"the zstd stream is corrupt ({exc})")
                break
            self._in_frame = True
            if not self._obj.eof:
                break
            data = self._obj.unused_data
            self._obj = self._dctx.decompressobj()
            self._in_frame = False
        return b"".join(out)


class Truncated(Exception):
    """The zstd stream ends inside a frame."""


class Corrupt(Exception):
    """The zstd stream cannot be decompressed."""


class TooBig(Exception):
    """The (decompressed) log is longer than the bound its reader was given."""


def bounded(read: Callable[[int], bytes], limit: int) -> Callable[[int], bytes]:
    """``read``, raising ``TooBig`` once more than ``limit`` bytes came out of it in all."""
    total = 0

    def read_bounded(size: int) -> bytes:
        nonlocal total
        data = read(size)
        total += len(data)
        if total > limit:
            raise TooBig(f"over the {limit:,}-byte limit (decompressed); not read further")
        return data

    return read_bounded


TOO_LONG = object()  # stands for a line over the limit in a batch stream


def line_batches(read: Callable[[int], bytes], max_line_bytes: int) -> Iterator[Any]:
    """The file's lines (bytes, newline stripped) in lists, one list per block read.

    A block of nothing but blank lines is yielded as their count (an ``int``):
    blank lines cost what ``bytes.count`` costs. A line longer than
    ``max_line_bytes`` is yielded as ``TOO_LONG`` and read past without being
    kept; a ``Truncated``, ``Corrupt`` or ``TooBig`` exception instance is
    yielded last when the zstd stream breaks or the bound is passed. Memory:
    one block plus at most ``max_line_bytes`` of an unfinished line.
    """
    carry = b""
    skipping = False  # inside a line already reported as too long
    while True:
        try:
            block = read(_BLOCK)
        except (Truncated, Corrupt, TooBig) as exc:
            yield exc
            return
        if not block:
            if carry and not skipping:
                yield [carry]  # a last line without its newline
            return
        data = carry + block if carry else block
        carry, skipping = yield from _block_batches(data, skipping, max_line_bytes)


def _split_lines(data: bytes, skipping: bool) -> tuple[list[bytes], bytes, bool]:
    """A block's whole lines, the unfinished one, and whether the over-long line goes on past it."""
    lines = data.split(b"\n")
    carry = lines.pop()
    if not skipping:
        return lines, carry, False
    if not lines:
        return [], b"", True
    del lines[0]  # the end of the over-long line
    return lines, carry, False


def _block_batches(
    data: bytes, skipping: bool, max_line_bytes: int
) -> Generator[Any, None, tuple[bytes, bool]]:
    """``line_batches``' yield for one block (after the line carried over): what it then carries
    (an unfinished line) and whether it is inside a line already reported as too long."""
    if data.isspace() and b"\n" in data:  # a run of blank lines (isspace stops at the first other byte)
        newlines, carry, skipping = _blank_run(data, skipping)
        if newlines:
            yield newlines
        return carry, skipping
    lines, carry, skipping = _split_lines(data, skipping)
    if skipping:
        return carry, True
    if lines and max(map(len, lines)) > max_line_bytes:  # rare: split the batch around them
        lines = yield from _around_too_long(lines, max_line_bytes)
    if len(carry) > max_line_bytes:
        if lines:
            yield lines
        yield TOO_LONG
        return b"", True
    if lines:
        yield lines
    return carry, False


def _blank_run(data: bytes, skipping: bool) -> tuple[int, bytes, bool]:
    """A block of only whitespace with a newline: the blank lines it ends (the first newline
    only ends an over-long line being skipped), the unfinished rest, and no longer skipping."""
    newlines = data.count(b"\n")
    if skipping:
        newlines -= 1  # the first newline ends the over-long line
    return newlines, data[data.rindex(b"\n") + 1 :], False


def _around_too_long(lines: list[bytes], max_line_bytes: int) -> Generator[Any, None, list[bytes]]:
    """Yield the runs of ``lines`` before each over-long one and ``TOO_LONG`` for it; return the last run."""
    run: list[bytes] = []
    for line in lines:
        if len(line) > max_line_bytes:
            if run:
                yield run
                run = []
            yield TOO_LONG
        else:
            run.append(line)
    return run


def reader_of(handle: IO[bytes]) -> Callable[[int], bytes]:
    """The function that reads ``handle``'s bytes a block at a time, decompressed when they are zstd.

    The kind is told by the first bytes only (the zstd magic), never by the name: a plain log
    named ``.jsonl.zstd`` is read as the plain log it is. ``handle`` must support ``peek``
    (an ``open(..., "rb")`` file or an ``io.BufferedReader``), so a pipe is read once.
    """
    peek = getattr(handle, "peek", None)
    magic = peek(4)[:4] if peek is not None else b""
    # A start that is only part of the magic is a zstd file cut short (no JSON text starts with
    # "("): the zstd reader reports it as truncated, not as text that is not UTF-8.
    if magic and ZSTD_MAGIC.startswith(magic):
        return _ZstdFrames(handle).read_block
    return handle.read
