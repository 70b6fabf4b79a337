"""Chat-completions SSE events → StreamChunks (a pure translator, no I/O).

docs/protocol.md §6, and the dialects real OpenAI-compatible servers speak:

- ``delta.reasoning_content`` (or ``delta.reasoning``) → a reasoning block (an
  empty fragment opens nothing); ``delta.reasoning_details[]`` entries
  (``reasoning.text``, ``reasoning.summary``; OpenRouter) → reasoning too, but
  only in a stream that sends no plain reasoning (gateways that send both send
  the same text twice); ``delta.content`` → a text block, also as a list of
  typed parts (Mistral: ``{"type": "thinking", "thinking": [{"type": "text",
  "text"}]}`` → reasoning, ``{"type": "text", "text"}`` → text);
  ``delta.tool_calls[i]`` → one tool-call block per wire index; opt-in
  ``<think>…</think>`` in the text → reasoning;
- ``finish_reason`` ``stop`` / ``tool_calls`` / ``length`` → ``stop`` /
  ``tool-calls`` / ``max-tokens``; anything else (``content_filter``, …) → an
  ``error`` finish whose code is the upper-cased reason; a ``stop`` with no
  content at all → an ``error`` finish ``EMPTY_RESPONSE``;
- usage (on the finish chunk or a trailing usage-only chunk; the latest wins)
  → disjoint counts: cache hits are subtracted from ``prompt_tokens``; when
  ``total_tokens`` shows that ``completion_tokens`` left reasoning out (xAI),
  the output count adds it back (output always includes reasoning);
- an ``error`` object inside the stream → ``LlmError`` mapped by the one table
  (``_failures``); no ``[DONE]`` → ``STREAM_CLOSED``; a payload that is not
  JSON (or nested too deeply) or not the wire shape → ``MALFORMED_RESPONSE``.

The output is valid under the ``strict`` profile whatever order the wire
uses: blocks never interleave. Text or reasoning that resumes after another
block opens a NEW block (the reference appends to one block per kind and
defers every block-end to ``[DONE]``). Tool calls stream live one at a time:
the first call stays open while its arguments are incomplete JSON, and
anything else that arrives meanwhile is buffered and emitted, in arrival
order, as consecutive blocks once the model finishes. A call is closed early
only when its arguments already parse as a JSON object and another block
begins; whitespace arriving for it later is dropped, any other late fragment
is ``MALFORMED_RESPONSE``. A call whose id arrives late has its fragments held
until it does; one that never gets an id is given ``call-<n>``; one without
arguments gets ``{}``; one without a name is ``MALFORMED_RESPONSE``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from chunkscope.protocol import (
    AnyChunk,
    FinishReason,
    LlmError,
    LlmFailure,
    ReasoningDelta,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
)
from chunkscope.protocol.shared import (
    trusted,  # the seam: chunk models without re-validation (hot path)
    type_phrase,
)

from .._arithmetic import chat_findings
from .._blocks import (
    REASONING,
    TEXT,
    BlockWriter,
    WholePart,
    whole_call,
    whole_chunks,
    whole_dicts,
)
from .._core.payload import PARSE_FAST_REFUSES, parse_fast, parse_reference
from .._failures import loads, preview, stream_error
from .._finish import finish_failure

__all__ = ["OpenAITranslator", "map_finish_reason", "map_usage", "read_whole", "whole_answer"]

_DONE = "[DONE]"
"""The chat-completions stream's terminator: an SSE data text that is not JSON."""
_FINISH_KINDS = {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens"}


def _no_fast(obj: Any) -> None:
    return None


def _detail_texts(details: Any) -> Iterator[str]:
    """The reasoning text of OpenRouter-style ``reasoning_details`` entries (encrypted ones carry none)."""
    if type(details) is not list:
        raise TypeError("delta.reasoning_details is not a list")
    for entry in details:
        if type(entry) is not dict:
            raise TypeError("delta.reasoning_details[] entry is not an object")
        kind = entry.get("type")
        text = entry.get("summary") if kind == "reasoning.summary" else entry.get("text")
        if kind in ("reasoning.text", "reasoning.summary") and text:
            yield _expect_str(text, "delta.reasoning_details[] text")


def _content_parts(parts: list[Any]) -> Iterator[tuple[str, str]]:
    """(kind, text) from ``delta.content`` given as typed parts; unknown part types carry no text."""
    for part in parts:
        if type(part) is str:
            if part:
                yield TEXT, part
            continue
        if type(part) is not dict:
            raise TypeError("delta.content[] part is not an object")
        kind = part.get("type")
        if kind == "text":
            text = part.get("text")
            if text:
                yield TEXT, _expect_str(text, "delta.content[].text")
        elif kind == "thinking":
            for thought in _thinking_texts(part.get("thinking")):
                yield REASONING, thought


def _thinking_texts(thinking: Any) -> Iterator[str]:
    """The texts of a ``thinking`` part: a string, or a list of ``{"type": "text", "text"}``."""
    if type(thinking) is str:
        if thinking:
            yield thinking
    elif type(thinking) is list:
        for inner in thinking:
            if type(inner) is dict and inner.get("type") == "text" and inner.get("text"):
                yield _expect_str(inner["text"], "delta.content[].thinking[].text")
    elif thinking is not None:
        raise TypeError("delta.content[].thinking is neither a string nor a list")


_OPEN_TAG = "<think>"
_CLOSE_TAG = "</think>"


class _ThinkSplitter:
    """Splits text into (is_reasoning, piece) at ``<think>`` / ``</think>``, tags split across deltas too."""

    __slots__ = ("held", "inside")

    def __init__(self) -> None:
        self.inside = False
        self.held = ""  # a suffix that may be the start of the next tag

    def split(self, text: str) -> list[tuple[bool, str]]:
        text = self.held + text
        self.held = ""
        out: list[tuple[bool, str]] = []
        while text:
            tag = _CLOSE_TAG if self.inside else _OPEN_TAG
            at = text.find(tag)
            if at >= 0:
                if at:
                    out.append((self.inside, text[:at]))
                self.inside = not self.inside
                text = text[at + len(tag) :]
                continue
            # Hold back the longest suffix that could begin the tag.
            keep = 0
            for k in range(min(len(tag) - 1, len(text)), 0, -1):
                if text.endswith(tag[:k]):
                    keep = k
                    break
            if len(text) > keep:
                out.append((self.inside, text[: len(text) - keep]))
            self.held = text[len(text) - keep :]
            break
        return out

    def flush(self) -> list[tuple[bool, str]]:
        held, self.held = self.held, ""
        return [(self.inside, held)] if held else []


class _Call:
    """One wire tool call (by wire index): what it gathered while it waited its turn.

    Once it goes live the block writer holds its state; the record keeps only whether it ended.
    """

    __slots__ = ("closed", "id", "name", "parts", "queued", "wire_index")

    def __init__(self, wire_index: int) -> None:
        self.wire_index = wire_index
        self.id: str | None = None
        self.name: str | None = None
        self.parts: list[str] = []  # argument fragments that arrived before the call went live
        self.closed = False
        self.queued = False


def _malformed(label: str, what: str) -> LlmError:
    return LlmError(
        f"{label} sent a chunk that is not the chat-completions shape: {what}", "MALFORMED_RESPONSE"
    )


class OpenAITranslator:
    """Turns chat-completions SSE events into strict, non-interleaved StreamChunks (pure, no I/O).

    ``feed((event_name, data))`` returns the chunks one event completes;
    ``[DONE]`` returns the closing chunks, usage and the finish, and sets
    ``done``. ``end()`` at the end of the body raises ``STREAM_CLOSED`` unless
    ``[DONE]`` came. A failure is raised as ``LlmError``; the chunks the same
    event produced before it are in ``salvage()``. Messages name ``label`` and
    never show ``secrets``.

    ``think_tags=True`` reads ``<think>…</think>`` inside the text as
    reasoning (R1-style servers), also when a tag is split across deltas.
    ``fast=False`` turns off the fast path for the common event (the result
    is the same; a property test checks that).

    The chunks are written by the shared ``BlockWriter``; this class maps the wire's
    fields and keeps one policy of its own: the live tool call holds back everything
    else until its arguments are complete (``queue``).
    """

    terminators: ClassVar[frozenset[str]] = frozenset({_DONE})
    """The data texts that end this wire's stream without being JSON (the wire reader asks)."""

    def __init__(
        self,
        label: str = "chat completions API",
        secrets: tuple[str, ...] = (),
        *,
        think_tags: bool = False,
        fast: bool = True,
        request_id: str | None = None,
    ) -> None:
        self.label = label
        self.secrets = tuple(secrets)
        self.request_id = request_id
        self.done = False
        self.think = _ThinkSplitter() if think_tags else None
        self._fast = self.fast if fast and not think_tags else _no_fast
        self.plain_reasoning = False  # reasoning_content/reasoning seen: reasoning_details are a copy
        self.blocks = BlockWriter("call-", lambda message: _malformed(self.label, message))
        self.live: _Call | None = None  # the open tool call
        self.calls: dict[int, _Call] = {}
        self.queue: list[tuple[str, str] | _Call] = []  # buffered pieces, in arrival order
        self.pending_finish: FinishReason | None = None
        self.usage: TokenUsage | None = None
        self.raw_usage: dict[str, Any] | None = None  # as sent: its arithmetic is checked at the end

    # -- one event --

    def feed(self, event: tuple[str, str]) -> list[AnyChunk]:
        """The chunks one SSE event completes.

        Args:
            event: ``(event name, data text)``; an empty data text is skipped.

        Returns:
            The chunks, maybe none; after ``[DONE]`` always none.

        Raises:
            LlmError: an ``error`` object, a payload that is not JSON or not the wire shape
                (``MALFORMED_RESPONSE``); the chunks written before it are in ``salvage()``.
        """
        data = event[1]
        if self.done or not data:
            return []
        if data == _DONE:
            self._finish()
            self.done = True
            return self.blocks.take()
        try:
            obj = parse_fast(data)
        except PARSE_FAST_REFUSES:
            obj = self._parse_reference(data)
        chunk = self._fast(obj)
        if chunk is not None:
            return [chunk]
        try:
            self._feed(obj)
        except LlmError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError) as exc:
            raise _malformed(self.label, f"{type(exc).__name__}: {exc}") from exc
        return self.blocks.take()

    def end(self) -> list[AnyChunk]:
        """The body ended.

        Returns:
            ``[]`` (everything went out at ``[DONE]``).

        Raises:
            LlmError: ``STREAM_CLOSED`` when ``[DONE]`` never came.
        """
        if not self.done:
            raise LlmError(f"{self.label} ended the event stream without [DONE]", "STREAM_CLOSED")
        return []

    def compact(self) -> None:
        """Join the open block's text pieces (``WireReader.compact``: a long stream's memory)."""
        self.blocks.compact()

    def salvage(self) -> list[AnyChunk]:
        """The chunks an event wrote before the failure it raised (valid output; taken once).

        Returns:
            The chunks, maybe none.
        """
        return self.blocks.take()

    def _parse_reference(self, data: str) -> Any:
        """The shared ``json`` reading of a payload the fast parser refused, or
        ``MALFORMED_RESPONSE`` saying why it is not JSON."""
        try:
            return parse_reference(data)
        except ValueError as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise LlmError(
                f"{self.label} sent a payload that is not JSON ({why}): {preview(data, self.secrets)}",
                "MALFORMED_RESPONSE",
            ) from None

    def fast(self, obj: Any) -> AnyChunk | None:
        """The chunk for the common event — one choice whose delta continues the open
        block (text, reasoning, or the live tool call's arguments) — or None: then
        ``feed`` handles the event in full (None is always safe: ``feed`` is the reference).

        Hand-shaped on purpose (measured in benchmarks/bench_adapters.py): it reads the
        writer's open block and appends to it directly, where ``BlockWriter.text`` would
        add a call and a dictionary look-up to every event of the stream.
        """
        blocks = self.blocks
        try:
            [choice] = obj["choices"]  # exactly one choice, else ValueError: the full path
            # ``"error" in obj``, not ``.get``: cheaper, and a null error merely takes the full path.
            if "error" in obj or obj.get("usage") is not None or self.queue:
                return None
            if choice.get("finish_reason") is not None:
                return None
            delta = choice["delta"]
            text = delta.get("content")
            if text:
                # Text continuing the open text block, and nothing else in the delta.
                if (
                    blocks.kind != TEXT
                    or type(text) is not str
                    or delta.get("reasoning_content")
                    or delta.get("reasoning")
                    or delta.get("tool_calls")
                    or delta.get("reasoning_details")
                ):
                    return None
                blocks.parts.append(text)
                return trusted(TextDelta, {"type": "text-delta", "index": blocks.index, "text": text})
            thought = delta.get("reasoning_content")
            if thought is None:
                thought = delta.get("reasoning")
            calls = delta.get("tool_calls")
            if calls:
                if thought or len(calls) != 1 or delta.get("reasoning_details"):
                    return None
                return self._fast_tool(calls[0])
        except (KeyError, TypeError, AttributeError, IndexError, ValueError):
            return None  # not the common shape: ``feed`` says precisely what is wrong
        if thought and blocks.kind == REASONING and type(thought) is str:
            self.plain_reasoning = True
            blocks.parts.append(thought)
            return trusted(
                ReasoningDelta, {"type": "reasoning-delta", "index": blocks.index, "text": thought}
            )
        return None

    def _fast_tool(self, call: Any) -> AnyChunk | None:
        live = self.live
        blocks = self.blocks
        # Only a plain argument fragment for the live call, its name sent, nothing held.
        if live is None or not blocks.named or blocks.held:
            return None
        if call.get("index") != live.wire_index or call.get("id") not in (None, blocks.call_id):
            return None
        function = call.get("function")
        if function.get("name") is not None:
            return None
        fragment = function.get("arguments")
        if type(fragment) is not str or not fragment:
            return None
        blocks.parts.append(fragment)
        return trusted(
            ToolCallDelta,
            {
                "type": "tool-call-delta",
                "index": blocks.index,
                "id": blocks.call_id,
                "name": None,
                "arguments_delta": fragment,
            },
        )

    def _feed(self, obj: Any) -> None:
        if type(obj) is not dict:
            raise _malformed(self.label, f"a JSON {type(obj).__name__}, not an object")
        error = obj.get("error")
        if error:
            self._raise_error(error)
        for choice in obj.get("choices") or ():
            self._choice(choice)
        usage = obj.get("usage")
        if usage:
            self.usage = _usage(usage)
            self.raw_usage = usage

    def _choice(self, choice: Any) -> None:
        delta = choice.get("delta")
        if delta:
            self._reasoning(delta)
            content = delta.get("content")
            if content:
                if type(content) is list:
                    # Typed parts (Mistral's reasoning models): thinking parts and text parts.
                    for kind, text in _content_parts(content):
                        self._text_or_think(text) if kind == TEXT else self._piece(kind, text)
                else:
                    self._text_or_think(_expect_str(content, "delta.content"))
            for position, call in enumerate(delta.get("tool_calls") or ()):
                self._tool(position, call)
        reason = choice.get("finish_reason")
        if reason:
            self.pending_finish = _finish_reason(_expect_str(reason, "finish_reason"))
            self._flush()

    def _reasoning(self, delta: Any) -> None:
        reasoning = delta.get("reasoning_content")
        if reasoning is None:
            reasoning = delta.get("reasoning")
        if reasoning:
            self.plain_reasoning = True
            self._piece(REASONING, _expect_str(reasoning, "delta.reasoning_content"))
        elif not self.plain_reasoning:
            # OpenRouter-style ``reasoning_details``: read only when no plain reasoning is
            # sent (gateways that send both send the same text twice).
            details = delta.get("reasoning_details")
            if details:
                for text in _detail_texts(details):
                    self._piece(REASONING, text)

    def _raise_error(self, error: Any) -> None:
        raise stream_error(error, label=self.label, secrets=self.secrets, request_id=self.request_id)

    def _text_or_think(self, text: str) -> None:
        think = self.think
        if think is None:
            self._piece(TEXT, text)
            return
        for kind, piece in think.split(text):
            self._piece(REASONING if kind else TEXT, piece)

    # -- text and reasoning --

    def _blocked(self) -> bool:
        """True while a new block must wait: earlier pieces wait, or the live call is incomplete."""
        return bool(self.queue) or (self.live is not None and not self._live_complete())

    def _piece(self, kind: str, text: str) -> None:
        if self.blocks.kind != kind or self.queue:
            if self._blocked():
                self.queue.append((kind, text))
                return
            self._close()
        self.blocks.text(kind, text)

    # -- tool calls --

    def _tool(self, position: int, call: Any) -> None:
        record = self._record(position, call)
        call_id, name, fragment = _call_fields(call)
        if record.closed:
            self._refuse_late_arguments(record, fragment)
            return
        self._name_call(record, call_id, name)
        if record is self.live:
            self.blocks.tool_call(call_id or None, name, fragment or "")
        else:
            self._waiting_tool(record, fragment)

    def _refuse_late_arguments(self, record: _Call, fragment: str | None) -> None:
        """A closed call may get blank fragments only: more arguments after its block ended are malformed."""
        if fragment and fragment.strip():
            raise _malformed(
                self.label,
                f"tool call {record.wire_index} received more arguments after its JSON was complete "
                "and another block had begun",
            )

    def _name_call(self, record: _Call, call_id: str | None, name: str | None) -> None:
        """The first id and name the wire gives a call are its own (the id reserved for it)."""
        if call_id and record.id is None:
            record.id = call_id
            self.blocks.reserve_id(call_id)
        if name and not record.name:
            record.name = name

    def _waiting_tool(self, record: _Call, fragment: str | None) -> None:
        """A call that is not live gathers its fragment; a new one goes live, or waits its turn."""
        if fragment:
            record.parts.append(fragment)
        if record.queued:
            return
        # A new call: it goes live if nothing blocks it, else it waits its turn.
        if self._blocked():
            record.queued = True
            self.queue.append(record)
            return
        self._close()
        self._open_tool(record)

    def _record(self, position: int, call: Any) -> _Call:
        """The record of the wire call a ``tool_calls[]`` entry continues (by its index), or a new one."""
        wire_index = call.get("index", position)
        if type(wire_index) is not int:
            raise _malformed(self.label, f"tool_calls[{position}].index is not an integer")
        record = self.calls.get(wire_index)
        if record is None:
            record = self.calls[wire_index] = _Call(wire_index)
        return record

    def _open_tool(self, record: _Call) -> None:
        blocks = self.blocks
        blocks.open_tool(record.id, record.name, key=record.wire_index, id_may_follow=True)
        self.live = record
        for fragment in record.parts:
            blocks.tool_call(fragment=fragment)
        record.parts = []

    def _live_complete(self) -> bool:
        """True when the live call can end now: it has an id and its arguments are a JSON object."""
        blocks = self.blocks
        if blocks.call_id is None or not blocks.name:
            return False
        try:
            return isinstance(loads(blocks.tool_arguments()), dict)
        except ValueError:
            return False

    # -- closing --

    def _close(self) -> None:
        """Close the open block, if any (a call without arguments gets ``{}``: empty text is not JSON)."""
        blocks = self.blocks
        live = self.live
        if live is not None:
            self.live = None
            live.closed = True
            if blocks.name and not blocks.tool_arguments().strip():
                blocks.tool_call(fragment="{}")
        blocks.close()

    def _flush(self) -> None:
        """Close the open block and emit everything buffered, in arrival order."""
        self._close()
        queue, self.queue = self.queue, []
        for item in queue:
            if isinstance(item, _Call):
                self._close()
                self._open_tool(item)
                item.queued = False
            else:
                kind, text = item
                if self.blocks.kind != kind:
                    self._close()
                self.blocks.text(kind, text)
        self._close()

    def _finish(self) -> None:
        """The wire said ``[DONE]``: close everything, then usage, then the finish chunk."""
        if self.think is not None:
            for kind, piece in self.think.flush():
                self._piece(REASONING if kind else TEXT, piece)
        self._flush()
        reason = self.pending_finish or _STOP
        if reason.kind == "stop" and self.blocks.next_index == 0:
            reason = _EMPTY  # no block at all: an empty response, not a success
        raw = self.raw_usage
        self.blocks.finish(reason, self.usage, findings=chat_findings(raw))


