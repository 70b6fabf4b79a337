"""The local provider's DeepSeek/OpenAI chat completions wire: a script as SSE chunks or one JSON body.

Routes: ``POST /v1/chat/completions`` and ``/chat/completions`` (DeepSeek's unversioned path).

The stream is what DeepSeek sends: a first chunk carrying only
``role: assistant`` with an empty ``content`` (an empty ``reasoning_content``
too when the reply reasons), one chunk per fragment (``reasoning_content``,
``content``, ``tool_calls[{index, id, type, function: {name, arguments}}]``,
id/type/name only where the script gives them), a chunk with the
``finish_reason`` and an empty delta, a usage-only chunk (``choices: []``)
when the request asked for ``stream_options.include_usage``, and
``data: [DONE]``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from .._scenarios import (
    Collected,
    CutBeforeUsage,
    Drop,
    FaultKind,
    Finish,
    HttpFault,
    Malformed,
    Reasoning,
    Script,
    Stall,
    StreamError,
    Text,
    Tool,
    ToolCall,
    Truncate,
    WireUsage,
    collect_steps,
)
from ._frames import Frame

__all__ = [
    "FAULT_ERRORS",
    "Frame",
    "openai_stream",
    "openai_body",
    "openai_usage",
    "MALFORMED_PAYLOAD",
    "IN_STREAM_ERROR",
    "fault_body",
]

FAULT_ERRORS: dict[FaultKind, tuple[str, str, str | None]] = {
    "invalid-key": (
        "Authentication Fails, Your api key is invalid",
        "authentication_error",
        "invalid_api_key",
    ),
    "insufficient-balance": ("Insufficient Balance", "insufficient_quota", "insufficient_quota"),
    "rate-limited": ("Rate limit reached for requests, retry after 2 seconds", "rate_limit_error", None),
    "server-error": ("Internal server error", "server_error", None),
    "context-overflow": (
        "This model's maximum context length is 65536 tokens. "
        "However, you requested 70000 tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
    ),
}
"""Each scenario fault's (message, type, code) as DeepSeek / OpenAI word them."""


def fault_body(fault: HttpFault) -> dict[str, Any]:
    """A scenario's HTTP fault as this wire's error body."""
    message, type_, code = FAULT_ERRORS[fault.kind]
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def error_body(message: str, type_: str, code: str | None) -> dict[str, Any]:
    """An error answer's JSON body in this wire's shape."""
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def stream(script: Script, body: dict[str, Any], response_number: int, created: int) -> Iterator[Frame]:
    """The streaming answer to request ``body``: ``usage`` only when it asked for it."""
    options = body.get("stream_options")
    return openai_stream(
        script,
        model=body["model"],
        response_id=f"chatcmpl-chunkscope-{response_number:06d}",
        created=created,
        include_usage=isinstance(options, dict) and options.get("include_usage") is True,
    )


def whole(script: Script, body: dict[str, Any], response_number: int, created: int) -> dict[str, Any]:
    """The non-streaming answer to request ``body``."""
    return openai_body(
        script, model=body["model"], response_id=f"chatcmpl-chunkscope-{response_number:06d}", created=created
    )


MALFORMED_PAYLOAD = '{"choices": [{"index": 0, "delta": {"content": "unterminated'
"""The ``fault-malformed`` payload: JSON cut short."""

IN_STREAM_ERROR: dict[str, Any] = {
    "error": {"message": "The server is overloaded", "type": "server_error", "code": "server_overloaded"}
}
"""The error object ``fault-in-stream-error`` sends inside its 200 stream."""


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _data(obj: Any) -> str:
    return f"data: {_dumps(obj)}\n\n"


def openai_usage(usage: WireUsage, dialect: str | None = None) -> dict[str, Any]:
    """DeepSeek's usage object: ``prompt_tokens`` INCLUDES the cache hits.

    In the ``xai-usage`` dialect ``completion_tokens`` leaves the reasoning
    tokens out, and ``total_tokens`` is prompt + completion + reasoning.
    """
    completion = usage.completion
    if dialect == "xai-usage" and usage.reasoning is not None:
        completion -= usage.reasoning
    out: dict[str, Any] = {
        "prompt_tokens": usage.prompt,
        "completion_tokens": completion,
        "total_tokens": usage.prompt + usage.completion,
    }
    if usage.cached is not None:
        out["prompt_cache_hit_tokens"] = usage.cached
        out["prompt_cache_miss_tokens"] = usage.prompt - usage.cached
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached}
    if usage.reasoning is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning}
    return out


def _tool_delta(step: Tool) -> dict[str, Any]:
    call: dict[str, Any] = {"index": step.slot}
    if step.id is not None:
        call["id"] = step.id
    if step.id is not None or step.name is not None:
        call["type"] = "function"
    function: dict[str, Any] = {}
    if step.name is not None:
        function["name"] = step.name
    if step.arguments is not None:
        function["arguments"] = step.arguments
    call["function"] = function
    return {"tool_calls": [call]}


def openai_stream(
    script: Script, *, model: str, response_id: str, created: int, include_usage: bool
) -> Iterator[Frame]:
    """The SSE events of ``script`` on the chat completions wire, in order."""
    events = _OpenAIEvents(script, model=model, response_id=response_id, created=created)
    yield events.first()
    for step in script.steps:
        if isinstance(step, Finish):
            yield from events.finish(step, include_usage)
            return
        yield from _STEP_EVENTS[type(step)](events, step)
        if isinstance(step, _LAST_STEPS):
            return


