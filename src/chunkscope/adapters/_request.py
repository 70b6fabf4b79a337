"""What every wire's request builder shares: content a wire cannot carry, said the same way.

Each wire's ``request.py`` turns ``GenerateOptions`` into its body; these are the pieces that
do not depend on the wire: joining text blocks, a tool call's arguments as the JSON object
every wire's request wants, and the text of a tool result. What they cannot send is
``UNSUPPORTED_OPTION``, raised before any I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chunkscope.protocol import AnyBlock, LlmError, TextBlock, ToolCallBlock, ToolResultBlock

from ._failures import loads

__all__ = ["only_in", "only_text", "text_parts", "tool_arguments", "unsupported"]


def unsupported(message: str) -> LlmError:
    """The ``UNSUPPORTED_OPTION`` error for content or an option a wire cannot carry."""
    return LlmError(message, "UNSUPPORTED_OPTION")


def only_text(blocks: Sequence[AnyBlock], where: str) -> str:
    """The text of ``blocks``, joined; any other block is ``UNSUPPORTED_OPTION`` naming ``where``."""
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, TextBlock):
            raise unsupported(f"{where}: only text blocks can be sent there, not {block.type!r}")
        parts.append(block.text)
    return "".join(parts)


def tool_arguments(block: ToolCallBlock, target: str) -> dict[str, Any]:
    """A tool call's arguments as a JSON object (empty text: ``{}``), as ``target`` must be.

    Args:
        block: the tool-call block replayed to the model.
        target: where the wire wants the object, for the message ("Anthropic's tool_use input").
    """
    try:
        value = loads(block.arguments) if block.arguments.strip() else {}
    except ValueError as exc:
        raise unsupported(
            f"tool call {block.name!r} ({block.id}): its arguments are not JSON, and {target} "
            "must be a JSON object"
        ) from exc
    if not isinstance(value, dict):
        raise unsupported(
            f"tool call {block.name!r} ({block.id}): its arguments are JSON but not an object, "
            f"and {target} must be a JSON object"
        )
    return value


def text_parts(block: ToolResultBlock) -> list[str]:
    """The non-empty texts of a tool result; content other than text is ``UNSUPPORTED_OPTION``."""
    texts: list[str] = []
    for item in block.content:
        if not isinstance(item, TextBlock):
            raise unsupported(
                f"tool result for {block.tool_call_id}: only text content can be sent, not {item.type!r}"
            )
        if item.text:
            texts.append(item.text)
    return texts


def only_in(role: str, allowed: str, what: str) -> None:
    """``UNSUPPORTED_OPTION`` unless a block of kind ``what`` sits in a message of its ``allowed`` role."""
    if role != allowed:
        article = "an" if allowed[0] in "aeiou" else "a"
        raise unsupported(f"{what} can only be sent in {article} {allowed} message, not {role}")
