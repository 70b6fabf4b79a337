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

import os
from collections.abc import Callable, Iterator
from typing import IO, Any

from .._errors import DshLogError
from .._json import MAX_DEPTH, MAX_LINE_BYTES, STRICT_DECODER, JsonProblem, json_guard, too_deep
from ._lines import TOO_LONG, TooBig, Truncated, bounded, line_batches, reader_of
from ._model import DshAttempt, DshProblem, DshSession, DshStep

__all__ = ["MAX_DEPTH", "MAX_LINE_BYTES", "iter_dsh_paths", "read_dsh_session", "read_dsh_stream"]

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
        scan = STRICT_DECODER.scan_once  # type: ignore[attr-defined]  # set by __init__, not in the stubs
        decode = STRICT_DECODER.decode
        parse = self._parse
        record = self._record
        header_seen = False
        number = 0
        for batch in line_batches(read, max_line_bytes):
            if type(batch) is not list:
                number, stop = self._not_a_batch(batch, number, max_line_bytes)
                if stop:
                    break
                continue
            for raw in batch:
                number += 1
                if not raw:
                    continue  # a blank line: nothing to read (a block of only blank lines is a count)
                self.line = number
                obj = parse(raw, scan, decode)
                if obj is _NOT_JSON:
                    continue
                if number == 1:
                    self._header(obj)
                    header_seen = True
                    continue
                record(obj)
        self.session.lines = number
        if not header_seen and number == 0:
            self.line = 1
            self._fatal("header", "the file is empty: no session header")
        return self.finish()

    def _parse(self, raw: bytes, scan: Any, decode: Callable[[str], Any]) -> Any:
        """One line's JSON object, or ``_NOT_JSON`` once its problem is reported."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.problem("utf8", f"not valid UTF-8 (byte {exc.start + 1} of the line)")
            return _NOT_JSON
        try:
            # The C scanner straight away (json.loads builds a decoder per call); anything
            # it does not take whole goes through the full decoder for its error message.
            obj, end = scan(text, 0)
            if end != len(text) and text[end:].strip():
                raise ValueError("extra data")
        except (StopIteration, ValueError, RecursionError):
            obj = self._decode_slowly(decode, text)
            if obj is _NOT_JSON:
                return _NOT_JSON
        if type(obj) is not dict:
            self.problem("record", f"expected a JSON object, got {type(obj).__name__}")
            return _NOT_JSON
        return obj

    def _record(self, obj: dict[str, Any]) -> None:
        """One record after the header, to the handler of its type."""
        kind = obj.get("type")
        data = obj.get("data")
        if type(data) is not dict:
            self.problem("record", f"the {kind!r} record has no 'data' object")
            return
        try:
            if kind == "assistant/chunk":
                self.events += 1
                self._chunk(data, obj.get("time"))
            elif kind in _PACKED:
                self._packed(kind, data, obj.get("time0"))
            else:
                self.events += 1
                handler = self.handlers.get(kind) if type(kind) is str else None
                if handler is not None:
                    handler(data, obj.get("time"))
                elif type(kind) is not str:
                    raise _BadRecord("the record has no string 'type'")
        except _BadRecord as exc:
            self.problem(exc.code, str(exc))

    def _not_a_batch(self, batch: object, number: int, max_line_bytes: int) -> tuple[int, bool]:
        """The line number after what ``line_batches`` gave instead of a batch, and whether the
        read must end there."""
        if type(batch) is int:  # a run of blank lines
            return number + batch, False
        self.line = number + 1
        return number + 1, self._not_lines(batch, max_line_bytes)

    def _not_lines(self, batch: object, max_line_bytes: int) -> bool:
        """Report what ``line_batches`` gave instead of lines; True when the read must end there."""
        if batch is TOO_LONG:
            self.problem("line-too-long", f"the line is longer than {max_line_bytes} bytes")
            return False
        code = (
            "truncated"
            if isinstance(batch, Truncated)
            else "too-big"
            if isinstance(batch, TooBig)
            else "zstd"
        )
        self._fatal(code, str(batch))
        return True

    def _decode_slowly(self, decode: Callable[[str], Any], text: str) -> Any:
        """A line the fast scanner did not take whole: blank (``_NOT_JSON``, skipped), or the full
        decoder's value, or its refusal reported (``_NOT_JSON``)."""
        if not text.strip():
            return _NOT_JSON  # blank lines are tolerated
        try:
            with json_guard(_refused):
                return decode(text)
        except _BadRecord as exc:
            self.problem(exc.code, str(exc))
            return _NOT_JSON

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
        if too_deep(obj):
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
        chunk: Any = data.get("chunk")
        if _deep_chunk(chunk):
            raise _BadRecord(f"the chunk nests deeper than {MAX_DEPTH}", "too-deep")
        key = (turn, step)
        attempt = self.open.get(key)
        if attempt is None:
            attempt = self._attempt(key, time)
        t = time if _is_time(time) else None
        compact = _plain_delta(chunk)
        if compact is not None:
            # A plain text/reasoning delta, most of a log: kept as a 4-tuple, not its parsed dict
            # (~150 bytes a line instead of ~600), and built without re-validation when materialized.
            attempt._items.append((t, compact, chunk["index"], chunk["text"]))
            return
        attempt._items.append((t, chunk))
        if type(chunk) is dict:
            self._mark(attempt, chunk, key, time)

    def _mark(self, attempt: DshAttempt, chunk: dict[str, Any], key: tuple[int, int], time: Any) -> None:
        """A usage chunk marks the attempt as reporting usage; a finish ends it."""
        kind = chunk.get("type")
        if kind == "usage":
            attempt._usage_chunk = True
        elif kind == "finish":
            attempt._finished = True
            attempt.ended_ms = time if _is_time(time) else None
            del self.open[key]

    def _packed(self, kind: str, data: dict[str, Any], time0: Any) -> None:
        turn, step, texts = _packed_row(kind, data)
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

    def _kept_step(self, data: dict[str, Any], record: str, what: str) -> tuple[int, int] | None:
        """The (turn, step) of a record kept whole; None for a seed event (skipped)."""
        turn = data.get("turn")
        step = data.get("step")
        if type(turn) is not int or type(step) is not int:
            raise _BadRecord(f"{record} record needs integer 'turn' and 'step'")
        if self._seeded():
            return None
        if too_deep(data):
            raise _BadRecord(f"{what} nests deeper than {MAX_DEPTH}", "too-deep")
        return turn, step

    def _unclaimed(self, key: tuple[int, int]) -> DshAttempt | None:
        """The step's last attempt, when no message or retry has claimed it yet."""
        existing = self.steps.get(key)
        attempt = existing.attempts[-1] if existing is not None and existing.attempts else None
        if attempt is None or attempt.message is not None or attempt.retry is not None:
            return None
        return attempt

    def _message(self, data: dict[str, Any], time: Any) -> None:
        key = self._kept_step(data, "an assistant/message", "the message")
        if key is None:
            return
        attempt = self.open.get(key)
        if attempt is not None:  # no finish logged: a cancelled stream
            self._close(attempt, time, message="the stream was cancelled (the message is marked interrupted)")
        else:
            attempt = self._unclaimed(key) or self._from_message(key, data, time)
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
            if kind not in _MESSAGE_BLOCK_KINDS:
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
        key = self._kept_step(data, "an llm/retry", "the retry record")
        if key is None:
            return
        attempt = self.open.get(key)
        if attempt is not None:
            failure = data.get("failure")
            code = failure.get("code") if type(failure) is dict else None
            self._close(attempt, time, code=code if type(code) is str else "ABORTED")
        else:
            attempt = self._unclaimed(key) or self._failed_before_chunks(key, data, time)
        attempt.retry = data
        attempt.final = False

    def _failed_before_chunks(self, key: tuple[int, int], data: dict[str, Any], time: Any) -> DshAttempt:
        """An attempt for a retry whose call logged no chunk: one error finish from its failure."""
        attempt = self._attempt(key, time)
        attempt._items.append((time if _is_time(time) else None, _error_finish(data.get("failure"))))
        attempt._finished = True
        attempt.synthesized = True
        attempt.ended_ms = time if _is_time(time) else None
        self.open.pop(key, None)
        return attempt

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
        if turn is None:
            turn = self.turn  # the harness's snapshot kit writes turn/end without it: the current turn
        elif type(turn) is not int:
            raise _BadRecord("a turn/end record's 'turn' must be an integer")
        if self._seeded():
            return
        if type(reason) is dict:
            if too_deep(reason):
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
        if too_deep(data):
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
        t = time if _is_time(time) else None
        _add_output_blocks(attempt, data.get("rawOutput", data.get("summary")), t)
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


