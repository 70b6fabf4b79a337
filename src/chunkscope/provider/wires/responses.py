"""The local provider's OpenAI Responses wire: a neutral script as SSE events or one JSON body.

Routes: ``POST /v1/responses`` and ``/responses``.

Every event is ``event: <type>`` plus a JSON ``data:`` whose ``type`` repeats it and whose
``sequence_number`` counts from 0, as OpenAI sends them: ``response.created`` and
``response.in_progress`` (the response with ``status: in_progress``, no output, no usage),
then one output item at a time — ``response.output_item.added``, its parts and deltas, the
``….done`` events, ``response.output_item.done`` with the whole item:

- reasoning: a ``reasoning`` item, ``response.reasoning_summary_part.added`` and
  ``response.reasoning_summary_text.delta`` (dialect ``summary-parts``: the fragments' second
  half in a second summary part; dialect ``reasoning-text``: ``response.reasoning_text.delta``,
  the full reasoning, instead of a summary);
- text: a ``message`` item, ``response.content_part.added`` (``output_text``),
  ``response.output_text.delta`` (dialect ``several-output-items``: the fragments' second half
  in a second message item);
- a tool call: a ``function_call`` item with its ``call_id`` and ``name`` (a call the script
  gives no id gets ``call_chunkscope_<slot>``: the wire always names one), one
  ``response.function_call_arguments.delta`` per fragment, ``…arguments.done``. Fragments of
  calls that alternate in the script are grouped per call: items do not interleave.

The finish is the terminal response with the whole output and the usage
(``input_tokens`` INCLUDES ``input_tokens_details.cached_tokens``, ``output_tokens``
includes ``output_tokens_details.reasoning_tokens``; both details always sent, 0 when the
script has none): ``stop`` / ``tool_calls`` → ``response.completed``; ``length`` →
``response.incomplete`` with ``incomplete_details.reason: max_output_tokens``;
``content_filter`` → ``response.incomplete`` with reason ``content_filter``. The in-stream
error is an ``error`` event (``code: server_error``) followed by ``response.failed``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .._scenarios import (
    CutBeforeUsage,
    Drop,
    Finish,
    Malformed,
    Reasoning,
    Script,
    Stall,
    Step,
    StreamError,
    Text,
    Tool,
    Truncate,
    WireUsage,
    collect_steps,
    tools_one_call_at_a_time,
)
from ._frames import Frame

__all__ = ["IN_STREAM_ERROR", "MALFORMED_PAYLOAD", "conversation", "error_body", "stream", "whole"]

MALFORMED_PAYLOAD = (
    '{"type":"response.output_text.delta","item_id":"msg_chunkscope","output_index":0,'
    '"content_index":0,"delta":"unterminated'
)
"""The ``fault-malformed`` payload: JSON cut short."""

IN_STREAM_ERROR: dict[str, Any] = {
    "type": "error",
    "code": "server_error",
    "message": "The server is overloaded",
    "param": None,
}
"""The ``error`` event ``fault-in-stream-error`` sends inside its 200 stream (its
``sequence_number`` added in the stream); also the body of its non-streaming answer."""


def error_body(message: str, type_: str, code: str | None) -> dict[str, Any]:
    """An error answer's JSON body in this wire's shape (OpenAI's)."""
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _response_id(number: int) -> str:
    return f"resp_chunkscope_{number:06d}"


def stream(script: Script, body: dict[str, Any], response_number: int, created: int) -> Iterator[Frame]:
    """The streaming answer to request ``body``."""
    return _ResponsesEvents(script, body, _response_id(response_number), created).frames()


def whole(script: Script, body: dict[str, Any], response_number: int, created: int) -> dict[str, Any]:
    """The non-streaming answer to request ``body``: the response the stream would end with."""
    events = _ResponsesEvents(script, body, _response_id(response_number), created)
    for _ in events.frames():
        pass
    finish = collect_steps(script.steps).finish
    return events.response(*_TERMINAL.get(finish or "stop", ("completed", None)))


# --- the conversation a request carries -------------------------------------------------


def conversation(body: Mapping[str, Any]) -> tuple[str, str | None]:
    """The last user message's text and the tool result the ``input`` ends with (else None).

    ``input`` is a string (one user message) or a list of items: messages whose ``content``
    is a string or ``input_text`` parts, and ``function_call_output`` items.
    """
    items = body.get("input")
    if isinstance(items, str):
        return items, None
    if not isinstance(items, list):
        return "", None
    last = items[-1] if items else None
    result = None
    if isinstance(last, dict) and last.get("type") == "function_call_output":
        result = _output_text(last.get("output"))
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role") == "user":
            return _content_text(item.get("content")), result
    return "", result


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict)
            and part.get("type") in ("input_text", "text", "output_text")
            and isinstance(part.get("text"), str)
        )
    return ""


