"""OpenAI Responses stream events → StreamChunks (a pure, I/O-free translator).

The wire (``POST /responses`` with ``stream: true``) is a sequence of SSE events, each a JSON
object whose ``type`` names it and whose ``sequence_number`` counts 0, 1, 2, …::

    response.created / response.in_progress / response.queued     (the response so far; no chunks)
    response.output_item.added      {output_index, item: {type: message | reasoning | function_call, ...}}
    response.content_part.added / response.reasoning_summary_part.added     (a part begins)
    response.output_text.delta      {output_index, content_index, delta}      → text
    response.refusal.delta          {output_index, content_index, delta}      → text, finish REFUSAL
    response.reasoning_summary_text.delta {output_index, summary_index, delta} → reasoning
    response.reasoning_text.delta   {output_index, content_index, delta}      → reasoning
    response.function_call_arguments.delta {output_index, delta}              → tool-call arguments
    response.function_call_arguments.done  {output_index, arguments}
    response.output_item.done       {output_index, item}                      (the item is whole)
    response.completed / response.incomplete / response.failed {response: {status, usage, ...}}
    error                           {code, message, param}

``ResponsesTranslator`` writes chunks that pass the ``strict`` profile through the shared
``BlockWriter``. Blocks follow the wire's items: one block per text content part, per
reasoning summary part (``summary_index``) and per reasoning content part, and one tool-call
block per ``function_call`` item (its ``call_id`` and ``name`` from ``output_item.added``).
Output items are emitted one after the other in the order they were added: an item whose
events arrive while an earlier one is still open waits, buffered, and goes out whole when
its turn comes, so blocks never interleave.

The terminal response carries the only usage (``input_tokens`` includes
``input_tokens_details.cached_tokens`` and ``cache_write_tokens``, which are taken out;
``output_tokens`` includes ``output_tokens_details.reasoning_tokens``; a detail the wire
sends is kept, 0 included, and only one it does not send is absent)
and the finish: ``response.completed`` → ``stop`` (``tool-calls`` after a function call,
``REFUSAL`` after a refusal, ``EMPTY_RESPONSE`` with no content); ``response.incomplete``
with ``max_output_tokens`` → ``max-tokens``, with ``content_filter`` → ``CONTENT_FILTER``
(any other reason: the ``_finish`` table); ``response.failed`` → an ``error`` finish whose
code comes from ``response.error.code`` (``_failures.ERROR_OBJECT_CODES``). An ``error``
event raises ``LlmError`` with the code its ``code`` names.

Events outside the protocol's vocabulary (web search, file search, code interpreter, image
generation, MCP, custom tools, audio, annotations …) and output items of other types are
skipped and counted in ``ignored``, never a failure. ``sequence_number`` must grow by one
from event to event: a gap means an event was lost (text, arguments or an item boundary the
output would silently lack) and a repeat that one was doubled, so either is
``MALFORMED_RESPONSE`` with the output before it kept (pass ``check_sequence=False`` for a
gateway known to renumber or filter events). Events without a ``sequence_number`` are not
counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from chunkscope.protocol import AnyChunk, FinishReason, LlmError, LlmFailure, TextDelta, TokenUsage
from chunkscope.protocol.shared import type_phrase

from .._arithmetic import responses_findings
from .._blocks import (
    DELTA_FIELDS,
    REASONING,
    TEXT,
    TOOL_CALL,
    BlockWriter,
    WholePart,
    new_chunk,
    set_dict,
    set_extra,
    set_fields,
    set_private,
    whole_call,
    whole_chunks,
    whole_dicts,
)
from .._core.payload import PARSE_FAST_REFUSES, parse_fast, parse_reference
from .._failures import ERROR_OBJECT_CODES, bounded, error_code, loads, preview, stream_error
from .._finish import finish_failure

__all__ = ["ResponsesTranslator", "map_usage", "read_whole", "whole_answer", "responses_error_code"]

_ITEM_KINDS = {"message": TEXT, "reasoning": REASONING, "function_call": TOOL_CALL}
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")
_TEXT_DELTA = "response.output_text.delta"

# Events of the wire we read that write nothing by themselves (their content arrives in deltas).
_QUIET = frozenset(
    {
        "response.created",
        "response.in_progress",
        "response.queued",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.refusal.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
    }
)


def responses_error_code(error: Mapping[str, Any]) -> str:
    """The ``LlmError`` code of a Responses error object (``{code, message}``): its ``code`` in
    ``ERROR_OBJECT_CODES``, else the one table's reading of its code and wording (in-stream)."""
    code = error.get("code")
    mapped = ERROR_OBJECT_CODES.get(code) if isinstance(code, str) else None
    if mapped is not None:
        return mapped
    message = error.get("message")
    detail = " ".join(str(p) for p in (code, message) if isinstance(p, str))
    return error_code(None, detail=detail, error_type=code if isinstance(code, str) else None)


