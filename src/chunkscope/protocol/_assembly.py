"""Assembly: chunks → blocks and a message; ``collect`` → ``StreamResult``.

``BlockAssembler`` follows the TypeScript reference's ``assembler.ts``: blocks
come out in first-seen order; a delta for an index with no ``block-start``
opens the block implicitly; a repeated ``block-start`` and deltas after a
block's ``block-end`` are ignored; the first ``block-end`` of an index wins and
is authoritative; a tool call with no id assembles as ``call-<index>`` and an
empty name never overwrites an earlier one; ``finish`` reads ``stop`` until a
finish arrives; a ``max-tokens`` finish drops tool-call blocks (their JSON may
be cut short). It never raises on a malformed stream — the rules say what is
wrong, the assembler shows what arrived.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from ._checker import Checker
from ._chunks import (
    STREAM_BLOCK_TYPES,
    AnyBlock,
    BlockEnd,
    BlockStart,
    ChunkLike,
    Finish,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
    parse_chunk,
    parse_chunk_ignoring_unknown_keys,
    trusted,
)
from ._clock import WireMarks, marking
from ._errors import LlmError
from ._messages import Message
from ._sources import close_source, open_source
from ._violations import Violation

__all__ = ["BlockAssembler", "StreamInspector", "StreamResult", "Timings", "UsageSink", "collect"]

_STOP = FinishReason(kind="stop")


_FAST_DELTA: dict[str, type[Any]] = {"text": TextDelta, "reasoning": ReasoningDelta}

# What JavaScript's String.prototype.trim removes (the reference's test for "non-whitespace"):
# Unicode Zs spaces, U+FEFF and line terminators, but not U+001C..U+001F nor U+0085 as str.strip does.
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


class _Partial:
    """One block being assembled. Text and arguments accumulate apart, as in the reference."""

    __slots__ = ("args", "block", "call_id", "fast", "index", "kind", "name", "text")

    def __init__(self, index: int, kind: str) -> None:
        self.index = index
        self.kind = kind
        # The delta class push() appends on its inlined path; None once closed.
        self.fast: type[Any] | None = _FAST_DELTA.get(kind)
        self.text: list[str] = []
        self.args: list[str] = []
        self.call_id: str | None = None
        self.name: str | None = None
        self.block: AnyBlock | None = None  # set by the first block-end: authoritative, freezes the partial


_NO_PARTIAL = _Partial(-1, "none")


class _Never:
    """A type no chunk has: StreamInspector's fast path matches nothing while it is set."""


