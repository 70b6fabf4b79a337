"""The conversation of a chat-completions or Messages request: what the scenarios echo and quote.

``chat_conversation(body)`` is the default ``ProviderWire.conversation``: a wire with other
message shapes (Responses ``input`` items, Gemini ``contents``, Bedrock ``messages`` of
content blocks) reads its own in its module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["chat_conversation"]


def chat_conversation(body: Mapping[str, Any]) -> tuple[str, str | None]:
    """The last user message's text and the tool result the conversation ends with."""
    return _last_user_text(body), _trailing_tool_result(body)


def _trailing_tool_result(body: Mapping[str, Any]) -> str | None:
    """The text of the tool result a chat-completions or Messages conversation ends with, else None."""
    messages = body.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else None
    if not isinstance(last, dict):
        return None
    content = last.get("content")
    if last.get("role") == "tool":  # OpenAI wire
        return content if isinstance(content, str) else None
    if last.get("role") == "user" and isinstance(content, list):  # Anthropic wire: tool_result blocks
        return _tool_result_block_text(content)
    return None


def _tool_result_block_text(content: list[Any]) -> str | None:
    """The text of the first Anthropic ``tool_result`` block with string or list content."""
    for part in content:
        if not isinstance(part, dict) or part.get("type") != "tool_result":
            continue
        inner = part.get("content")
        if isinstance(inner, str):
            return inner
        if isinstance(inner, list):
            return "".join(p.get("text", "") for p in inner if isinstance(p, dict))
    return None


def _last_user_text(body: Mapping[str, Any]) -> str:
    """The text of the last user message (string content, or its text parts joined)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _message_text(message.get("content"))
    return ""


def _message_text(content: Any) -> str:
    """A message's text: string content as is, the text parts of a list joined, else empty."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        )
    return ""
