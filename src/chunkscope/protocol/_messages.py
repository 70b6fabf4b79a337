"""Conversation messages in the TypeScript shape.

``{"role": "user", "content": [{"type": "text", "text": "hi"}]}``; a plain
string content is shorthand for one text block. Tool results travel as a
user-role message whose content holds ``tool-result`` blocks, as in the
TypeScript reference.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import TypeAdapter, field_validator

from ._chunks import ContentBlock, _Model

__all__ = ["Message", "Role", "parse_message"]

Role = Literal["system", "user", "assistant"]


class Message(_Model):
    """One conversation message: a role and its content blocks."""

    role: Role
    content: list[ContentBlock]

    @field_validator("content", mode="before")
    @classmethod
    def _text_shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [{"type": "text", "text": value}]
        return value


_message_adapter: TypeAdapter[Message] = TypeAdapter(Message)


def parse_message(obj: Any) -> Message:
    """A message model from a model or a TypeScript-shaped dict."""
    if isinstance(obj, Message):
        return obj
    return _message_adapter.validate_python(obj)
