"""A tap call written as a recording: whole or not at all, never over another file.

Besides what ``ReplayAdapter`` replays (the chunks at their times, the
error), a tap's recording keeps what the tap saw of the call: the request's
headers (credentials redacted) and body (a credential masked), the
response's status and headers, the timing points and every raw read at its
arrival time, so ``TapReplay`` parses the call again exactly as the tap did.

The folder is checked once (``check_folder``): it must be the user's own and
writable by nobody else, since whoever can write there can plant a link where
the tap writes. Every file the tap makes there is created exclusively
(``O_CREAT | O_EXCL | O_NOFOLLOW``) under an unpredictable temporary name,
then hard-linked to its final name, which fails rather than replace a file
that exists: an earlier run's recording, or anything planted.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import os
import re
import secrets
import stat
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chunkscope.protocol import StreamResult
from chunkscope.sources.recording import read_line, recording_header, recording_line, stored_time

from ._call import TapCall

__all__ = ["Spill", "body_field", "check_folder", "chunk_lines", "next_call_id", "write_recording"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_NUMBERED = re.compile(r"^(\d+)-")
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


def check_folder(folder: Path) -> None:
    """Create ``folder`` (owner-only) if needed; refuse one another user owns or can write to.

    Raises ``PermissionError`` with one line saying what is wrong and what to do.
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if not stat.S_ISDIR(info.st_mode):  # pragma: no cover - mkdir(exist_ok) raised for a file already
        raise NotADirectoryError(f"the recordings folder {folder} is not a folder")
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:  # Windows: no owner bits to check; the folder's ACL decides
        return
    if info.st_uid != geteuid():
        raise PermissionError(
            f"the recordings folder {folder} belongs to another user (uid {info.st_uid}): "
            "choose a folder of your own"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PermissionError(
            f"the recordings folder {folder} can be written by other users "
            f"(mode {stat.S_IMODE(info.st_mode):o}): run `chmod go-w {folder}` or choose another folder"
        )


def next_call_id(folder: Path | None) -> int:
    """The first call id after every recording ``folder`` holds (1 for none): a restart numbers on."""
    if folder is None or not folder.is_dir():
        return 1
    ids = (int(found.group(1)) for name in os.listdir(folder) if (found := _NUMBERED.match(name)))
    return max(ids, default=0) + 1


def _create(folder: Path, suffix: str) -> tuple[int, Path]:
    """A new file in ``folder`` under an unpredictable name, made here and now (no link followed)."""
    while True:
        path = folder / f".{secrets.token_hex(12)}{suffix}"
        try:
            return os.open(path, _CREATE | _BINARY, 0o600), path
        except FileExistsError:  # pragma: no cover - 96 random bits met a name already there
            continue


class Spill:
    """Raw reads (or parsed chunks) a call keeps on disk instead of in memory (past its share of
    ``keep_bytes``).

    Each read is appended as a recording ``read`` line to a file of its own,
    created like every other (exclusive, unpredictable name); ``write_recording``
    copies them into the call's recording after the reads kept in memory. A
    chunk spill takes ready recording lines (``write``): the chunks a windowed
    call dropped, copied in before the chunks it kept.
    """

    __slots__ = ("_file", "_held", "_held_bytes", "hold", "path", "reads")

    def __init__(self, folder: Path, hold: int = 0) -> None:
        fd, self.path = _create(folder, ".reads.part")
        self._file = os.fdopen(fd, "wb")
        self.reads = 0
        self.hold = hold
        # reads a later one may still mask the tail of (a key split across them)
        self._held: deque[tuple[float, bytes | bytearray]] = deque()
        self._held_bytes = 0

    def add(self, t: float, data: bytes | bytearray) -> None:
        """Append a read; it reaches the file once ``hold`` bytes followed it (``ByteMask`` masks a
        key split across reads in the earlier read's bytes in place, until then)."""
        held = self._held
        held.append((t, data))
        self._held_bytes += len(data)
        self.reads += 1
        while len(held) > 1 and self._held_bytes - len(held[0][1]) >= self.hold:
            first_t, first = held.popleft()
            self._held_bytes -= len(first)
            self._file.write(read_line(first_t, bytes(first)))

    def write(self, lines: Iterable[bytes]) -> None:
        """Append recording lines as they are (a chunk spill: no read is held back)."""
        self._file.writelines(lines)

    def lines(self) -> Iterator[bytes]:
        """The spilled lines in order (the file is closed first)."""
        while self._held:
            t, data = self._held.popleft()
            self._file.write(read_line(t, bytes(data)))
        self._file.close()
        with open(self.path, "rb") as spilled:
            yield from spilled

    def discard(self) -> None:
        self._file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def body_field(body: bytes) -> dict[str, str]:
    """The request body as a header field: its text when it is UTF-8 (JSON, mostly), else base64."""
    try:
        return {"request_body": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"request_body_base64": base64.b64encode(body).decode("ascii")}


def _place(temporary: Path, folder: Path, stem: str) -> Path:
    """Give ``temporary`` its final name, ``stem.jsonl`` or ``stem-2.jsonl``, …: the first not taken."""
    for n in range(1, 10_000):
        path = folder / (f"{stem}.jsonl" if n == 1 else f"{stem}-{n}.jsonl")
        try:
            os.link(temporary, path)  # fails on any name that exists, a link too
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
            # A filesystem without hard links: claim the name exclusively, then move onto the claim.
            try:
                os.close(os.open(path, _CREATE, 0o600))
            except FileExistsError:
                continue
            os.replace(temporary, path)
            return path
        os.unlink(temporary)
        return path
    raise FileExistsError(errno.EEXIST, f"every name for {stem} is taken in {folder}")


def write_recording(
    folder: Path,
    call: TapCall,
    result: StreamResult,
    spill: Spill | None = None,
    chunk_spill: Spill | None = None,
) -> Path:
    """Write ``call`` as a recording ``ReplayAdapter`` and ``TapReplay`` replay; whole or not at all.

    ``spill``: the reads the call kept on disk, written after those in ``call.reads``;
    ``chunk_spill``: the chunk lines of the chunks it dropped, written before those it kept.
    """
    stem = f"{call.id:05d}-{call.wire}-{_UNSAFE.sub('_', call.model or 'unknown')[:60]}"
    header = recording_header(
        provider=call.wire,
        model=call.model,
        adapter="Tap",
        started=datetime.fromtimestamp(call.started_at, UTC).isoformat(timespec="milliseconds"),
        method=call.method,
        path=call.path,
        status=call.status,
        tap=_tap_field(call),
    )
    fd, temporary = _create(folder, ".jsonl.part")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(recording_line(header))
            file.writelines(read_line(t, bytes(data)) for t, data in list(call.reads))
            if spill is not None:
                file.writelines(spill.lines())
            if chunk_spill is not None:
                file.writelines(chunk_spill.lines())
            file.writelines(_result_lines(call, result))
        return _place(temporary, folder, stem)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def chunk_lines(times: Sequence[float], chunks: Sequence[Any]) -> Iterator[bytes]:
    """The recording's chunk lines of ``chunks`` that arrived at ``times``."""
    for t, chunk in zip(times, chunks, strict=False):
        body = chunk if isinstance(chunk, dict) else chunk.to_dict()
        yield recording_line({"t": stored_time(t), "chunk": body})


def _tap_field(call: TapCall) -> dict[str, Any]:
    """The header's ``tap`` field: what the tap saw of the exchange beside the answer's reads."""
    failure = call.forward_failure
    tap: dict[str, Any] = {
        "request_headers": [list(pair) for pair in call.request_headers],
        "key_fingerprint": call.key_fingerprint,
        **body_field(call.request_body),
        "response_headers": [list(pair) for pair in call.response_headers],
        "started_at": call.started_at,
        "streaming": call.streaming,
        "timings": asdict(call.timings),
        "forward_failure": None if failure is None else failure.failure.to_dict(),
    }
    if call.withheld_encoding is not None:  # a compressed body: its reads are not here, its chunks are
        tap["withheld_encoding"] = call.withheld_encoding
    return tap


def _result_lines(call: TapCall, result: StreamResult) -> Iterator[bytes]:
    """The recording's chunk lines, at their times, then its error line (if the call failed)."""
    yield from chunk_lines(result.timings.chunk_times, result.chunks)
    if result.error is not None:
        t = call.timings.total_s or 0.0
        yield recording_line({"t": stored_time(t), "error": result.error.failure.to_dict()})
