"""The local provider's AWS Bedrock ConverseStream wire: a neutral script as binary event frames.

Routes: ``POST /model/{modelId}/converse-stream`` (the stream) and ``POST
/model/{modelId}/converse`` (one JSON body). The model is the path's (boto3 percent-encodes
it); the body has no ``model`` and no ``stream`` flag.

The stream is ``application/vnd.amazon.eventstream``: each event one frame (prelude with
its CRC32, the headers ``:event-type``, ``:content-type``, ``:message-type``, a JSON payload,
the message CRC32), encoded here (``encode_frame``; the provider shares no code with the
adapters it judges). ``messageStart``, then one block at a time: text and reasoning as
``contentBlockDelta`` only (``delta.text``, ``delta.reasoningContent.text``, a
``reasoningContent.signature`` delta before a reasoning block stops), a tool call as
``contentBlockStart`` (``toolUse {toolUseId, name}``) and ``delta.toolUse.input``
fragments; each block ends with ``contentBlockStop``. Then ``messageStop {stopReason}`` and,
after it, ``metadata {usage, metrics}`` (the ``metadata-after-stop`` dialect: usage follows
the stop). Every payload carries the ``p`` padding field real Bedrock adds.

Faults: ``fault-in-stream-error`` is an exception frame (``:message-type exception``,
``:exception-type serviceUnavailableException``, the ``exception-frames`` dialect);
``fault-malformed`` a frame whose message CRC does not match; ``fault-cut-before-usage``
ends after ``messageStop``; the content filter is ``stopReason guardrail_intervened``. HTTP
faults answer ``{"message"}`` with the exception's name in ``x-amzn-ErrorType``.

Usage: ``inputTokens`` leaves cache reads out (``cacheReadInputTokens`` beside it), and
``totalTokens`` is their sum with ``outputTokens``; reasoning tokens are inside
``outputTokens`` and never reported apart (the wire has no field for them).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .._scenarios import (
    CutBeforeUsage,
    Drop,
    Finish,
    HttpFault,
    Malformed,
    Reasoning,
    Script,
    Stall,
    Step,
    StreamError,
    Text,
    Tool,
    Truncate,
    WireFinish,
    WireUsage,
    collect_steps,
    tools_one_call_at_a_time,
)
from ._frames import Frame
from .anthropic import FAULT_ERRORS as ANTHROPIC_FAULT_ERRORS

__all__ = [
    "EXCEPTION_NAMES",
    "IN_STREAM_ERROR",
    "REASONING_SIGNATURE",
    "STOP_REASONS",
    "bedrock_body",
    "bedrock_stream",
    "conversation",
    "encode_frame",
    "error_body",
    "error_headers",
]

STOP_REASONS: dict[WireFinish, str] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "guardrail_intervened",
}
"""Neutral finish → Bedrock ``stopReason``."""

REASONING_SIGNATURE = "Y2h1bmtzY29wZS1sb2NhbA=="
"""The opaque signature every reasoning block carries."""

IN_STREAM_ERROR: dict[str, Any] = {"message": "Bedrock is unable to process your request."}
"""The payload of ``fault-in-stream-error``'s exception frame (and of its non-streaming answer)."""

IN_STREAM_EXCEPTION = "serviceUnavailableException"
"""The ``:exception-type`` of ``fault-in-stream-error``."""

EXCEPTION_NAMES: dict[int, str] = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    402: "ServiceQuotaExceededException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    413: "ValidationException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
"""An error answer's status → the exception ``x-amzn-ErrorType`` names."""

_ERROR_TYPE_SUFFIX = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
_PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


# --- framing ------------------------------------------------------------------------


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack("!H", len(raw_value)) + raw_value


def encode_headers(headers: Mapping[str, str]) -> bytes:
    """String headers in event-stream encoding (value type 7)."""
    return b"".join(_header(name, value) for name, value in headers.items())


def encode_frame(headers: bytes, payload: bytes) -> bytes:
    """One event-stream frame: prelude (lengths and their CRC32), headers, payload, message CRC32."""
    total = 16 + len(headers) + len(payload)
    prelude = struct.pack("!II", total, len(headers))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    message = prelude + headers + payload
    return message + struct.pack("!I", zlib.crc32(message))


_EVENT_HEADERS: dict[str, bytes] = {}


