"""The local provider's Anthropic Messages wire: a neutral script as SSE events or one JSON body.

Route: ``POST /v1/messages``.

``message_start`` (usage: ``input_tokens`` uncached, ``cache_read_input_tokens``
only when the script reports a cache hit), a ``ping``, then one content block
at a time: ``content_block_start`` (``thinking`` with an empty signature,
``text``, or ``tool_use`` with id, name and ``input: {}``),
``content_block_delta`` (``thinking_delta``, ``text_delta``,
``input_json_delta``), a ``signature_delta`` before a thinking block stops,
``content_block_stop``; then ``message_delta`` (``stop_reason``, output usage,
``output_tokens_details.thinking_tokens`` when the script reports reasoning
tokens) and ``message_stop``.

Blocks are sequential on this wire, so tool-call fragments that alternate in a
script are grouped per call here; a call the script never gives an id gets one
(``toolu_chunkscope_<slot>``), since a ``tool_use`` block always has an id.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .._scenarios import (
    CutBeforeUsage,
    Drop,
    FaultKind,
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
    ToolCall,
    Truncate,
    WireFinish,
    WireUsage,
    collect_steps,
    tools_one_call_at_a_time,
)
from ._frames import Frame

__all__ = [
    "FAULT_ERRORS",
    "anthropic_stream",
    "anthropic_body",
    "STOP_REASONS",
    "THINKING_SIGNATURE",
    "IN_STREAM_ERROR",
    "fault_body",
]

FAULT_ERRORS: dict[FaultKind, tuple[str, str]] = {
    "invalid-key": ("invalid x-api-key", "authentication_error"),
    "insufficient-balance": ("Insufficient Balance: your credit balance is too low", "billing_error"),
    "rate-limited": ("Rate limit reached for requests, retry after 2 seconds", "rate_limit_error"),
    "server-error": ("Internal server error", "api_error"),
    "context-overflow": (
        "input length and max_tokens exceed context limit: 70000 + 4096 > 65536, "
        "decrease input length or max_tokens and try again",
        "invalid_request_error",
    ),
}
"""Each scenario fault's (message, type) as the Messages API words them."""


def fault_body(fault: HttpFault) -> dict[str, Any]:
    """A scenario's HTTP fault as this wire's error body."""
    message, type_ = FAULT_ERRORS[fault.kind]
    return {"type": "error", "error": {"type": type_, "message": message}}


STOP_REASONS: dict[WireFinish, str] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
"""Neutral finish → Anthropic ``stop_reason``."""

THINKING_SIGNATURE = "Y2h1bmtzY29wZS1sb2NhbA=="
"""The opaque signature every thinking block carries."""

MALFORMED_PAYLOAD = '{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "un'
"""The ``fault-malformed`` payload: JSON cut short."""

IN_STREAM_ERROR: dict[str, Any] = {
    "type": "error",
    "error": {"type": "overloaded_error", "message": "Overloaded"},
}
"""The ``event: error`` payload ``fault-in-stream-error`` sends inside its 200 stream."""


def error_body(message: str, type_: str, code: str | None) -> dict[str, Any]:
    """An error answer's JSON body in this wire's shape."""
    body: dict[str, Any] = {"type": "error", "error": {"type": type_, "message": message}}
    if code is not None:
        body["error"]["code"] = code
    return body


def stream(script: Script, body: dict[str, Any], response_number: int, created: int) -> Iterator[Frame]:
    """The streaming answer to request ``body``."""
    return anthropic_stream(script, model=body["model"], message_id=f"msg_chunkscope_{response_number:06d}")


def whole(script: Script, body: dict[str, Any], response_number: int, created: int) -> dict[str, Any]:
    """The non-streaming answer to request ``body``."""
    return anthropic_body(script, model=body["model"], message_id=f"msg_chunkscope_{response_number:06d}")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _event(name: str, payload: Any) -> str:
    return f"event: {name}\ndata: {_dumps(payload)}\n\n"


