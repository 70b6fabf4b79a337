"""``functionCall.partialArgs`` → argument JSON text, written as the patches arrive (pure).

Gemini 3 on Vertex AI (``streamFunctionCallArguments``) streams a call's arguments as JSON-path
patches: ``{"jsonPath": "$.city", "stringValue": "Tok", "willContinue": true}``, then the rest
of the string, then ``$.days`` with a ``numberValue`` … The protocol wants raw JSON text whose
concatenation is the arguments object, so ``ArgumentText`` writes that text patch by patch:
keys open (``{"city": "``), a string grows by its escaped pieces, containers close when a
patch leaves them, and ``close()`` ends everything. The text is exactly
``json.dumps(final_object, ensure_ascii=False)`` (``", "`` and ``": "`` separators).

This works because a model writes its arguments front to back, so the patches come in
document order. A patch that goes back into a member already closed (or sets a key twice, or
skips an array index) cannot be written onto text already sent: it raises ``ValueError``,
which the translator reports as ``MALFORMED_RESPONSE`` (the output before it kept).

A string's closing quote waits for the next patch of another path (or the end): a further
``stringValue`` for the same path appends to it, as Google's ADK aggregator reads the wire.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["MAX_PATH_DEPTH", "ArgumentText", "parse_json_path"]

MAX_PATH_DEPTH = 64
"""The deepest JSON path accepted (a bound: the JSON parser's own limit is far above it)."""

Segment = str | int

_NAME_END = re.compile(r"[.\[\]]")  # where a ``.name`` segment stops (a one-character class: linear)
_QUOTED_END = {"'": re.compile(r"[\\']"), '"': re.compile(r'[\\"]')}  # a quote or an escape
_MAX_INDEX_DIGITS = 9


def parse_json_path(path: str) -> tuple[Segment, ...]:
    """The segments of an RFC 9535 normalized path (``$.a.b[0]``, ``$['a b']``).

    One pass over the path, each character looked at a bounded number of times (no backtracking
    pattern): linear time, and memory of the order of the path itself, whatever it holds.

    Raises:
        ValueError: not a path of names and indexes below ``$``, or deeper than ``MAX_PATH_DEPTH``.
    """
    if not path.startswith("$"):
        raise ValueError(f"jsonPath {path[:80]!r} does not start with $")
    segments: list[Segment] = []
    position = 1
    while position < len(path):
        segment, position = _segment(path, position)
        segments.append(segment)
        if len(segments) > MAX_PATH_DEPTH:
            raise ValueError(f"jsonPath is deeper than {MAX_PATH_DEPTH} levels")
    if not segments:
        raise ValueError("jsonPath $ names the arguments object itself, not a member of it")
    return tuple(segments)


def _segment(path: str, position: int) -> tuple[Segment, int]:
    """The segment at ``position`` (``.name``, ``[0]``, ``['name']``, ``["name"]``) and where it ends."""
    opener = path[position]
    found: tuple[Segment, int] | None = None
    if opener == ".":
        name_end = _NAME_END.search(path, position + 1)
        stop = name_end.start() if name_end is not None else len(path)
        if stop > position + 1:
            found = path[position + 1 : stop], stop
    elif opener == "[":
        found = _bracketed(path, position + 1)
    if found is None:
        raise ValueError(f"jsonPath {path[:80]!r} is not a path of names and indexes")
    return found


def _bracketed(path: str, position: int) -> tuple[Segment, int] | None:
    """The ``[0]``, ``['name']`` or ``["name"]`` segment whose text starts at ``position``, and its end."""
    quote = path[position : position + 1]
    if quote in ("'", '"'):
        stop = _closing_quote(path, position + 1, quote)
        if stop is None or path[stop + 1 : stop + 2] != "]":
            return None
        text = path[position + 1 : stop]
        if quote == "'":
            text = text.replace("\\'", "'").replace('"', '\\"')
        return _unquote(text), stop + 2
    stop = path.find("]", position, position + 1 + _MAX_INDEX_DIGITS)
    digits = path[position:stop] if stop != -1 else ""
    return (int(digits), stop + 1) if digits.isascii() and digits.isdigit() else None


def _closing_quote(path: str, position: int, quote: str) -> int | None:
    """Where the quoted name starting at ``position`` ends (its unescaped ``quote``), None: never."""
    end = _QUOTED_END[quote]
    while (found := end.search(path, position)) is not None:
        if found.group() == quote:
            return found.start()
        position = found.start() + 2  # an escape: the character after it is the name's
    return None


def _unquote(text: str) -> str:
    """A quoted name's text (JSON escapes)."""
    try:
        value = json.loads('"' + text + '"')
    except ValueError:
        raise ValueError(f"jsonPath name {text[:80]!r} has a bad escape") from None
    return str(value)


class _Level:
    """One open container: an object's keys so far, or an array's length so far."""

    __slots__ = ("array", "count", "keys")

    def __init__(self, array: bool) -> None:
        self.array = array
        self.keys: set[str] = set()
        self.count = 0


def _dump(value: Any) -> str:
    """A value's JSON text; a number JSON cannot hold (``1e999`` read as infinity, NaN) is refused."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise ValueError(f"partialArgs value {value!r} is not a finite number, so not JSON") from None


class ArgumentText:
    """The argument JSON text of one streamed call, patch by patch."""

    __slots__ = ("levels", "open_string", "opened", "started")

    def __init__(self) -> None:
        self.levels: list[_Level] = []  # [root, …]: the containers open now, outermost first
        self.opened: list[Segment] = []  # the path of each open container below the root
        self.open_string: tuple[Segment, ...] | None = None  # the string whose quote is not sent
        self.started = False

    def patch(self, path: tuple[Segment, ...], value: Any, *, string: bool) -> str:
        """The text that sets ``path`` to ``value`` (a ``string`` piece appends to an open string).

        Raises:
            ValueError: the patch is out of document order (see the module docstring).
        """
        out: list[str] = []
        if self.open_string is not None:
            if string and path == self.open_string:
                return _dump(value)[1:-1]
            out.append('"')
            self.open_string = None
        if not self.started:
            self.started = True
            self.levels.append(_Level(array=False))
            out.append("{")
        common = self._close_beyond(path[:-1], out)
        for depth in range(common, len(path)):
            segment = path[depth]
            self._member(self.levels[-1], segment, path, out)
            if depth < len(path) - 1:
                array = isinstance(path[depth + 1], int)
                out.append("[" if array else "{")
                self.levels.append(_Level(array))
                self.opened.append(segment)
        if string:
            out.append(_dump(value)[:-1])  # the quote stays open for the pieces that follow
            self.open_string = path
        else:
            out.append(_dump(value))
        return "".join(out)

    def _close_beyond(self, containers: tuple[Segment, ...], out: list[str]) -> int:
        """Close the open containers ``containers`` does not share; how many it does share."""
        common = 0
        while (
            common < len(self.opened)
            and common < len(containers)
            and self.opened[common] == containers[common]
        ):
            common += 1
        while len(self.opened) > common:
            self.opened.pop()
            out.append("]" if self.levels.pop().array else "}")
        return common

    @staticmethod
    def _member(level: _Level, segment: Segment, path: tuple[Segment, ...], out: list[str]) -> None:
        if level.array:
            if segment != level.count or isinstance(segment, str):
                raise ValueError(f"partialArgs path {_show(path)} skips or repeats an array index")
            out.append(", " if level.count else "")
            level.count += 1
            return
        if not isinstance(segment, str):
            raise ValueError(f"partialArgs path {_show(path)} indexes an object")
        if segment in level.keys:
            raise ValueError(f"partialArgs path {_show(path)} returns to a member already written")
        out.append(", " if level.keys else "")
        level.keys.add(segment)
        out.append(_dump(segment) + ": ")

    def close(self) -> str:
        """The text that ends the arguments (``{}`` when no patch came)."""
        if not self.started:
            self.started = True
            return "{}"
        out = ['"'] if self.open_string is not None else []
        self.open_string = None
        while self.levels:
            out.append("]" if self.levels.pop().array else "}")
        self.opened.clear()
        return "".join(out)


def _show(path: tuple[Segment, ...]) -> str:
    text = "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)
    return repr(text[:80])
