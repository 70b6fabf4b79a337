"""Gemini ``streamGenerateContent`` SSE events → StreamChunks (a pure translator, no I/O).

Each event's ``data`` is a whole ``GenerateContentResponse``::

    {"candidates": [{"content": {"role": "model", "parts": [...]}, "finishReason": "STOP"}],
     "usageMetadata": {"promptTokenCount", "cachedContentTokenCount", "candidatesTokenCount",
                       "thoughtsTokenCount", "toolUsePromptTokenCount", "totalTokenCount"},
     "promptFeedback": {"blockReason": "SAFETY"}, "modelVersion", "responseId"}

Per part of the first candidate:

- ``{"text"}`` → text; ``{"text", "thought": true}`` → reasoning (a block per run of each);
- ``{"functionCall": {"name", "args", "id"?}}`` → one tool-call block whose one
  ``argumentsDelta`` is the JSON text of ``args`` (``{}`` without it); the id is the wire's,
  else made up (``call_chunkscope_<index>``);
- ``{"functionCall": {"name"?, "partialArgs": [...], "willContinue": true}}`` (Gemini 3 on
  Vertex AI) → the same block, its argument text written patch by patch (``_partial``) until a
  part with ``willContinue`` false (or an empty ``functionCall``) ends it;
- ``thoughtSignature`` on any part is kept for replay (the finish's ``replay_state``;
  ``call_signatures()`` for the adapter);
- any other part (``inlineData``, ``executableCode``, ``codeExecutionResult``, ``fileData``)
  has no StreamChunk counterpart: skipped and counted in ``ignored``.

The stream has no terminator: it is complete when the body ends after a ``finishReason``
(``end()`` then writes usage and the finish; without one it is ``STREAM_CLOSED``). Content
after the ``finishReason`` is ``MALFORMED_RESPONSE``; usage-only events after it are read.
``STOP`` → ``stop`` (``tool-calls`` when the reply has a call; ``EMPTY_RESPONSE`` when it has
no block at all), ``MAX_TOKENS`` → ``max-tokens``, every other reason an ``error`` finish
through ``_finish`` (``SAFETY``, ``RECITATION``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``,
``SPII`` → ``CONTENT_FILTER``; ``MALFORMED_FUNCTION_CALL`` → ``MALFORMED_RESPONSE``); a
``promptFeedback.blockReason`` → ``CONTENT_FILTER``. ``usageMetadata`` is cumulative: the
last one counts, as disjoint counts (``promptTokenCount`` includes the cache hits, which are
taken out; ``candidatesTokenCount`` excludes the thoughts, which are added in). An
``{"error": …}`` object in the stream raises its code (``_failures.stream_error``, by its
``google.rpc`` status) after the output before it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from chunkscope.protocol import (
    AnyChunk,
    FinishReason,
    LlmError,
    LlmFailure,
    ReasoningDelta,
    TextDelta,
    TokenUsage,
)
from chunkscope.protocol.shared import type_phrase

from .._arithmetic import gemini_findings
from .._blocks import (
    DELTA_FIELDS,
    REASONING,
    TEXT,
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
from .._failures import bounded, preview, stream_error
from .._finish import FINISH_CODES
from ._partial import ArgumentText, parse_json_path

__all__ = [
    "MADE_UP_ID_PREFIX",
    "GeminiTranslator",
    "map_finish_reason",
    "map_usage",
    "read_whole",
    "whole_answer",
]

MADE_UP_ID_PREFIX = "call_chunkscope_"
"""The start of an id made up for a ``functionCall`` the wire sent without one (the request
builder leaves such ids out: the server never knew them)."""

_FINISH_MESSAGE_CHARS = 300
_VALUE_FIELDS = ("stringValue", "numberValue", "boolValue", "nullValue")


def _malformed(message: str, request_id: str | None) -> LlmError:
    return LlmError(message, "MALFORMED_RESPONSE", request_id=request_id)


def map_finish_reason(reason: str, *, has_calls: bool = False, message: str | None = None) -> FinishReason:
    """A Gemini ``finishReason`` as a finish: ``STOP`` → ``stop`` (``tool-calls`` when the reply
    made a call), ``MAX_TOKENS`` → ``max-tokens``, any other an ``error`` finish with the
    registered code (``_finish.FINISH_CODES``) or, unmapped, the reason itself (already upper-case).

    Args:
        reason: the wire's ``finishReason``.
        has_calls: the reply holds at least one ``functionCall``.
        message: the candidate's ``finishMessage``, quoted in the failure.
    """
    if reason == "STOP":
        return FinishReason(kind="tool-calls" if has_calls else "stop")
    if reason == "MAX_TOKENS":
        return FinishReason(kind="max-tokens")
    code = FINISH_CODES.get(reason) or reason.upper()
    text = f"the model stopped: {reason}"
    if message:
        text += f" ({bounded(message, (), _FINISH_MESSAGE_CHARS)})"
    return FinishReason(kind="error", failure=LlmFailure(message=text, code=code))


def _count(usage: Mapping[str, Any], key: str) -> int | None:
    value = usage.get(key)
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise TypeError(f"usageMetadata.{key} is {type_phrase(value)}, not a non-negative integer")
    return value


def map_usage(usage: Any) -> TokenUsage:
    """``usageMetadata`` as disjoint counts (``TypeError`` for counts that are not counts).

    ``promptTokenCount`` includes ``cachedContentTokenCount`` (taken out: the uncached input),
    plus ``toolUsePromptTokenCount`` (tool results the server fed the model: billed input);
    ``candidatesTokenCount`` excludes ``thoughtsTokenCount`` (added: output includes reasoning).
    """
    if type(usage) is not dict:
        raise TypeError(f"usageMetadata is {type_phrase(usage)}, not an object")
    prompt = _count(usage, "promptTokenCount") or 0
    cached = _count(usage, "cachedContentTokenCount")
    candidates = _count(usage, "candidatesTokenCount") or 0
    thoughts = _count(usage, "thoughtsTokenCount")
    tool_prompt = _count(usage, "toolUsePromptTokenCount") or 0
    uncached = prompt - (cached or 0)
    return TokenUsage(
        # A prompt count smaller than its cache hits cannot include them: it is the uncached input.
        input_tokens=(uncached if uncached >= 0 else prompt) + tool_prompt,
        output_tokens=candidates + (thoughts or 0),
        cache_read_tokens=cached,
        reasoning_tokens=thoughts,
    )


class _Streamed:
    """The tool call whose arguments arrive as ``partialArgs`` (one at a time)."""

    __slots__ = ("name", "text")

    def __init__(self, name: str | None) -> None:
        self.name = name
        self.text = ArgumentText()


class GeminiTranslator:
    """One Gemini stream's events in, StreamChunks out (``feed`` / ``end``; see the module).

    ``feed(event)`` takes one SSE event ``(name, data)``; ``end()`` at the body's end writes
    usage and the finish, or raises ``STREAM_CLOSED``; ``salvage()`` hands over what an event
    wrote before it failed. ``done`` turns true at ``end()`` (no event ends the stream).
    """

    def __init__(
        self, label: str = "Gemini API", secrets: tuple[str, ...] = (), *, request_id: str | None = None
    ) -> None:
        self.label = label
        self.secrets = tuple(secrets)
        self.request_id = request_id
        self.done = False
        self.ignored: Counter[str] = Counter()
        """Part kinds skipped (no StreamChunk counterpart), by their key."""
        self._writer = BlockWriter(MADE_UP_ID_PREFIX, self._malformed)
        self._usage: Any = None  # the last usageMetadata, read at the end (cumulative: last wins)
        self._finish: str | None = None
        self._finish_message: str | None = None
        self._blocked: str | None = None
        self._streamed: _Streamed | None = None
        self._wire_ids: set[str] = set()
        self._signatures: list[tuple[int, str]] = []  # (our block index, thoughtSignature)
        self._call_ids: dict[int, str] = {}  # our block index → its call id

    def _malformed(self, message: str) -> LlmError:
        return _malformed(message, self.request_id)

    # --- entry points ---------------------------------------------------------

    def feed(self, event: tuple[str, str]) -> list[AnyChunk]:
        """Translate one SSE event ``(name, data)``; returns the chunks it completes."""
        data = event[1]
        if self.done or not data or data.isspace():
            return []
        try:
            obj = parse_fast(data)
        except PARSE_FAST_REFUSES:
            obj = self._parse_reference(data)
        # The common event, inlined (benchmarks/_wire_gemini.py measures it; ``_feed`` is the
        # reference): one text or thought part continuing the open block of its kind.
        writer = self._writer
        kind = writer.kind
        if kind in (TEXT, REASONING) and self._finish is None:
            try:
                [candidate] = obj["candidates"]
                [part] = candidate["content"]["parts"]
                text = part["text"]
                if (
                    type(text) is str
                    and text
                    # a plain text part is {"text"}; a thought {"text", "thought": true}
                    and (len(part) == 1 if kind == TEXT else len(part) == 2 and part["thought"] is True)
                    and "finishReason" not in candidate
                    and "error" not in obj
                    and "promptFeedback" not in obj
                    and candidate.get("index", 0) == 0
                ):
                    usage = obj.get("usageMetadata")
                    if usage is not None:
                        self._usage = usage
                    writer.parts.append(text)
                    # trusted(delta, fields), inlined (_blocks.new_chunk says why)
                    model: type[TextDelta | ReasoningDelta] = TextDelta if kind == TEXT else ReasoningDelta
                    chunk = new_chunk(model)
                    set_dict(
                        chunk,
                        {
                            "type": "text-delta" if kind == TEXT else "reasoning-delta",
                            "index": writer.index,
                            "text": text,
                        },
                    )
                    set_fields(chunk, DELTA_FIELDS)
                    set_extra(chunk, None)
                    set_private(chunk, None)
                    return [chunk]
            except (KeyError, TypeError, ValueError, AttributeError):
                pass  # not the common shape: the full path says what it is
        try:
            self._feed(obj)
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            raise self._malformed(f"malformed Gemini stream event: {exc}") from None
        return self._writer.take()

    def _parse_reference(self, data: str) -> Any:
        """The shared ``json`` reading of a payload the fast parser refused, or
        ``MALFORMED_RESPONSE`` saying why it is not JSON."""
        try:
            return parse_reference(data)
        except ValueError as exc:
            raise self._malformed(
                f"malformed Gemini stream event: not JSON ({exc}): {preview(data, self.secrets)}"
            ) from None

    def feed_parsed(self, obj: Any) -> list[AnyChunk]:
        """Translate one event given its parsed JSON (tests and tools)."""
        return self.feed(("message", json.dumps(obj, ensure_ascii=False)))

    def compact(self) -> None:
        """Join the open block's text pieces (``WireReader.compact``: a long stream's memory)."""
        self._writer.compact()

    def salvage(self) -> list[AnyChunk]:
        """The chunks an event wrote before the failure it raised (valid output; taken once)."""
        return self._writer.take()

    def end(self) -> list[AnyChunk]:
        """The body ended: usage and the finish after a ``finishReason`` (or a blocked prompt),
        else ``LlmError`` ``STREAM_CLOSED``."""
        if self.done:
            return []
        if self._finish is None and self._blocked is None:
            raise LlmError(
                "the Gemini event stream ended before a finishReason",
                "STREAM_CLOSED",
                request_id=self.request_id,
            )
        self._end_streamed()
        writer = self._writer
        if self._finish is None:  # the prompt was blocked: no candidate at all
            reason = FinishReason(
                kind="error",
                failure=LlmFailure(message=f"the prompt was blocked: {self._blocked}", code="CONTENT_FILTER"),
            )
        else:
            reason = map_finish_reason(
                self._finish, has_calls=writer.tool_blocks > 0, message=self._finish_message
            )
            if reason.kind == "stop" and writer.next_index == 0:
                reason = FinishReason(
                    kind="error",
                    failure=LlmFailure(
                        message="the model returned a completed response with no content",
                        code="EMPTY_RESPONSE",
                    ),
                )
        if reason.failure is not None and self.request_id is not None:
            reason = FinishReason(
                kind=reason.kind, failure=reason.failure.model_copy(update={"request_id": self.request_id})
            )
        try:
            usage = map_usage(self._usage) if self._usage is not None else None
        except TypeError as exc:
            raise self._malformed(f"malformed Gemini usageMetadata: {exc}") from None
        raw = self._usage
        findings = gemini_findings(raw)
        writer.finish(reason, usage, self.replay_state(), findings)
        self.done = True
        return writer.take()

    # --- results --------------------------------------------------------------

    def replay_state(self) -> dict[str, Any] | None:
        """``{"thoughtSignatures": [{"index": our block index, "signature"}]}``, or None."""
        if not self._signatures:
            return None
        return {"thoughtSignatures": [{"index": i, "signature": s} for i, s in self._signatures]}

    def call_signatures(self) -> list[tuple[str, str]]:
        """(tool-call id, thoughtSignature) for every call that carried one (Gemini 3 wants them back)."""
        return [(self._call_ids[i], s) for i, s in self._signatures if i in self._call_ids]

    # --- events ---------------------------------------------------------------

    def _read_feedback(self, obj: dict[str, Any]) -> None:
        feedback = obj.get("promptFeedback")
        if type(feedback) is dict:
            reason = feedback.get("blockReason")
            if isinstance(reason, str) and reason:
                self._blocked = reason

    def _feed(self, obj: Any) -> None:
        if type(obj) is not dict:
            raise TypeError(f"the event is {type_phrase(obj)}, not an object")
        error = obj.get("error")
        if error:
            raise stream_error(error, label=self.label, secrets=self.secrets, request_id=self.request_id)
        usage = obj.get("usageMetadata")
        if usage is not None:
            self._usage = usage
        self._read_feedback(obj)
        candidates = obj.get("candidates")
        if candidates is None:
            return
        if type(candidates) is not list:
            raise TypeError(f"candidates is {type_phrase(candidates)}, not a list")
        for candidate in candidates:
            if type(candidate) is not dict:
                raise TypeError(f"a candidate is {type_phrase(candidate)}, not an object")
            if candidate.get("index", 0) == 0:  # one candidate is asked for; others are not ours
                self._candidate(candidate)

    def _candidate(self, candidate: dict[str, Any]) -> None:
        content = candidate.get("content")
        parts = content.get("parts") if type(content) is dict else None
        if parts:
            if type(parts) is not list:
                raise TypeError(f"content.parts is {type_phrase(parts)}, not a list")
            for part in parts:
                self._part(part)
        reason = candidate.get("finishReason")
        if reason is not None:
            if type(reason) is not str:
                raise TypeError(f"finishReason is {type_phrase(reason)}, not a string")
            self._finish = reason
            message = candidate.get("finishMessage")
            self._finish_message = message if isinstance(message, str) else None

    def _part(self, part: Any) -> None:
        if type(part) is not dict:
            raise TypeError(f"a part is {type_phrase(part)}, not an object")
        signature = part.get("thoughtSignature")
        if "text" in part:
            text = part["text"]
            if type(text) is not str:
                raise TypeError(f"part.text is {type_phrase(text)}, not a string")
            if text:
                self._content_check()
                self._end_streamed()
                self._writer.text(REASONING if part.get("thought") is True else TEXT, text)
        elif "functionCall" in part:
            self._function_call(part["functionCall"])
        else:
            kinds = [k for k in part if k not in ("thought", "thoughtSignature", "partMetadata")]
            for kind in kinds:
                self.ignored[kind] += 1
        if isinstance(signature, str) and signature and self._writer.index >= 0:
            self._signatures.append((self._writer.index, signature))

    def _content_check(self) -> None:
        if self._finish is not None:
            raise ValueError(f"content arrived after finishReason {self._finish}")

    # --- tool calls -----------------------------------------------------------

    def _function_call(self, call: Any) -> None:
        if type(call) is not dict:
            raise TypeError(f"functionCall is {type_phrase(call)}, not an object")
        name, call_id = call.get("name"), call.get("id")
        for key, value in (("name", name), ("id", call_id)):
            if value is not None and type(value) is not str:
                raise TypeError(f"functionCall.{key} is {type_phrase(value)}, not a string")
        partial = call.get("partialArgs")
        if partial is not None and type(partial) is not list:
            raise TypeError(f"functionCall.partialArgs is {type_phrase(partial)}, not a list")
        more = call.get("willContinue") is True
        streamed = self._streamed
        if streamed is not None and "args" not in call and (not name or name == streamed.name):
            self._patch(streamed, partial or ())  # the open streamed call continues
            if not more:
                self._end_streamed()
            return
        if not name and not call_id and not partial and call.get("args") is None:
            return  # an empty functionCall: the end marker of a streamed call already ended
        self._content_check()
        self._end_streamed()
        self._open_call(name, call_id)
        if partial or more:
            streamed = self._streamed = _Streamed(name)
            self._patch(streamed, partial or ())
            if not more:
                self._end_streamed()
            return
        args = call.get("args")
        if args is not None and type(args) is not dict:
            raise TypeError(f"functionCall.args is {type_phrase(args)}, not an object")
        # allow_nan=False: 1e999 reads as infinity, which JSON cannot hold (MALFORMED_RESPONSE)
        text = json.dumps(args, ensure_ascii=False, allow_nan=False) if args else "{}"
        self._writer.tool_call(fragment=text)

    def _open_call(self, name: str | None, call_id: str | None) -> None:
        writer = self._writer
        if call_id:
            if call_id in self._wire_ids:
                raise ValueError(f"functionCall id {call_id[:80]!r} names two calls")
            self._wire_ids.add(call_id)
            writer.reserve_id(call_id)
        index = writer.open_tool(call_id or None, name, key=name or f"#{writer.tool_blocks}")
        self._call_ids[index] = writer.call_id or ""

    def _patch(self, streamed: _Streamed, patches: Any) -> None:
        writer = self._writer
        pieces: list[str] = []
        for patch in patches:
            if type(patch) is not dict:
                raise TypeError(f"a partialArgs entry is {type_phrase(patch)}, not an object")
            path = patch.get("jsonPath")
            if type(path) is not str:
                raise TypeError("a partialArgs entry has no string jsonPath")
            field = next((f for f in _VALUE_FIELDS if f in patch), None)
            if field is None:
                continue  # no value (a bare willContinue): nothing to write
            value = patch[field]
            if field == "stringValue" and type(value) is not str:
                raise TypeError(f"partialArgs stringValue is {type_phrase(value)}")
            if field == "numberValue" and (type(value) not in (int, float) or value != value):
                raise TypeError(f"partialArgs numberValue is {type_phrase(value)}")
            if field == "boolValue" and type(value) is not bool:
                raise TypeError(f"partialArgs boolValue is {type_phrase(value)}")
            if field == "nullValue":
                value = None
            pieces.append(streamed.text.patch(parse_json_path(path), value, string=field == "stringValue"))
        text = "".join(pieces)
        if text:
            writer.tool_call(fragment=text)

    def _end_streamed(self) -> None:
        """End the streamed call's argument text (its block stays open until the next block)."""
        streamed = self._streamed
        if streamed is not None:
            self._streamed = None
            self._writer.tool_call(fragment=streamed.text.close())


