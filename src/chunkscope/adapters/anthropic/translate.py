"""Anthropic Messages stream events → StreamChunks (a pure, I/O-free translator).

The wire (``POST /v1/messages`` with ``stream: true``) is a sequence of SSE
events, each an event name plus a JSON object whose ``type`` repeats the name::

    message_start           {"message": {"usage": {"input_tokens", "cache_read_input_tokens", ...}}}
    content_block_start     {"index", "content_block": {"type": "text" | "thinking" | "tool_use", ...}}
    content_block_delta     {"index", "delta": {"type": "text_delta" | "thinking_delta" |
                                                "signature_delta" | "input_json_delta", ...}}
    content_block_stop      {"index"}
    message_delta           {"delta": {"stop_reason"}, "usage": {"output_tokens", ...}}
    message_stop            {}
    ping                    {}                       (keep-alive, ignored)
    error                   {"error": {"type", "message"}}

``AnthropicTranslator`` turns them into chunks that pass the ``strict``
profile whatever order the wire uses: our block indexes count 0, 1, 2, … in
the order blocks are emitted; a block that the wire opens while another is
still open is buffered and emitted, whole, after the open one ends, so blocks
never interleave. Usage and finish are deferred to ``message_stop`` (the
stream's terminator), so nothing follows the finish. Usage with
``iterations[]`` (compaction) is the sum over every billed iteration of this
call's model; ``advisor_message`` iterations (the advisor tool's model) are
another model's tokens and are not added.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from chunkscope.protocol import AnyChunk, FinishReason, LlmError, LlmFailure, TokenUsage
from chunkscope.protocol.shared import UsageFinding, join_pieces

from .._arithmetic import anthropic_decrease, anthropic_findings
from .._blocks import (
    REASONING,
    TEXT,
    TOOL_CALL,
    BlockWriter,
    WholePart,
    whole_call,
    whole_chunks,
    whole_dicts,
)
from .._core.payload import PARSE_FAST_REFUSES, parse_fast, parse_reference
from .._failures import (
    error_code,
    loads,
    preview,
    stream_error,
)
from .._finish import PAUSE_TURN_KEY, finish_failure

__all__ = [
    "read_whole",
    "whole_answer",
    "AnthropicTranslator",
    "anthropic_error_code",
    "map_stop_reason",
]

_Kind = Literal["text", "reasoning", "tool-call"]

# Wire block type → our block kind. Other block types (server tool use, web
# search results, …) have no StreamChunk counterpart and are skipped whole.
_BLOCK_KINDS: dict[str, _Kind] = {"text": "text", "thinking": "reasoning", "tool_use": "tool-call"}

# Which wire delta types belong to which of our kinds. A known delta type sent
# to a block of another kind is a malformed stream; an unknown one (citations,
# future additions) carries nothing we show and is ignored.
_DELTA_KINDS: dict[str, _Kind] = {
    "text_delta": "text",
    "thinking_delta": "reasoning",
    "signature_delta": "reasoning",
    "input_json_delta": "tool-call",
}

_DELTA_FIELDS = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}


def anthropic_error_code(error_type: str | None, message: str = "", status: int | None = None) -> str:
    """The ``LlmError`` code for an Anthropic error object (``{"type", "message"}``): the one
    table (``_failures.error_code``) with ``status`` None for an error inside the stream."""
    detail = " ".join(part for part in (error_type, message) if part)
    return error_code(status, detail=detail, error_type=error_type)


def map_stop_reason(stop_reason: str) -> FinishReason:
    """Map an Anthropic ``stop_reason`` to a finish reason.

    ``end_turn``/``stop_sequence`` → stop, ``tool_use`` → tool-calls,
    ``max_tokens`` → max-tokens, ``pause_turn`` → stop (the translator marks the
    finish's ``replay_state`` with ``pauseTurn``: continue the turn, see ``_finish``);
    anything else is an ``error`` finish with the registered code (``refusal`` →
    ``REFUSAL``, ``model_context_window_exceeded`` → ``CONTEXT_WINDOW_EXCEEDED``) or,
    for a reason the package does not map, the upper-cased reason.
    """
    if stop_reason in ("end_turn", "stop_sequence", "pause_turn"):
        return FinishReason(kind="stop")
    if stop_reason == "tool_use":
        return FinishReason(kind="tool-calls")
    if stop_reason == "max_tokens":
        return FinishReason(kind="max-tokens")
    return finish_failure(stop_reason)


@dataclass
class _Block:
    """One wire content block, from its ``content_block_start`` to its stop."""

    kind: _Kind
    call_id: str = ""
    name: str = ""
    initial_input: str = "{}"  # the start event's ``input``, used when no partial_json arrives
    parts: list[str] = field(default_factory=list)  # what has been written so far
    pending: list[str] = field(default_factory=list)  # appended while the block waits its turn
    signature: str | None = None
    index: int = -1  # our index, assigned when the block is emitted
    stopped: bool = False


def _malformed(message: str, request_id: str | None) -> LlmError:
    return LlmError(message, "MALFORMED_RESPONSE", request_id=request_id)


def _count(value: Any, name: str, request_id: str | None) -> int | None:
    """A token count from the wire: None when absent, MALFORMED_RESPONSE when not a count."""
    if value is None:
        return None
    # bool is an int subclass; a count is never a bool, nor negative.
    if type(value) is not int or value < 0:
        raise _malformed(f"usage {name} is not a non-negative integer: {value!r}", request_id)
    return value


class AnthropicTranslator:
    """Stateful translator of one Anthropic Messages stream into StreamChunks.

    ``feed(event, data)`` takes one SSE event (its name and its parsed JSON)
    and returns the chunks it completes; ``feed_text`` parses the JSON first.
    ``finished`` turns true at ``message_stop``, whose chunks end with the
    ``finish``; ``close()`` at the end of the byte stream raises
    ``STREAM_CLOSED`` when it never came. Every failure is an ``LlmError``:
    ``error`` events map through ``anthropic_error_code``; a payload that is
    not JSON or not the wire shape is ``MALFORMED_RESPONSE``. Chunks returned
    before a raise are valid output and stay valid.

    The chunks are written by the shared ``BlockWriter``; this class maps the wire's
    fields and keeps one policy of its own: a block the wire starts while another is
    live waits in ``_queue`` and goes out, its buffered text as one delta, when its
    turn comes.
    """

    def __init__(
        self,
        label: str = "Anthropic API",
        secrets: tuple[str, ...] = (),
        *,
        request_id: str | None = None,
    ) -> None:
        self.label = label
        self.secrets = tuple(secrets)
        self.request_id = request_id
        self.done = False
        self._started = False
        self._blocks: dict[int, _Block | None] = {}  # wire index → block (None: skipped type)
        self._queue: list[_Block] = []  # started, not yet fully emitted; head is live
        self._emitted: list[_Block] = []
        # An id the wire left out is made up: toolu_chunkscope_<our block index>.
        self._writer = BlockWriter("toolu_chunkscope_", self._malformed)
        self._stop_reason: str | None = None
        self._input_tokens = 0
        self._output_tokens = 0
        self._cache_read: int | None = None
        self._cache_write: int | None = None
        self._reasoning_tokens: int | None = None
        self._seen: dict[str, int] = {}  # each top-level usage count as last sent (cumulative)
        self._findings: tuple[UsageFinding, ...] = ()  # usage-arithmetic findings so far
        self._redacted: list[str] = []

    # --- entry points ---------------------------------------------------------

    @property
    def finished(self) -> bool:
        """True once ``message_stop`` came (the same as ``done``)."""
        return self.done

    def feed(self, event: tuple[str, str]) -> list[AnyChunk]:
        """Translate one SSE event ``(name, data_text)``; returns the chunks it completes."""
        return self.feed_text(event[0], event[1])

    def end(self) -> list[AnyChunk]:
        """The body ended: ``[]`` after ``message_stop``, else ``LlmError`` ``STREAM_CLOSED``."""
        self.close()
        return []

    def compact(self) -> None:
        """Join the open blocks' text pieces (``WireReader.compact``: a long stream's memory)."""
        self._writer.compact()
        for block in self._emitted:
            if not block.stopped:
                join_pieces(block.parts)

    def salvage(self) -> list[AnyChunk]:
        """Chunks produced before a failure in the same event: none. Every check of an event
        runs before it writes, except at ``message_stop``, whose blocks end with the failure.

        Returns:
            ``[]``.
        """
        self._writer.take()  # what message_stop wrote before its check failed goes with it
        return []

    def _malformed(self, message: str) -> LlmError:
        return _malformed(message, self.request_id)

    def feed_text(self, event: str | None, data: str) -> list[AnyChunk]:
        """Parse one SSE event's ``data`` text as JSON and ``feed_parsed`` it."""
        if not data.strip():
            return [] if event in (None, "ping", "message") else self.feed_parsed(event, {})
        try:
            payload = parse_fast(data)
        except PARSE_FAST_REFUSES:
            payload = self._parse_reference(event, data)
        return self.feed_parsed(event, payload)

    def _parse_reference(self, event: str | None, data: str) -> Any:
        """``json``'s reading of a payload the fast parser refused (``_core/payload.py``), or
        ``MALFORMED_RESPONSE`` saying why it is not JSON."""
        try:
            return parse_reference(data)
        except ValueError as exc:
            raise LlmError(
                f"malformed Anthropic stream event {event or 'message'!r}: not JSON ({exc}): "
                f"{preview(data, self.secrets)}",
                "MALFORMED_RESPONSE",
                request_id=self.request_id,
            ) from None

    def feed_parsed(self, event: str | None, data: Any) -> list[AnyChunk]:
        """Translate one event given its parsed JSON.

        Args:
            event: the SSE event name (None when the wire sent none).
            data: the event's parsed JSON.

        Returns:
            The chunks the event completes, maybe none; after ``message_stop`` always none.

        Raises:
            LlmError: an ``error`` event (mapped by the one table), or ``MALFORMED_RESPONSE``.
        """
        if self.done:
            return []  # nothing may follow the finish
        if not isinstance(data, dict):
            raise _malformed(f"Anthropic stream event {event!r} is not a JSON object", self.request_id)
        kind = data.get("type")
        if not isinstance(kind, str):
            kind = event
        if event == "error" or kind == "error":
            raise self._error_event(data)
        if kind == "message_start":
            self._message_start(data)
            return []
        handler = _HANDLERS.get(kind) if kind is not None else None
        if handler is None:
            return []  # a ping, or an event type added after this adapter was written
        # message_start carries the id, model and first usage, none of them needed to read the
        # content: a stream that opens without it is read on (as Bedrock's without messageStart).
        handler(self, data)
        return self._writer.take()

    def close(self) -> None:
        """Call at the end of the byte stream: raises ``STREAM_CLOSED`` unless ``message_stop`` came."""
        if not self.done:
            raise LlmError(
                "the Anthropic event stream ended before message_stop",
                "STREAM_CLOSED",
                request_id=self.request_id,
            )

    # --- events ---------------------------------------------------------------

    def _error_event(self, data: dict[str, Any]) -> LlmError:
        error = data.get("error")
        return stream_error(
            error if isinstance(error, dict) else {},
            label=self.label,
            secrets=self.secrets,
            request_id=self.request_id,
        )

    def _message_start(self, data: dict[str, Any]) -> None:
        if self._started:
            raise _malformed("Anthropic stream sent a second message_start", self.request_id)
        message = data.get("message")
        if not isinstance(message, dict):
            raise _malformed("message_start without a message object", self.request_id)
        self._started = True
        usage = message.get("usage")
        if isinstance(usage, dict):
            self._read_usage(usage)

    def _read_usage(self, usage: dict[str, Any]) -> None:
        # message_delta counts are cumulative: a present count replaces the
        # earlier one, an absent one keeps it (as the official SDK does).
        # Anthropic's input_tokens is already uncached input: no subtraction.
        rid = self.request_id
        value = _count(usage.get("input_tokens"), "input_tokens", rid)
        if value is not None:
            self._seen_count("input_tokens", value)
            self._input_tokens = value
        value = _count(usage.get("output_tokens"), "output_tokens", rid)
        if value is not None:
            self._seen_count("output_tokens", value)
            self._output_tokens = value
        value = _count(usage.get("cache_read_input_tokens"), "cache_read_input_tokens", rid)
        if value is not None:
            self._seen_count("cache_read_input_tokens", value)
            self._cache_read = value
        value = _count(usage.get("cache_creation_input_tokens"), "cache_creation_input_tokens", rid)
        if value is not None:
            self._seen_count("cache_creation_input_tokens", value)
            self._cache_write = value
        iterations = usage.get("iterations")
        if isinstance(iterations, list) and iterations:
            self._read_iterations(iterations)
        details = usage.get("output_tokens_details")
        if isinstance(details, dict):
            value = _count(details.get("thinking_tokens"), "thinking_tokens", rid)
            if value is not None:
                self._reasoning_tokens = value

    def _seen_count(self, name: str, value: int) -> None:
        """A top-level count as the wire sent it (before any iteration sums): one that went down
        since the last is a usage-arithmetic finding."""
        self._findings += anthropic_decrease(name, self._seen.get(name), value)
        self._seen[name] = value

    def _read_iterations(self, iterations: list[Any]) -> None:
        # Compaction bills several iterations; the top-level counts describe only the last one.
        # An advisor_message iteration is another model's tokens (the advisor's, billed at its
        # own price): not this call's usage, so it is left out of the sums.
        rid = self.request_id
        sums: dict[str, int] = {}
        for entry in iterations:
            if not isinstance(entry, dict):
                raise _malformed("usage.iterations[] entry is not an object", rid)
            if entry.get("type") == _ADVISOR_ITERATION:
                continue
            for name in _ITERATION_COUNTS:
                value = _count(entry.get(name), f"iterations[].{name}", rid)
                if value is not None:
                    sums[name] = sums.get(name, 0) + value
        self._input_tokens = sums.get("input_tokens", self._input_tokens)
        self._output_tokens = sums.get("output_tokens", self._output_tokens)
        if "cache_read_input_tokens" in sums:
            self._cache_read = sums["cache_read_input_tokens"]
        if "cache_creation_input_tokens" in sums:
            self._cache_write = sums["cache_creation_input_tokens"]

    def _wire_index(self, data: dict[str, Any], event: str) -> int:
        index = data.get("index")
        if type(index) is not int:
            raise _malformed(f"{event} without an integer index", self.request_id)
        return index

    def _block_start(self, data: dict[str, Any]) -> None:
        wire_index = self._wire_index(data, "content_block_start")
        if wire_index in self._blocks:
            raise _malformed(f"content_block_start for index {wire_index} twice", self.request_id)
        content = data.get("content_block")
        if not isinstance(content, dict):
            raise _malformed("content_block_start without a content_block object", self.request_id)
        wire_type = content.get("type")
        kind = _BLOCK_KINDS.get(wire_type) if isinstance(wire_type, str) else None
        if kind is None:
            if wire_type == "redacted_thinking" and isinstance(content.get("data"), str):
                self._redacted.append(content["data"])
            self._blocks[wire_index] = None
            return
        if kind == TOOL_CALL:
            block = _tool_block(content, wire_index, self.request_id)
        else:
            block = _text_block(kind, content)
        self._blocks[wire_index] = block
        self._queue.append(block)
        if len(self._queue) == 1:
            self._emit_head()

    def _started_block(self, data: dict[str, Any], event: str) -> tuple[int, _Block | None]:
        """The wire index an event names and its block (None: a skipped block type); it must be started."""
        wire_index = self._wire_index(data, event)
        if wire_index not in self._blocks:
            raise _malformed(f"{event} for index {wire_index}, never started", self.request_id)
        return wire_index, self._blocks[wire_index]

    def _block_delta(self, data: dict[str, Any]) -> None:
        wire_index, block = self._started_block(data, "content_block_delta")
        if block is None:
            return  # a skipped block type
        if block.stopped:
            raise _malformed(f"content_block_delta for index {wire_index} after its stop", self.request_id)
        delta = data.get("delta")
        if not isinstance(delta, dict):
            raise _malformed("content_block_delta without a delta object", self.request_id)
        delta_type = self._delta_type(delta, block, wire_index)
        if delta_type is None:
            return
        if delta_type == "signature_delta":
            signature = delta.get("signature")
            if isinstance(signature, str):
                block.signature = signature
            return
        key = _DELTA_FIELDS[str(delta_type)]
        piece = delta.get(key)
        if not isinstance(piece, str):
            raise _malformed(f"{delta_type} without a string {key!r}", self.request_id)
        if not piece:
            return
        if block is not self._queue[0]:
            block.pending.append(piece)  # waits until the blocks before it end
            return
        self._write(block, piece)

    def _delta_type(self, delta: dict[str, Any], block: _Block, wire_index: int) -> str | None:
        """The delta's wire type when it is one we show (None: ignored); it must suit the block."""
        delta_type = delta.get("type")
        kind = _DELTA_KINDS.get(delta_type) if isinstance(delta_type, str) else None
        if kind is None:
            return None
        if kind != block.kind:
            message = f"{delta_type} sent to a {block.kind} block (index {wire_index})"
            raise _malformed(message, self.request_id)
        return str(delta_type)

    def _block_stop(self, data: dict[str, Any]) -> None:
        wire_index, block = self._started_block(data, "content_block_stop")
        if block is None:
            return
        if block.stopped:
            raise _malformed(f"content_block_stop for index {wire_index} twice", self.request_id)
        block.stopped = True
        self._drain()

    def _message_delta(self, data: dict[str, Any]) -> None:  # (usage and stop reason: no chunks)
        delta = data.get("delta")
        if isinstance(delta, dict):
            stop_reason = delta.get("stop_reason")
            if isinstance(stop_reason, str):
                self._stop_reason = stop_reason
        usage = data.get("usage")
        if isinstance(usage, dict):
            self._read_usage(usage)

    def _message_stop(self, data: dict[str, Any]) -> None:
        if self._stop_reason is None:
            raise _malformed("message_stop without a stop_reason (no message_delta)", self.request_id)
        # A block the wire never stopped ends with the message.
        for block in self._queue:
            block.stopped = True
        self._drain()
        reason = map_stop_reason(self._stop_reason)
        calls = [b for b in self._emitted if b.kind == TOOL_CALL]
        if reason.kind in ("stop", "tool-calls"):
            self._check_arguments(calls)
        has_content = any(b.kind == TOOL_CALL or "".join(b.parts) for b in self._emitted)
        reason = self._final_reason(reason, has_content, bool(calls))
        output = self._seen.get("output_tokens")
        findings = self._findings + anthropic_findings(output, self._reasoning_tokens)
        self._writer.finish(reason, self.usage(), self._final_state(has_content), findings)
        self.done = True

    def _final_state(self, has_content: bool) -> dict[str, Any] | None:
        """The finish's replay state, marked ``pauseTurn`` when the turn is to be continued."""
        state = self.replay_state()
        # A pause with nothing to send back (only block types we skip) cannot be continued
        # from our message: it is the same empty response as an end_turn without content.
        if self._stop_reason == "pause_turn" and has_content:
            # Not a failure: the client sends the assistant message back to continue the turn.
            state = {**(state or {}), PAUSE_TURN_KEY: True}
        return state

    def _check_arguments(self, calls: list[_Block]) -> None:
        """A call the model completed must carry a JSON object (``MALFORMED_RESPONSE`` if not)."""
        bad = [b for b in calls if not _is_json_object("".join(b.parts))]
        if bad:
            raise _malformed(
                f"tool call {bad[0].name!r} ({bad[0].call_id}) arguments are not a JSON object",
                self.request_id,
            )

    def _final_reason(self, reason: FinishReason, has_content: bool, has_calls: bool) -> FinishReason:
        """The finish reason as sent: an empty ``stop`` is ``EMPTY_RESPONSE``, a failure names the request."""
        if reason.kind == "stop" and not has_content:
            return FinishReason(
                kind="error",
                failure=LlmFailure(
                    message="the model returned a completed response with no content",
                    code="EMPTY_RESPONSE",
                    request_id=self.request_id,
                ),
            )
        if reason.kind == "tool-calls" and not has_calls:
            raise _malformed("stop_reason tool_use without any tool_use block", self.request_id)
        if reason.failure is not None and self.request_id is not None:
            return FinishReason(
                kind=reason.kind,
                failure=reason.failure.model_copy(update={"request_id": self.request_id}),
            )
        return reason

    # --- results --------------------------------------------------------------

    def usage(self) -> TokenUsage:
        """Token usage so far: disjoint counts (Anthropic's input_tokens is already uncached)."""
        return TokenUsage(
            input_tokens=self._input_tokens,
            output_tokens=self._output_tokens,
            cache_read_tokens=self._cache_read,
            cache_write_tokens=self._cache_write,
            reasoning_tokens=self._reasoning_tokens,
        )

    def replay_state(self) -> dict[str, Any] | None:
        """What a later request needs to replay this turn's thinking: signatures and redacted blocks.

        ``{"thinking": [{"index": our_block_index, "signature": str}], "redactedThinking": [data]}``,
        or None when the stream carried neither.
        """
        signed = [
            {"index": b.index, "signature": b.signature}
            for b in self._emitted
            if b.kind == "reasoning" and b.signature
        ]
        if not signed and not self._redacted:
            return None
        state: dict[str, Any] = {}
        if signed:
            state["thinking"] = signed
        if self._redacted:
            state["redactedThinking"] = list(self._redacted)
        return state

    def signatures(self) -> list[tuple[str, str]]:
        """(thinking text, signature) for every signed reasoning block emitted so far."""
        return [
            ("".join(b.parts), b.signature) for b in self._emitted if b.kind == "reasoning" and b.signature
        ]

    # --- emission -------------------------------------------------------------

    def _emit_head(self) -> None:
        """Open the head block of the queue and write what it buffered."""
        block = self._queue[0]
        writer = self._writer
        if block.kind == TOOL_CALL:
            block.index = writer.open_tool(block.call_id or None, block.name)
            block.call_id = writer.call_id or ""
        else:
            block.index = writer.open(block.kind)
        self._emitted.append(block)
        if block.pending:
            # Buffered pieces go out as one delta: the block was not live while they arrived.
            piece = "".join(block.pending)
            block.pending.clear()
            self._write(block, piece)

    def _drain(self) -> None:
        """End every stopped block at the head of the queue, opening the next ones."""
        while self._queue and self._queue[0].stopped:
            block = self._queue.pop(0)
            if block.kind == TOOL_CALL and not block.parts:
                # No input_json_delta at all: the start event's input (usually {}) is the arguments.
                self._write(block, block.initial_input)
            self._writer.close()
            if self._queue:
                self._emit_head()

    def _write(self, block: _Block, piece: str) -> None:
        """Write a piece of the live block (text, thinking or argument JSON)."""
        block.parts.append(piece)
        if block.kind == TOOL_CALL:
            self._writer.tool_call(fragment=piece)
        else:
            self._writer.text(block.kind, piece)


