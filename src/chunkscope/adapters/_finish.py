"""Wire finish reasons → the registry's codes, the same condition the same code on every wire.

Each wire's translator maps its own success reasons (``stop``, ``end_turn``, ``tool_use``,
``length`` …) to finish kinds; every other reason comes here. A reason this table knows
becomes a registered code (``CONTENT_FILTER``, ``REFUSAL``, ``CONTEXT_WINDOW_EXCEEDED``,
``INSUFFICIENT_SYSTEM_RESOURCE``); one it does not know keeps the TypeScript reference's behaviour — its
upper-cased value as the code — and stands under the registry's ``<FINISH_REASON>`` family,
which the timeline and ``check`` mark as unmapped. A new wire adds its reasons as rows here.

Anthropic's ``pause_turn`` is not a failure: the server paused a long turn and expects the
client to send the assistant message back to continue it. Its translator yields a ``stop``
finish whose ``replay_state`` carries ``{"pauseTurn": true}`` (``PAUSE_TURN_KEY``);
``turn_paused(finish)`` tells it apart, and the agent loop continues on it. A pause before
any block we emit (only block types the translator skips) leaves nothing to send back, so it is
the ``EMPTY_RESPONSE`` an empty ``end_turn`` is.
"""

from __future__ import annotations

from typing import Any

from ..protocol import FinishReason, LlmFailure

__all__ = ["FINISH_CODES", "PAUSE_TURN_KEY", "finish_failure", "turn_paused"]

FINISH_CODES: dict[str, str] = {
    "content_filter": "CONTENT_FILTER",  # OpenAI-compatible chat
    "refusal": "REFUSAL",  # Anthropic Messages
    "model_context_window_exceeded": "CONTEXT_WINDOW_EXCEEDED",  # Anthropic Messages
    # DeepSeek: out of capacity mid-reply, retryable; the reference's own (upper-cased) code, published
    "insufficient_system_resource": "INSUFFICIENT_SYSTEM_RESOURCE",
    "guardrail_intervened": "CONTENT_FILTER",  # Bedrock: a guardrail withheld the answer
    "content_filtered": "CONTENT_FILTER",  # Bedrock: the model's own filter
    "malformed_model_output": "MALFORMED_RESPONSE",  # Bedrock: the model's output did not parse
    "malformed_tool_use": "MALFORMED_RESPONSE",  # Bedrock: a tool call that did not parse
    # Gemini (finishReason, upper-case): every safety, recitation and blocklist stop is a filter.
    "SAFETY": "CONTENT_FILTER",
    "RECITATION": "CONTENT_FILTER",
    "BLOCKLIST": "CONTENT_FILTER",
    "PROHIBITED_CONTENT": "CONTENT_FILTER",
    "SPII": "CONTENT_FILTER",
    "IMAGE_SAFETY": "CONTENT_FILTER",
    "IMAGE_PROHIBITED_CONTENT": "CONTENT_FILTER",
    "IMAGE_RECITATION": "CONTENT_FILTER",
    "MALFORMED_FUNCTION_CALL": "MALFORMED_RESPONSE",  # the model wrote a call that does not parse
    "UNEXPECTED_TOOL_CALL": "MALFORMED_RESPONSE",  # a call to a tool that was not offered
}
"""A wire's non-success finish reason → its registered code (wires share reasons' spellings)."""

PAUSE_TURN_KEY = "pauseTurn"
"""The ``replay_state`` key of a ``stop`` finish that paused the turn (continue it by replaying)."""


def finish_failure(reason: str, request_id: str | None = None) -> FinishReason:
    """The ``error`` finish for a wire ``reason`` that is not a success.

    Args:
        reason: the wire's finish reason as sent (``content_filter``, ``refusal`` …).
        request_id: the provider's request id, carried on the failure.

    Returns:
        An ``error`` finish whose code is the registered one, or the upper-cased reason
        (the ``<FINISH_REASON>`` family) for a reason the table does not know.
    """
    code = FINISH_CODES.get(reason)
    if code is None:
        code = reason.upper()
    return FinishReason(
        kind="error",
        failure=LlmFailure(message=f"the model stopped: {reason}", code=code, request_id=request_id),
    )


def turn_paused(chunk: Any) -> bool:
    """True for a ``stop`` finish chunk (model or dict) whose provider paused the turn.

    Args:
        chunk: a stream's last chunk, e.g. ``result.chunks[-1]``; anything else is False.
    """
    if isinstance(chunk, dict):
        reason, state = chunk.get("reason"), chunk.get("replayState", chunk.get("replay_state"))
        kind = reason.get("kind") if isinstance(reason, dict) else None
    else:
        state = getattr(chunk, "replay_state", None)
        kind = getattr(getattr(chunk, "reason", None), "kind", None)
    return kind == "stop" and isinstance(state, dict) and state.get(PAUSE_TURN_KEY) is True