def _event_headers(event_type: str) -> bytes:
    headers = _EVENT_HEADERS.get(event_type)
    if headers is None:
        headers = _EVENT_HEADERS[event_type] = encode_headers(
            {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
        )
    return headers


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class _Events:
    """The frames of one stream, one method per kind of script step; tracks the open block."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.ids = _tool_ids(script.steps)
        self.index = -1
        self.open_key: tuple[str, int] | None = None  # (block kind, tool slot)
        self.sent = 0

    def event(self, event_type: str, payload: dict[str, Any]) -> bytes:
        self.sent += 1
        payload["p"] = _PADDING[: 1 + self.sent % len(_PADDING)]  # padding that hides the lengths
        return encode_frame(_event_headers(event_type), _dumps(payload).encode())

    def _close(self) -> Iterator[bytes]:
        if self.open_key is None:
            return
        if self.open_key[0] == "reasoning":
            delta = {"reasoningContent": {"signature": REASONING_SIGNATURE}}
            yield self.event("contentBlockDelta", {"contentBlockIndex": self.index, "delta": delta})
        yield self.event("contentBlockStop", {"contentBlockIndex": self.index})
        self.open_key = None

    def _open(self, key: tuple[str, int]) -> Iterator[bytes]:
        if key == self.open_key:
            return
        yield from self._close()
        self.index += 1
        self.open_key = key
        if key[0] == "tool":
            call_id, name = self.ids[key[1]]
            start = {"toolUse": {"toolUseId": call_id, "name": name}}
            yield self.event("contentBlockStart", {"contentBlockIndex": self.index, "start": start})

    def text(self, step: Text) -> Iterator[Frame]:
        yield from self._open(("text", -1))
        yield self.event("contentBlockDelta", {"contentBlockIndex": self.index, "delta": {"text": step.text}})

    def reasoning(self, step: Reasoning) -> Iterator[Frame]:
        yield from self._open(("reasoning", -1))
        delta = {"reasoningContent": {"text": step.text}}
        yield self.event("contentBlockDelta", {"contentBlockIndex": self.index, "delta": delta})

    def tool(self, step: Tool) -> Iterator[Frame]:
        yield from self._open(("tool", step.slot))
        if step.arguments is not None:
            delta = {"toolUse": {"input": step.arguments}}
            yield self.event("contentBlockDelta", {"contentBlockIndex": self.index, "delta": delta})

    def stop(self, reason: WireFinish) -> Iterator[Frame]:
        yield from self._close()
        yield self.event("messageStop", {"stopReason": STOP_REASONS[reason]})

    def finish(self, step: Finish) -> Iterator[Frame]:
        yield from self.stop(step.reason)
        yield self.event("metadata", {"usage": usage_of(self.script.usage), "metrics": {"latencyMs": 42}})

    def cut_before_usage(self, step: CutBeforeUsage) -> Iterator[Frame]:
        yield from self.stop(step.reason)  # the metadata that carries the usage never comes

    def malformed(self, step: Malformed) -> Iterator[Frame]:
        frame = self.event("contentBlockDelta", {"contentBlockIndex": self.index, "delta": {"text": "un"}})
        yield frame[:-4] + bytes(b ^ 0xFF for b in frame[-4:])  # the message CRC does not match

    def stream_error(self, step: StreamError) -> Iterator[Frame]:
        headers = encode_headers(
            {
                ":exception-type": IN_STREAM_EXCEPTION,
                ":content-type": "application/json",
                ":message-type": "exception",
            }
        )
        yield encode_frame(headers, _dumps(IN_STREAM_ERROR).encode())

    def pause_or_drop(self, step: Stall | Drop) -> Iterator[Frame]:
        yield step  # the server acts it out

    def truncate(self, step: Truncate) -> Iterator[Frame]:
        return iter(())


_STEP_EVENTS: dict[type, Callable[[_Events, Any], Iterator[Frame]]] = {
    Text: _Events.text,
    Reasoning: _Events.reasoning,
    Tool: _Events.tool,
    Finish: _Events.finish,
    CutBeforeUsage: _Events.cut_before_usage,
    Malformed: _Events.malformed,
    StreamError: _Events.stream_error,
    Stall: _Events.pause_or_drop,
    Drop: _Events.pause_or_drop,
    Truncate: _Events.truncate,
}
"""What each kind of step sends."""

_LAST_STEPS = (Finish, CutBeforeUsage, Malformed, StreamError, Drop, Truncate)
"""Steps after which the stream ends."""


def _tool_ids(steps: Sequence[Step]) -> dict[int, tuple[str, str]]:
    return {
        call.slot: (call.id or f"tooluse_chunkscope_{call.slot}", call.name or "")
        for call in collect_steps(steps).tools
    }


def usage_of(usage: WireUsage) -> dict[str, int]:
    """Bedrock's ``usage``: input without the cache reads, which are reported beside it."""
    cached = usage.cached or 0
    out = {
        "inputTokens": usage.prompt - cached,
        "outputTokens": usage.completion,
        "totalTokens": usage.prompt + usage.completion,
    }
    if usage.cached is not None:
        out["cacheReadInputTokens"] = usage.cached
    return out


def bedrock_stream(script: Script) -> Iterator[Frame]:
    """The frames of ``script`` on the ConverseStream wire, in order."""
    events = _Events(script)
    yield events.event("messageStart", {"role": "assistant"})
    for step in tools_one_call_at_a_time(script.steps):
        yield from _STEP_EVENTS[type(step)](events, step)
        if isinstance(step, _LAST_STEPS):
            return


def stream(script: Script, body: dict[str, Any], response_number: int, created: int) -> Iterator[Frame]:
    """The streaming answer to request ``body``."""
    return bedrock_stream(script)


def bedrock_body(script: Script) -> dict[str, Any]:
    """The non-streaming Converse body of ``script`` (its content up to any fault)."""
    ids = _tool_ids(script.steps)
    content: list[dict[str, Any]] = []
    kind: str | None = None
    for step in script.steps:
        if isinstance(step, Reasoning):
            if kind != "reasoning":
                content.append(
                    {"reasoningContent": {"reasoningText": {"text": "", "signature": REASONING_SIGNATURE}}}
                )
            content[-1]["reasoningContent"]["reasoningText"]["text"] += step.text
            kind = "reasoning"
        elif isinstance(step, Text):
            if kind != "text":
                content.append({"text": ""})
            content[-1]["text"] += step.text
            kind = "text"
        elif isinstance(step, (Tool, Stall)):
            continue
        else:
            break
    collected = collect_steps(script.steps)
    for call in collected.tools:
        call_id, name = ids[call.slot]
        content.append(
            {"toolUse": {"toolUseId": call_id, "name": name, "input": json.loads(call.arguments or "{}")}}
        )
    finish = collected.finish
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": STOP_REASONS[finish] if finish is not None else None,
        "usage": usage_of(script.usage),
        "metrics": {"latencyMs": 42},
    }