class _OpenAIEvents:
    """The events of one stream, one method per kind of script step."""

    def __init__(self, script: Script, *, model: str, response_id: str, created: int) -> None:
        self.script = script
        self.dialect = script.dialect
        self.envelope = {
            "id": response_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": None,
        }
        # Text and reasoning fragments are most of a stream: only their string is encoded per event.
        head = self.chunk({"~": 0}).split('{"~":0}')
        self.text_head = f'{head[0]}{{"content":'
        self.reasoning_head = f'{head[0]}{{"reasoning_content":'
        self.tail = "}" + head[1]
        self.reasoning_seen = 0
        self.reasoning_total = sum(isinstance(step, Reasoning) for step in script.steps)

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return _data({**self.envelope, "choices": [choice]})

    def first(self) -> str:
        reasons = self.script.reasons
        first: dict[str, Any] = {"role": "assistant", "content": None if reasons else ""}
        if reasons and self.dialect not in ("content-parts", "reasoning-details"):
            first["reasoning_content"] = ""
        return self.chunk(first)

    def text(self, step: Text) -> Iterator[Frame]:
        if self.dialect == "content-parts":
            yield self.chunk({"content": [{"type": "text", "text": step.text}]})
        else:
            yield self.text_head + _dumps(step.text) + self.tail

    def reasoning(self, step: Reasoning) -> Iterator[Frame]:
        if self.dialect == "content-parts":
            thinking = [{"type": "text", "text": step.text}]
            yield self.chunk({"content": [{"type": "thinking", "thinking": thinking}]})
        elif self.dialect == "reasoning-details":
            yield self.chunk(self._reasoning_details(step))
        else:
            yield self.reasoning_head + _dumps(step.text) + self.tail

    def _reasoning_details(self, step: Reasoning) -> dict[str, Any]:
        """The first half of the fragments only as details, the rest as both (said once each)."""
        detail = {"type": "reasoning.text", "text": step.text, "format": "unknown", "index": 0}
        delta: dict[str, Any] = {"reasoning_details": [detail]}
        if self.reasoning_seen >= self.reasoning_total // 2:
            delta = {"reasoning": step.text, **delta}
        self.reasoning_seen += 1
        return delta

    def tool(self, step: Tool) -> Iterator[Frame]:
        yield self.chunk(_tool_delta(step))

    def finish(self, step: Finish, include_usage: bool) -> Iterator[Frame]:
        yield self.chunk({}, step.reason)
        if include_usage:
            usage = openai_usage(self.script.usage, self.dialect)
            yield _data({**self.envelope, "choices": [], "usage": usage})
        yield "data: [DONE]\n" if self.dialect == "done-no-blank-line" else "data: [DONE]\n\n"

    def cut_before_usage(self, step: CutBeforeUsage) -> Iterator[Frame]:
        yield self.chunk({}, step.reason)

    def malformed(self, step: Malformed) -> Iterator[Frame]:
        yield f"data: {MALFORMED_PAYLOAD}\n\n"

    def stream_error(self, step: StreamError) -> Iterator[Frame]:
        yield _data(IN_STREAM_ERROR)

    def pause_or_drop(self, step: Stall | Drop) -> Iterator[Frame]:
        yield step  # the server acts it out

    def truncate(self, step: Truncate) -> Iterator[Frame]:
        return iter(())


_STEP_EVENTS: dict[type, Callable[[_OpenAIEvents, Any], Iterator[Frame]]] = {
    Text: _OpenAIEvents.text,
    Reasoning: _OpenAIEvents.reasoning,
    Tool: _OpenAIEvents.tool,
    CutBeforeUsage: _OpenAIEvents.cut_before_usage,
    Malformed: _OpenAIEvents.malformed,
    StreamError: _OpenAIEvents.stream_error,
    Stall: _OpenAIEvents.pause_or_drop,
    Drop: _OpenAIEvents.pause_or_drop,
    Truncate: _OpenAIEvents.truncate,
}
"""What each kind of step (other than ``Finish``, which needs the usage flag) sends."""

_LAST_STEPS = (CutBeforeUsage, Malformed, StreamError, Drop, Truncate)
"""Steps after which the stream ends."""


def _message(collected: Collected) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    message["content"] = collected.text if collected.text or not collected.tools else None
    if collected.reasoning:
        message["reasoning_content"] = collected.reasoning
    if collected.tools:
        message["tool_calls"] = [_tool_call(call) for call in collected.tools]
    return message


def _tool_call(call: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if call.id is not None:
        out["id"] = call.id
    out["type"] = "function"
    function: dict[str, Any] = {"name": call.name or ""}
    if call.arguments is not None:
        function["arguments"] = call.arguments
    out["function"] = function
    return out


def openai_body(script: Script, *, model: str, response_id: str, created: int) -> dict[str, Any]:
    """The non-streaming ``chat.completion`` body of ``script`` (its content up to any fault)."""
    collected = collect_steps(script.steps)
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": _message(collected),
                "logprobs": None,
                "finish_reason": collected.finish,
            }
        ],
        "usage": openai_usage(script.usage, script.dialect),
    }
