"""DeepSeek Harness session logs: ``session.jsonl`` / ``session.jsonl.zstd`` → attempts and results.

``read_dsh_session(path)`` reads the append-only event log the TypeScript harness
writes (see ``docs/dsh-session-log.md``) into a ``DshSession``: one ``DshStep``
per model step, each with its ``DshAttempt``s (a failed attempt and its retries
are separate attempts), each attempt with a ``StreamResult`` built from its
logged chunks, checked under the ``dsh`` profile (the harness's own invariant).

Decisions where the format description is open
----------------------------------------------
* **Attempts** are split at each attempt's ``finish`` chunk (a retry does not
  always write ``llm/retry``). An attempt is *final* unless another attempt of
  the same turn and step follows it. The ``llm/retry`` event after a failed
  attempt is attached to it (``DshAttempt.retry``); an ``llm/retry`` with no
  failed attempt before it (the call failed before any chunk was logged) becomes
  an attempt of its own holding one error ``finish`` built from the retry's
  ``failure``, marked ``synthesized``.
* **No finish** (cancellation, a crash, ``step/end``/``turn/end`` or the end of
  the file reached mid-attempt): the reader appends an ``aborted`` finish with
  code ``ABORTED`` and sets ``DshAttempt.synthesized`` — it says that it did,
  rather than reporting a ``finish-last`` violation the harness never produced.
* **Usage**: the attempt's ``usage`` chunk; when there is none, the usage of its
  ``assistant/message`` (the harness's own fallback), with
  ``DshAttempt.usage_from_message`` set.
* **Provider and model**: the latest ``request/header`` / ``request/context``
  before the attempt; the ``assistant/message``'s ``source`` wins when present.
* **Times**: an attempt starts at its ``step/start`` (first attempt) or
  ``llm/retry-started`` (a retry), else at the previous attempt's end, else at
  its first chunk. Packed-row gaps (``dt``) are clamped to 0…60 s and times kept
  non-decreasing; ``DshAttempt.timing_adjusted`` says when that changed one.
  Logs without ``time`` (the harness's committed logs) give attempts with no
  timings: ``Timings()`` with ``first_chunk_s=None`` and ``DshAttempt.started_ms`` None.
* **Forked child sessions**: the first ``seedLength`` events (the parent's,
  counted as decoded events, packed rows counting one per member; or those up
  to ``session/end-seed``, whichever comes first) are skipped
  for calls unless ``include_seed=True``, so reading a parent and its children
  counts each call once.
* **``compaction/summary``** with ``usage`` or ``llmStreamCall``: a billed call
  outside any step, read as a ``DshAttempt`` with ``kind="compaction"`` (step 0)
  whose chunks are synthesized from ``rawOutput`` (or ``summary``) and its usage.
* **``assistant/message`` with no logged chunks** (older logs): an attempt whose
  chunks are synthesized from the message content (``synthesized`` set).
* **Headers**: line 1 must be a ``{"type": "session"}`` header; a missing
  ``version`` or ``delegationDepth`` is accepted, a ``version`` other than 0 is
  refused (as the harness does). The older ``{content, provenance}`` message
  shape is read too. ``seq`` is not needed (events are counted) and not checked.
* **Hostile input**: every line is at most ``max_line_bytes`` (default 64 MiB)
  and valid UTF-8 JSON; values the reader keeps (messages, finish
  ``replayState``, retry data) nest at most ``MAX_DEPTH`` deep; a zstd file must
  end on a frame boundary. A violation raises ``DshLogError`` with the path,
  the 1-based line number, a stable ``code`` and the ``session`` read so far;
  with ``strict=False`` the line is skipped and the problem is listed in
  ``DshSession.problems`` instead (a broken zstd stream ends the read there).
  Decompression is streamed: memory is bounded by the line limit, not the file.

StreamResults are built lazily, on first access of ``DshAttempt.result``: the
read itself decodes and validates every line but builds no chunk models.
``to_frame`` / ``record_into`` build the results they need without keeping them.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import accumulate
from typing import IO, Any, Literal

from pydantic import ValidationError

from chunkscope.protocol import (
    BlockAssembler,
    ReasoningDelta,
    StreamResult,
    TextDelta,
    Timings,
    TokenUsage,
    ToolCallDelta,
    Usage,
    check,
    parse_chunk,
)
from chunkscope.protocol._chunks import (
    trusted,  # the hot path's unvalidated constructor, as the adapters use it
)

__all__ = [
    "DshAttempt",
    "DshLogError",
    "DshProblem",
    "DshSession",
    "DshStep",
    "MAX_DEPTH",
    "read_dsh_session",
]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The default longest line (bytes, newline excluded) a session log may hold."""

MAX_DEPTH = 64
"""How deeply the values the reader keeps (messages, replayState, failures) may nest."""

MAX_GAP_MS = 60_000
"""A packed row's ``dt`` gap is clamped to 0…this many milliseconds."""

_BLOCK = 1 << 20  # bytes read (or decompressed) at a time
_FEED = 256  # compressed bytes fed per zstd call: bounds what one call can produce (a few MiB at most)
_DECODE_ERRORS = (ValueError, RecursionError)

