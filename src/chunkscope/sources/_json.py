"""The one strict JSON reader (and line writer) of chunkscope: no NaN/Infinity, bounded depth and line.

Python's ``json`` reads ``NaN``, ``Infinity`` and ``-Infinity``, which JSON
(and ``JSON.parse``) does not, and ends in a ``RecursionError`` on nesting
deeper than the interpreter's stack. Everything that reads stored JSON goes
through here instead:

* :func:`strict_loads` / :data:`STRICT_DECODER` refuse the constants;
* :func:`json_guard` is the one place the parser's foreign errors become the
  package's own: used as a ``with`` block, it maps ``JSONDecodeError``, the
  refused constants and ``RecursionError`` to a :class:`JsonProblem` and
  raises what the caller's ``raise_as`` builds from it;
* :func:`too_deep` bounds what a reader keeps (iterative, so it cannot recurse);
* :func:`json_lines` reads JSONL a bounded line at a time, from a path or an
  open binary stream (a pipe, a FIFO), naming the line and column of a problem;
* :func:`json_line` writes one whole line (or raises before writing anything).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any, Literal

from ._errors import ChunkFileError

__all__ = [
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "STRICT_DECODER",
    "JsonProblem",
    "json_guard",
    "json_line",
    "json_lines",
    "strict_loads",
    "too_deep",
]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line a JSONL reader takes: 64 MiB."""

MAX_DEPTH = 64
"""How deeply the values a reader keeps (messages, replayState, failures) may nest."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


STRICT_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
"""A decoder that refuses NaN/Infinity; its ``scan_once`` is the C scanner the hot readers call."""


def strict_loads(text: str | bytes) -> Any:
    """``json.loads`` that refuses NaN/Infinity (``ValueError``); wrap it in :func:`json_guard`."""
    return json.loads(text, parse_constant=_refuse_constant)


@dataclass(frozen=True)
class JsonProblem:
    """Why a JSON text was refused: ``kind`` (``syntax``, ``constant``, ``depth``), a short ``detail``
    and, for a syntax error, the 1-based ``column``."""

    kind: Literal["syntax", "constant", "depth"]
    detail: str
    column: int | None = None


@contextlib.contextmanager
def json_guard(raise_as: Callable[[JsonProblem], BaseException]) -> Iterator[None]:
    """Turn the parser's own errors inside the block into ``raise_as(problem)``.

    ``JSONDecodeError`` → ``syntax`` (with its message and column), a refused
    NaN/Infinity (or another ``ValueError`` of the parser) → ``constant``,
    ``RecursionError`` → ``depth``. Used as ``with json_guard(...):`` around a
    parse, so no reader catches ``RecursionError`` itself.
    """
    try:
        yield
    except json.JSONDecodeError as exc:
        raise raise_as(JsonProblem("syntax", exc.msg, exc.colno)) from exc
    except RecursionError:
        raise raise_as(JsonProblem("depth", "JSON nested too deeply")) from None
    except ValueError as exc:  # NaN / Infinity, or an integer too long to convert
        raise raise_as(JsonProblem("constant", str(exc))) from exc


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests containers more than ``limit`` deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if type(node) is dict:
            stack.extend((child, depth + 1) for child in node.values() if type(child) in (dict, list))
        elif type(node) is list:
            stack.extend((child, depth + 1) for child in node if type(child) in (dict, list))
    return False


def json_lines(
    source: str | os.PathLike[str] | IO[bytes],
    *,
    name: str | None = None,
    error: type[ChunkFileError] = ChunkFileError,
    refuse_constants: bool = True,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[tuple[int, Any]]:
    """``(line number, JSON value)`` for each non-blank line of UTF-8 JSONL (internal).

    ``source`` is a path or an open binary stream (read once, front to back:
    a pipe works); ``name`` names it in messages. Raises ``error`` (a
    ``ChunkFileError``) naming the path, line and, where known, column:
    invalid UTF-8, invalid JSON, NaN/Infinity when ``refuse_constants``,
    nesting deeper than the parser's recursion bound, a line longer than
    ``max_line_bytes``. A UTF-8 byte-order mark on line 1 is skipped.
    """
    if isinstance(source, (str, os.PathLike)):
        with open(os.fspath(source), "rb") as handle:
            yield from json_lines(
                handle,
                name=name or os.fspath(source),
                error=error,
                refuse_constants=refuse_constants,
                max_line_bytes=max_line_bytes,
            )
        return
    label = name or str(getattr(source, "name", "<stream>"))
    loads: Callable[[str], Any] = strict_loads if refuse_constants else json.loads
    number = 0
    while True:
        raw = source.readline(max_line_bytes + 1)
        if not raw:
            return
        number += 1
        text = _line_text(raw, number, label, error, max_line_bytes)
        if not text.strip():
            continue
        with json_guard(functools.partial(_line_error, error, label, number)):
            value = loads(text)
        yield number, value


def _line_text(raw: bytes, number: int, label: str, error: type[ChunkFileError], max_line_bytes: int) -> str:
    """One line as text without its line break (a BOM on line 1 skipped); too long or bad UTF-8 raise."""
    if len(raw) > max_line_bytes:
        raise error(f"{label}, line {number}: longer than {max_line_bytes:,} bytes; not read", label, number)
    if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        column = len(raw[: exc.start].decode("utf-8", errors="replace")) + 1
        raise error(
            f"{label}, line {number}, column {column}: not valid UTF-8 "
            f"(byte 0x{raw[exc.start]:02x}: {exc.reason})",
            label,
            number,
            column,
        ) from None  # the decoder's message names a byte offset in no file the user has
    # Without its line break, so that an error's column counts in this line (json
    # would place an error at the very end on a second line, column 1).
    return text.rstrip("\r\n")


def _line_error(error: type[ChunkFileError], name: str, number: int, problem: JsonProblem) -> ChunkFileError:
    if problem.kind == "syntax":
        return error(
            f"{name}, line {number}, column {problem.column}: not valid JSON ({problem.detail})",
            name,
            number,
            problem.column,
        )
    if problem.kind == "depth":
        return error(f"{name}, line {number}: JSON nested too deeply to read", name, number)
    return error(f"{name}, line {number}: not valid JSON ({problem.detail})", name, number)


def json_line(obj: Any, *, allow_nan: bool = False, default: Callable[[Any], Any] | None = None) -> bytes:
    """``obj`` as one compact JSON line in UTF-8, newline included (internal).

    Non-ASCII text is written as is; a string holding a lone surrogate (which
    UTF-8 cannot carry) makes the whole line ``\\u``-escaped instead, so the
    file stays valid UTF-8 and reads back to the same string. Raises before
    anything is written: ``ValueError`` for NaN/Infinity unless ``allow_nan``,
    ``RecursionError`` for nesting too deep to serialize.
    """
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=allow_nan, default=default)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=allow_nan, default=default)
        return text.encode("ascii") + b"\n"