class BlockAssembler:
    """Incrementally assembles chunks into complete blocks and an assistant message.

    ``push`` every chunk in stream order (models, or dicts, which are parsed),
    then read ``blocks()``, ``message()``, ``usage`` and ``finish`` — or
    ``interrupted_blocks()`` when the stream was cut short.
    """

    def __init__(self) -> None:
        self._partials: dict[int, _Partial] = {}
        # The open text or reasoning partial that the last delta of its own kind (or its
        # block-start) touched: the next such delta for it is appended inline by push().
        self._last = _NO_PARTIAL
        self._usage: TokenUsage | None = None
        self._finish: FinishReason | None = None
        self._replay_state: Any = None
        self._dispatch: dict[type[Any], Callable[[Any], None]] = {
            TextDelta: self._text,
            ReasoningDelta: self._text,
            ToolCallDelta: self._tool,
            BlockStart: self._start,
            BlockEnd: self._end,
            Usage: self._usage_chunk,
            Finish: self._finish_chunk,
        }

    def push(self, chunk: ChunkLike) -> None:
        """Feed the next chunk. Raises ``pydantic.ValidationError`` only for a dict that is not a chunk."""
        partial = self._last
        # The hot path, inlined: another delta for the block the last one went to.
        if type(chunk) is partial.fast and chunk.index == partial.index:  # type: ignore[union-attr]
            partial.text.append(chunk.text)  # type: ignore[union-attr]
            return
        handler = self._dispatch.get(type(chunk))
        if handler is None:
            parsed = parse_chunk(chunk)
            handler = self._dispatch[type(parsed)]
            chunk = parsed
        handler(chunk)

    # dicts keep first-insertion order, which is first-seen order.
    def _ensure(self, index: int, kind: str) -> _Partial:
        partial = self._partials[index] = _Partial(index, kind)
        return partial

    def _text(self, chunk: TextDelta | ReasoningDelta) -> None:
        # Text and reasoning deltas both append to the block's text, whatever its kind (as the reference).
        kind = "text" if type(chunk) is TextDelta else "reasoning"
        partial = self._partials.get(chunk.index) or self._ensure(chunk.index, kind)
        if partial.block is None:
            partial.text.append(chunk.text)
            if partial.kind == kind:
                self._last = partial

    def _tool(self, chunk: ToolCallDelta) -> None:
        partial = self._partials.get(chunk.index) or self._ensure(chunk.index, "tool-call")
        if partial.block is None:
            partial.call_id = chunk.id
            if chunk.name:
                partial.name = chunk.name
            partial.args.append(chunk.arguments_delta)

    def _start(self, chunk: BlockStart) -> None:
        if chunk.index not in self._partials:
            self._last = self._partials[chunk.index] = _Partial(chunk.index, chunk.block_type)

    def _end(self, chunk: BlockEnd) -> None:
        partial = self._partials.get(chunk.index) or self._ensure(chunk.index, chunk.block.type)
        if partial.block is None:  # first close wins
            partial.block = chunk.block
            partial.fast = None

    def _usage_chunk(self, chunk: Usage) -> None:
        self._usage = chunk.usage

    def _finish_chunk(self, chunk: Finish) -> None:
        self._finish = chunk.reason
        self._replay_state = chunk.replay_state

    # --- results --------------------------------------------------------------

    @staticmethod
    def _assemble(partial: _Partial, index: int) -> AnyBlock:
        if partial.block is not None:
            return partial.block
        kind = partial.kind
        if kind == "text":
            return trusted(TextBlock, {"type": "text", "text": "".join(partial.text)})
        if kind == "reasoning":
            return trusted(ReasoningBlock, {"type": "reasoning", "text": "".join(partial.text)})
        return trusted(
            ToolCallBlock,
            {
                "type": "tool-call",
                "id": partial.call_id if partial.call_id is not None else f"call-{index}",
                "name": partial.name or "",
                "arguments": "".join(partial.args),
            },
        )

    def _all(self) -> list[AnyBlock]:
        # An image or tool-result block has no deltas: only its block-end says what it holds.
        return [
            self._assemble(partial, index)
            for index, partial in self._partials.items()
            if partial.block is not None or partial.kind in STREAM_BLOCK_TYPES
        ]

    def blocks(self) -> list[AnyBlock]:
        """Every block seen so far, in first-seen order; a ``max-tokens`` finish drops tool calls.

        A block still open assembles from its deltas; a closed one is its ``block-end``'s block.
        """
        blocks = self._all()
        if self._finish is not None and self._finish.kind == "max-tokens":
            return [block for block in blocks if block.type != "tool-call"]
        return blocks

    def interrupted_blocks(self) -> list[AnyBlock]:
        """What an interrupted stream can safely keep: text and reasoning blocks with non-whitespace text.

        Tool calls are left out: an interruption precedes their dispatch.
        Whitespace is what JavaScript's ``trim()`` removes, as in the reference.
        """
        kept: list[AnyBlock] = []
        for index, partial in self._partials.items():
            kind = partial.block.type if partial.block is not None else partial.kind
            if kind not in ("text", "reasoning"):
                continue
            block = self._assemble(partial, index)
            if block.text.strip(_JS_WHITESPACE):  # type: ignore[union-attr]
                kept.append(block)
        return kept

    @property
    def usage(self) -> TokenUsage | None:
        """The usage chunk's counts (the latest one); None until one arrives."""
        return self._usage

    @property
    def finish(self) -> FinishReason:
        """The finish chunk's reason; ``stop`` until one arrives."""
        return self._finish if self._finish is not None else _STOP

    @property
    def finished(self) -> bool:
        """True once a finish chunk has arrived."""
        return self._finish is not None

    @property
    def replay_state(self) -> Any:
        """The finish chunk's opaque ``replayState``, per-block entries pruned in step with ``blocks()``.

        None when there is none, or when its ``blocks`` entries do not align with the blocks seen.
        """
        state = self._replay_state
        if not isinstance(state, dict) or not isinstance(state.get("blocks"), list):
            return state
        entries: list[Any] = state["blocks"]
        every = self._all()
        if len(entries) != len(every):
            return None
        if self.finish.kind != "max-tokens":
            return state
        kept = [entry for entry, block in zip(entries, every, strict=True) if block.type != "tool-call"]
        if len(kept) == len(entries):
            return state
        return {"response": state.get("response"), "blocks": kept}

    def message(self) -> Message:
        """The assembled assistant message over ``blocks()``."""
        return Message(role="assistant", content=self.blocks())

    def __repr__(self) -> str:
        return f"BlockAssembler(blocks={len(self._partials)}, finish={self.finish.kind!r})"


