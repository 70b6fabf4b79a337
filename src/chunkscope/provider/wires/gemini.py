"""The local provider's Google Gemini wire: a neutral script as ``GenerateContentResponse`` events.

Routes: ``POST /v1beta/models/{model}:streamGenerateContent`` (``?alt=sse``: SSE events) and
``…:generateContent`` (one JSON body), also under ``/v1``. The model is the path's.

Each event is a whole ``GenerateContentResponse``: one candidate whose ``content.parts`` hold
the step's fragment (``{"text"}``, ``{"text", "thought": true}``, or one whole
``functionCall`` ``{"name", "args", "id"?}`` at a call's first fragment), a prompt-only
``usageMetadata`` (Gemini repeats it on every event), ``modelVersion`` and ``responseId``.
The last event carries the ``finishReason`` (``STOP`` for a stop and for tool calls,
``MAX_TOKENS``, ``SAFETY`` with a blocked safety rating for a content filter) and the whole
``usageMetadata``: ``promptTokenCount`` INCLUDES ``cachedContentTokenCount``,
``candidatesTokenCount`` EXCLUDES ``thoughtsTokenCount``. There is no end marker.

Dialects (``Script.dialect``): ``partial-args`` streams each call's arguments as
``partialArgs`` JSON-path patches (Gemini 3 on Vertex AI: the name first, strings in pieces
with ``willContinue``, then an empty ``functionCall`` ends it); ``crlf-framing`` ends every
line with CRLF, as generativelanguage.googleapis.com frames its events.

Faults: ``fault-in-stream-error`` sends ``{"error": {"code": 503, "status": "UNAVAILABLE"}}``
inside the 200 stream; HTTP faults answer Google's ``google.rpc.Status`` body, its ``status``
named from the HTTP status (429: ``RESOURCE_EXHAUSTED`` with a per-minute ``QuotaFailure``
and a ``RetryInfo``; 402: a per-day ``QuotaFailure``; 401: an ``ErrorInfo`` ``API_KEY_INVALID``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
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
    StreamError,
    Text,
    Tool,
    ToolCall,
    Truncate,
    WireFinish,
    WireUsage,
    collect_steps,
)
from ._frames import Frame
from .openai import FAULT_ERRORS as OPENAI_FAULT_ERRORS

__all__ = [
    "FINISH_REASONS",
    "IN_STREAM_ERROR",
    "MALFORMED_PAYLOAD",
    "ROUTES",
    "conversation",
    "error_body",
    "fault_body",
    "gemini_body",
    "gemini_stream",
    "model_of",
    "partial_patches",
    "streamed",
]

ROUTES = tuple(
    f"/{version}/models/{{model}}:{method}"
    for version in ("v1beta", "v1")
    for method in ("streamGenerateContent", "generateContent")
)
"""The model calls this wire serves (the ``{model}`` path parameter names the scenario)."""

FINISH_REASONS: dict[WireFinish, str] = {
    "stop": "STOP",
    "tool_calls": "STOP",  # Gemini says STOP after function calls too
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}
"""Neutral finish → Gemini ``finishReason``."""

MODEL_VERSION = "chunkscope-local"
"""The ``modelVersion`` every answer names (the request's model is in its path, not the body)."""

MALFORMED_PAYLOAD = '{"candidates": [{"content": {"role": "model", "parts": [{"text": "unterminated'
"""The ``fault-malformed`` payload: JSON cut short."""

IN_STREAM_ERROR: dict[str, Any] = {
    "error": {
        "code": 503,
        "message": "The model is overloaded. Please try again later.",
        "status": "UNAVAILABLE",
    }
}
"""The error object ``fault-in-stream-error`` sends inside its 200 stream."""

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    402: "RESOURCE_EXHAUSTED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
"""HTTP status → the ``google.rpc.Code`` name Google's APIs answer it with."""

_RPC = "type.googleapis.com/google.rpc."
_SAFETY_BLOCK = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]


# --- the routes' hooks ------------------------------------------------------------


