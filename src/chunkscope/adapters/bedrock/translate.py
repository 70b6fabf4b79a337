"""Bedrock ConverseStream frames → StreamChunks (a pure translator, no I/O).

The wire (``POST /model/{modelId}/converse-stream``) is a sequence of
``application/vnd.amazon.eventstream`` frames (``framing.EventStreamDecoder``). An event
frame (``:message-type event``) names its event in ``:event-type``; its payload is JSON::

    messageStart        {"role": "assistant"}
    contentBlockStart   {"contentBlockIndex", "start": {"toolUse": {"toolUseId", "name"}}}
    contentBlockDelta   {"contentBlockIndex", "delta": {"text"} | {"toolUse": {"input"}} |
                                                       {"reasoningContent": {"text" | "signature" |
                                                                             "redactedContent"}}}
    contentBlockStop    {"contentBlockIndex"}
    messageStop         {"stopReason", "additionalModelResponseFields"?}
    metadata            {"usage": {"inputTokens", "outputTokens", "totalTokens",
                                   "cacheReadInputTokens"?, "cacheWriteInputTokens"?},
                         "metrics": {"latencyMs"}, "trace"?}

Every payload may carry ``p``, random padding that hides the lengths of the deltas: it is
never read. A text or reasoning block has no ``contentBlockStart``: its first delta opens it.

``BedrockTranslator`` writes through the shared ``BlockWriter``: blocks in the order the
wire opens them, never interleaved. Bedrock sends blocks one after another; a delta for a new
index ends the block before it (as its ``contentBlockStop`` would), and a delta for a block
already ended is ``MALFORMED_RESPONSE``. The finish is **held**: ``messageStop`` carries the
stop reason, and the usage follows in ``metadata``; the usage chunk and the finish go out
together at ``metadata``, the stream's last event (``done``). A stream that ends after
``messageStop`` without ``metadata`` is ``STREAM_CLOSED``.

Usage: Bedrock's ``inputTokens`` already leaves the cache out (``totalTokens`` = input +
output + cache read + cache write), so the counts are disjoint as sent; reasoning is inside
``outputTokens`` and never reported apart (no ``reasoningTokens``).

An exception frame (``:message-type exception``, its kind in ``:exception-type``, payload
``{"message"}``) ends the stream with its code after the output before it:
``throttlingException`` → ``RATE_LIMIT``; ``serviceUnavailableException``,
``internalServerException``, ``modelStreamErrorException`` → ``SERVER``;
``validationException`` → ``CONTEXT_WINDOW_EXCEEDED`` when its message says the input is
too long, else ``INVALID_REQUEST``. An ``error`` frame (``:error-code``,
``:error-message``: the event-stream protocol's own error) is mapped the same way by its code.

Ignored, on purpose: ``reasoningContent.signature`` and ``reasoningContent.redactedContent``
(opaque replay tokens; reasoning is not replayed to Bedrock, see ``request``), ``citation``,
``image`` and ``toolResult`` deltas (no StreamChunk counterpart), ``messageStart.role``,
``messageStop.additionalModelResponseFields``, ``metadata.metrics`` / ``trace`` /
``performanceConfig`` / ``serviceTier``, and event types this translator does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chunkscope.protocol import AnyChunk, FinishReason, LlmError, LlmFailure, TokenUsage

from .._arithmetic import bedrock_findings
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
from .._core.payload import parse_reference, scan_json
from .._failures import (
    MAX_CAUSE_CHARS,
    ProviderErrorBody,
    bounded,
    error_code,
    loads,
    preview,
)
from .._finish import finish_failure
from .framing import EventFrame

_SERVER_TOOL = "server_tool_use"
"""The ``toolUse.type`` of a tool AWS runs itself (Nova's ``nova_code_interpreter``): its
result follows in the stream, so it is never a call for the client to run."""

__all__ = ["BedrockTranslator", "bedrock_error_code", "map_stop_reason", "read_whole", "whole_answer"]


_EXCEPTION_CODES: dict[str, str] = {
    "throttlingexception": "RATE_LIMIT",
    "servicequotaexceededexception": "QUOTA",
    "serviceunavailableexception": "SERVER",
    "internalserverexception": "SERVER",
    "modelstreamerrorexception": "SERVER",
    "modeltimeoutexception": "SERVER",
    "modelerrorexception": "SERVER",
    "modelnotreadyexception": "RATE_LIMIT",
    "accessdeniedexception": "AUTH",
    "unrecognizedclientexception": "AUTH",
    "resourcenotfoundexception": "HTTP_404",
}
"""A Bedrock exception (its name lower-cased, either spelling: ``throttlingException`` in a
stream, ``ThrottlingException`` in ``x-amzn-ErrorType``) → its code; ``validationException``
is decided by its message (``bedrock_error_code``)."""


def bedrock_error_code(exception: str, message: str = "", status: int | None = None) -> str:
    """The ``LlmError`` code of a Bedrock exception named ``exception``.

    The Bedrock table first (``_EXCEPTION_CODES``); ``validationException`` is
    ``CONTEXT_WINDOW_EXCEEDED`` when ``message`` says so (``Input is too long for requested
    model``, the context wording every wire shares) and ``INVALID_REQUEST`` otherwise; any
    other name goes to the one table (``_failures.error_code``) with ``status``.
    """
    name = exception.partition(":")[0].strip().lower()
    if name == "validationexception":
        return error_code(400, detail=message, error_type="invalid_request")
    code = _EXCEPTION_CODES.get(name)
    if code is not None:
        return code
    return error_code(status, detail=" ".join(p for p in (exception, message) if p), error_type=name or None)


def map_stop_reason(stop_reason: str) -> FinishReason:
    """Map a Bedrock ``stopReason`` to a finish reason.

    ``end_turn`` / ``stop_sequence`` → stop, ``tool_use`` → tool-calls, ``max_tokens`` →
    max-tokens; anything else is an ``error`` finish with the registered code
    (``guardrail_intervened`` / ``content_filtered`` → ``CONTENT_FILTER``,
    ``model_context_window_exceeded`` → ``CONTEXT_WINDOW_EXCEEDED``,
    ``malformed_model_output`` / ``malformed_tool_use`` → ``MALFORMED_RESPONSE``; see
    ``_finish.FINISH_CODES``), or the upper-cased reason for one the package does not map.
    """
    if stop_reason in ("end_turn", "stop_sequence"):
        return FinishReason(kind="stop")
    if stop_reason == "tool_use":
        return FinishReason(kind="tool-calls")
    if stop_reason == "max_tokens":
        return FinishReason(kind="max-tokens")
    return finish_failure(stop_reason)


def _count(value: Any, name: str, rid: str | None) -> int | None:
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise LlmError(
            f"usage {name} is not a non-negative integer: {value!r}", "MALFORMED_RESPONSE", request_id=rid
        )
    return value


_OPEN, _STOPPED = 0, 1


class BedrockTranslator:
    """Stateful translator of one ConverseStream response into StreamChunks.

    ``feed(frame)`` takes one decoded ``EventFrame`` and returns the chunks it completes;
    ``feed_event(event_type, payload)`` takes an event frame's type and parsed payload
    (tests). ``done`` turns true at ``metadata`` (after ``messageStop``), whose chunks end with
    the usage and the finish; ``end()`` raises ``STREAM_CLOSED`` when it never came. Every
    failure is an ``LlmError``; chunks returned before a raise stay valid, and the chunks the
    failing frame wrote before it raised are in ``salvage()``.
    """

    def __init__(
        self, label: str = "Bedrock API", secrets: tuple[str, ...] = (), *, request_id: str | None = None
    ) -> None:
        self.label = label
        self.secrets = tuple(secrets)
        self.request_id = request_id
        self.done = False
        self._started = False
        self._writer = BlockWriter("tooluse_chunkscope_", self._malformed)
        self._blocks: dict[int, int] = {}  # wire index -> _OPEN / _STOPPED
        self._live = -1  # the wire index of the open block (-1: none)
        self._live_kind = ""
        self._stop_reason: str | None = None
        self._content = False  # a block with content (or a tool call) was written
        self._calls = 0
        self._usage: TokenUsage | None = None
        self._bad_call: str | None = None  # the first completed call whose input is not a JSON object
        self._server: set[int] = set()  # wire indexes of tools AWS runs itself (server_tool_use)

    # --- entry points ---------------------------------------------------------

    def feed(self, frame: EventFrame) -> list[AnyChunk]:
        """Translate one frame; returns the chunks it completes (none after the finish)."""
        if self.done:
            return []
        if frame.message_type != "event":
            raise self._exception(frame)
        event_type = frame.event_type
        try:
            text = frame.payload.decode()
            payload, end = scan_json(text, 0)
            if end != len(text):
                payload = self._parse_slowly(frame)  # trailing bytes, or whitespace
        except (StopIteration, ValueError, RecursionError):
            payload = self._parse_slowly(frame)
        if event_type == "contentBlockDelta" and type(payload) is dict and self._fast_delta(payload):
            return self._writer.take()
        return self.feed_event(event_type, payload)

    def _fast_delta(self, payload: dict[str, Any]) -> bool:
        """Write a delta that continues the live block (most of a stream); False: take the
        general path (``_delta``), which also says what is wrong with it."""
        delta = payload.get("delta")
        if type(delta) is not dict or self._live < 0 or payload.get("contentBlockIndex") != self._live:
            return False
        kind = self._live_kind
        if kind == TEXT:
            piece = delta.get("text")
        elif kind == REASONING:
            inner = delta.get("reasoningContent")
            piece = inner.get("text") if type(inner) is dict else None
        else:
            inner = delta.get("toolUse")
            piece = inner.get("input") if type(inner) is dict else None
            if type(piece) is str and piece and len(delta) == 1:
                self._writer.tool_call(fragment=piece)
                return True
            return False
        if type(piece) is not str or not piece or len(delta) != 1:
            return False
        self._writer.text(kind, piece)
        return True

    def _parse_slowly(self, frame: EventFrame) -> Any:
        """The payload as JSON (surrounding whitespace allowed), or ``MALFORMED_RESPONSE`` saying why not."""
        event_type = frame.event_type
        try:
            return parse_reference(frame.payload)
        except ValueError as exc:
            raise LlmError(
                f"malformed Bedrock stream event {event_type!r}: not JSON ({exc}): "
                f"{preview(frame.payload.decode('utf-8', 'replace'), self.secrets)}",
                "MALFORMED_RESPONSE",
                request_id=self.request_id,
            ) from None

    def feed_event(self, event_type: str, payload: Any) -> list[AnyChunk]:
        """Translate one event frame given its ``:event-type`` and its parsed payload."""
        if self.done:
            return []
        if type(payload) is not dict:
            raise self._malformed(f"Bedrock stream event {event_type!r} is not a JSON object")
        if event_type == "contentBlockDelta":  # most of a stream
            self._delta(payload)
            return self._writer.take()
        if event_type == "messageStart":
            if self._started:
                raise self._malformed("Bedrock stream sent a second messageStart")
            if self._blocks or self._server:
                raise self._malformed("Bedrock stream sent messageStart after its content began")
            self._started = True
            return []
        handler = _HANDLERS.get(event_type)
        if handler is None:
            return []  # an event type added after this adapter was written
        # messageStart carries only the role: a stream that opens without it is read on.
        handler(self, payload)
        return self._writer.take()

    def end(self) -> list[AnyChunk]:
        """The body ended: ``[]`` after ``metadata``, else ``LlmError`` ``STREAM_CLOSED``."""
        if not self.done:
            where = (
                "after messageStop, before metadata"
                if self._stop_reason is not None
                else "before messageStop"
            )
            raise LlmError(
                f"the Bedrock event stream ended {where}", "STREAM_CLOSED", request_id=self.request_id
            )
        return []

    def compact(self) -> None:
        """Join the open block's text pieces (``WireReader.compact``: a long stream's memory)."""
        self._writer.compact()

    def salvage(self) -> list[AnyChunk]:
        """The chunks the failing frame wrote before it raised (valid output; taken once)."""
        return self._writer.take()

    def usage(self) -> TokenUsage | None:
        """The usage ``metadata`` reported, None before it."""
        return self._usage

    # --- events ---------------------------------------------------------------

    def _malformed(self, message: str) -> LlmError:
        return LlmError(message, "MALFORMED_RESPONSE", request_id=self.request_id)

    def _index(self, payload: dict[str, Any], event: str) -> int:
        index = payload.get("contentBlockIndex")
        if type(index) is not int or index < 0:
            raise self._malformed(f"{event} without a non-negative integer contentBlockIndex")
        return index

    def _enter(self, index: int, kind: str, event: str) -> bool:
        """Make wire block ``index`` the live one; False when it is live already."""
        if index == self._live:
            if kind and kind != self._live_kind:
                raise self._malformed(f"{event} sends {kind} to the {self._live_kind} block {index}")
            return False
        if index in self._blocks:
            raise self._malformed(f"{event} for block {index}, which already ended")
        if self._stop_reason is not None:
            raise self._malformed(f"{event} after messageStop")
        if self._live >= 0:
            self._close_live()  # a new block ends the one before it
        self._blocks[index] = _OPEN
        self._live, self._live_kind = index, kind
        return True

    def _start(self, payload: dict[str, Any]) -> None:
        index = self._index(payload, "contentBlockStart")
        start = payload.get("start")
        tool = start.get("toolUse") if type(start) is dict else None
        if type(tool) is not dict:
            return  # a start for a block type we do not show (toolResult, image): its deltas are skipped
        if tool.get("type") == _SERVER_TOOL:
            # A tool AWS runs (Nova's nova_code_interpreter), its result in the next block: no
            # client call, so an agent loop never runs it; its input deltas are skipped too.
            self._server.add(index)
            return
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise self._malformed(f"toolUse block {index} without a name")
        if not self._enter(index, TOOL_CALL, "contentBlockStart"):
            raise self._malformed(f"contentBlockStart for block {index} twice")
        call_id = tool.get("toolUseId")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        if call_id is not None:
            self._writer.reserve_id(call_id)
        self._writer.open_tool(call_id, name, key=index)
        self._calls += 1
        self._content = True

    def _delta(self, payload: dict[str, Any]) -> None:
        index = self._index(payload, "contentBlockDelta")
        if index in self._server:
            return
        delta = payload.get("delta")
        if type(delta) is not dict:
            raise self._malformed("contentBlockDelta without a delta object")
        text = delta.get("text")
        if text is not None:
            self._text(index, TEXT, text, "text")
            return
        reasoning = delta.get("reasoningContent")
        if reasoning is not None:
            if type(reasoning) is not dict:
                raise self._malformed("contentBlockDelta reasoningContent is not an object")
            piece = reasoning.get("text")
            if piece is not None:
                self._text(index, REASONING, piece, "reasoningContent.text")
            return  # signature / redactedContent: opaque, not shown (module docstring)
        tool = delta.get("toolUse")
        if tool is not None:
            self._tool_input(index, tool)
        # citation, image, toolResult deltas: nothing we show

    def _text(self, index: int, kind: str, piece: Any, field: str) -> None:
        if not isinstance(piece, str):
            raise self._malformed(f"contentBlockDelta {field} is not a string")
        if not piece:
            # An empty delta (Kimi K2 opens each text block with one) writes nothing and opens
            # nothing: the block opens with its first text, on this general path that notes it.
            if index == self._live and kind != self._live_kind:
                self._enter(index, kind, "contentBlockDelta")  # says what is wrong
            return
        if index != self._live or kind != self._live_kind:
            self._enter(index, kind, "contentBlockDelta")
        self._writer.text(kind, piece)
        self._content = True

    def _tool_input(self, index: int, tool: Any) -> None:
        if index != self._live or self._live_kind != TOOL_CALL:
            raise self._malformed(f"toolUse input for block {index}, which is not an open toolUse block")
        piece = tool.get("input") if type(tool) is dict else None
        if not isinstance(piece, str):
            raise self._malformed("contentBlockDelta toolUse.input is not a string")
        if piece:
            self._writer.tool_call(fragment=piece)

    def _stop(self, payload: dict[str, Any]) -> None:
        index = self._index(payload, "contentBlockStop")
        if index == self._live:
            self._close_live()
            return
        if self._blocks.get(index) == _STOPPED:
            raise self._malformed(f"contentBlockStop for block {index} twice")
        self._blocks[index] = _STOPPED  # a block we never showed (no deltas, or a skipped type)

    def _close_live(self) -> None:
        if self._live_kind == TOOL_CALL:
            self._close_tool()
        self._writer.close()
        self._blocks[self._live] = _STOPPED
        self._live, self._live_kind = -1, ""

    def _close_tool(self) -> None:
        writer = self._writer
        arguments = writer.tool_arguments()
        if not arguments:
            writer.tool_call(fragment="{}")  # a call without input deltas takes no arguments
        elif self._bad_call is None and not _is_json_object(arguments):
            self._bad_call = f"{writer.name!r} ({writer.call_id or 'no id'})"

    def _message_stop(self, payload: dict[str, Any]) -> None:
        if self._stop_reason is not None:
            raise self._malformed("Bedrock stream sent a second messageStop")
        reason = payload.get("stopReason")
        if not isinstance(reason, str) or not reason:
            raise self._malformed("messageStop without a stopReason")
        if self._live >= 0:
            self._close_live()  # a block the wire never stopped ends with the message
        self._stop_reason = reason  # the finish waits for metadata (its usage comes first)

    def _metadata(self, payload: dict[str, Any]) -> None:
        if self._stop_reason is None:
            raise self._malformed("Bedrock stream sent metadata before messageStop")
        raw = payload.get("usage")
        usage = _usage(raw, self.request_id) if type(raw) is dict else None
        self._usage = usage
        findings = bedrock_findings(raw)
        self._writer.finish(self._final_reason(map_stop_reason(self._stop_reason)), usage, findings=findings)
        self.done = True

    def _final_reason(self, reason: FinishReason) -> FinishReason:
        rid = self.request_id
        if reason.kind == "stop" and not self._content:
            failure = LlmFailure(
                message="the model returned a completed response with no content",
                code="EMPTY_RESPONSE",
                request_id=rid,
            )
            return FinishReason(kind="error", failure=failure)
        if reason.kind == "tool-calls" and not self._calls:
            raise self._malformed("stopReason tool_use without any toolUse block")
        if reason.kind in ("stop", "tool-calls") and self._bad_call is not None:
            raise self._malformed(f"tool call {self._bad_call} arguments are not a JSON object")
        if reason.failure is not None and rid is not None:
            return FinishReason(
                kind=reason.kind, failure=reason.failure.model_copy(update={"request_id": rid})
            )
        return reason

    def _exception(self, frame: EventFrame) -> LlmError:
        """The ``LlmError`` of an exception or error frame (its message bounded and redacted)."""
        headers = frame.headers
        if frame.message_type == "error":
            name = headers.get(":error-code")
            message = headers.get(":error-message")
        else:
            name = frame.event_type
            message = None
            try:
                body = loads(frame.payload) if frame.payload else {}
            except ValueError:
                body = frame.payload.decode("utf-8", "replace")
            if isinstance(body, dict):
                message = body.get("message", body.get("Message"))
            elif isinstance(body, str):
                message = body
        name = name if isinstance(name, str) and name else (frame.message_type or "unknown")
        message = message if isinstance(message, str) else ""
        code = bedrock_error_code(name, message)
        text = f"{self.label} reported an error inside the stream: {message or 'no message'} ({name})"
        cause = ProviderErrorBody(bounded(f"{name}: {message}", self.secrets, MAX_CAUSE_CHARS))
        return LlmError(bounded(text, self.secrets), code, request_id=self.request_id, cause=cause)


_HANDLERS = {
    "contentBlockStart": BedrockTranslator._start,
    "contentBlockStop": BedrockTranslator._stop,
    "messageStop": BedrockTranslator._message_stop,
    "metadata": BedrockTranslator._metadata,
}
"""What each event after ``messageStart`` does (``contentBlockDelta`` has its own fast path)."""


def _is_json_object(text: str) -> bool:
    try:
        return type(loads(text)) is dict
    except ValueError:
        return False


def _usage(raw: Mapping[str, Any], rid: str | None) -> TokenUsage:
    """Bedrock's usage as disjoint counts: ``inputTokens`` already excludes the cache."""
    return TokenUsage(
        input_tokens=_count(raw.get("inputTokens"), "inputTokens", rid) or 0,
        output_tokens=_count(raw.get("outputTokens"), "outputTokens", rid) or 0,
        cache_read_tokens=_count(raw.get("cacheReadInputTokens"), "cacheReadInputTokens", rid),
        cache_write_tokens=_count(raw.get("cacheWriteInputTokens"), "cacheWriteInputTokens", rid),
    )