def _call_fields(call: Any) -> tuple[str | None, str | None, str | None]:
    """A wire tool-call entry's id, function name and argument fragment, each checked a string."""
    call_id = call.get("id")
    if call_id is not None:
        call_id = _expect_str(call_id, "tool_calls[].id")
    function = call.get("function") or {}
    name = function.get("name")
    if name is not None:
        name = _expect_str(name, "tool_calls[].function.name")
    fragment = function.get("arguments")
    if fragment is not None:
        fragment = _expect_str(fragment, "tool_calls[].function.arguments")
    return call_id, name, fragment


_STOP = FinishReason(kind="stop")
_EMPTY = FinishReason(
    kind="error",
    failure=LlmFailure(message="the model completed without any content", code="EMPTY_RESPONSE"),
)


def _expect_str(value: Any, where: str) -> str:
    if type(value) is not str:
        raise TypeError(f"{where} is {type_phrase(value)}, not a string")
    return value


def map_finish_reason(reason: str) -> FinishReason:
    """A wire ``finish_reason`` as a finish reason: ``stop`` / ``tool_calls`` / ``length`` →
    ``stop`` / ``tool-calls`` / ``max-tokens``; anything else an ``error`` finish with the
    registered code (``content_filter`` → ``CONTENT_FILTER``, DeepSeek's
    ``insufficient_system_resource`` → ``INSUFFICIENT_SYSTEM_RESOURCE``, retryable) or, for a
    reason the package does not map, the upper-cased reason (the ``<FINISH_REASON>`` family)."""
    return _finish_reason(reason)