def model_of(params: Mapping[str, str], body: Mapping[str, Any]) -> object:
    """The model: the route's ``{model}`` (the body has none)."""
    return params.get("model")


def streamed(path: str, body: Mapping[str, Any]) -> bool:
    """A stream is asked for by the method: ``:streamGenerateContent``."""
    return path.endswith(":streamGenerateContent")


def conversation(body: Mapping[str, Any]) -> tuple[str, str | None]:
    """The text of the last user turn with text, and the ``functionResponse`` the conversation
    ends with (its ``output``, ``error`` or ``result`` string, else its JSON), else None."""
    contents = body.get("contents")
    turns = [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []
    return _prompt(turns), _ending_response(turns)


def _prompt(turns: list[dict[str, Any]]) -> str:
    for turn in reversed(turns):
        if turn.get("role", "user") != "user":
            continue
        texts = [p["text"] for p in _parts(turn) if isinstance(p.get("text"), str)]
        if texts:
            return "".join(texts)
    return ""


def _ending_response(turns: list[dict[str, Any]]) -> str | None:
    if not turns or turns[-1].get("role", "user") != "user":
        return None
    for part in _parts(turns[-1]):
        response = part.get("functionResponse")
        if isinstance(response, dict):
            return _response_text(response.get("response"))
    return None


def _parts(turn: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts = turn.get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _response_text(response: Any) -> str:
    if isinstance(response, dict):
        for key in ("output", "error", "result"):
            if isinstance(response.get(key), str):
                return str(response[key])
    return json.dumps(response, ensure_ascii=False)


def error_body(message: str, type_: str, code: str | None) -> dict[str, Any]:
    """An error answer of the provider's own (bad body, unknown model …) in Google's shape."""
    if code == "model_not_found" or type_ == "NOT_FOUND":
        status = 404
    elif code == "request_too_large":
        status = 413
    elif code == "request_timeout":
        status = 408
    else:
        status = 400
    return {"error": {"code": status, "message": message, "status": _STATUS_NAMES[status]}}


def fault_body(fault: HttpFault) -> dict[str, Any]:
    """A scenario's HTTP fault as a ``google.rpc.Status`` body: the status named from the HTTP
    status, OpenAI's words (a context overflow in Gemini's own)."""
    if fault.kind == "context-overflow":
        message = "The input token count (70000) exceeds the maximum number of tokens allowed (65536)."
    else:
        message = OPENAI_FAULT_ERRORS[fault.kind][0]
    out: dict[str, Any] = {
        "code": fault.status,
        "message": message,
        "status": _STATUS_NAMES.get(fault.status, "INTERNAL" if fault.status >= 500 else "UNKNOWN"),
    }
    details = _fault_details(fault)
    if details:
        out["details"] = details
    return {"error": out}


def _fault_details(fault: HttpFault) -> list[dict[str, Any]]:
    if fault.status == 401:
        return [{"@type": _RPC + "ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]
    if fault.status not in (402, 429):
        return []
    per = "PerDay" if fault.status == 402 else "PerMinute"
    quota = {
        "@type": _RPC + "QuotaFailure",
        "violations": [
            {
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                "quotaId": f"GenerateRequests{per}PerProjectPerModel",
            }
        ],
    }
    details: list[dict[str, Any]] = [quota]
    delay = fault.headers.get("retry-after")
    if fault.status == 429:
        details.append({"@type": _RPC + "RetryInfo", "retryDelay": f"{delay or '1'}s"})
    return details


def stream(script: Script, body: dict[str, Any], response_number: int, created: int) -> Iterator[Frame]:
    """The streaming answer to request ``body``."""
    return gemini_stream(script, response_id=_response_id(response_number))


def whole(script: Script, body: dict[str, Any], response_number: int, created: int) -> dict[str, Any]:
    """The non-streaming answer to request ``body``."""
    return gemini_body(script, response_id=_response_id(response_number))


def _response_id(number: int) -> str:
    return f"chunkscope-{number:06d}"


# --- the stream -------------------------------------------------------------------


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _prompt_usage(usage: WireUsage) -> dict[str, Any]:
    out: dict[str, Any] = {"promptTokenCount": usage.prompt, "totalTokenCount": usage.prompt}
    if usage.cached is not None:
        out["cachedContentTokenCount"] = usage.cached
    return out


def gemini_usage(usage: WireUsage) -> dict[str, Any]:
    """The final ``usageMetadata``: prompt includes the cache hits, candidates exclude the thoughts."""
    out = _prompt_usage(usage)
    out["candidatesTokenCount"] = usage.completion - (usage.reasoning or 0)
    out["totalTokenCount"] = usage.prompt + usage.completion
    if usage.reasoning is not None:
        out["thoughtsTokenCount"] = usage.reasoning
    out["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": usage.prompt}]
    return out


def _call_part(call: ToolCall) -> dict[str, Any]:
    function: dict[str, Any] = {"name": call.name or "", "args": json.loads(call.arguments or "{}")}
    if call.id is not None:
        function["id"] = call.id
    return {"functionCall": function}


def partial_patches(args: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``partialArgs`` patches of ``args`` in document order (strings in two pieces).

    An empty object or array has no patch form; the scenarios' arguments have none.
    """
    patches: list[dict[str, Any]] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{path}.{key}")
        elif isinstance(value, list):
            for index, inner in enumerate(value):
                walk(inner, f"{path}[{index}]")
        elif isinstance(value, str):
            cut = len(value) // 2
            if cut:
                patches.append({"jsonPath": path, "stringValue": value[:cut], "willContinue": True})
            patches.append({"jsonPath": path, "stringValue": value[cut:]})
        elif isinstance(value, bool):
            patches.append({"jsonPath": path, "boolValue": value})
        elif value is None:
            patches.append({"jsonPath": path, "nullValue": "NULL_VALUE"})
        else:
            patches.append({"jsonPath": path, "numberValue": value})

    walk(dict(args), "$")
    return patches


class _GeminiEvents:
    """The events of one stream; tracks which tool calls went out already."""

    def __init__(self, script: Script, response_id: str) -> None:
        self.script = script
        self.response_id = response_id
        self.end = "\r\n\r\n" if script.dialect == "crlf-framing" else "\n\n"
        self.partial = script.dialect == "partial-args"
        self.prompt_usage = _prompt_usage(script.usage)
        self.calls: dict[int, ToolCall] | None = None  # read on the first tool step
        self.sent: set[int] = set()
        # Text events are most of a stream: only their string is encoded per event.
        tail = {"usageMetadata": self.prompt_usage, "modelVersion": MODEL_VERSION, "responseId": response_id}
        self._text_head = 'data: {"candidates":[{"content":{"parts":[{"text":'
        self._text_tail = '}],"role":"model"},"index":0}],' + _dumps(tail)[1:] + self.end

    def event(
        self, parts: list[dict[str, Any]], usage: dict[str, Any] | None = None, **candidate: Any
    ) -> str:
        entry: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, **candidate, "index": 0}
        payload = {
            "candidates": [entry],
            "usageMetadata": usage if usage is not None else self.prompt_usage,
            "modelVersion": MODEL_VERSION,
            "responseId": self.response_id,
        }
        return f"data: {_dumps(payload)}{self.end}"

    def text(self, step: Text) -> Iterator[Frame]:
        yield f"{self._text_head}{_dumps(step.text)}{self._text_tail}"

    def reasoning(self, step: Reasoning) -> Iterator[Frame]:
        yield self.event([{"text": step.text, "thought": True}])

    def tool(self, step: Tool) -> Iterator[Frame]:
        if self.calls is None:
            self.calls = {call.slot: call for call in collect_steps(self.script.steps).tools}
        if step.slot in self.sent:
            return
        self.sent.add(step.slot)
        call = self.calls[step.slot]
        if not self.partial:
            yield self.event([_call_part(call)])
            return
        patches = partial_patches(json.loads(call.arguments or "{}"))
        first: dict[str, Any] = {"name": call.name or "", "willContinue": True}
        if call.id is not None:
            first["id"] = call.id
        if patches:
            first["partialArgs"] = patches[:1]
        yield self.event([{"functionCall": first}])
        for patch in patches[1:]:
            yield self.event([{"functionCall": {"partialArgs": [patch], "willContinue": True}}])
        yield self.event([{"functionCall": {}}])

    def finish(self, step: Finish) -> Iterator[Frame]:
        extra: dict[str, Any] = {"finishReason": FINISH_REASONS[step.reason]}
        if step.reason == "content_filter":
            extra["safetyRatings"] = _SAFETY_BLOCK
        yield self.event([{"text": ""}], usage=gemini_usage(self.script.usage), **extra)

    def malformed(self, step: Malformed) -> Iterator[Frame]:
        yield f"data: {MALFORMED_PAYLOAD}{self.end}"

    def stream_error(self, step: StreamError) -> Iterator[Frame]:
        yield f"data: {_dumps(IN_STREAM_ERROR)}{self.end}"

    def pause_or_drop(self, step: Stall | Drop) -> Iterator[Frame]:
        yield step  # the server acts it out

    def nothing(self, step: CutBeforeUsage | Truncate) -> Iterator[Frame]:
        # No end marker on this wire: the finishReason (with the usage) is what ends a stream.
        return iter(())


_STEP_EVENTS = {
    Text: _GeminiEvents.text,
    Reasoning: _GeminiEvents.reasoning,
    Tool: _GeminiEvents.tool,
    Finish: _GeminiEvents.finish,
    CutBeforeUsage: _GeminiEvents.nothing,
    Malformed: _GeminiEvents.malformed,
    StreamError: _GeminiEvents.stream_error,
    Stall: _GeminiEvents.pause_or_drop,
    Drop: _GeminiEvents.pause_or_drop,
    Truncate: _GeminiEvents.nothing,
}
"""What each kind of step sends."""

_LAST_STEPS = (Finish, CutBeforeUsage, Malformed, StreamError, Drop, Truncate)
"""Steps after which the stream ends."""


def gemini_stream(script: Script, *, response_id: str) -> Iterator[Frame]:
    """The SSE events of ``script`` on the Gemini wire, in order."""
    events = _GeminiEvents(script, response_id)
    for step in script.steps:
        yield from _STEP_EVENTS[type(step)](events, step)  # type: ignore[operator]
        if isinstance(step, _LAST_STEPS):
            return


def _whole_parts(script: Script, calls: dict[int, ToolCall]) -> list[dict[str, Any]]:
    """The parts of a whole answer: runs of text (or of thought) merged, each call once, up to a fault."""
    parts: list[dict[str, Any]] = []
    kind: str | None = None
    for step in script.steps:
        if isinstance(step, (Reasoning, Text)):
            thought = isinstance(step, Reasoning)
            if kind != ("thought" if thought else "text"):
                parts.append({"text": "", "thought": True} if thought else {"text": ""})
                kind = "thought" if thought else "text"
            parts[-1]["text"] += step.text
        elif isinstance(step, Tool):
            call = calls.pop(step.slot, None)
            if call is not None:
                parts.append(_call_part(call))
                kind = "tool"
        elif not isinstance(step, Stall):
            break
    return parts


def gemini_body(script: Script, *, response_id: str) -> dict[str, Any]:
    """The non-streaming ``GenerateContentResponse`` of ``script`` (its content up to any fault)."""
    collected = collect_steps(script.steps)
    parts = _whole_parts(script, {call.slot: call for call in collected.tools})
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if collected.finish is not None:
        candidate["finishReason"] = FINISH_REASONS[collected.finish]
    return {
        "candidates": [candidate],
        "usageMetadata": gemini_usage(script.usage),
        "modelVersion": MODEL_VERSION,
        "responseId": response_id,
    }