def _tool_block(content: dict[str, Any], wire_index: int, request_id: str | None) -> _Block:
    """A ``tool_use`` block from its start event: id, name, and the input it starts with."""
    name = content.get("name")
    if not isinstance(name, str) or not name:
        # Every tool_use names its tool; without one the call cannot be routed.
        raise _malformed(f"tool_use block {wire_index} without a name", request_id)
    call_id = content.get("id")
    block = _Block(kind=TOOL_CALL, call_id=call_id if isinstance(call_id, str) else "", name=name)
    initial = content.get("input")
    if isinstance(initial, dict) and initial:
        block.initial_input = json.dumps(initial, ensure_ascii=False)
    return block


def _text_block(kind: _Kind, content: dict[str, Any]) -> _Block:
    """A ``text`` or ``thinking`` block from its start event: the text and signature it starts with."""
    block = _Block(kind=kind)
    initial_text = content.get("text" if kind == "text" else "thinking")
    if isinstance(initial_text, str) and initial_text:
        block.pending.append(initial_text)
    signature = content.get("signature")
    if kind == "reasoning" and isinstance(signature, str) and signature:
        block.signature = signature
    return block


_HANDLERS: dict[str, Callable[[AnthropicTranslator, dict[str, Any]], None]] = {
    "content_block_start": AnthropicTranslator._block_start,
    "content_block_delta": AnthropicTranslator._block_delta,
    "content_block_stop": AnthropicTranslator._block_stop,
    "message_delta": AnthropicTranslator._message_delta,
    "message_stop": AnthropicTranslator._message_stop,
}
"""What each event of a started message does (other events write nothing)."""


