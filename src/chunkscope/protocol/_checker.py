"""The streaming rule checker: does a chunk stream keep the StreamChunk protocol?

``Checker`` is a streaming state machine: ``feed`` each chunk, then ``close``
at the end of the stream; each call returns the violations detected at that
point (usually none, as a shared empty tuple). ``check`` and ``validated``
(``_validate``) and ``StreamInspector`` (``_assembly``) drive one.

Profiles
--------
``strict`` (the default) applies every rule of ``RULES``. ``dsh`` is exactly the
TypeScript reference's own stream invariant (``invariant.ts``): indexes are
non-negative safe integers (at most 2**53 - 1) not reused while open (reuse
after ``block-end`` is fine); a delta addresses an open block of its own kind;
a ``block-end`` closes an open block of the same type (content not compared);
``usage`` at most once; exactly one ``finish``, last; open blocks only at an
``error``/``aborted`` finish; well-formed chunks, read as the reference's
validator reads them: keys no chunk has are ignored, and blocks of the
reference's ``image`` and ``tool-result`` types may open and close (``strict``
reports such a chunk under ``schema`` and skips it). Blocks may interleave. It
reports under the same rule ids, and its first violation is at the chunk where
the reference fails (``tests/protocol/test_reference_parity.py`` pins both, and
``tests/protocol/test_upstream_vectors.py`` runs the reference's own vectors,
with the deliberate differences listed there: e.g. a usage after the finish
is ``usage-before-finish``, a fractional index ``schema``).

One fault, one rule
-------------------
Every chunk is judged by the first rule that applies, in this order, so that a
single fault is reported under exactly one rule id:

* any chunk: ``schema`` (it is not a chunk at all — nothing else can be said,
  and it is skipped), then ``finish-last`` (a chunk other than ``usage`` after
  the finish is judged for nothing else).
* ``block-start``: ``index-order`` (negative, reused, or — strict — not the
  next integer), then ``no-interleave`` (another block still open). A
  repeated start of an open block is ignored; any other start opens the block,
  so its deltas and end are judged normally.
* delta: ``delta-index`` (no open block of that index, or one of another
  kind — the delta is then ignored), then ``no-interleave`` (an open block, but
  not the one opened last), then ``tool-call-id`` (empty, changed, or another
  call's id).
* ``block-end``: ``block-pairing`` (no open block of that index; the chunk is
  ignored and the open block stays open), then ``block-end-match`` for the
  block type, then ``tool-call-id``, ``tool-call-name``, ``block-end-match``
  for the content, and last the JSON test of the arguments, whose
  ``arguments-json`` verdict is held until the finish (reported then, at the
  ``block-end``'s position, unless the finish is ``max-tokens``, ``error`` or
  ``aborted``, which may cut a call's JSON short). A mismatching ``block-end``
  still closes its block.
* ``usage``: ``usage-before-finish`` (a second one, or one after the finish —
  the source text's rule for it), then ``usage-valid``.
* ``finish``: ``finish-last`` (a second finish); otherwise, each independent:
  ``schema`` (an ``error``/``aborted`` reason without failure, or a successful
  one with a failure), held ``arguments-json``, ``block-pairing`` (blocks left
  open), ``finish-consistency``. The ``usage-missing`` warning for a
  successful finish with no usage before it is held until the end of the
  stream, since a usage may still come after the finish (that usage is then a
  ``usage-before-finish`` error, and no usage is missing).
* end of stream (``close``): ``finish-last`` when no finish arrived, else the
  held ``usage-missing`` warning (at the finish's position). Blocks left open
  and held JSON verdicts are not reported at a missing finish: it explains them.

A fault that changes the verdict on later chunks still shows under each rule
it breaks: a ``block-end`` with a wrong index leaves its block open, so the
next ``block-start`` is also a ``no-interleave``. ``usage`` moved after the
finish is one ``usage-before-finish`` error and nothing else.
``chunkscope.testing.invalid_streams`` draws the mutations that break exactly
one rule.

Tool-call names: the name the deltas built (the last non-empty one) is compared
with the ``block-end``'s only when the deltas carried one, since a wire may name
a call only when it completes. A negative index is reported once, at its
``block-start`` (the reference fails there too).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import ValidationError

from ._chunks import (
    STREAM_BLOCK_TYPES,
    BlockEnd,
    BlockStart,
    Finish,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
    describe_invalid,
    parse_chunk,
    parse_chunk_ignoring_unknown_keys,
    usage_findings,
)
from ._violations import PROFILES, RULES, USAGE_RULES, Violation
from ._words import a, type_phrase

__all__ = ["Checker"]

_EMPTY: tuple[Violation, ...] = ()
_TEXT, _REASONING, _TOOL = "text", "reasoning", "tool-call"
# Block kinds are compared by identity on the hot path: map parsed strings to these constants.
_KINDS = {_TEXT: _TEXT, _REASONING: _REASONING, _TOOL: _TOOL}
# JavaScript's Number.MAX_SAFE_INTEGER: the reference refuses a larger index, so logs stay portable.
_MAX_INDEX = 2**53 - 1
_CUT_ALLOWED = frozenset({"max-tokens", "error", "aborted"})
_FAILING = frozenset({"error", "aborted"})
_USAGE_FIELDS = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_read_tokens", "cacheReadTokens"),
    ("cache_write_tokens", "cacheWriteTokens"),
    ("reasoning_tokens", "reasoningTokens"),
)


def _arithmetic(chunk: Usage, pos: int) -> Sequence[Violation]:
    """The translator's usage-arithmetic findings at its usage chunk (the raw counts it saw do not
    add up), as warnings of ``USAGE_RULES``; none for most streams."""
    findings = usage_findings(chunk)
    if not findings:
        return _EMPTY
    return tuple(Violation(rule, USAGE_RULES[rule].severity, pos, chunk, text) for rule, text in findings)


def _violation(rule: str, position: int | None, chunk: Any, message: str) -> Violation:
    return Violation(rule, RULES[rule].severity, position, chunk, message)


def _clip(text: str, limit: int = 24) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _difference(said: str, built: str) -> str:
    shorter = min(len(said), len(built))
    at = next((k for k in range(shorter) if said[k] != built[k]), shorter)
    return (
        f"they differ from character {at}: the block-end has {_clip(said[at:])} ({len(said)} characters), "
        f"the deltas built {_clip(built[at:])} ({len(built)} characters)"
    )


def _json_problem(text: str) -> str | None:
    if text == "":
        return "are empty; empty text is not JSON (a call without arguments sends {})"
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return f"are not valid JSON ({detail} at character {getattr(exc, 'pos', '?')}): {_clip(text, 40)}"
    except RecursionError:  # hostile input: deeper than any parser here will follow
        return f"are JSON nested too deeply to parse ({len(text)} characters): {_clip(text, 40)}"
    if not isinstance(value, dict):
        return f"are JSON but not an object ({type_phrase(value)}): {_clip(text, 40)}"
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_FAST_DELTA: dict[str, type[Any]] = {_TEXT: TextDelta, _REASONING: ReasoningDelta}


class _Block:
    """What the checker remembers about one block."""

    __slots__ = ("call_id", "end", "fast", "index", "kind", "name", "parts", "start")

    def __init__(self, index: int, kind: str, start: int) -> None:
        self.index = index
        self.kind = kind
        # The delta class feed() may append without further checks (text and reasoning only).
        self.fast: type[Any] | None = _FAST_DELTA.get(kind)
        self.start = start
        self.end = -1
        self.parts: list[str] = []
        self.call_id: str | None = None
        self.name: str | None = None


class Checker:
    """A streaming rule checker for one stream: ``feed`` every chunk, then ``close``.

    ``feed`` accepts a chunk model or a camelCase dict (a dict that does not
    parse is a ``schema`` violation, and is otherwise ignored). Each call
    returns the violations detected at that point — usually a shared empty
    tuple. ``profile`` is ``"strict"`` (every rule) or ``"dsh"`` (the
    TypeScript reference's invariant).
    """

    def __init__(self, profile: str = "strict") -> None:
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
        self.profile = profile
        self._strict = profile == "strict"
        self._pos = -1
        self._open: dict[int, _Block] = {}
        # Fast-path block. strict: the open block opened last; dsh: the open
        # block the previous delta addressed. _NO_BLOCK when none (and once finished).
        self._cur: _Block = _NO_BLOCK
        self._ended: dict[int, _Block] = {}
        self._next = 0
        self._usage_pos: int | None = None
        self._finish_pos: int | None = None
        self._started = 0
        self._tool_calls = 0
        self._call_ids: dict[str, int] = {}
        self._held: list[Violation] = []
        self._usage_missing: Violation | None = None  # held until close(): a late usage cancels it
        self._closed = False
        self._dispatch: dict[type[Any], Callable[[Any], Sequence[Violation]]] = {
            TextDelta: self._text,
            ReasoningDelta: self._reasoning,
            ToolCallDelta: self._tool,
            BlockStart: self._start,
            BlockEnd: self._end,
            Usage: self._usage,
            Finish: self._finish,
        }

    @property
    def position(self) -> int:
        """How many chunks have been fed so far."""
        return self._pos + 1

    @property
    def finished(self) -> bool:
        """True once a finish chunk has been fed."""
        return self._finish_pos is not None

    def feed(self, chunk: Any) -> Sequence[Violation]:
        """Judge the next chunk; return the violations detected at it (usually empty)."""
        self._pos += 1
        block = self._cur
        # The hot path, inlined: a text or reasoning delta for the current block.
        if type(chunk) is block.fast and chunk.index == block.index:
            block.parts.append(chunk.text)
            return _EMPTY
        handler = self._dispatch.get(type(chunk))
        if handler is None:
            return self._foreign(chunk)
        return handler(chunk)

    def feed_all(self, chunks: Iterable[Any]) -> list[Violation]:
        """``feed`` every chunk of ``chunks`` in order; return every violation found, in order."""
        get = self._dispatch.get
        foreign = self._foreign
        found: list[Violation] = []
        # feed() inlined: this loop is the hot path of batch checking.
        for chunk in chunks:
            self._pos += 1
            block = self._cur
            if type(chunk) is block.fast and chunk.index == block.index:
                block.parts.append(chunk.text)
                continue
            handler = get(type(chunk))
            result = handler(chunk) if handler is not None else foreign(chunk)
            if result:
                found.extend(result)
        return found

    def close(self) -> Sequence[Violation]:
        """End of stream: return the violations only the end reveals (a missing finish)."""
        if self._closed:
            return _EMPTY
        self._closed = True
        if self._finish_pos is not None:
            missing = self._usage_missing
            return _EMPTY if missing is None else (missing,)
        count = self._pos + 1
        plural = "s" if count != 1 else ""
        seen = f"after {count} chunk{plural} without a finish" if count else "without any chunk"
        return (
            _violation(
                "finish-last",
                None,
                None,
                f"the stream ended {seen}; every stream ends with exactly one finish chunk",
            ),
        )

    # --- dispatch -------------------------------------------------------------

    def _foreign(self, chunk: Any) -> Sequence[Violation]:
        try:
            # dsh reads a chunk as the reference's validator does: keys it does not know are ignored
            parsed = parse_chunk(chunk) if self._strict else parse_chunk_ignoring_unknown_keys(chunk)
        except ValidationError as exc:
            return (_violation("schema", self._pos, chunk, describe_invalid(chunk, exc)),)
        handler = self._dispatch.get(type(parsed))
        if handler is None:  # pragma: no cover - parse_chunk only returns chunk models
            return (_violation("schema", self._pos, chunk, describe_invalid(chunk)),)
        return handler(parsed)

    def _after_finish(self, chunk: Any) -> Sequence[Violation]:
        return (
            _violation(
                "finish-last",
                self._pos,
                chunk,
                f"{chunk.type} arrived after the finish (chunk {self._finish_pos}); "
                "finish must be the last chunk",
            ),
        )

    # --- deltas ---------------------------------------------------------------

    def _text(self, chunk: TextDelta) -> Sequence[Violation]:
        return self._delta(chunk, _TEXT, chunk.text)

    def _reasoning(self, chunk: ReasoningDelta) -> Sequence[Violation]:
        return self._delta(chunk, _REASONING, chunk.text)

    def _tool(self, chunk: ToolCallDelta) -> Sequence[Violation]:
        block = self._cur
        if block.index == chunk.index and block.kind is _TOOL and block.call_id == chunk.id:
            block.parts.append(chunk.arguments_delta)
            if chunk.name:
                block.name = chunk.name
            return _EMPTY
        return self._delta(chunk, _TOOL, chunk.arguments_delta)

    def _delta(
        self, chunk: TextDelta | ReasoningDelta | ToolCallDelta, kind: str, text: str
    ) -> Sequence[Violation]:
        if self._finish_pos is not None:
            return self._after_finish(chunk)
        pos = self._pos
        index = chunk.index
        block = self._open.get(index)
        if block is None:
            return self._delta_without_block(chunk, kind)
        if block.kind != kind:
            return (
                _violation(
                    "delta-index",
                    pos,
                    chunk,
                    f"{chunk.type} for index {index} arrived, but block {index} is a {block.kind} block "
                    f"(opened at chunk {block.start})",
                ),
            )
        found: Sequence[Violation] = _EMPTY
        if self._strict:
            current = self._cur
            if current is not _NO_BLOCK and current is not block:
                found = self._interleaved(chunk, current)
        else:
            self._cur = block
        block.parts.append(text)
        if kind is _TOOL:
            assert type(chunk) is ToolCallDelta
            return self._first_tool_delta(chunk, block, found)
        return found

    def _delta_without_block(
        self, chunk: TextDelta | ReasoningDelta | ToolCallDelta, kind: str
    ) -> Sequence[Violation]:
        index = chunk.index
        ended = self._ended.get(index)
        if ended is not None:
            why = f"block {index} already ended at chunk {ended.end}"
        elif index < 0:
            why = "block indexes are non-negative"
        else:
            why = f"no block {index} was started"
        return (
            _violation(
                "delta-index",
                self._pos,
                chunk,
                f"{chunk.type} for index {index} arrived, but {why}; a delta goes to an open {kind} block",
            ),
        )

    def _interleaved(
        self, chunk: TextDelta | ReasoningDelta | ToolCallDelta, current: _Block
    ) -> Sequence[Violation]:
        return (
            _violation(
                "no-interleave",
                self._pos,
                chunk,
                f"{chunk.type} for block {chunk.index} arrived while block {current.index} is the open "
                "block; deltas go only to the block opened last",
            ),
        )

    def _first_tool_delta(
        self, chunk: ToolCallDelta, block: _Block, found: Sequence[Violation]
    ) -> Sequence[Violation]:
        """A tool delta that is not its open call's continuation: its name and id are taken in."""
        if chunk.name:
            block.name = chunk.name
        if self._strict:
            # Judged even behind a no-interleave, so that the id is known to later calls;
            # reported only when it is this chunk's first fault.
            id_found = self._check_delta_id(chunk, block)
            return found or id_found
        if block.call_id is None:
            block.call_id = chunk.id
        return found

    def _check_delta_id(self, chunk: ToolCallDelta, block: _Block) -> Sequence[Violation]:
        call_id = chunk.id
        pos = self._pos
        if block.call_id is None:
            if not call_id:
                return (
                    _violation(
                        "tool-call-id",
                        pos,
                        chunk,
                        f"tool-call-delta for block {block.index} has an empty id; a tool call needs a "
                        "non-empty id (make one up, unique in the stream, if the wire sends none)",
                    ),
                )
            block.call_id = call_id
            other = self._call_ids.get(call_id)
            if other is not None:
                return (
                    _violation(
                        "tool-call-id",
                        pos,
                        chunk,
                        f"tool call {block.index} uses id {call_id!r}, which tool call {other} already "
                        "used; ids are unique in a stream",
                    ),
                )
            self._call_ids[call_id] = block.index
            return _EMPTY
        if call_id != block.call_id:
            return (
                _violation(
                    "tool-call-id",
                    pos,
                    chunk,
                    f"tool-call-delta for block {block.index} changes the call id from "
                    f"{block.call_id!r} to {call_id!r}; a tool call keeps one id",
                ),
            )
        return _EMPTY  # pragma: no cover - the fast path takes matching ids

    # --- block boundaries -----------------------------------------------------

    def _start(self, chunk: BlockStart) -> Sequence[Violation]:
        # strict: not a stream's chunk at all, so skipped before any stream rule sees it
        if self._strict and chunk.block_type not in STREAM_BLOCK_TYPES:
            return self._message_block(chunk, f"block-start opens {a(chunk.block_type)} block")
        if self._finish_pos is not None:
            return self._after_finish(chunk)
        pos = self._pos
        index = chunk.index
        opened = self._open.get(index)
        if opened is not None:
            return (
                _violation(
                    "index-order",
                    pos,
                    chunk,
                    f"block-start for index {index} arrived while block {index} is still open (opened at "
                    f"chunk {opened.start}); an index is not reused",
                ),
            )
        found: Sequence[Violation] = _EMPTY
        if not 0 <= index <= _MAX_INDEX:
            found = (
                _violation(
                    "index-order",
                    pos,
                    chunk,
                    f"block-start has index {index}; block indexes are non-negative integers no larger "
                    "than 2**53 - 1 (the largest a JavaScript number holds exactly)",
                ),
            )
        elif self._strict:
            if index != self._next:
                ended = self._ended.get(index)
                if ended is not None:
                    why = (
                        f"reuses index {index}, which block {index} already used (chunks {ended.start} to "
                        f"{ended.end}); each block takes a new index, the next being {self._next}"
                    )
                else:
                    why = (
                        f"for index {index} arrived, but the next block must take index {self._next} "
                        "(indexes go 0, 1, 2, … in order)"
                    )
                found = (_violation("index-order", pos, chunk, "block-start " + why),)
            elif self._cur is not _NO_BLOCK:
                current = self._cur
                found = (
                    _violation(
                        "no-interleave",
                        pos,
                        chunk,
                        f"block-start for index {index} arrived while block {current.index} "
                        f"({current.kind}) is still open; end a block before starting the next",
                    ),
                )
        kind = _KINDS.get(chunk.block_type, chunk.block_type)
        block = _Block(index, kind, pos)
        self._open[index] = block
        self._cur = block
        self._started += 1
        if kind == _TOOL:
            self._tool_calls += 1
        if index >= self._next:
            self._next = index + 1
        return found

    def _message_block(self, chunk: BlockStart | BlockEnd, what: str) -> Sequence[Violation]:
        """strict: a block of a message's vocabulary (an image, a tool result's start) in a stream.
        Not a chunk of a model's stream, so it is skipped, as a chunk that does not parse is."""
        message = (
            f"{what}; a stream's blocks are text, reasoning or tool-call (the dsh profile allows the "
            "TypeScript reference's image and tool-result blocks)"
        )
        return (_violation("schema", self._pos, chunk, message),)

    def _end(self, chunk: BlockEnd) -> Sequence[Violation]:
        if self._strict and chunk.block.type == "image":
            return self._message_block(chunk, "block-end carries an image block")
        if self._finish_pos is not None:
            return self._after_finish(chunk)
        pos = self._pos
        index = chunk.index
        block = self._open.get(index)
        if block is None:
            return (_violation("block-pairing", pos, chunk, self._unpaired_end(index)),)
        del self._open[index]
        block.end = pos
        self._ended[index] = block
        if block is self._cur:
            # strict: the block opened last among those still open takes over.
            self._cur = max(self._open.values(), key=_start_of) if self._strict and self._open else _NO_BLOCK
        said = chunk.block
        if said.type != block.kind:
            return (
                _violation(
                    "block-end-match",
                    pos,
                    chunk,
                    f"block-end for index {index} carries a {said.type} block, but block {index} was "
                    f"started as {block.kind} (chunk {block.start})",
                ),
            )
        if not self._strict:
            return _EMPTY
        built = "".join(block.parts)
        if said.type != _TOOL:
            if said.text != built:  # type: ignore[union-attr]
                return (
                    _violation(
                        "block-end-match",
                        pos,
                        chunk,
                        f"block-end for index {index} does not hold the text its deltas built: "
                        + _difference(said.text, built),  # type: ignore[union-attr]
                    ),
                )
            return _EMPTY
        return self._end_tool(chunk, block, built)

    def _end_tool(self, chunk: BlockEnd, block: _Block, built: str) -> Sequence[Violation]:
        said: Any = chunk.block
        problem = (
            self._end_tool_id(chunk, block, said)
            or self._end_tool_name(chunk, block, said)
            or self._end_tool_arguments(chunk, block, said, built)
        )
        if problem is not None:
            return (problem,)
        json_problem = _json_problem(built)
        if json_problem is not None:
            self._held.append(
                _violation(
                    "arguments-json",
                    self._pos,
                    chunk,
                    f"the arguments of tool call {block.index} ({said.name}) " + json_problem,
                )
            )
        return _EMPTY

    def _end_tool_id(self, chunk: BlockEnd, block: _Block, said: Any) -> Violation | None:
        """The block-end's id: non-empty, the one its deltas used, else (when they used none) unique."""
        index = block.index
        if not said.id:
            message = f"block-end for tool call {index} has an empty id; a tool call needs a non-empty id"
            return _violation("tool-call-id", self._pos, chunk, message)
        if block.call_id and said.id != block.call_id:
            message = (
                f"block-end for tool call {index} says id {said.id!r}, but its deltas used "
                f"{block.call_id!r}; a tool call keeps one id"
            )
            return _violation("tool-call-id", self._pos, chunk, message)
        if block.call_id is None:  # no delta carried an id: the block-end's is the first
            block.call_id = said.id
            other = self._call_ids.get(said.id)
            if other is not None:
                message = (
                    f"tool call {index} uses id {said.id!r}, which tool call {other} already used; "
                    "ids are unique in a stream"
                )
                return _violation("tool-call-id", self._pos, chunk, message)
            self._call_ids[said.id] = index
        return None

    def _end_tool_name(self, chunk: BlockEnd, block: _Block, said: Any) -> Violation | None:
        index = block.index
        if not said.name:
            message = (
                f"tool call {index} (id {said.id!r}) has no name by its block-end; a call without a "
                "name cannot be dispatched"
            )
            return _violation("tool-call-name", self._pos, chunk, message)
        if block.name and said.name != block.name:
            message = (
                f"block-end for tool call {index} names it {said.name!r}, but its deltas named it "
                f"{block.name!r}"
            )
            return _violation("block-end-match", self._pos, chunk, message)
        return None

    def _end_tool_arguments(self, chunk: BlockEnd, block: _Block, said: Any, built: str) -> Violation | None:
        if said.arguments == built:
            return None
        message = (
            f"block-end for tool call {block.index} does not hold the arguments its deltas built: "
            + _difference(said.arguments, built)
        )
        return _violation("block-end-match", self._pos, chunk, message)

    def _unpaired_end(self, index: int) -> str:
        head = f"block-end for index {index} arrived, but "
        ended = self._ended.get(index)
        if ended is not None:
            head += f"block {index} already ended at chunk {ended.end}"
            if self._open:
                head += f" (the open {_open_list(self._open)})"
            return head
        if self._open:
            return head + f"the open {_open_list(self._open)}"
        return head + "no block is open"

    # --- usage and finish -----------------------------------------------------

    def _usage(self, chunk: Usage) -> Sequence[Violation]:
        pos = self._pos
        if self._finish_pos is not None:
            self._usage_missing = None  # the usage is there, only late
            return (
                _violation(
                    "usage-before-finish",
                    pos,
                    chunk,
                    f"usage arrived after the finish (chunk {self._finish_pos}); usage comes once, "
                    "before finish",
                ),
            )
        if self._usage_pos is not None:
            return (
                _violation(
                    "usage-before-finish",
                    pos,
                    chunk,
                    f"a second usage chunk arrived (the first was chunk {self._usage_pos}); usage comes "
                    "once, before finish",
                ),
            )
        self._usage_pos = pos
        if self._strict:
            usage = chunk.usage
            bad = [
                f"{alias}={value!r}"
                for name, alias in _USAGE_FIELDS
                if (value := getattr(usage, name)) is not None and (type(value) is not int or value < 0)
            ]
            if bad:
                return (
                    _violation(
                        "usage-valid",
                        pos,
                        chunk,
                        f"usage has {', '.join(bad)}; token counts are non-negative integers",
                    ),
                )
            return _arithmetic(chunk, pos)
        return _EMPTY

    def _finish(self, chunk: Finish) -> Sequence[Violation]:
        pos = self._pos
        if self._finish_pos is not None:
            return (
                _violation(
                    "finish-last",
                    pos,
                    chunk,
                    f"a second finish arrived (the first was chunk {self._finish_pos}); exactly one "
                    "finish ends a stream",
                ),
            )
        self._finish_pos = pos
        self._cur = _NO_BLOCK
        kind = chunk.reason.kind
        found: list[Violation] = []
        failure_problem = _finish_failure_problem(pos, chunk)
        if failure_problem is not None:
            found.append(failure_problem)
        if self._strict and kind not in _CUT_ALLOWED:
            found.extend(self._held)
        self._held = []
        if self._open and kind not in _FAILING:
            found.append(
                _violation(
                    "block-pairing",
                    pos,
                    chunk,
                    f"{a(kind)} finish arrived while {_still_open(self._open)}; only an error or aborted "
                    "finish may leave blocks open",
                )
            )
        if self._strict:
            self._strict_finish(chunk, found)
        return found if found else _EMPTY

    def _strict_finish(self, chunk: Finish, found: list[Violation]) -> None:
        """strict's finish rules: the reason agrees with the blocks, and usage came before it."""
        pos = self._pos
        kind = chunk.reason.kind
        if kind == "tool-calls" and self._tool_calls == 0:
            found.append(
                _violation(
                    "finish-consistency",
                    pos,
                    chunk,
                    "a tool-calls finish arrived, but the stream has no tool-call block",
                )
            )
        elif kind == "stop" and self._started == 0:
            found.append(
                _violation(
                    "finish-consistency",
                    pos,
                    chunk,
                    "a stop finish arrived, but the stream has no block at all: an empty response "
                    "(upstream reports it as an error finish with code EMPTY_RESPONSE)",
                )
            )
        if kind not in _FAILING and self._usage_pos is None:
            self._usage_missing = _violation(
                "usage-missing",
                pos,
                chunk,
                f"{a(kind)} finish arrived with no usage chunk before it; the token accounting is missing",
            )


def _finish_failure_problem(pos: int, chunk: Finish) -> Violation | None:
    """Error and aborted finishes say what failed; the others carry no failure."""
    reason = chunk.reason
    kind = reason.kind
    if kind in _FAILING:
        if reason.failure is None:
            message = f"{a(kind)} finish carries no failure; error and aborted finishes say what failed"
            return _violation("schema", pos, chunk, message)
    elif reason.failure is not None:
        return _violation(
            "schema", pos, chunk, f"{a(kind)} finish carries a failure; only error and aborted finishes do"
        )
    return None


_NO_BLOCK = _Block(-1, "none", -1)  # matches no chunk: its index is never looked up as open


def _start_of(block: _Block) -> int:
    return block.start


def _open_list(blocks: dict[int, _Block]) -> str:
    # "block is 0 (text)" / "blocks are 0 (text), 2 (tool-call)" — after "the open "
    items = ", ".join(f"{b.index} ({b.kind})" for b in blocks.values())
    return f"blocks are {items}" if len(blocks) > 1 else f"block is {items}"


def _still_open(blocks: dict[int, _Block]) -> str:
    items = ", ".join(f"{b.index} ({b.kind})" for b in blocks.values())
    return f"blocks {items} are still open" if len(blocks) > 1 else f"block {items} is still open"