def map_usage(usage: Any) -> TokenUsage:
    """Wire usage as disjoint ``TokenUsage`` (raises ``TypeError`` for counts that are not counts)."""
    return _usage(usage)


def _finish_reason(reason: str) -> FinishReason:
    kind = _FINISH_KINDS.get(reason)
    if kind is not None:
        return FinishReason(kind=kind)  # type: ignore[arg-type]
    return finish_failure(reason)


def _count(usage: Mapping[str, Any], key: str) -> int | None:
    value = usage.get(key)
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise TypeError(f"usage.{key} is not a non-negative integer")
    return value


def _detail(usage: Mapping[str, Any], details: str, key: str) -> int | None:
    """A count inside one of usage's ``*_details`` objects (None when either is absent)."""
    inner = usage.get(details)
    return _count(inner, key) if type(inner) is dict else None


def _usage(usage: Any) -> TokenUsage:
    """Disjoint counts from wire usage: the cache hits that ``prompt_tokens`` includes are taken out."""
    if type(usage) is not dict:
        raise TypeError("usage is not an object")
    prompt = _count(usage, "prompt_tokens") or 0
    completion = _count(usage, "completion_tokens") or 0
    cached = _detail(usage, "prompt_tokens_details", "cached_tokens")
    if cached is None:
        cached = _count(usage, "prompt_cache_hit_tokens")
    reasoning = _detail(usage, "completion_tokens_details", "reasoning_tokens")
    total = _count(usage, "total_tokens")
    output = completion
    if reasoning and total is not None and total == prompt + completion + reasoning:
        # Some servers (xAI) leave reasoning out of completion_tokens; their total says so.
        output = completion + reasoning
    uncached = prompt - (cached or 0)
    return TokenUsage(
        # A prompt count smaller than its cache hits cannot include them: it is the uncached input.
        input_tokens=uncached if uncached >= 0 else prompt,
        output_tokens=output,
        cache_read_tokens=cached,
        reasoning_tokens=reasoning,
    )