# --- collect -------------------------------------------------------------------


@dataclass
class Timings:
    """When a stream's parts arrived, in seconds since its request started (``collect`` began).

    ``started_at`` is the wall-clock start (POSIX seconds, UTC; ``time.time()``),
    None when unknown; the other fields come from the monotonic clock. The four points of
    "time to first token", each None when it never came (``docs/usage.md`` sets them beside
    OpenTelemetry's and the Vercel AI SDK's):

    - ``first_byte_s``: the response body's first byte (marked by the adapter; the tap too);
    - ``first_event_s``: the wire's first whole event, chunk or not (adapter, tap);
    - ``first_content_s``: the first delta of any kind (text, reasoning, tool arguments);
    - ``first_text_s``: the first text delta.

    As in the TypeScript reference (``isTokenDelta``), an empty delta is no first token: a text or
    reasoning delta counts when its text is not empty, a tool-call delta when it carries argument
    text or a name (``Timings.is_token``).

    ``first_chunk_s`` is the first chunk of any type (a ``block-start`` usually comes with the
    first content): the usage frame's ``ttfc_s`` and OpenTelemetry's time to first chunk.
    """

    first_chunk_s: float | None = None
    chunk_times: list[float] = field(default_factory=list)
    total_s: float = 0.0
    started_at: float | None = None
    first_byte_s: float | None = None
    first_event_s: float | None = None
    first_content_s: float | None = None
    first_text_s: float | None = None

    @classmethod
    def of_arrivals(
        cls,
        chunk_times: list[float],
        *,
        total_s: float,
        started_at: float | None = None,
        chunks: Sequence[Any] | None = None,
        marks: WireMarks | None = None,
    ) -> Timings:
        """The timings of chunks that arrived at ``chunk_times`` (the list is kept, not copied).

        ``first_chunk_s`` is the first arrival, None when no chunk arrived; with ``chunks``
        (the same stream's chunks, in order) the first content and text deltas are found, and
        ``marks`` (the adapter's) give the first byte and event.
        """
        timings = cls(
            first_chunk_s=chunk_times[0] if chunk_times else None,
            chunk_times=chunk_times,
            total_s=total_s,
            started_at=started_at,
        )
        if chunks is not None:
            timings.first_content_s, timings.first_text_s = _first_deltas(chunks, chunk_times)
        if marks is not None:
            timings.first_byte_s, timings.first_event_s = marks.first_byte_s, marks.first_event_s
        return timings

    @staticmethod
    def is_token(chunk: Any) -> bool:
        """Whether ``chunk`` (a model or a camelCase dict) is a first token: a delta carrying output.

        A text or reasoning delta with text, a tool-call delta with argument text or a name; an
        empty delta (a keep-alive, an empty tool-call frame) is not, as in the TypeScript reference.
        """
        if isinstance(chunk, dict):
            kind = chunk.get("type")
            if kind == "tool-call-delta":
                return _has_text(chunk.get("argumentsDelta")) or chunk.get("name") is not None
            return kind in _TEXT_DELTA_TYPES and _has_text(chunk.get("text"))
        kind = type(chunk)
        if kind is ToolCallDelta:
            return chunk.arguments_delta != "" or chunk.name is not None
        return (kind is TextDelta or kind is ReasoningDelta) and chunk.text != ""


_TEXT_DELTA_TYPES = frozenset(("text-delta", "reasoning-delta"))


def _has_text(value: Any) -> bool:
    return type(value) is str and value != ""