class _Item:
    """One output item, from its ``output_item.added`` to its ``output_item.done``."""

    __slots__ = ("args", "call_id", "done", "final", "index", "kind", "name", "pending", "streamed")

    def __init__(self, index: int, kind: str) -> None:
        self.index = index
        self.kind = kind  # TEXT (a message), REASONING or TOOL_CALL
        self.call_id: str | None = None
        self.name: str | None = None
        self.pending: list[tuple[tuple[int, str, int], str, str]] = []  # (part, kind, text) while waiting
        self.args: list[str] = []  # argument fragments while waiting
        self.final = ""  # the arguments (or text) the wire gave whole: used when nothing streamed
        self.streamed = False
        self.done = False


def _count(usage: Mapping[str, Any], key: str) -> int:
    return _sent_count(usage, key) or 0


def _sent_count(usage: Mapping[str, Any], key: str) -> int | None:
    """The count ``key`` as sent, 0 included; None when the wire did not send it."""
    value = usage.get(key)
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise TypeError(f"usage {key} is {type_phrase(value)}, not a non-negative integer")
    return value


def _detail(usage: Mapping[str, Any], details: str, key: str) -> int | None:
    """A count inside one of usage's ``*_details`` objects (None when either is absent)."""
    inner = usage.get(details)
    return _sent_count(inner, key) if type(inner) is dict else None


def map_usage(usage: Any) -> TokenUsage:
    """Responses usage as disjoint ``TokenUsage`` (``TypeError`` for counts that are not counts).

    ``input_tokens`` includes the cache reads and writes, which are taken out (a count smaller
    than them cannot include them and is kept); ``output_tokens`` already includes the
    reasoning. A detail sent as 0 stays 0 (a cache-hit rate of 0%, not an unknown one); only a
    detail the wire did not send is absent.
    """
    if type(usage) is not dict:
        raise TypeError(f"usage is {type_phrase(usage)}, not an object")
    inputs = _count(usage, "input_tokens")
    cached = _detail(usage, "input_tokens_details", "cached_tokens")
    written = _detail(usage, "input_tokens_details", "cache_write_tokens")
    reasoning = _detail(usage, "output_tokens_details", "reasoning_tokens")
    uncached = inputs - (cached or 0) - (written or 0)
    return TokenUsage(
        input_tokens=uncached if uncached >= 0 else inputs,
        output_tokens=_count(usage, "output_tokens"),
        cache_read_tokens=cached,
        cache_write_tokens=written,
        reasoning_tokens=reasoning,
    )