def read_whole(body: Mapping[str, Any]) -> tuple[TokenUsage | None, FinishReason | None]:
    """The usage and finish of a non-streaming chat-completions answer (None where it has none)."""
    usage = map_usage(body["usage"]) if isinstance(body.get("usage"), dict) else None
    finish = None
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        reason = choices[0].get("finish_reason")
        if isinstance(reason, str):
            finish = map_finish_reason(reason)
    return usage, finish


def whole_answer(body: Mapping[str, Any]) -> list[AnyChunk]:
    """A non-streaming chat-completions answer as the chunks its stream would have been."""
    choices = whole_dicts(body.get("choices"))
    message = choices[0].get("message") if choices else None
    message = message if isinstance(message, dict) else {}
    parts: list[WholePart] = []
    reasoning = message.get("reasoning_content", message.get("reasoning"))
    if isinstance(reasoning, str):
        parts.append((REASONING, reasoning))
    if isinstance(message.get("content"), str):
        parts.append((TEXT, message["content"]))
    for call in whole_dicts(message.get("tool_calls")):
        function = call.get("function")
        if isinstance(function, dict):
            parts += whole_call(call.get("id"), function.get("name"), function.get("arguments", ""))
    raw = body.get("usage")
    findings = chat_findings(raw)
    return whole_chunks(parts, *read_whole(body), "call-", findings)