def _first_deltas(chunks: Sequence[Any], times: Sequence[float]) -> tuple[float | None, float | None]:
    """When the first delta carrying output and the first text delta with text arrived (None: never)."""
    content: float | None = None
    is_token = Timings.is_token
    for chunk, t in zip(chunks, times, strict=False):  # a cut-short times list ends the search
        if is_token(chunk):
            if content is None:
                content = t
            kind = chunk.get("type") if isinstance(chunk, dict) else chunk.type
            if kind == "text-delta":
                return content, t
    return content, None


@dataclass
class StreamResult:
    """Everything one stream produced.

    ``chunks`` are the chunks in arrival order as typed models (camelCase
    dicts parsed); an item that is not a chunk stays as it came, so violation
    positions and ``timings.chunk_times`` index ``chunks``. ``chunks_dropped``:
    the oldest chunks a windowed stream no longer keeps (the tap's endless
    call); positions then count them, chunk ``n`` is ``chunks[n - chunks_dropped]``
    and ``chunk_times`` is the kept chunks' (0: every chunk kept). ``blocks`` are
    the assembled blocks (``BlockAssembler`` rules);
    ``finish`` is None when no finish chunk arrived; ``error`` is what the
    stream raised (anything not an ``LlmError`` is wrapped as code ``UNKNOWN``
    with the original as ``cause``). Output before an error is kept.
    """

    chunks: list[Any] = field(default_factory=list)
    blocks: list[AnyBlock] = field(default_factory=list)
    usage: TokenUsage | None = None
    finish: FinishReason | None = None
    error: LlmError | None = None
    violations: list[Violation] = field(default_factory=list)
    timings: Timings = field(default_factory=Timings)
    profile: str = "strict"
    chunks_dropped: int = 0

    @property
    def chunk_count(self) -> int:
        """How many chunks the stream had: those kept and those a window dropped."""
        return len(self.chunks) + self.chunks_dropped

    @property
    def text(self) -> str:
        """The visible text: every text block, joined."""
        return "".join(block.text for block in self.blocks if isinstance(block, TextBlock))

    @property
    def reasoning(self) -> str:
        """The reasoning text: every reasoning block, joined."""
        return "".join(block.text for block in self.blocks if isinstance(block, ReasoningBlock))

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        """The tool-call blocks, in order."""
        return [block for block in self.blocks if isinstance(block, ToolCallBlock)]

    def message(self) -> Message:
        """The assistant message over ``blocks`` (what an agent loop appends to the conversation)."""
        return Message(role="assistant", content=self.blocks)

    @property
    def errors(self) -> list[Violation]:
        """The error-severity violations (warnings left out)."""
        return [v for v in self.violations if v.severity == "error"]

    @property
    def ok(self) -> bool:
        """True when the stream raised nothing, finished successfully and broke no rule (warnings allowed)."""
        return self.error is None and self.finish is not None and self.finish.ok and not self.errors

    @property
    def error_code(self) -> str | None:
        """The raised error's code, else the error/aborted finish's failure code, else None."""
        if self.error is not None:
            return self.error.code
        if self.finish is not None and self.finish.failure is not None:
            return self.finish.failure.code
        return None

    def __repr__(self) -> str:
        parts = [f"ok={self.ok}"]
        parts.append(f"finish={self.finish.kind!r}" if self.finish is not None else "finish=None")
        if self.error_code is not None:
            parts.append(f"error_code={self.error_code!r}")
        kinds = ", ".join(_block_summary(block) for block in self.blocks)
        parts.append(f"blocks=[{kinds}]")
        if self.usage is not None:
            parts.append(f"usage=(in {self.usage.input_tokens}, out {self.usage.output_tokens})")
        errors = len(self.errors)
        warnings = len(self.violations) - errors
        parts.append(
            f"violations={errors}" + (f"+{warnings} warning{'s' if warnings > 1 else ''}" if warnings else "")
        )
        dropped = f" ({self.chunks_dropped} not kept)" if self.chunks_dropped else ""
        parts.append(f"chunks={self.chunk_count}{dropped}")
        parts.append(f"total={self.timings.total_s:.3f}s")
        return f"StreamResult({', '.join(parts)})"