class ResponsesTranslator:
    """Stateful translator of one Responses stream into strict StreamChunks (pure, no I/O).

    ``feed((event_name, data))`` returns the chunks one SSE event completes; the terminal
    response (``response.completed`` / ``incomplete`` / ``failed``) returns the closing chunks,
    usage and the finish, and sets ``done``. ``end()`` raises ``STREAM_CLOSED`` unless it came.
    A failure is an ``LlmError``; the chunks its event wrote before it are in ``salvage()``.

    ``ignored`` counts what was skipped: event types outside the protocol's vocabulary by their
    ``type``, and output items of other types as ``output_item:<type>``. ``check_sequence``
    (default on) makes a ``sequence_number`` gap or repeat ``MALFORMED_RESPONSE``.
    """

    def __init__(
        self,
        label: str = "Responses API",
        secrets: tuple[str, ...] = (),
        *,
        check_sequence: bool = True,
        request_id: str | None = None,
    ) -> None:
        self.label = label
        self.secrets = tuple(secrets)
        self.request_id = request_id
        self.check_sequence = check_sequence
        self.done = False
        self.ignored: Counter[str] = Counter()
        self.blocks = BlockWriter("call_chunkscope_", self._malformed)
        self._items: dict[int, _Item | None] = {}  # output index → item (None: a skipped type)
        self._queue: list[_Item] = []  # added, not yet closed; the head is live
        self._part: tuple[int, str, int] | None = None  # the open text/reasoning part
        self._next: int | None = None  # the sequence_number the next event must carry
        self._refused = False

    # -- one event --

    def feed(self, event: tuple[str, str]) -> list[AnyChunk]:
        """The chunks one SSE event completes.

        Args:
            event: ``(event name, data text)``; an empty data text is skipped.

        Returns:
            The chunks, maybe none; after the terminal response always none.

        Raises:
            LlmError: an ``error`` event (its code), a payload that is not JSON or not the wire
                shape, a sequence gap (``MALFORMED_RESPONSE``); earlier chunks are in ``salvage()``.
        """
        data = event[1]
        if self.done or not data:
            return []
        if data == "[DONE]":  # a chat-completions terminator some gateways append: not this wire's end
            self.ignored["[DONE]"] += 1
            return []
        try:
            obj = parse_fast(data)
        except PARSE_FAST_REFUSES:
            obj = self._parse_reference(data)
        if type(obj) is not dict:
            raise self._malformed(f"a JSON {type(obj).__name__}, not an object")
        sequence = obj.get("sequence_number")
        if sequence is not None:
            # inlined: this runs once per event
            expected = self._next
            if type(sequence) is int and (expected is None or sequence == expected):
                self._next = sequence + 1
            else:
                self._sequenced(sequence)
        kind = obj.get("type", event[0])
        if kind == _TEXT_DELTA:
            # The common event: text continuing the open text part (measured in the benchmark).
            part = self._part
            if part is not None and part[1] == "t":
                try:  # subscripts, not .get: a missing key merely takes the full path
                    delta = obj["delta"]
                    same = part[0] == obj["output_index"] and part[2] == obj["content_index"]
                except KeyError:
                    same = False
                if same and type(delta) is str and delta:
                    blocks = self.blocks
                    blocks.parts.append(delta)
                    # trusted(TextDelta, fields), inlined (_blocks.new_chunk says why)
                    chunk = new_chunk(TextDelta)
                    set_dict(chunk, {"type": "text-delta", "index": blocks.index, "text": delta})
                    set_fields(chunk, DELTA_FIELDS)
                    set_extra(chunk, None)
                    set_private(chunk, None)
                    return [chunk]
        if type(kind) is not str:
            raise self._malformed(f"an event whose type is {type_phrase(kind)}, not a string")
        handler = _HANDLERS.get(kind)
        if handler is None:
            if kind not in _QUIET:
                self.ignored[kind] += 1
            return []
        try:
            handler(self, obj)
        except LlmError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
            raise self._malformed(f"{kind}: {exc}") from exc
        return self.blocks.take()

    def end(self) -> list[AnyChunk]:
        """The body ended: ``[]`` after the terminal response, else ``STREAM_CLOSED``."""
        if not self.done:
            raise LlmError(
                f"{self.label} ended the event stream before its terminal response "
                "(response.completed, response.incomplete or response.failed)",
                "STREAM_CLOSED",
                request_id=self.request_id,
            )
        return []

    def compact(self) -> None:
        """Join the open block's text pieces (``WireReader.compact``: a long stream's memory)."""
        self.blocks.compact()

    def salvage(self) -> list[AnyChunk]:
        """The chunks an event wrote before the failure it raised (valid output; taken once)."""
        return self.blocks.take()

    @property
    def ignored_count(self) -> int:
        """How many events (and output items) were skipped as outside the protocol's vocabulary."""
        return sum(self.ignored.values())

    # -- checks --

    def _malformed(self, what: str) -> LlmError:
        return LlmError(
            bounded(f"{self.label} sent an event that is not the Responses shape: {what}", self.secrets),
            "MALFORMED_RESPONSE",
            request_id=self.request_id,
        )

    def _sequenced(self, sequence: Any) -> None:
        """A ``sequence_number`` that is not the one expected: malformed, or accepted when unchecked."""
        if type(sequence) is not int:
            raise self._malformed(f"sequence_number is {type_phrase(sequence)}, not an integer")
        expected = self._next
        self._next = sequence + 1
        if self.check_sequence and expected is not None:
            last = expected - 1
            what = "repeated" if sequence <= last else f"skipped {sequence - last - 1} event(s)"
            raise self._malformed(f"sequence_number {sequence} after {last}: the stream {what}")

    def _parse_reference(self, data: str) -> Any:
        """The shared ``json`` reading of a payload the fast parser refused, or
        ``MALFORMED_RESPONSE`` saying why not."""
        try:
            return parse_reference(data)
        except ValueError as exc:
            shown = preview(data, self.secrets)
            raise self._malformed(f"a payload that is not JSON ({exc}): {shown}") from None

    def _index(self, obj: Mapping[str, Any], key: str = "output_index") -> int:
        value = obj.get(key, 0 if key != "output_index" else None)
        if type(value) is not int:
            raise self._malformed(f"{obj.get('type')} without an integer {key}")
        return value

    def _item(self, obj: Mapping[str, Any], kind: str) -> _Item | None:
        """The open item an event addresses (None: a skipped type); it must suit the event."""
        index = self._index(obj)
        if index not in self._items:
            raise self._malformed(f"{obj.get('type')} for output item {index}, never added")
        item = self._items[index]
        if item is None:
            return None
        if item.kind != kind:
            raise self._malformed(f"{obj.get('type')} for output item {index}, which is not a {kind} item")
        if item.done:
            raise self._malformed(f"{obj.get('type')} for output item {index} after its output_item.done")
        return item

    # -- items --

    def _added(self, obj: dict[str, Any]) -> None:
        index = self._index(obj)
        if index in self._items:
            raise self._malformed(f"output_item.added for output item {index} twice")
        whole = obj.get("item")
        if type(whole) is not dict:
            raise self._malformed("output_item.added without an item object")
        self._new_item(index, whole)

    def _new_item(self, index: int, whole: dict[str, Any]) -> _Item | None:
        wire_type = whole.get("type")
        kind = _ITEM_KINDS.get(wire_type) if type(wire_type) is str else None
        if kind is None:
            self.ignored[f"output_item:{wire_type}"] += 1
            self._items[index] = None
            return None
        item = self._items[index] = _Item(index, kind)
        if kind == TOOL_CALL:
            call_id, name, arguments = whole.get("call_id"), whole.get("name"), whole.get("arguments")
            item.call_id = _optional_str(call_id, "item.call_id") or None
            item.name = _optional_str(name, "item.name") or None
            item.final = _optional_str(arguments, "item.arguments")
            if item.call_id is not None:
                self.blocks.reserve_id(item.call_id)
        self._queue.append(item)
        if len(self._queue) == 1:
            self._go_live(item)
        return item

    def _item_done(self, obj: dict[str, Any]) -> None:
        index = self._index(obj)
        whole = obj.get("item")
        if type(whole) is not dict:
            raise self._malformed("output_item.done without an item object")
        # Added and done in one: a server that sends only the whole item.
        if index not in self._items and self._new_item(index, whole) is None:
            return
        item = self._items[index]
        if item is None:
            return
        if item.done:
            raise self._malformed(f"output_item.done for output item {index} twice")
        if not item.streamed:
            self._whole_content(item, whole)
        item.done = True
        self._drain()

    def _whole_content(self, item: _Item, whole: dict[str, Any]) -> None:
        """The content of an item whose deltas never came, from its whole form."""
        if item.kind == TOOL_CALL:
            arguments = whole.get("arguments")
            if type(arguments) is str and arguments:
                item.final = arguments
            if item.name is None:
                item.name = _optional_str(whole.get("name"), "item.name") or None
                if item is self._queue[0]:
                    self.blocks.tool_call(name=item.name)
            return
        parts = whole.get("summary" if item.kind == REASONING else "content")
        for position, part in enumerate(parts if type(parts) is list else ()):
            if type(part) is not dict:
                continue
            text = part.get("text") if part.get("type") != "refusal" else part.get("refusal")
            if type(text) is str and text:
                tag = "s" if item.kind == REASONING else ("r" if part.get("type") == "refusal" else "t")
                self._refused = self._refused or tag == "r"
                self._piece(item, (item.index, tag, position), item.kind, text)

    def _go_live(self, item: _Item) -> None:
        """The head item's turn: a call opens its block; buffered content goes out."""
        blocks = self.blocks
        if item.kind == TOOL_CALL:
            blocks.open_tool(item.call_id, item.name, key=item.index)
            if item.args:
                blocks.tool_call(fragment="".join(item.args))
                item.args = []
            return
        pending, item.pending = item.pending, []
        for part, kind, text in pending:
            self._write(part, kind, text)

    def _drain(self) -> None:
        """Close every finished item at the head of the queue, bringing the next ones live."""
        queue = self._queue
        while queue and queue[0].done:
            self._close(queue.pop(0))
            if queue:
                self._go_live(queue[0])

    def _close(self, item: _Item) -> None:
        blocks = self.blocks
        if item.kind == TOOL_CALL:
            if not blocks.tool_arguments().strip():
                blocks.tool_call(fragment=item.final if item.final.strip() else "{}")
            item.final = blocks.tool_arguments()  # what the block ends with, checked at the finish
        elif self._part is None or self._part[0] != item.index:
            return  # a message or reasoning item that wrote nothing opened no block
        self._part = None
        blocks.close()

    # -- content --

    def _piece(self, item: _Item, part: tuple[int, str, int], kind: str, text: str) -> None:
        item.streamed = True
        if item is not self._queue[0]:
            item.pending.append((part, kind, text))
            return
        self._write(part, kind, text)

    def _write(self, part: tuple[int, str, int], kind: str, text: str) -> None:
        if self._part != part:
            self.blocks.close()  # a new part is a new block, even of the same kind
            self._part = part
        self.blocks.text(kind, text)

    def _delta_text(self, obj: dict[str, Any]) -> str:
        delta = obj.get("delta")
        if type(delta) is not str:
            raise self._malformed(f"{obj.get('type')} whose delta is {type_phrase(delta)}, not a string")
        return delta

    def _text(self, obj: dict[str, Any]) -> None:
        self._content(obj, TEXT, "t", "content_index")

    def _refusal(self, obj: dict[str, Any]) -> None:
        self._refused = True
        self._content(obj, TEXT, "r", "content_index")

    def _summary(self, obj: dict[str, Any]) -> None:
        self._content(obj, REASONING, "s", "summary_index")

    def _reasoning(self, obj: dict[str, Any]) -> None:
        self._content(obj, REASONING, "c", "content_index")

    def _content(self, obj: dict[str, Any], kind: str, tag: str, sub: str) -> None:
        item = self._item(obj, kind)
        text = self._delta_text(obj)
        if item is None or not text:
            return
        self._piece(item, (item.index, tag, self._index(obj, sub)), kind, text)

    def _arguments(self, obj: dict[str, Any]) -> None:
        item = self._item(obj, TOOL_CALL)
        fragment = self._delta_text(obj)
        if item is None or not fragment:
            return
        item.streamed = True
        if item is self._queue[0]:
            self.blocks.tool_call(fragment=fragment)
        else:
            item.args.append(fragment)

    def _arguments_done(self, obj: dict[str, Any]) -> None:
        item = self._item(obj, TOOL_CALL)
        arguments = obj.get("arguments")
        if item is not None and type(arguments) is str and not item.streamed:
            item.final = arguments

    # -- the end --

    def _error(self, obj: dict[str, Any]) -> None:
        inner = obj.get("error")
        error = dict(inner) if type(inner) is dict else {k: v for k, v in obj.items() if k != "type"}
        error.pop("sequence_number", None)
        base = stream_error(error, label=self.label, secrets=self.secrets, request_id=self.request_id)
        code = responses_error_code(error)
        if code == base.code:
            raise base
        raise LlmError(
            base.message, code, status=base.status, request_id=base.request_id, cause=base.__cause__
        )

    def _terminal(self, obj: dict[str, Any]) -> None:
        response = obj.get("response")
        if type(response) is not dict:
            raise self._malformed(f"{obj.get('type')} without a response object")
        for item in self._queue:
            item.done = True  # an item the wire never finished ends with the response
        self._drain()
        raw_usage = response.get("usage")
        usage = map_usage(raw_usage) if raw_usage is not None else None
        reason = self._reason(str(obj.get("type")), response)
        findings = responses_findings(raw_usage)
        self.blocks.finish(reason, usage, findings=findings)
        self.done = True

    def _reason(self, kind: str, response: dict[str, Any]) -> FinishReason:
        calls = [i for i in self._items.values() if i is not None and i.kind == TOOL_CALL]
        if kind == "response.failed":
            return self._failed(response)
        if kind == "response.incomplete":
            details = response.get("incomplete_details")
            why = details.get("reason") if type(details) is dict else None
            if why == "max_output_tokens":
                return FinishReason(kind="max-tokens")
            return self._named(finish_failure(why if type(why) is str and why else "incomplete"))
        if self._refused:
            return self._named(finish_failure("refusal"))
        self._check_calls(calls)
        if calls:
            return FinishReason(kind="tool-calls")
        if self.blocks.next_index == 0:
            return self._named(
                FinishReason(
                    kind="error",
                    failure=LlmFailure(
                        message="the model completed without any content", code="EMPTY_RESPONSE"
                    ),
                )
            )
        return FinishReason(kind="stop")

    def _failed(self, response: dict[str, Any]) -> FinishReason:
        error = response.get("error")
        error = error if type(error) is dict else {}
        code = responses_error_code(error)
        message, wire_code = error.get("message"), error.get("code")
        text = f"the response failed: {message if type(message) is str else 'no message'}"
        if type(wire_code) is str:
            text += f" ({wire_code})"
        failure = LlmFailure(message=bounded(text, self.secrets), code=code, request_id=self.request_id)
        return FinishReason(kind="error", failure=failure)

    def _named(self, reason: FinishReason) -> FinishReason:
        """The failure of ``reason`` carrying this response's request id."""
        if reason.failure is None or self.request_id is None:
            return reason
        return FinishReason(
            kind=reason.kind, failure=reason.failure.model_copy(update={"request_id": self.request_id})
        )

    def _check_calls(self, calls: list[_Item]) -> None:
        """A call the model completed must carry a JSON object (``MALFORMED_RESPONSE`` if not)."""
        for call in calls:
            try:
                whole = loads(call.final)
            except ValueError:
                whole = None
            if type(whole) is not dict:
                raise self._malformed(
                    f"function call {call.name!r} ({call.call_id}): arguments are not a JSON object"
                )