AttemptKind = Literal["step", "compaction"]


class DshLogError(ValueError):
    """A session log line that cannot be read.

    ``path`` and ``line`` (1-based) say where, ``code`` why (stable: ``json``,
    ``utf8``, ``line-too-long``, ``too-deep``, ``record``, ``header``,
    ``version``, ``zstd``, ``truncated``); ``session`` is everything read before
    the line (attempts still open at that point end with a synthesized
    ``aborted`` finish).
    """

    def __init__(
        self, message: str, path: str, line: int, code: str, session: DshSession | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.code = code
        self.session = session


@dataclass(frozen=True)
class DshProblem:
    """A line skipped by ``read_dsh_session(..., strict=False)``: where, the stable code, why."""

    line: int
    code: str
    message: str


# One logged item of an attempt: (time_ms | None, chunk) for an event, or
# (time0_ms | None, row_type, row_data) for a packed row of deltas.
_Item = tuple[Any, ...]


@dataclass(eq=False)
class DshAttempt:
    """One model call attempt as the log recorded it.

    ``result`` is its ``StreamResult`` (chunks in log order, checked under
    ``dsh``, timings relative to ``started_ms``). ``final`` is False when a
    retry of the same step follows; ``retry`` is the ``llm/retry`` event data
    written after it. ``synthesized`` says the reader added chunks the log did
    not hold (an ``aborted`` finish, or chunks rebuilt from a message or a
    retry's failure); ``usage_from_message`` says the usage came from the
    ``assistant/message`` because no usage chunk was logged.
    """

    session_id: str
    turn: int
    step: int
    attempt: int
    line: int
    kind: AttemptKind = "step"
    provider: str | None = None
    model: str | None = None
    started_ms: float | None = None
    ended_ms: float | None = None
    final: bool = True
    retry: dict[str, Any] | None = None
    message: dict[str, Any] | None = None
    interrupted: bool = False
    synthesized: bool = False
    timing_adjusted: bool = False
    _items: list[_Item] = field(default_factory=list, repr=False)
    _usage_chunk: bool = field(default=False, repr=False)
    _finished: bool = field(default=False, repr=False)
    _result: StreamResult | None = field(default=None, repr=False)

    @property
    def call_id(self) -> str:
        """Groups the attempts of one call: ``<session>:<turn>:<step>`` (``…:compaction:<line>``)."""
        if self.kind == "compaction":
            return f"{self.session_id}:compaction:{self.line}"
        return f"{self.session_id}:{self.turn}:{self.step}"

    @property
    def usage_from_message(self) -> bool:
        """True when no usage chunk was logged and the usage comes from the ``assistant/message``."""
        return not self._usage_chunk and self.message is not None and _message_usage(self.message) is not None

    @property
    def result(self) -> StreamResult:
        """The attempt's ``StreamResult`` (built on first access, then cached)."""
        if self._result is None:
            self._result = self._build()
        return self._result

    def _build(self) -> StreamResult:
        chunks, times, foreign = _materialize(self)
        violations = check(chunks, "dsh")
        assembler = BlockAssembler()
        push = assembler.push
        if foreign:
            for chunk in chunks:
                # A non-chunk is kept as it came (check() reported it as schema); nothing to assemble.
                with contextlib.suppress(ValidationError):
                    push(chunk)
        else:
            for chunk in chunks:
                push(chunk)
        usage = assembler.usage
        if usage is None and not self._usage_chunk and self.message is not None:
            usage = _message_usage(self.message)
        return StreamResult(
            chunks=chunks,
            blocks=assembler.blocks(),
            usage=usage,
            finish=assembler.finish if assembler.finished else None,
            error=None,
            violations=violations,
            timings=self._timings(times),
            profile="dsh",
        )

    def _timings(self, times: list[float | None]) -> Timings:
        start = self.started_ms
        if start is None or not times or None in times:
            return Timings()
        rel = [(t - start) / 1000.0 for t in times]  # type: ignore[operator]
        end = self.ended_ms if self.ended_ms is not None else times[-1]
        total = max(rel[-1], (end - start) / 1000.0)  # type: ignore[operator]
        return Timings(first_chunk_s=rel[0], chunk_times=rel, total_s=total, started_at=start / 1000.0)

    def __repr__(self) -> str:
        flags = "".join(
            f", {name}"
            for name in ("synthesized", "interrupted", "usage_from_message")
            if getattr(self, name)
        )
        return (
            f"DshAttempt({self.call_id} #{self.attempt}, {self.provider}/{self.model}, "
            f"final={self.final}, items={len(self._items)}{flags})"
        )


@dataclass(eq=False)
class DshStep:
    """One step of a turn (one model call plus its retries); ``result`` is the final attempt's."""

    turn: int
    step: int
    attempts: list[DshAttempt] = field(default_factory=list)

    @property
    def result(self) -> StreamResult:
        """The last attempt's ``StreamResult``: what the harness went on with."""
        return self.attempts[-1].result

    @property
    def retries(self) -> int:
        """How many attempts came before the final one."""
        return len(self.attempts) - 1


@dataclass(eq=False)
class DshSession:
    """A session log, read: its header, steps (in log order), compaction calls, turn ends and problems.

    ``attempts`` lists every attempt (steps' and compactions') in log order;
    ``results`` is one ``StreamResult`` per step (the final attempt's), ready
    for ``cs.show`` / ``Timeline``.
    """

    path: str
    header: dict[str, Any]
    steps: list[DshStep] = field(default_factory=list)
    compactions: list[DshAttempt] = field(default_factory=list)
    turn_ends: dict[int, dict[str, Any]] = field(default_factory=dict)
    problems: list[DshProblem] = field(default_factory=list)
    lines: int = 0

    @property
    def id(self) -> str:
        """The session id from the header."""
        value = self.header.get("id")
        return value if isinstance(value, str) else ""

    @property
    def attempts(self) -> list[DshAttempt]:
        """Every attempt, steps' and compactions', in the order the log started them."""
        every = [attempt for step in self.steps for attempt in step.attempts] + list(self.compactions)
        every.sort(key=lambda attempt: attempt.line)
        return every

    @property
    def results(self) -> list[StreamResult]:
        """One ``StreamResult`` per step: the final attempt's."""
        return [step.result for step in self.steps]

    def record_into(self, sink: Any, *, tags: Mapping[str, str] | None = None) -> Any:
        """Record every attempt into ``sink`` (a ``UsageSink`` such as ``UsageLog``); returns ``sink``.

        Results not built yet are built for the record and not cached (so a
        large session is never held as chunk models all at once). Each attempt
        is recorded with its provider and model (``"unknown"`` when
        the log does not say), ``call_id``, attempt number and ``final`` flag,
        and tags ``session``, ``turn``, ``step`` and ``kind`` (plus ``tags``).
        """
        for attempt in self.attempts:
            # A result not already built is built for the record and not kept: a big log's frame
            # never holds every chunk of the session at once.
            result = attempt._result if attempt._result is not None else attempt._build()
            sink.record(
                result,
                provider=attempt.provider or "unknown",
                model=attempt.model or "unknown",
                tags={
                    **(tags or {}),
                    "session": self.id,
                    "turn": str(attempt.turn),
                    "step": str(attempt.step),
                    "kind": attempt.kind,
                },
                call_id=attempt.call_id,
                attempt=attempt.attempt,
                final=attempt.final,
            )
        return sink

    def to_frame(self, *, prices: Any = None, tags: Mapping[str, str] | None = None) -> Any:
        """The usage frame: one row per attempt (``UsageLog.to_frame`` columns and dtypes), then
        ``session_id``, ``turn``, ``step``, ``kind`` and ``synthesized``.

        ``prices`` (a ``PriceTable``) fills ``cost``. ``duration_s`` is NaN for
        an attempt whose log has no times (``started_at`` and ``ttfc_s`` are
        missing then too).
        """
        from ._log import UsageLog

        log = self.record_into(UsageLog(prices=prices), tags=tags)
        return _with_session_columns(log.to_frame(), self.attempts, self.id)

    def __repr__(self) -> str:
        attempts = sum(len(step.attempts) for step in self.steps)
        return (
            f"DshSession({self.id!r}, steps={len(self.steps)}, attempts={attempts}, "
            f"compactions={len(self.compactions)}, problems={len(self.problems)}, lines={self.lines})"
        )


# --- reading lines ------------------------------------------------------------------


class _ZstdFrames:
    """Decompresses concatenated zstd frames piece by piece; a cut-off frame raises ``_Truncated``.

    The zstandard package's own stream reader ends silently at a truncated
    frame; this one tracks each frame's end. Input is fed ``_FEED`` bytes at a
    time, which bounds what one call can produce.
    """

    def __init__(self, source: IO[bytes]) -> None:
        import zstandard

        self._zstd = zstandard
        self._source = source
        self._dctx = zstandard.ZstdDecompressor()
        self._obj = self._dctx.decompressobj()
        self._in_frame = False
        self._error: _Corrupt | None = None  # raised once the output before it has been read

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
                    raise _Truncated("the zstd stream ends inside a frame (the file is truncated)")
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
                self._error = _Corrupt(f"the zstd stream is corrupt ({exc})")
                break
            self._in_frame = True
            if not self._obj.eof:
                break
            data = self._obj.unused_data
            self._obj = self._dctx.decompressobj()
            self._in_frame = False
        return b"".join(out)


class _Truncated(Exception):
    pass


_TOO_LONG = object()  # stands for a line over the limit in a batch stream


def _line_batches(read: Callable[[int], bytes], max_line_bytes: int) -> Iterator[Any]:
    """The file's lines (bytes, newline stripped) in lists, one list per block read.

    A line longer than ``max_line_bytes`` is yielded as ``_TOO_LONG`` and read
    past without being kept; a ``_Truncated`` / ``_Corrupt`` exception instance
    is yielded last when the zstd stream breaks. Memory: one block plus at most
    ``max_line_bytes`` of an unfinished line.
    """
    carry = b""
    skipping = False  # inside a line already reported as too long
    while True:
        try:
            block = read(_BLOCK)
        except (_Truncated, _Corrupt) as exc:
            yield exc
            return
        if not block:
            if carry and not skipping:
                yield [carry]  # a last line without its newline
            return
        data = carry + block if carry else block
        lines = data.split(b"\n")
        carry = lines.pop()
        if skipping:
            if not lines:
                carry = b""
                continue
            del lines[0]  # the end of the over-long line
            skipping = False
        if lines and max(map(len, lines)) > max_line_bytes:  # rare: split the batch around them
            run: list[bytes] = []
            for line in lines:
                if len(line) > max_line_bytes:
                    if run:
                        yield run
                        run = []
                    yield _TOO_LONG
                else:
                    run.append(line)
            lines = run
        if len(carry) > max_line_bytes:
            if lines:
                yield lines
            yield _TOO_LONG
            carry = b""
            skipping = True
            continue
        if lines:
            yield lines


class _Corrupt(Exception):
    pass


def _open(path: str) -> tuple[IO[bytes], Callable[[int], bytes]]:
    """The open file and the function that reads its (decompressed) bytes a block at a time."""
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    try:
        magic = raw.peek(4)[:4]
        if path.endswith((".zst", ".zstd")) or magic == b"\x28\xb5\x2f\xfd":
            return raw, _ZstdFrames(raw).read_block
    except BaseException:
        raw.close()
        raise
    return raw, raw.read


# --- the reader ---------------------------------------------------------------------


class _Reader:
    """One pass over a session log's lines: the state machine that splits attempts."""

    def __init__(self, path: str, *, strict: bool, include_seed: bool) -> None:
        self.path = path
        self.strict = strict
        self.include_seed = include_seed
        self.session = DshSession(path=path, header={})
        self.sid = ""
        self.steps: dict[tuple[int, int], DshStep] = {}
        self.open: dict[tuple[int, int], DshAttempt] = {}
        self.starts: dict[tuple[int, int], float] = {}
        self.provider: str | None = None
        self.model: str | None = None
        self.turn = 0
        self.events = 0
        self.seed_left = 0
        self.line = 0
        self.handlers: dict[str, Callable[[dict[str, Any], Any], None]] = {
            "assistant/message": self._message,
            "llm/retry": self._retry,
            "llm/retry-started": self._retry_started,
            "step/start": self._step_start,
            "step/end": self._step_end,
            "turn/start": self._turn_start,
            "turn/end": self._turn_end,
            "request/header": self._request_header,
            "request/context": self._request_context,
            "compaction/summary": self._compaction,
            "session/end-seed": self._end_seed,
        }

    # --- errors ---

    def problem(self, code: str, message: str) -> None:
        text = f"{self.path}, line {self.line}: {message}"
        if self.strict:
            raise DshLogError(text, self.path, self.line, code, self.finish())
        self.session.problems.append(DshProblem(self.line, code, text))

    # --- the loop ---

    def run(self, read: Callable[[int], bytes], max_line_bytes: int) -> DshSession:
        scan = _DECODER.scan_once  # type: ignore[attr-defined]  # set by __init__, not in the stubs
        decode = _DECODER.decode
        chunk_event = self._chunk
        packed = self._packed
        handlers = self.handlers
        header_seen = False
        number = 0
        for batch in _line_batches(read, max_line_bytes):
            if type(batch) is not list:
                number += 1
                self.line = number
                if batch is _TOO_LONG:
                    self.problem("line-too-long", f"the line is longer than {max_line_bytes} bytes")
                    continue
                self._fatal("truncated" if isinstance(batch, _Truncated) else "zstd", str(batch))
                break
            for raw in batch:
                number += 1
                self.line = number
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    self.problem("utf8", f"not valid UTF-8 (byte {exc.start + 1} of the line)")
                    continue
                try:
                    # The C scanner straight away (json.loads builds a decoder per call); anything
                    # it does not take whole goes through the full decoder for its error message.
                    obj, end = scan(text, 0)
                    if end != len(text) and text[end:].strip():
                        raise ValueError("extra data")
                except (StopIteration, ValueError, RecursionError):
                    obj = _NOT_JSON
                if obj is _NOT_JSON:
                    try:
                        obj = decode(text)
                    except json.JSONDecodeError as exc:
                        if not text.strip():
                            continue  # blank lines are tolerated
                        self.problem("json", f"not valid JSON ({exc.msg} at column {exc.colno})")
                        continue
                    except RecursionError:
                        self.problem("too-deep", "JSON nested too deeply")
                        continue
                    except ValueError as exc:  # NaN / Infinity, or an integer too long to convert
                        self.problem("json", f"not valid JSON ({exc})")
                        continue
                if type(obj) is not dict:
                    self.problem("record", f"expected a JSON object, got {type(obj).__name__}")
                    continue
                if number == 1:
                    self._header(obj)
                    header_seen = True
                    continue
                kind = obj.get("type")
                data = obj.get("data")
                if type(data) is not dict:
                    self.problem("record", f"the {kind!r} record has no 'data' object")
                    continue
                try:
                    if kind == "assistant/chunk":
                        self.events += 1
                        chunk_event(data, obj.get("time"))
                    elif kind in _PACKED:
                        packed(kind, data, obj.get("time0"))
                    else:
                        self.events += 1
                        handler = handlers.get(kind) if type(kind) is str else None
                        if handler is not None:
                            handler(data, obj.get("time"))
                        elif type(kind) is not str:
                            raise _BadRecord("the record has no string 'type'")
                except _BadRecord as exc:
                    self.problem(exc.code, str(exc))
        self.session.lines = number
        if not header_seen and number == 0:
            self.line = 1
            self._fatal("header", "the file is empty: no session header")
        return self.finish()

    def _fatal(self, code: str, message: str) -> None:
        text = f"{self.path}, line {self.line}: {message}"
        if self.strict:
            raise DshLogError(text, self.path, self.line, code, self.finish())
        self.session.problems.append(DshProblem(self.line, code, text))

    def _header(self, obj: dict[str, Any]) -> None:
        if obj.get("type") != "session":
            message = (
                f"line 1 is not a session header (type {obj.get('type')!r}); "
                "a file of bare chunks is read with chunkscope.read_chunks"
            )
            raise DshLogError(f"{self.path}, line 1: {message}", self.path, 1, "header", self.finish())
        version = obj.get("version", 0)
        if version != 0 or type(version) is not int:
            raise DshLogError(
                f"{self.path}, line 1: session format version {version!r} is not supported (only 0)",
                self.path,
                1,
                "version",
                self.finish(),
            )
        if _too_deep(obj):
            raise DshLogError(
                f"{self.path}, line 1: the header nests deeper than {MAX_DEPTH}",
                self.path,
                1,
                "too-deep",
                None,
            )
        self.session.header = obj
        sid = obj.get("id")
        self.sid = sid if isinstance(sid, str) else ""
        seed = obj.get("seedLength")
        if type(seed) is int and seed > 0 and not self.include_seed:
            self.seed_left = seed

    # --- attempts ---

    def _attempt(self, key: tuple[int, int], time: Any) -> DshAttempt:
        step = self.steps.get(key)
        if step is None:
            step = self.steps[key] = DshStep(key[0], key[1])
            self.session.steps.append(step)
        started = self.starts.pop(key, None)
        if step.attempts:
            previous = step.attempts[-1]
            previous.final = False
            if started is None:
                started = previous.ended_ms
        if started is None and _is_time(time):
            started = time
        attempt = DshAttempt(
            session_id=self.sid,
            turn=key[0],
            step=key[1],
            attempt=len(step.attempts) + 1,
            line=self.line,
            provider=self.provider,
            model=self.model,
            started_ms=started,
        )
        step.attempts.append(attempt)
        self.open[key] = attempt
        return attempt

    def _seeded(self) -> bool:
        # Seed events are counted as they come; self.events already includes the current one.
        return self.seed_left > 0 and self.events <= self.seed_left

    def _chunk(self, data: dict[str, Any], time: Any) -> None:
        turn = data.get("turn")
        step = data.get("step")
        if type(turn) is not int or type(step) is not int:
            raise _BadRecord("an assistant/chunk record needs integer 'turn' and 'step'")
        if self._seeded():
            return
        chunk = data.get("chunk")
        if type(chunk) is dict and chunk.get("type") not in _FLAT_CHUNKS and _chunk_too_deep(chunk):
            raise _BadRecord(f"the chunk nests deeper than {MAX_DEPTH}", "too-deep")
        key = (turn, step)
        attempt = self.open.get(key)
        if attempt is None:
            attempt = self._attempt(key, time)
        attempt._items.append((time if _is_time(time) else None, chunk))
        if type(chunk) is dict and chunk.get("type") == "usage":
            attempt._usage_chunk = True
        elif type(chunk) is dict and chunk.get("type") == "finish":
            attempt._finished = True
            attempt.ended_ms = time if _is_time(time) else None
            del self.open[key]

    def _packed(self, kind: str, data: dict[str, Any], time0: Any) -> None:
        turn = data.get("turn")
        step = data.get("step")
        index = data.get("index")
        texts = data.get("args" if kind == "tool-call-chunks" else "texts")
        dt = data.get("dt")
        if (
            type(turn) is not int
            or type(step) is not int
            or type(index) is not int
            or type(texts) is not list
            or not texts
            or type(dt) is not list
        ):
            raise _BadRecord(f"a {kind} row needs integer turn, step, index, a non-empty text list and dt")
        if len(dt) != len(texts) - 1:
            raise _BadRecord(
                f"a {kind} row of {len(texts)} members needs {len(texts) - 1} dt gaps, not {len(dt)}"
            )
        if not set(map(type, texts)) <= _STR:
            raise _BadRecord(f"a {kind} row's texts must all be strings")
        if dt and not set(map(type, dt)) <= _NUMBER:
            raise _BadRecord(f"a {kind} row's dt gaps must all be numbers")
        if kind == "tool-call-chunks":
            name = data.get("name")
            if type(data.get("id")) is not str or not (name is None or type(name) is str):
                raise _BadRecord("a tool-call-chunks row needs a string id (and a string name, if any)")
        first = self.events + 1
        self.events += len(texts)
        if self.seed_left > 0 and first <= self.seed_left:
            return
        key = (turn, step)
        attempt = self.open.get(key)
        if attempt is None:
            attempt = self._attempt(key, time0)
        attempt._items.append((time0 if _is_time(time0) else None, kind, data))

    def _close(self, attempt: DshAttempt, time: Any, *, code: str = "ABORTED", message: str = "") -> None:
        """End an attempt the log left open with a synthesized finish."""
        failure = {"code": code, "message": message or "the log records no finish for this attempt"}
        attempt._items.append(
            (
                time if _is_time(time) else None,
                {"type": "finish", "reason": {"kind": "aborted", "failure": failure}},
            )
        )
        attempt._finished = True
        attempt.synthesized = True
        if _is_time(time):
            attempt.ended_ms = time
        self.open.pop((attempt.turn, attempt.step), None)

    def _message(self, data: dict[str, Any], time: Any) -> None:
        turn = data.get("turn")
        step = data.get("step")
        if type(turn) is not int or type(step) is not int:
            raise _BadRecord("an assistant/message record needs integer 'turn' and 'step'")
        if self._seeded():
            return
        if _too_deep(data):
            raise _BadRecord(f"the message nests deeper than {MAX_DEPTH}", "too-deep")
        key = (turn, step)
        attempt = self.open.get(key)
        if attempt is not None:  # no finish logged: a cancelled stream
            self._close(attempt, time, message="the stream was cancelled (the message is marked interrupted)")
        else:
            existing = self.steps.get(key)
            attempt = existing.attempts[-1] if existing is not None and existing.attempts else None
            if attempt is None or attempt.message is not None or attempt.retry is not None:
                attempt = self._from_message(key, data, time)
        attempt.message = data
        attempt.interrupted = data.get("interrupted") is True
        source = _message_source(data)
        if source is not None:
            provider, model = source
            attempt.provider = provider or attempt.provider
            attempt.model = model or attempt.model

    def _from_message(self, key: tuple[int, int], data: dict[str, Any], time: Any) -> DshAttempt:
        """An attempt for a message whose chunks were not logged: chunks rebuilt from its content."""
        attempt = self._attempt(key, time)
        blocks = _message_content(data)
        tool_calls = False
        for index, block in enumerate(blocks):
            kind = block.get("type") if type(block) is dict else None
            if kind not in ("text", "reasoning", "tool-call"):
                continue
            tool_calls = tool_calls or kind == "tool-call"
            attempt._items.append((None, {"type": "block-start", "index": index, "blockType": kind}))
            attempt._items.append((None, {"type": "block-end", "index": index, "block": block}))
        reason = "tool-calls" if tool_calls else "stop"
        attempt._items.append((None, {"type": "finish", "reason": {"kind": reason}}))
        attempt._finished = True
        attempt.synthesized = True
        attempt.ended_ms = time if _is_time(time) else None
        self.open.pop(key, None)
        return attempt

    def _retry(self, data: dict[str, Any], time: Any) -> None:
        turn = data.get("turn")
        step = data.get("step")
        if type(turn) is not int or type(step) is not int:
            raise _BadRecord("an llm/retry record needs integer 'turn' and 'step'")
        if self._seeded():
            return
        if _too_deep(data):
            raise _BadRecord(f"the retry record nests deeper than {MAX_DEPTH}", "too-deep")
        key = (turn, step)
        attempt = self.open.get(key)
        if attempt is not None:
            failure = data.get("failure")
            code = failure.get("code") if type(failure) is dict else None
            self._close(attempt, time, code=code if type(code) is str else "ABORTED")
        else:
            existing = self.steps.get(key)
            attempt = existing.attempts[-1] if existing is not None and existing.attempts else None
            if attempt is None or attempt.retry is not None or attempt.message is not None:
                attempt = self._attempt(key, time)
                attempt._items.append((time if _is_time(time) else None, _error_finish(data.get("failure"))))
                attempt._finished = True
                attempt.synthesized = True
                attempt.ended_ms = time if _is_time(time) else None
                self.open.pop(key, None)
        attempt.retry = data
        attempt.final = False

    def _retry_started(self, data: dict[str, Any], time: Any) -> None:
        turn = data.get("turn")
        step = data.get("step")
        if type(turn) is int and type(step) is int and _is_time(time):
            self.starts[(turn, step)] = time

    def _step_start(self, data: dict[str, Any], time: Any) -> None:
        turn = data.get("turn")
        step = data.get("step")
        if type(turn) is int and type(step) is int and _is_time(time):
            self.starts[(turn, step)] = time

    def _step_end(self, data: dict[str, Any], time: Any) -> None:
        turn = data.get("turn")
        step = data.get("step")
        if type(turn) is int and type(step) is int:
            attempt = self.open.get((turn, step))
            if attempt is not None:
                self._close(attempt, time, message="the step ended before the stream finished")

    def _turn_start(self, data: dict[str, Any], time: Any) -> None:
        turn = data.get("turn")
        if type(turn) is int:
            self.turn = turn

    def _turn_end(self, data: dict[str, Any], time: Any) -> None:
        turn = data.get("turn")
        reason = data.get("reason")
        if type(turn) is not int:
            raise _BadRecord("a turn/end record needs an integer 'turn'")
        if self._seeded():
            return
        if type(reason) is dict:
            if _too_deep(reason):
                raise _BadRecord(f"the turn/end reason nests deeper than {MAX_DEPTH}", "too-deep")
            self.session.turn_ends[turn] = reason
        for key, attempt in list(self.open.items()):
            if key[0] == turn:
                self._close(attempt, time, message="the turn ended before the stream finished")

    def _request_header(self, data: dict[str, Any], time: Any) -> None:
        header = data.get("header")
        config = header.get("config") if type(header) is dict else None
        if type(config) is dict:
            self._route(config.get("provider"), config.get("model"))

    def _request_context(self, data: dict[str, Any], time: Any) -> None:
        self._route(data.get("provider"), data.get("model"))

    def _route(self, provider: Any, model: Any) -> None:
        if type(provider) is str:
            self.provider = provider
        if type(model) is str:
            self.model = model

    def _compaction(self, data: dict[str, Any], time: Any) -> None:
        if self._seeded() or not (data.get("llmStreamCall") is True or "usage" in data):
            return
        if _too_deep(data):
            raise _BadRecord(f"the compaction/summary record nests deeper than {MAX_DEPTH}", "too-deep")
        provider = data.get("provider")
        model = data.get("model")
        attempt = DshAttempt(
            session_id=self.sid,
            turn=self.turn,
            step=0,
            attempt=1,
            line=self.line,
            kind="compaction",
            provider=provider if type(provider) is str else self.provider,
            model=model if type(model) is str else self.model,
            synthesized=True,
        )
        output = data.get("rawOutput", data.get("summary"))
        t = time if _is_time(time) else None
        index = 0
        for block in output if type(output) is list else []:
            kind = block.get("type") if type(block) is dict else None
            if kind in ("text", "reasoning", "tool-call"):
                attempt._items.append((t, {"type": "block-start", "index": index, "blockType": kind}))
                attempt._items.append((t, {"type": "block-end", "index": index, "block": block}))
                index += 1
        usage = data.get("usage")
        if type(usage) is dict:
            attempt._items.append((t, {"type": "usage", "usage": usage}))
            attempt._usage_chunk = True
        attempt._items.append((t, {"type": "finish", "reason": {"kind": "stop"}}))
        attempt._finished = True
        attempt.started_ms = attempt.ended_ms = t
        self.session.compactions.append(attempt)

    def _end_seed(self, data: dict[str, Any], time: Any) -> None:
        self.seed_left = 0

    def finish(self) -> DshSession:
        """The session as read so far; attempts still open end with a synthesized ``aborted`` finish."""
        for attempt in list(self.open.values()):
            self._close(attempt, None, message="the log ends before this attempt finished")
        return self.session


def _with_session_columns(frame: Any, attempts: list[DshAttempt], session_id: str) -> Any:
    import numpy as np
    import pandas as pd

    from ._schema import categories

    untimed = np.array([a.started_ms is None for a in attempts], dtype=bool)
    if untimed.any():
        frame["duration_s"] = frame["duration_s"].where(~untimed)
    frame["session_id"] = pd.Categorical([session_id] * len(attempts), categories=categories([session_id]))
    frame["turn"] = np.array([a.turn for a in attempts], dtype="int64")
    frame["step"] = np.array([a.step for a in attempts], dtype="int64")
    frame["kind"] = pd.Categorical([a.kind for a in attempts], categories=categories(["step", "compaction"]))
    frame["synthesized"] = np.array([a.synthesized for a in attempts], dtype=bool)
    return frame


DSH_COLUMNS: dict[str, str] = {
    "session_id": "category",
    "turn": "int64",
    "step": "int64",
    "kind": "category",
    "synthesized": "bool",
}
"""The columns ``DshSession.to_frame`` adds after the usage columns."""


class _BadRecord(Exception):
    def __init__(self, message: str, code: str = "record") -> None:
        super().__init__(message)
        self.code = code


_PACKED = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
_FLAT_CHUNKS = frozenset({"text-delta", "reasoning-delta", "tool-call-delta", "block-start", "usage"})
_FLAT_BLOCKS = frozenset({"text", "reasoning", "tool-call"})  # their fields are strings
_STR = frozenset({str})
_NUMBER = frozenset({int, float})


def _is_time(value: Any) -> bool:
    return (type(value) is int or type(value) is float) and value == value  # NaN is refused by the loader


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
_NOT_JSON = object()


def _chunk_too_deep(chunk: dict[str, Any]) -> bool:
    """``_too_deep`` for a chunk, skipping the walk for the shapes that cannot nest (most of them)."""
    if "replayState" not in chunk:
        block = chunk.get("block")
        if type(block) is dict and block.get("type") in _FLAT_BLOCKS:
            return False
        reason = chunk.get("reason")
        if type(reason) is dict and not any(type(v) in (dict, list) for v in reason.values()):
            return False
        if chunk.get("type") == "finish" and type(reason) is dict:
            failure = reason.get("failure")
            if type(failure) is dict and not any(type(v) in (dict, list) for v in failure.values()):
                return False
    return _too_deep(chunk)


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
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


def _error_finish(failure: Any) -> dict[str, Any]:
    if type(failure) is not dict or type(failure.get("code")) is not str:
        failure = {"code": "UNKNOWN", "message": "the retry event names no failure"}
    return {"type": "finish", "reason": {"kind": "error", "failure": failure}}


def _message_content(data: dict[str, Any]) -> list[Any]:
    message = data.get("message")
    content = message.get("content") if type(message) is dict else data.get("content")
    return content if type(content) is list else []


def _message_source(data: dict[str, Any]) -> tuple[str | None, str | None] | None:
    message = data.get("message")
    source = message.get("source") if type(message) is dict else data.get("provenance")
    if type(source) is not dict:
        return None
    provider = source.get("provider")
    model = source.get("model")
    return (provider if type(provider) is str else None, model if type(model) is str else None)


def _message_usage(data: dict[str, Any]) -> TokenUsage | None:
    usage = data.get("usage")
    if type(usage) is not dict:
        return None
    try:
        parsed = parse_chunk({"type": "usage", "usage": usage})
    except ValidationError:
        return None
    return parsed.usage if isinstance(parsed, Usage) else None


_NO_TIME = float("-inf")

_DELTA_OF_ROW: dict[str, tuple[type[Any], str]] = {
    "text-chunks": (TextDelta, "text-delta"),
    "reasoning-chunks": (ReasoningDelta, "reasoning-delta"),
}


def _materialize(attempt: DshAttempt) -> tuple[list[Any], list[float | None], bool]:
    """The attempt's chunks (typed models; a non-chunk item as it came), their times in ms,
    and whether any item is not a chunk."""
    chunks: list[Any] = []
    times: list[float | None] = []
    add = chunks.append
    mark = times.append
    adjusted = False
    foreign = False
    last = _NO_TIME
    for item in attempt._items:
        if len(item) == 2:
            t, obj = item
            try:
                add(parse_chunk(obj))
            except ValidationError:
                add(obj)
                foreign = True
            if t is None and last != _NO_TIME:
                t = last  # a synthesized finish with no time of its own: when the log last spoke
            if t is not None:
                if t < last:
                    t = last
                    adjusted = True
                last = t
            mark(t)
            continue
        t0, kind, data = item
        index = data["index"]
        if kind == "tool-call-chunks":
            call_id = data["id"]
            name = data.get("name")
            chunks.extend(
                [
                    trusted(
                        ToolCallDelta,
                        {
                            "type": "tool-call-delta",
                            "index": index,
                            "id": call_id,
                            "name": name,
                            "arguments_delta": text,
                        },
                    )
                    for text in data["args"]
                ]
            )
        else:
            cls, chunk_type = _DELTA_OF_ROW[kind]
            chunks.extend(
                [trusted(cls, {"type": chunk_type, "index": index, "text": text}) for text in data["texts"]]
            )
        gaps = data["dt"]
        if t0 is None:
            times.extend([None] * (len(gaps) + 1))
            continue
        t = float(t0)
        if t < last:
            t = last
            adjusted = True
        if not gaps or (min(gaps) >= 0 and max(gaps) <= MAX_GAP_MS):  # the usual case, at C speed
            times.extend(accumulate(gaps, initial=t))
            last = times[-1]  # type: ignore[assignment]
            continue
        mark(t)
        for gap in gaps:
            if gap < 0 or gap > MAX_GAP_MS:
                gap = 0 if gap < 0 else MAX_GAP_MS
                adjusted = True
            t += gap
            mark(t)
        last = t
    if adjusted:
        attempt.timing_adjusted = True
    return chunks, times, foreign


# --- the public readers ----------------------------------------------------------------


def read_dsh_session(
    path: str | os.PathLike[str],
    *,
    strict: bool = True,
    include_seed: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> DshSession:
    """Read a DeepSeek Harness session log (``session.jsonl`` or ``session.jsonl.zstd``).

    zstd is recognised by the file name (``.zst``/``.zstd``) or its magic bytes
    and decompressed as a stream. Raises ``DshLogError`` (path, line, ``code``,
    and the ``session`` read before that line) for a line that cannot be read;
    with ``strict=False`` such lines are skipped and listed in
    ``session.problems``. Events of a forked session's inherited seed are
    skipped unless ``include_seed``. See the module docs for how attempts,
    usage and times are derived.
    """
    name = os.fspath(path)
    reader = _Reader(name, strict=strict, include_seed=include_seed)
    handle, read = _open(name)
    with handle:
        return reader.run(read, max_line_bytes)


def iter_dsh_paths(pattern: str | os.PathLike[str]) -> Iterator[str]:
    """The session logs a glob pattern (``**`` allowed) or a directory names, sorted."""
    import glob

    text = os.fspath(pattern)
    if os.path.isdir(text):
        found = [
            os.path.join(root, file)
            for root, _dirs, files in os.walk(text)
            for file in files
            if file in ("session.jsonl", "session.jsonl.zstd")
        ]
    else:
        found = glob.glob(text, recursive=True)
    yield from sorted(found)
