"""GenerateOptions → the JSON body of a chat-completions request (pure, no I/O).

Messages keep their order; an assistant message's reasoning goes in
``reasoning_content`` (DeepSeek's replay field), its tool calls in
``tool_calls``; each tool result becomes a ``tool`` message placed before any
further user text. ``reasoning_effort`` ``off`` sends ``thinking: disabled``;
any other effort sends ``reasoning_effort`` (plus ``thinking: enabled`` for
``deepseek*`` models).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chunkscope.protocol import Message

from .._base import GenerateOptions, ModelInfo
from .._sent import SentOptions, listed

__all__ = ["build_body", "sent_options"]


def sent_options(body: dict[str, Any]) -> SentOptions:
    """The options a chat-completions body carries: system and developer messages, ``stop``
    (a string or a list), the functions of ``tools``, ``max_tokens`` or its newer name."""
    messages = listed(body.get("messages"))
    system = [m for m in messages if isinstance(m, dict) and m.get("role") in ("system", "developer")]
    stop = body.get("stop")
    tools = [t.get("function", {}).get("name") for t in listed(body.get("tools")) if isinstance(t, dict)]
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    stops = [stop] if isinstance(stop, str) else listed(stop)
    return SentOptions(system, stops, tools, max_tokens, body.get("temperature"))


def build_body(options: GenerateOptions, info: ModelInfo | None = None) -> dict[str, Any]:
    """The streaming request body for ``options``; ``info`` supplies the model's default effort."""
    body: dict[str, Any] = {
        "model": options.model,
        "messages": _wire_messages(options.system, options.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if options.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
            }
            for t in options.tools
        ]
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.max_tokens is not None:
        body["max_tokens"] = options.max_tokens
    if options.stop:
        body["stop"] = list(options.stop)
    _add_effort(body, options, info)
    return body


def _add_effort(body: dict[str, Any], options: GenerateOptions, info: ModelInfo | None) -> None:
    """The effort asked for (else the model's default): ``off`` as ``thinking: disabled``, any
    other as ``reasoning_effort`` (with ``thinking: enabled`` for ``deepseek*`` models)."""
    effort = options.reasoning_effort
    if effort is None and info is not None and info.reasoning is not None:
        effort = info.reasoning.default
    if effort is None:
        return
    if effort == "off":
        body["thinking"] = {"type": "disabled"}
        return
    if options.model.startswith("deepseek"):
        body["thinking"] = {"type": "enabled"}
    body["reasoning_effort"] = effort


def _text_of(blocks: Sequence[Any]) -> str:
    return "".join(b.text for b in blocks if b.type == "text")


def _wire_messages(system: str | None, messages: Sequence[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if system:
        wire.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "system":
            wire.append({"role": "system", "content": _text_of(message.content)})
        elif message.role == "assistant":
            wire.append(_assistant(message))
        else:
            wire.extend(_user(message))
    return wire


def _assistant(message: Message) -> dict[str, Any]:
    """An assistant message: its text, its reasoning in ``reasoning_content``, its ``tool_calls``."""
    entry: dict[str, Any] = {"role": "assistant", "content": _text_of(message.content)}
    reasoning = "".join(b.text for b in message.content if b.type == "reasoning")
    if reasoning:
        entry["reasoning_content"] = reasoning
    calls = [
        {"id": b.id, "type": "function", "function": {"name": b.name, "arguments": b.arguments}}
        for b in message.content
        if b.type == "tool-call"
    ]
    if calls:
        entry["tool_calls"] = calls
    return entry


def _user(message: Message) -> list[dict[str, Any]]:
    """A user message: one ``tool`` message per tool result, then its text (if any)."""
    # Tool results go first: the wire wants each ``tool`` message right after the
    # assistant message that made the call, before any further user text.
    results = [b for b in message.content if b.type == "tool-result"]
    wire: list[dict[str, Any]] = [
        {
            "role": "tool",
            "tool_call_id": result.tool_call_id,
            "content": _text_of(result.content) or "(no output)",
        }
        for result in results
    ]
    text = _text_of(message.content)
    if text or not results:
        wire.append({"role": "user", "content": text})
    return wire