class _BadRecord(Exception):
    def __init__(self, message: str, code: str = "record") -> None:
        super().__init__(message)
        self.code = code


def _refused(problem: JsonProblem) -> _BadRecord:
    """A line the strict JSON reader refused, as the problem the session log reports."""
    if problem.kind == "syntax":
        return _BadRecord(f"not valid JSON ({problem.detail} at column {problem.column})", "json")
    if problem.kind == "depth":
        return _BadRecord("JSON nested too deeply", "too-deep")
    return _BadRecord(f"not valid JSON ({problem.detail})", "json")


_PACKED = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
# a plain delta's type, kept as one shared string rather than one per line
_COMPACT: dict[str, str] = {"text-delta": "text-delta", "reasoning-delta": "reasoning-delta"}
_FLAT_CHUNKS = frozenset({"text-delta", "reasoning-delta", "tool-call-delta", "block-start", "usage"})
_FLAT_BLOCKS = frozenset({"text", "reasoning", "tool-call"})  # their fields are strings
_STR = frozenset({str})
_NUMBER = frozenset({int, float})


def _is_time(value: Any) -> bool:
    return (type(value) is int or type(value) is float) and value == value  # NaN is refused by the loader


_NOT_JSON = object()


def _chunk_too_deep(chunk: dict[str, Any]) -> bool:
    """``_too_deep`` for a chunk, skipping the walk for the shapes that cannot nest (most of them)."""
    if "replayState" not in chunk and _cannot_nest(chunk):
        return False
    return too_deep(chunk)


