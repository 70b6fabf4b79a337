"""GenerateOptions → the JSON body of an Anthropic Messages request (pure, no I/O).

Messages keep their order; ``system``-role messages join ``options.system``
in the top-level ``system`` string, since the Messages API has no system role.
Per block:

=============  ==========================================================
ours           Anthropic
=============  ==========================================================
text           ``{"type": "text", "text"}`` (empty text is skipped: the API refuses it)
tool-call      assistant ``{"type": "tool_use", "id", "name", "input"}`` (arguments parsed)
tool-result    user ``{"type": "tool_result", "tool_use_id", "content", "is_error"}``
reasoning      assistant ``{"type": "thinking", "thinking", "signature"}`` when a
               signature is known; without one it is left out (the API refuses an
               unsigned thinking block and ignores earlier turns' thinking anyway)
=============  ==========================================================

Anything the wire cannot carry raises ``LlmError`` ``UNSUPPORTED_OPTION``
before any I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chunkscope.protocol import (
    LlmError,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)

from .._base import GenerateOptions, ReasoningEffort, ReasoningInfo
from .._request import only_in, only_text, text_parts, tool_arguments
from .._sent import SentOptions, listed

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "THINKING_BUDGETS",
    "THINKING_EFFORTS",
    "build_body",
    "sent_options",
    "thinking_config",
]

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` sent when ``GenerateOptions.max_tokens`` is unset (the API requires one);
with thinking on, the thinking budget is added on top."""

THINKING_BUDGETS: dict[str, int] = {"low": 1024, "medium": 4096, "high": 16384}
"""Effort id → ``thinking.budget_tokens`` (the API's minimum budget is 1024)."""

THINKING_EFFORTS = ReasoningInfo(
    efforts=(
        ReasoningEffort("off", "Off", "no extended thinking"),
        ReasoningEffort("low", "Low", f"thinking budget {THINKING_BUDGETS['low']} tokens"),
        ReasoningEffort("medium", "Medium", f"thinking budget {THINKING_BUDGETS['medium']} tokens"),
        ReasoningEffort("high", "High", f"thinking budget {THINKING_BUDGETS['high']} tokens"),
    )
)
"""The reasoning efforts of a model with extended thinking; no default (unset = the API's default)."""


def thinking_config(effort: str | None, max_tokens: int | None) -> tuple[dict[str, Any] | None, int]:
    """The ``thinking`` object for ``effort`` and the ``max_tokens`` to send with it.

    Unset effort: no ``thinking`` key. ``off``: ``{"type": "disabled"}``.
    Otherwise ``{"type": "enabled", "budget_tokens": …}``; the budget must stay
    below ``max_tokens``, so an explicit ``max_tokens`` caps it and an unset one
    becomes ``DEFAULT_MAX_TOKENS`` plus the budget. An effort with no budget in
    ``THINKING_BUDGETS`` raises ``LlmError`` ``UNSUPPORTED_REASONING_EFFORT``.
    """
    if effort is None:
        return None, max_tokens if max_tokens is not None else DEFAULT_MAX_TOKENS
    if effort == "off":
        return {"type": "disabled"}, max_tokens if max_tokens is not None else DEFAULT_MAX_TOKENS
    budget = THINKING_BUDGETS.get(effort)
    if budget is None:
        # Reachable through a user-given ModelInfo that lists efforts of its own.
        known = ", ".join(["off", *THINKING_BUDGETS])
        raise LlmError(
            f"reasoning effort {effort!r} has no Anthropic thinking budget; use one of {known}",
            "UNSUPPORTED_REASONING_EFFORT",
        )
    if max_tokens is None:
        return {"type": "enabled", "budget_tokens": budget}, DEFAULT_MAX_TOKENS + budget
    return {"type": "enabled", "budget_tokens": max(1, min(budget, max_tokens - 1))}, max_tokens


def _message(message: Message, signature_of: Callable[[str], str | None]) -> dict[str, Any] | None:
    content: list[dict[str, Any]] = []
    role = message.role
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text:
                content.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolCallBlock):
            only_in(role, "assistant", "a tool-call block")
            arguments = tool_arguments(block, "Anthropic's tool_use input")
            content.append({"type": "tool_use", "id": block.id, "name": block.name, "input": arguments})
        elif isinstance(block, ToolResultBlock):
            only_in(role, "user", "a tool-result block")
            content.append(_tool_result(block))
        elif isinstance(block, ReasoningBlock):
            only_in(role, "assistant", "a reasoning block")
            signature = signature_of(block.text)
            if signature is not None:
                content.append({"type": "thinking", "thinking": block.text, "signature": signature})
    if not content:
        return None  # the API refuses empty content; an empty turn says nothing
    return {"role": role, "content": content}


def _tool_spec(tool: Any) -> dict[str, Any]:
    """A tool as the Messages API declares it: name, ``input_schema``, description when given."""
    spec: dict[str, Any] = {"name": tool.name, "input_schema": dict(tool.parameters)}
    if tool.description:
        spec["description"] = tool.description
    return spec


def _conversation(
    options: GenerateOptions, signature_of: Callable[[str], str | None]
) -> tuple[list[str], list[dict[str, Any]]]:
    """The system texts (the option's, then every system message's) and the wire messages."""
    system: list[str] = [options.system] if options.system else []
    messages: list[dict[str, Any]] = []
    for message in options.messages:
        if message.role == "system":
            text = only_text(message.content, "a system message")
            if text:
                system.append(text)
            continue
        wire = _message(message, signature_of)
        if wire is not None:
            messages.append(wire)
    return system, messages


def build_body(
    options: GenerateOptions,
    *,
    signature_of: Callable[[str], str | None] = lambda text: None,
) -> dict[str, Any]:
    """The streaming Messages request body for ``options``.

    ``signature_of(thinking_text)`` returns the signature a reasoning block was
    streamed with, if known (the adapter remembers those it streamed).
    Raises ``LlmError`` ``UNSUPPORTED_OPTION`` for content the wire cannot carry.
    """
    system, messages = _conversation(options, signature_of)
    thinking, max_tokens = thinking_config(options.reasoning_effort, options.max_tokens)
    body: dict[str, Any] = {"model": options.model, "max_tokens": max_tokens, "messages": messages}
    if system:
        body["system"] = "\n\n".join(system)
    if options.tools:
        body["tools"] = [_tool_spec(tool) for tool in options.tools]
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.stop:
        body["stop_sequences"] = list(options.stop)
    if thinking is not None:
        body["thinking"] = thinking
    body["stream"] = True
    return body


def sent_options(body: dict[str, Any]) -> SentOptions:
    """The options a Messages body carries: top-level ``system``, ``stop_sequences``, the
    names of ``tools``, ``max_tokens``."""
    tools = [t.get("name") for t in listed(body.get("tools")) if isinstance(t, dict)]
    stops = listed(body.get("stop_sequences"))
    return SentOptions(body.get("system"), stops, tools, body.get("max_tokens"), body.get("temperature"))


def _tool_result(block: ToolResultBlock) -> dict[str, Any]:
    content = [{"type": "text", "text": text} for text in text_parts(block)]
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_call_id, "content": content}
    if block.is_error is not None:
        out["is_error"] = block.is_error
    return out