def _block_summary(block: AnyBlock) -> str:
    if isinstance(block, (TextBlock, ReasoningBlock)):
        return f"{block.type}: {len(block.text)} chars"
    if isinstance(block, ToolCallBlock):
        return f"tool-call {block.name}"
    return block.type


_LARGE_PIECE = 4096  # characters: a piece this long is worth its own list entry


def join_pieces(pieces: list[str]) -> None:
    """Join the run of short pieces at the end of ``pieces`` into one string, in place.

    A long stream's block text is a list of its deltas' pieces, an object each; joined, it costs
    its characters. Only the tail since the last join is joined (the earlier joins are long
    pieces now), so joining again and again stays linear in the text.
    """
    start = len(pieces)
    while start and len(pieces[start - 1]) < _LARGE_PIECE:
        start -= 1
    if len(pieces) - start > 1:
        pieces[start:] = ["".join(pieces[start:])]


class StreamInspector:
    """Checks and assembles one stream in one pass, chunk by chunk: the engine of ``collect``.

    ``add`` each chunk as it arrives (a model, a camelCase dict, or anything
    else — an item that is no chunk is kept as it came and reported under
    ``schema``); ``chunks`` and ``violations`` grow as it goes, so a live view
    can show each chunk and the violations it drew (``violations[seen:]``)
    at once. ``result(error)`` ends the stream and returns the ``StreamResult``
    (without ``timings``, which belong to whoever owns the clock). Everything
    that checks *and* assembles — ``collect``, the notebook timeline — uses
    this class, so they agree chunk for chunk.
    """

    __slots__ = (
        "_assembler",
        "_checker",
        "_dispatch",
        "_fast_index",
        "_fast_kind",
        "_keep",
        "_run_from",
        "_tool_block",
        "_tool_id",
        "_tool_index",
        "_tool_partial",
        "chunks",
        "dropped",
        "profile",
        "violations",
    )

    def __init__(self, profile: str = "strict") -> None:
        self.profile = profile
        self._checker = Checker(profile)
        self._assembler = BlockAssembler()
        self._dispatch = self._assembler._dispatch
        self.chunks: list[Any] = []
        """Every item added, in order: chunk models (dicts parsed); an item that is no chunk as it came
        (the latest only, once ``trim`` dropped the oldest)."""
        self.dropped = 0
        """Items ``trim`` dropped from the front of ``chunks``: positions count them."""
        self.violations: list[Violation] = []
        """Every violation found so far, in stream order (the end-of-stream ones once ``result`` ran)."""
        self._keep = self.chunks.append
        # The fused hot path: while the checker and the assembler both hold the same open
        # text or reasoning block (their hot-path slots Checker._cur, BlockAssembler._last),
        # a delta continuing it is only kept; the run of such deltas (chunks[_run_from:]) is
        # handed to both at once by _flush, before anything else reads or moves either.
        self._fast_kind: type[Any] = _Never
        self._fast_index = -1
        self._run_from = 0
        # The same for a tool call's next argument piece (same index, same id): it goes straight
        # to both, as their own fast paths would put it. _tool_id None: no such call.
        self._tool_id: str | None = None
        self._tool_index = -1
        self._tool_block: Any = None
        self._tool_partial: _Partial = _NO_PARTIAL

    def add(self, chunk: Any) -> None:
        """Take the next chunk: keep it (parsed), check it, assemble it."""
        kind = type(chunk)
        if kind is self._fast_kind and chunk.index == self._fast_index:
            self._keep(chunk)
            return
        if kind is ToolCallDelta and chunk.id == self._tool_id and chunk.index == self._tool_index:
            arguments = chunk.arguments_delta
            name = chunk.name
            block = self._tool_block
            partial = self._tool_partial
            block.parts.append(arguments)
            partial.args.append(arguments)
            if name:
                block.name = partial.name = name
            self._keep(chunk)
            return
        self._add(chunk, kind)

    def _add(self, chunk: Any, kind: type[Any]) -> None:
        """Any other chunk: through the checker and the assembler, then retarget the fast paths."""
        if self._fast_kind is not _Never:
            self._flush()
        try:
            checker = self._checker
            checker._pos = self.dropped + len(self.chunks) - 1  # the fast paths do not count: the kept do
            handler = self._dispatch.get(kind)
            if handler is None:
                try:
                    # dsh: unknown keys are ignored, as the reference's validator ignores them
                    parse = parse_chunk if checker._strict else parse_chunk_ignoring_unknown_keys
                    chunk = parse(chunk)
                except ValidationError:
                    self._keep(chunk)  # kept as it came, so positions still index chunks
                    self.violations.extend(checker.feed(chunk))  # schema; nothing to assemble
                    return
                handler = self._dispatch[type(chunk)]
            self._keep(chunk)
            found = checker.feed(chunk)
            if found:
                self.violations.extend(found)
            handler(chunk)
        finally:
            self._retarget()

    def _flush(self) -> None:
        """Hand the kept run of fast-path deltas to the checker and the assembler."""
        chunks = self.chunks
        # No run while _fast_kind is _Never (tool pieces, the only other kept ones, are handed over at once).
        if self._fast_kind is not _Never and self._run_from < len(chunks):
            texts = [chunk.text for chunk in chunks[self._run_from :]]
            self._checker._cur.parts.extend(texts)
            self._assembler._last.text.extend(texts)
        self._run_from = len(chunks)

    def _retarget(self) -> None:
        # The one place outside Checker and BlockAssembler that reads their hot-path slots;
        # tests/protocol/test_inspector.py pins that the fused pass agrees with both.
        self._run_from = len(self.chunks)
        block = self._checker._cur
        partial = self._assembler._last
        kind = block.fast
        if kind is not None and kind is partial.fast and block.index == partial.index:
            self._fast_kind = kind
            self._fast_index = block.index
        else:
            self._fast_kind = _Never
        self._tool_id = None
        if block.kind == "tool-call" and block.call_id is not None:
            tool = self._assembler._partials.get(block.index)
            # the assembler still appends to it, under the same id (so keeping its id is a no-op)
            if tool is not None and tool.block is None and tool.call_id == block.call_id:
                self._tool_id = block.call_id
                self._tool_index = block.index
                self._tool_block = block
                self._tool_partial = tool

    @property
    def position(self) -> int:
        """How many items have been added (those ``trim`` dropped included)."""
        return self.dropped + len(self.chunks)

    def trim(self, count: int) -> None:
        """Drop the oldest ``count`` kept chunks: a window over an endless stream.

        Checking and assembling are unchanged (they took each chunk as it came);
        positions go on counting the dropped ones. The open blocks' text, a list
        of the deltas' pieces, is joined into one string, so a dropped delta's
        piece costs its characters only.
        """
        count = min(count, len(self.chunks))
        if count <= 0:
            return
        self._flush()
        del self.chunks[:count]
        self.dropped += count
        self._run_from = len(self.chunks)
        pieces = [block.parts for block in self._checker._open.values()]
        pieces.append(self._checker._cur.parts)
        for index in self._checker._open:
            partial = self._assembler._partials.get(index)
            if partial is not None:
                pieces += (partial.text, partial.args)
        pieces += (self._assembler._last.text, self._tool_partial.args)
        for parts in pieces:
            join_pieces(parts)  # in place: the fast paths hold these lists

    @property
    def finished(self) -> bool:
        """True once a finish chunk has been added."""
        return self._checker.finished

    def blocks(self) -> list[AnyBlock]:
        """The blocks assembled so far (``BlockAssembler.blocks``)."""
        self._flush()
        return self._assembler.blocks()

    def result(self, error: LlmError | None = None) -> StreamResult:
        """End the stream and return its ``StreamResult`` (``timings`` left empty).

        The end-of-stream rules (a missing finish) run only when ``error`` is
        None: an error explains the missing end. Calling it again adds nothing.
        """
        self._flush()
        if error is None:
            self._checker._pos = self.position - 1  # the fast path does not count
            self.violations.extend(self._checker.close())
        assembler = self._assembler
        return StreamResult(
            chunks=self.chunks,
            blocks=assembler.blocks(),
            usage=assembler.usage,
            finish=assembler.finish if assembler.finished else None,
            error=error,
            violations=self.violations,
            profile=self.profile,
            chunks_dropped=self.dropped,
        )

    def __repr__(self) -> str:
        return (
            f"StreamInspector(profile={self.profile!r}, chunks={self.position}, "
            f"violations={len(self.violations)})"
        )