def whole(script: Script, body: dict[str, Any], response_number: int, created: int) -> dict[str, Any]:
    """The non-streaming answer to request ``body``."""
    return bedrock_body(script)


# --- errors -----------------------------------------------------------------------


def error_body(message: str, type_: str, code: str | None) -> dict[str, Any]:
    """An error answer's JSON body in this wire's shape: ``{"message"}`` (the kind is a header)."""
    return {"message": message}


def error_headers(status: int, error_type: str) -> Mapping[str, str]:
    """``x-amzn-ErrorType``: the exception's name (a type that is one already, else by status)."""
    name = error_type if error_type.endswith("Exception") else EXCEPTION_NAMES.get(status)
    if name is None:
        name = "InternalServerException" if status >= 500 else "ValidationException"
    return {"x-amzn-ErrorType": name + _ERROR_TYPE_SUFFIX}


def fault_body(fault: HttpFault) -> Mapping[str, Any]:
    """A scenario's HTTP fault as Bedrock says it: the message alone (Anthropic's words)."""
    return {"message": ANTHROPIC_FAULT_ERRORS[fault.kind][0]}


# --- the request ------------------------------------------------------------------


def model_of(params: Mapping[str, str], body: Mapping[str, Any]) -> object:
    """The model: the path's ``{model}``."""
    return params.get("model")


def streamed(path: str, body: Mapping[str, Any]) -> bool:
    """The route says it: ``…/converse-stream`` streams, ``…/converse`` answers whole."""
    return path.endswith("/converse-stream")


def conversation(body: Mapping[str, Any]) -> tuple[str, str | None]:
    """The last user message's text blocks joined, and the ``toolResult`` the conversation ends with."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return "", None
    return _prompt(messages), _ending_result(messages)


def _prompt(messages: list[Any]) -> str:
    """The text of the last user message with text (or of the last one that carries no tool result)."""
    prompt = ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            prompt = "".join(
                block["text"] for block in _blocks(message) if isinstance(block.get("text"), str)
            )
            if prompt or not _tool_results(message):
                break
    return prompt


def _ending_result(messages: list[Any]) -> str | None:
    """The text of the first ``toolResult`` of the user message the conversation ends with."""
    last = messages[-1] if messages else None
    if not isinstance(last, dict) or last.get("role") != "user":
        return None
    results = _tool_results(last)
    return _result_text(results[0]) if results else None


def _blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _tool_results(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [b["toolResult"] for b in _blocks(message) if isinstance(b.get("toolResult"), dict)]


def _result_text(result: Mapping[str, Any]) -> str:
    content = result.get("content")
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for item in content:
        if isinstance(item, dict):
            if isinstance(item.get("text"), str):
                parts.append(item["text"])
            elif "json" in item:
                parts.append(_dumps(item["json"]))
    return "".join(parts)