_ITERATION_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)

_ADVISOR_ITERATION = "advisor_message"
"""The ``usage.iterations[]`` type of the advisor tool's model: its tokens are not this call's."""


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(loads(text), dict)
    except ValueError:
        return False


def _whole_count(usage: Mapping[str, Any], key: str) -> int | None:
    value = usage.get(key)
    return value if type(value) is int and value >= 0 else None


def read_whole(body: Mapping[str, Any]) -> tuple[TokenUsage | None, FinishReason | None]:
    """The usage and finish of a non-streaming Messages answer (None where it has none)."""
    usage = None
    raw = body.get("usage")
    if isinstance(raw, dict):
        usage = TokenUsage(
            input_tokens=_whole_count(raw, "input_tokens") or 0,
            output_tokens=_whole_count(raw, "output_tokens") or 0,
            cache_read_tokens=_whole_count(raw, "cache_read_input_tokens"),
            cache_write_tokens=_whole_count(raw, "cache_creation_input_tokens"),
        )
    reason = body.get("stop_reason")
    return usage, map_stop_reason(reason) if isinstance(reason, str) else None


def whole_answer(body: Mapping[str, Any]) -> list[AnyChunk]:
    """A non-streaming Messages answer as the chunks its stream would have been (server-side
    tool blocks, which Anthropic runs itself, are not the client's to run: left out)."""
    parts: list[WholePart] = []
    for block in whole_dicts(body.get("content")):
        kind = block.get("type")
        field = "text" if kind == "text" else "thinking" if kind == "thinking" else None
        if field is not None and isinstance(block.get(field), str):
            parts.append((TEXT if field == "text" else REASONING, block[field]))
        elif kind == "tool_use":
            parts += whole_call(block.get("id"), block.get("name"), block.get("input"))
    return whole_chunks(parts, *read_whole(body), "toolu_chunkscope_")