def _output_text(output: Any) -> str | None:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return _content_text(output)
    return None


# --- the stream ---------------------------------------------------------------------


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


_TERMINAL: dict[str, tuple[str, str | None]] = {
    "stop": ("completed", None),
    "tool_calls": ("completed", None),
    "length": ("incomplete", "max_output_tokens"),
    "content_filter": ("incomplete", "content_filter"),
}
"""Neutral finish → (the terminal response's status, its ``incomplete_details.reason``)."""


def _usage(usage: WireUsage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt,
        "input_tokens_details": {"cached_tokens": usage.cached or 0},
        "output_tokens": usage.completion,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning or 0},
        "total_tokens": usage.prompt + usage.completion,
    }


def _splits(steps: Sequence[Step], kind: type, dialect: str | None, wanted: str) -> set[int]:
    """The positions (in ``steps``) where the dialect ``wanted`` starts a second part: the middle
    of each run of ``kind`` fragments."""
    if dialect != wanted:
        return set()
    cuts: set[int] = set()
    run: list[int] = []
    for position, step in enumerate([*steps, None]):
        if isinstance(step, kind):
            run.append(position)
            continue
        if len(run) > 1:
            cuts.add(run[(len(run) + 1) // 2])
        run = []
    return cuts


class _ResponsesEvents:
    """The events of one stream: the open item, the output so far, the sequence number."""

    def __init__(self, script: Script, body: Mapping[str, Any], response_id: str, created: int) -> None:
        self.script = script
        self.body = body
        self.id = response_id
        self.created = created
        self.sequence = 0
        self.output: list[dict[str, Any]] = []
        self.open: dict[str, Any] | None = None  # the item being streamed
        self.open_key: tuple[str, int] | None = None
        self.ids = {c.slot: c.id or f"call_chunkscope_{c.slot}" for c in collect_steps(script.steps).tools}
        self.names = {c.slot: c.name or "" for c in collect_steps(script.steps).tools}

    # -- framing --

    def event(self, kind: str, **fields: Any) -> str:
        payload = {"type": kind, **fields, "sequence_number": self.sequence}
        self.sequence += 1
        return f"event: {kind}\ndata: {_dumps(payload)}\n\n"

    def response(self, status: str, reason: str | None = None, *, final: bool = True) -> dict[str, Any]:
        """The response object: ``final`` with the whole output and the usage."""
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "error": None,
            "incomplete_details": {"reason": reason} if reason is not None else None,
            "instructions": self.body.get("instructions"),
            "max_output_tokens": self.body.get("max_output_tokens"),
            "model": self.body.get("model"),
            "output": list(self.output) if final else [],
            "parallel_tool_calls": True,
            "reasoning": self.body.get("reasoning") or {"effort": None, "summary": None},
            "store": self.body.get("store", True),
            "temperature": self.body.get("temperature", 1.0),
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": self.body.get("tools") or [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": _usage(self.script.usage) if final else None,
        }

    # -- the script --

    def frames(self) -> Iterator[Frame]:
        yield self.event("response.created", response=self.response("in_progress", final=False))
        yield self.event("response.in_progress", response=self.response("in_progress", final=False))
        steps = list(tools_one_call_at_a_time(self.script.steps))
        dialect = self.script.dialect
        reasoning_cuts = _splits(steps, Reasoning, dialect, "summary-parts")
        text_cuts = _splits(steps, Text, dialect, "several-output-items")
        for position, step in enumerate(steps):
            if isinstance(step, Reasoning):
                yield from self.reasoning(step, position in reasoning_cuts)
            elif isinstance(step, Text):
                yield from self.text(step, position in text_cuts)
            elif isinstance(step, Tool):
                yield from self.tool(step)
            elif isinstance(step, (Stall, Drop)):
                yield step  # the server acts it out
                if isinstance(step, Drop):
                    return
            else:
                yield from _END_STEPS[type(step)](self, step)
                return

    def _close(self) -> Iterator[str]:
        item = self.open
        if item is None:
            return
        index = len(self.output)
        if item["type"] == "message":
            part = item["content"][-1]
            yield self.event(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=part["text"],
                logprobs=[],
            )
            yield self.event(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
        elif item["type"] == "reasoning" and item.get("content"):
            text = item["content"][0]["text"]
            yield self.event(
                "response.reasoning_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
            )
        elif item["type"] == "reasoning":
            yield from self._close_summary_part(item, index)
        elif item["type"] == "function_call":
            yield self.event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        item["status"] = "completed"
        yield self.event("response.output_item.done", output_index=index, item=item)
        self.output.append(item)
        self.open = self.open_key = None

    def _close_summary_part(self, item: dict[str, Any], index: int) -> Iterator[str]:
        summary_index = len(item["summary"]) - 1
        part = item["summary"][summary_index]
        yield self.event(
            "response.reasoning_summary_text.done",
            item_id=item["id"],
            output_index=index,
            summary_index=summary_index,
            text=part["text"],
        )
        yield self.event(
            "response.reasoning_summary_part.done",
            item_id=item["id"],
            output_index=index,
            summary_index=summary_index,
            part=part,
        )

    def _open(self, key: tuple[str, int], item: dict[str, Any]) -> Iterator[str]:
        if key == self.open_key:
            return
        yield from self._close()
        self.open, self.open_key = item, key
        added = {**item, "status": "in_progress"} if "status" in item else dict(item)
        if item["type"] == "message":
            added["content"] = []
        elif item["type"] == "reasoning":
            added = {**added, "summary": [], **({"content": []} if "content" in item else {})}
        elif item["type"] == "function_call":
            added["arguments"] = ""
        yield self.event("response.output_item.added", output_index=len(self.output), item=added)

    def reasoning(self, step: Reasoning, new_part: bool) -> Iterator[Frame]:
        if self.open_key != ("reasoning", -1):
            yield from self._close()
        index = len(self.output)
        item_id = f"rs_chunkscope_{index}"
        raw = self.script.dialect == "reasoning-text"
        item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
        if raw:
            item["content"] = [{"type": "reasoning_text", "text": ""}]
        yield from self._open(("reasoning", -1), item)
        item = self.open or item
        if raw:
            item["content"][0]["text"] += step.text
            yield self.event(
                "response.reasoning_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=step.text,
            )
            return
        if new_part and item["summary"]:
            yield from self._close_summary_part(item, index)
        if new_part or not item["summary"]:
            item["summary"].append({"type": "summary_text", "text": ""})
            yield self.event(
                "response.reasoning_summary_part.added",
                item_id=item_id,
                output_index=index,
                summary_index=len(item["summary"]) - 1,
                part={"type": "summary_text", "text": ""},
            )
        item["summary"][-1]["text"] += step.text
        yield self.event(
            "response.reasoning_summary_text.delta",
            item_id=item_id,
            output_index=index,
            summary_index=len(item["summary"]) - 1,
            delta=step.text,
        )

    def text(self, step: Text, new_item: bool) -> Iterator[Frame]:
        if new_item or self.open_key != ("message", -1):
            yield from self._close()
        index = len(self.output)
        item_id = f"msg_chunkscope_{index}"
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        item = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [part],
        }
        if self.open_key != ("message", -1):
            yield from self._open(("message", -1), item)
            yield self.event(
                "response.content_part.added",
                item_id=item_id,
                output_index=index,
                content_index=0,
                part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""},
            )
        assert self.open is not None
        self.open["content"][0]["text"] += step.text
        yield self.event(
            "response.output_text.delta",
            item_id=item_id,
            output_index=index,
            content_index=0,
            delta=step.text,
            logprobs=[],
        )

    def tool(self, step: Tool) -> Iterator[Frame]:
        if self.open_key != ("call", step.slot):
            yield from self._close()
        item_id = f"fc_chunkscope_{step.slot}"
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": self.ids[step.slot],
            "name": self.names[step.slot],
        }
        yield from self._open(("call", step.slot), item)
        index = len(self.output)
        if step.arguments:
            assert self.open is not None
            self.open["arguments"] += step.arguments
            yield self.event(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=step.arguments,
            )

    # -- how a script ends --

    def finish(self, step: Finish) -> Iterator[Frame]:
        yield from self._close()
        status, reason = _TERMINAL[step.reason]
        kind = "response.completed" if status == "completed" else "response.incomplete"
        yield self.event(kind, response=self.response(status, reason))

    def cut_before_usage(self, step: CutBeforeUsage) -> Iterator[Frame]:
        yield from self._close()  # the stop would come with the usage, in the terminal response

    def malformed(self, step: Malformed) -> Iterator[Frame]:
        yield f"event: response.output_text.delta\ndata: {MALFORMED_PAYLOAD}\n\n"

    def stream_error(self, step: StreamError) -> Iterator[Frame]:
        yield self.event("error", **{k: v for k, v in IN_STREAM_ERROR.items() if k != "type"})
        failed = self.response("failed")
        failed["error"] = {"code": IN_STREAM_ERROR["code"], "message": IN_STREAM_ERROR["message"]}
        yield self.event("response.failed", response=failed)

    def truncate(self, step: Truncate) -> Iterator[Frame]:
        return iter(())


_END_STEPS: dict[type, Callable[[_ResponsesEvents, Any], Iterator[Frame]]] = {
    Finish: _ResponsesEvents.finish,
    CutBeforeUsage: _ResponsesEvents.cut_before_usage,
    Malformed: _ResponsesEvents.malformed,
    StreamError: _ResponsesEvents.stream_error,
    Truncate: _ResponsesEvents.truncate,
}
"""What each step that ends the stream sends."""