# Text and thinking fragments are most of a stream: only their string is encoded per event.
_DELTA_HEAD = 'event: content_block_delta\ndata: {"type":"content_block_delta","index":'
_TEXT_DELTA = ',"delta":{"type":"text_delta","text":'
_THINKING_DELTA = ',"delta":{"type":"thinking_delta","thinking":'


def _tool_ids(steps: Sequence[Step]) -> dict[int, tuple[str, str]]:
    ids: dict[int, tuple[str, str]] = {}
    for call in collect_steps(steps).tools:
        ids[call.slot] = (call.id or f"toolu_chunkscope_{call.slot}", call.name or "")
    return ids


def _start_usage(usage: WireUsage) -> dict[str, Any]:
    compacted = usage.compaction[0] if usage.compaction is not None else 0
    out: dict[str, Any] = {"input_tokens": usage.prompt - (usage.cached or 0) - compacted, "output_tokens": 0}
    if usage.cached is not None:
        out["cache_read_input_tokens"] = usage.cached
    return out


def _final_usage(usage: WireUsage) -> dict[str, Any]:
    if usage.compaction is not None:
        # Top-level counts are the message iteration's; the compaction iteration is billed apart.
        compact_in, compact_out = usage.compaction
        message_in = usage.prompt - (usage.cached or 0) - compact_in
        message_out = usage.completion - compact_out
        return {
            "input_tokens": message_in,
            "output_tokens": message_out,
            "iterations": [
                {"type": "compaction", "input_tokens": compact_in, "output_tokens": compact_out},
                {"type": "message", "input_tokens": message_in, "output_tokens": message_out},
            ],
        }
    out: dict[str, Any] = {"output_tokens": usage.completion}
    if usage.reasoning is not None:
        out["output_tokens_details"] = {"thinking_tokens": usage.reasoning}
    return out


def anthropic_stream(script: Script, *, model: str, message_id: str) -> Iterator[Frame]:
    """The SSE events of ``script`` on the Messages wire, in order."""
    yield _event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": _start_usage(script.usage),
            },
        },
    )
    yield _event("ping", {"type": "ping"})
    events = _AnthropicEvents(script)
    for step in tools_one_call_at_a_time(script.steps):
        yield from _STEP_EVENTS[type(step)](events, step)
        if isinstance(step, _LAST_STEPS):
            return