def _optional_str(value: Any, where: str) -> str:
    if value is None:
        return ""
    if type(value) is not str:
        raise TypeError(f"{where} is {type_phrase(value)}, not a string")
    return value


_HANDLERS: dict[str, Callable[[ResponsesTranslator, dict[str, Any]], None]] = {
    "response.output_item.added": ResponsesTranslator._added,
    "response.output_item.done": ResponsesTranslator._item_done,
    _TEXT_DELTA: ResponsesTranslator._text,
    "response.refusal.delta": ResponsesTranslator._refusal,
    "response.reasoning_summary_text.delta": ResponsesTranslator._summary,
    "response.reasoning_text.delta": ResponsesTranslator._reasoning,
    "response.function_call_arguments.delta": ResponsesTranslator._arguments,
    "response.function_call_arguments.done": ResponsesTranslator._arguments_done,
    "response.completed": ResponsesTranslator._terminal,
    "response.incomplete": ResponsesTranslator._terminal,
    "response.failed": ResponsesTranslator._terminal,
    "error": ResponsesTranslator._error,
}
"""What each event we read does (``_QUIET`` events write nothing; any other is ignored and counted)."""


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def read_whole(body: Mapping[str, Any]) -> tuple[TokenUsage | None, FinishReason | None]:
    """The usage and finish of a non-streaming Responses answer (None where it has none)."""
    raw = body.get("usage")
    try:
        usage = map_usage(raw) if isinstance(raw, dict) else None
    except TypeError:
        usage = None
    status = body.get("status")
    output = body.get("output")
    items = [i for i in output if isinstance(i, dict)] if isinstance(output, list) else []
    finish: FinishReason | None = None
    if status == "failed":
        error = body.get("error")
        error = error if isinstance(error, dict) else {}
        message = error.get("message")
        finish = FinishReason(
            kind="error",
            failure=LlmFailure(
                message=f"the response failed: {message if isinstance(message, str) else 'no message'}",
                code=responses_error_code(error),
            ),
        )
    elif status == "incomplete":
        details = body.get("incomplete_details")
        why = details.get("reason") if isinstance(details, dict) else None
        if why == "max_output_tokens":
            finish = FinishReason(kind="max-tokens")
        else:
            finish = finish_failure(why if isinstance(why, str) and why else "incomplete")
    elif status == "completed":
        refused = any(
            isinstance(part, dict) and part.get("type") == "refusal"
            for item in items
            for part in _listed(item.get("content"))
        )
        if refused:
            finish = finish_failure("refusal")
        elif any(item.get("type") == "function_call" for item in items):
            finish = FinishReason(kind="tool-calls")
        else:
            finish = FinishReason(kind="stop")
    return usage, finish


def whole_answer(body: Mapping[str, Any]) -> list[AnyChunk]:
    """A non-streaming Responses answer as the chunks its stream would have been (built-in
    tool items OpenAI runs itself, such as ``web_search_call``, are left out)."""
    parts: list[WholePart] = []
    for item in whole_dicts(body.get("output")):
        kind = item.get("type")
        if kind == "reasoning":
            parts += [
                (REASONING, p["text"])
                for p in whole_dicts(item.get("summary"))
                if isinstance(p.get("text"), str)
            ]
        elif kind == "message":
            parts += [(TEXT, p["text"]) for p in _output_texts(item)]
        elif kind == "function_call":
            parts += whole_call(item.get("call_id"), item.get("name"), item.get("arguments", ""))
    raw = body.get("usage")
    findings = responses_findings(raw)
    return whole_chunks(parts, *read_whole(body), "call_chunkscope_", findings)


def _output_texts(item: dict[str, Any]) -> list[dict[str, Any]]:
    """A message item's ``output_text`` parts that hold text."""
    return [
        p
        for p in whole_dicts(item.get("content"))
        if p.get("type") == "output_text" and isinstance(p.get("text"), str)
    ]