def read_whole(body: Mapping[str, Any]) -> tuple[TokenUsage | None, FinishReason | None]:
    """The usage and finish of a non-streaming ``generateContent`` answer (None where it has none)."""
    usage = None
    raw = body.get("usageMetadata")
    if isinstance(raw, dict):
        try:
            usage = map_usage(raw)
        except TypeError:
            usage = None
    finish = None
    candidates = body.get("candidates")
    first = candidates[0] if isinstance(candidates, list) and candidates else None
    if isinstance(first, dict) and isinstance(first.get("finishReason"), str):
        content = first.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        calls = isinstance(parts, list) and any(isinstance(p, dict) and "functionCall" in p for p in parts)
        finish = map_finish_reason(first["finishReason"], has_calls=calls)
    else:
        feedback = body.get("promptFeedback")
        reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if isinstance(reason, str) and reason:
            finish = FinishReason(
                kind="error",
                failure=LlmFailure(message=f"the prompt was blocked: {reason}", code="CONTENT_FILTER"),
            )
    return usage, finish


def whole_answer(body: Mapping[str, Any]) -> list[AnyChunk]:
    """A non-streaming ``generateContent`` answer as the chunks its stream would have been
    (code Gemini ran itself, ``executableCode`` / ``codeExecutionResult``, is left out)."""
    candidates = whole_dicts(body.get("candidates"))
    content = candidates[0].get("content") if candidates else None
    parts: list[WholePart] = []
    for part in whole_dicts(content.get("parts") if isinstance(content, dict) else None):
        call = part.get("functionCall")
        if isinstance(part.get("text"), str):
            parts.append((REASONING if part.get("thought") is True else TEXT, part["text"]))
        elif isinstance(call, dict):
            parts += whole_call(call.get("id"), call.get("name"), call.get("args"))
    raw = body.get("usageMetadata")
    findings = gemini_findings(raw)
    return whole_chunks(parts, *read_whole(body), MADE_UP_ID_PREFIX, findings)