def _cannot_nest(chunk: dict[str, Any]) -> bool:
    """A block-end of a flat block, or a finish whose reason (or its failure) holds no container."""
    block = chunk.get("block")
    if type(block) is dict and block.get("type") in _FLAT_BLOCKS:
        return True
    reason = chunk.get("reason")
    if type(reason) is not dict:
        return False
    if _flat(reason):
        return True
    if chunk.get("type") != "finish":
        return False
    failure = reason.get("failure")
    return type(failure) is dict and _flat(failure)


def _flat(record: dict[str, Any]) -> bool:
    return not any(type(v) in (dict, list) for v in record.values())


def _add_output_blocks(attempt: DshAttempt, output: Any, t: float | None) -> None:
    """A start and an end chunk for each text, reasoning or tool-call block of ``output``, numbered 0, 1, …"""
    index = 0
    for block in output if type(output) is list else []:
        kind = block.get("type") if type(block) is dict else None
        if kind in ("text", "reasoning", "tool-call"):
            attempt._items.append((t, {"type": "block-start", "index": index, "blockType": kind}))
            attempt._items.append((t, {"type": "block-end", "index": index, "block": block}))
            index += 1


def _packed_row(kind: str, data: dict[str, Any]) -> tuple[int, int, list[Any]]:
    """A packed row's turn, step and member texts; ``_BadRecord`` for a row of the wrong shape."""
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
    _check_members(kind, data, texts, dt)
    return turn, step, texts


def _check_members(kind: str, data: dict[str, Any], texts: list[Any], dt: list[Any]) -> None:
    """A packed row's members are strings, its gaps numbers, and a tool row names its call."""
    if not set(map(type, texts)) <= _STR:
        raise _BadRecord(f"a {kind} row's texts must all be strings")
    if dt and not set(map(type, dt)) <= _NUMBER:
        raise _BadRecord(f"a {kind} row's dt gaps must all be numbers")
    if kind == "tool-call-chunks":
        name = data.get("name")
        if type(data.get("id")) is not str or not (name is None or type(name) is str):
            raise _BadRecord("a tool-call-chunks row needs a string id (and a string name, if any)")


def _error_finish(failure: Any) -> dict[str, Any]:
    if type(failure) is not dict or type(failure.get("code")) is not str:
        failure = {"code": "UNKNOWN", "message": "the retry event names no failure"}
    return {"type": "finish", "reason": {"kind": "error", "failure": failure}}


# The reference's block types an assistant message can hold (an image is forward compatible there);
# the dsh profile lets a stream open each of them.
_MESSAGE_BLOCK_KINDS = frozenset({"text", "reasoning", "tool-call", "image"})


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


def _deep_chunk(chunk: Any) -> bool:
    return type(chunk) is dict and chunk.get("type") not in _FLAT_CHUNKS and _chunk_too_deep(chunk)


def _plain_delta(chunk: Any) -> str | None:
    """The compact type of a chunk that is a plain text or reasoning delta; None for any other."""
    if type(chunk) is not dict or len(chunk) != 3:
        return None
    kind = chunk.get("type")
    if type(kind) is not str:  # (a list would be unhashable)
        return None
    compact = _COMPACT.get(kind)
    if compact is None or type(chunk.get("index")) is not int or type(chunk.get("text")) is not str:
        return None
    return compact


# --- the public readers ----------------------------------------------------------------


def read_dsh_session(
    path: str | os.PathLike[str],
    *,
    strict: bool = True,
    include_seed: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_bytes: int | None = None,
) -> DshSession:
    """Read a DeepSeek Harness session log (``session.jsonl`` or ``session.jsonl.zstd``).

    zstd is recognised by its magic bytes (not the name: a plain log named
    ``.zstd`` is read as plain) and decompressed as a stream. Raises
    ``DshLogError`` (path, line, ``code``, and the ``session`` read before
    that line) for a line that cannot be read; with ``strict=False`` such
    lines are skipped and listed in ``session.problems``. ``max_bytes`` bounds
    the (decompressed) bytes read: past it the read ends with code
    ``too-big``. Events of a forked session's inherited seed are skipped
    unless ``include_seed``. See the module docs for how attempts, usage and
    times are derived.
    """
    name = os.fspath(path)
    with open(name, "rb") as handle:
        return read_dsh_stream(
            handle,
            name,
            strict=strict,
            include_seed=include_seed,
            max_line_bytes=max_line_bytes,
            max_bytes=max_bytes,
        )


def read_dsh_stream(
    handle: IO[bytes],
    name: str,
    *,
    strict: bool = True,
    include_seed: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_bytes: int | None = None,
) -> DshSession:
    """``read_dsh_session`` over an open binary stream with ``peek`` (read once: a pipe works)."""
    reader = _Reader(name, strict=strict, include_seed=include_seed)
    read = reader_of(handle)
    if max_bytes is not None:
        read = bounded(read, max_bytes)
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