class _AnthropicEvents:
    """The events of one stream, one method per kind of script step; tracks the open block."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.ids = _tool_ids(script.steps)
        self.index = -1
        self.open_key: tuple[str, int] | None = None  # (block kind, tool slot)

    def _close(self) -> Iterator[str]:
        if self.open_key is None:
            return
        if self.open_key[0] == "thinking":
            yield _delta(self.index, {"type": "signature_delta", "signature": THINKING_SIGNATURE})
        yield _event("content_block_stop", {"type": "content_block_stop", "index": self.index})

    def _open(self, key: tuple[str, int], block: dict[str, Any]) -> Iterator[str]:
        """Close the open block and start ``block``, unless a block of ``key`` is already open."""
        if key == self.open_key:
            return
        yield from self._close()
        self.index += 1
        self.open_key = key
        start = {"type": "content_block_start", "index": self.index, "content_block": block}
        yield _event("content_block_start", start)

    def text(self, step: Text) -> Iterator[Frame]:
        yield from self._open(("text", -1), {"type": "text", "text": ""})
        yield f"{_DELTA_HEAD}{self.index}{_TEXT_DELTA}{_dumps(step.text)}}}}}\n\n"

    def reasoning(self, step: Reasoning) -> Iterator[Frame]:
        yield from self._open(("thinking", -1), {"type": "thinking", "thinking": "", "signature": ""})
        yield f"{_DELTA_HEAD}{self.index}{_THINKING_DELTA}{_dumps(step.text)}}}}}\n\n"

    def tool(self, step: Tool) -> Iterator[Frame]:
        call_id, name = self.ids[step.slot]
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        yield from self._open(("tool", step.slot), block)
        if step.arguments is not None:
            yield _delta(self.index, {"type": "input_json_delta", "partial_json": step.arguments})

    def finish(self, step: Finish) -> Iterator[Frame]:
        yield from self._close()
        yield _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": STOP_REASONS[step.reason], "stop_sequence": None},
                "usage": _final_usage(self.script.usage),
            },
        )
        yield _event("message_stop", {"type": "message_stop"})

    def malformed(self, step: Malformed) -> Iterator[Frame]:
        yield f"event: content_block_delta\ndata: {MALFORMED_PAYLOAD}\n\n"

    def stream_error(self, step: StreamError) -> Iterator[Frame]:
        yield _event("error", IN_STREAM_ERROR)

    def cut_before_usage(self, step: CutBeforeUsage) -> Iterator[Frame]:
        yield from self._close()  # the stop reason would come with the usage, in message_delta

    def pause_or_drop(self, step: Stall | Drop) -> Iterator[Frame]:
        yield step  # the server acts it out

    def truncate(self, step: Truncate) -> Iterator[Frame]:
        return iter(())


_STEP_EVENTS: dict[type, Callable[[_AnthropicEvents, Any], Iterator[Frame]]] = {
    Text: _AnthropicEvents.text,
    Reasoning: _AnthropicEvents.reasoning,
    Tool: _AnthropicEvents.tool,
    Finish: _AnthropicEvents.finish,
    CutBeforeUsage: _AnthropicEvents.cut_before_usage,
    Malformed: _AnthropicEvents.malformed,
    StreamError: _AnthropicEvents.stream_error,
    Stall: _AnthropicEvents.pause_or_drop,
    Drop: _AnthropicEvents.pause_or_drop,
    Truncate: _AnthropicEvents.truncate,
}
"""What each kind of step sends."""

_LAST_STEPS = (Finish, CutBeforeUsage, Malformed, StreamError, Drop, Truncate)
"""Steps after which the stream ends."""


def _delta(index: int, delta: dict[str, Any]) -> str:
    return _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _tool_block(call: ToolCall, ids: dict[int, tuple[str, str]]) -> dict[str, Any]:
    call_id, name = ids[call.slot]
    return {"type": "tool_use", "id": call_id, "name": name, "input": json.loads(call.arguments or "{}")}


def anthropic_body(script: Script, *, model: str, message_id: str) -> dict[str, Any]:
    """The non-streaming ``message`` body of ``script`` (its content up to any fault)."""
    ids = _tool_ids(script.steps)
    content: list[dict[str, Any]] = []
    kind: str | None = None
    for step in collect_steps_in_order(script.steps):
        if isinstance(step, Reasoning):
            if kind != "thinking":
                content.append({"type": "thinking", "thinking": "", "signature": THINKING_SIGNATURE})
            content[-1]["thinking"] += step.text
            kind = "thinking"
        elif isinstance(step, Text):
            if kind != "text":
                content.append({"type": "text", "text": ""})
            content[-1]["text"] += step.text
            kind = "text"
    for call in collect_steps(script.steps).tools:
        content.append(_tool_block(call, ids))
    finish = collect_steps(script.steps).finish
    usage = {**_start_usage(script.usage), **_final_usage(script.usage)}
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": STOP_REASONS[finish] if finish is not None else None,
        "stop_sequence": None,
        "usage": usage,
    }


def collect_steps_in_order(steps: Sequence[Step]) -> list[Step]:
    """The content steps before the script's finish or its ending fault."""
    out: list[Step] = []
    for step in steps:
        if isinstance(step, (Reasoning, Text, Tool)):
            out.append(step)
        elif isinstance(step, Stall):
            continue
        else:
            break
    return out