# Lives beside StreamResult (not in a module of its own) so the two need no import cycle.
@runtime_checkable
class UsageSink(Protocol):
    """Anything that takes one finished attempt's ``StreamResult``.

    ``call_id`` groups the attempts of one logical call (retries share it);
    ``attempt`` counts from 1; ``final`` is False for an attempt that was
    retried. Implementations must be safe to call from several tasks and threads.
    """

    def record(
        self,
        result: StreamResult,
        *,
        provider: str,
        model: str,
        tags: Mapping[str, str] | None = None,
        call_id: str | None = None,
        attempt: int = 1,
        final: bool = True,
    ) -> object: ...


async def collect(
    stream: AsyncIterable[Any] | Iterable[Any],
    *,
    profile: str = "strict",
    clock: Callable[[], float] = time.perf_counter,
    log: UsageSink | None = None,
    provider: str = "unknown",
    model: str = "unknown",
    tags: Mapping[str, str] | None = None,
) -> StreamResult:
    """Consume ``stream`` (async or sync; models or camelCase dicts) into a ``StreamResult``.

    Checks every chunk under ``profile`` and assembles the blocks. Never
    raises for what the stream does: an exception from the stream ends
    collection and lands in ``error`` (partial output kept; the end-of-stream
    check for a missing finish is then skipped — the error explains it);
    asyncio cancellation still propagates. ``clock`` (seconds) is injectable
    for tests; ``timings.started_at`` is the wall-clock start.

    ``log`` (a ``UsageSink`` such as ``chunkscope.UsageLog``) records the
    result as one attempt under ``provider`` / ``model`` / ``tags`` — a bare
    stream does not know which provider and model produced it, so they read
    ``"unknown"`` unless given. A cancelled collection is recorded too (as an
    ``ABORTED`` error, partial output kept) before the cancellation propagates.
    """
    inspector = StreamInspector(profile)
    add = inspector.add
    times: list[float] = []
    mark = times.append
    error: LlmError | None = None
    started_at = time.time()
    start = clock()
    iterator, is_async = open_source(stream)
    completed = False
    with marking(clock, start) as marks:
        try:
            await _pump(iterator, is_async, add, mark, clock, start)
            completed = True
        except LlmError as exc:
            error = exc
        except Exception as exc:  # an adapter defect: show it as UNKNOWN, keep the output
            error = LlmError(f"the stream raised {type(exc).__name__}: {exc}", "UNKNOWN", cause=exc)
        except BaseException:
            if log is not None:  # a cancelled attempt still spent tokens: record it, then propagate
                cancelled = LlmError("the task consuming the stream was cancelled", "ABORTED")
                partial = _timed_result(inspector, cancelled, times, clock, start, started_at, marks)
                log.record(partial, provider=provider, model=model, tags=tags)
            raise
        finally:
            if not completed:
                with contextlib.suppress(Exception):  # closing a broken stream must not hide its error
                    await close_source(iterator)
    result = _timed_result(inspector, error, times, clock, start, started_at, marks)
    if log is not None:
        log.record(result, provider=provider, model=model, tags=tags)
    return result


async def _pump(
    iterator: Any,
    is_async: bool,
    add: Callable[[Any], Any],
    mark: Callable[[float], None],
    clock: Callable[[], float],
    start: float,
) -> None:
    """Hand every chunk of the opened source to ``add``, marking its arrival time first."""
    if is_async:
        while True:
            try:
                chunk = await iterator.__anext__()
            except StopAsyncIteration:
                return
            mark(clock() - start)
            add(chunk)
    for chunk in iterator:  # a plain loop: a sync source pays no await per chunk
        mark(clock() - start)
        add(chunk)


def _timed_result(
    inspector: StreamInspector,
    error: LlmError | None,
    times: list[float],
    clock: Callable[[], float],
    start: float,
    started_at: float,
    marks: WireMarks | None = None,
) -> StreamResult:
    """The inspector's result with its timings (the total read from ``clock`` once it is built)."""
    result = inspector.result(error)
    result.timings = Timings.of_arrivals(
        times, total_s=clock() - start, started_at=started_at, chunks=result.chunks, marks=marks
    )
    return result