def read_whole(body: Mapping[str, Any]) -> tuple[TokenUsage | None, FinishReason | None]:
    """The usage and finish of a non-streaming Converse answer (None where it has none)."""
    usage = None
    raw = body.get("usage")
    if isinstance(raw, dict):
        try:
            usage = _usage(raw, None)
        except LlmError:
            usage = None
    reason = body.get("stopReason")
    return usage, map_stop_reason(reason) if isinstance(reason, str) else None


def whole_answer(body: Mapping[str, Any]) -> list[AnyChunk]:
    """A non-streaming Converse answer as the chunks its stream would have been (a server-side
    tool AWS runs, ``toolUse`` of type ``server_tool_use``, is not the client's: left out)."""
    output = body.get("output")
    message = output.get("message") if isinstance(output, dict) else None
    parts: list[WholePart] = []
    for block in whole_dicts(message.get("content") if isinstance(message, dict) else None):
        reasoning = block.get("reasoningContent")
        reasoning = reasoning.get("reasoningText") if isinstance(reasoning, dict) else None
        use = block.get("toolUse")
        if isinstance(block.get("text"), str):
            parts.append((TEXT, block["text"]))
        elif isinstance(reasoning, dict) and isinstance(reasoning.get("text"), str):
            parts.append((REASONING, reasoning["text"]))
        elif isinstance(use, dict) and use.get("type") != _SERVER_TOOL:
            parts += whole_call(use.get("toolUseId"), use.get("name"), use.get("input"))
    raw = body.get("usage")
    findings = bedrock_findings(raw)
    return whole_chunks(parts, *read_whole(body), "tooluse_chunkscope_", findings)
