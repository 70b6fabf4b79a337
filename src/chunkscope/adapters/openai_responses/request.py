"""GenerateOptions → the JSON body of an OpenAI Responses request (pure, no I/O).

``POST {base}/responses`` with ``stream: true`` and ``store: false`` (nothing is kept on the
server: every turn sends the whole conversation as ``input`` items). Per block:

=============  ==========================================================
ours           Responses ``input`` item
=============  ==========================================================
system prompt  top-level ``instructions``; ``system``-role messages stay ``system`` messages
text (user)    ``{"role": "user", "content": text}``
text (asst.)   ``{"role": "assistant", "content": text}``
tool-call      ``{"type": "function_call", "call_id", "name", "arguments"}``
tool-result    ``{"type": "function_call_output", "call_id", "output"}`` (placed before any
               further user text; the wire has no error flag, so ``isError`` is not sent)
reasoning      left out: with ``store: false`` a reasoning item replays only with the
               encrypted content and id it streamed with, which the protocol does not keep
=============  ==========================================================

``tools`` become function tools (``{"type": "function", "name", "description",
"parameters"}``), ``max_tokens`` is ``max_output_tokens``, ``reasoning_effort`` is
``reasoning.effort`` (``off`` as the API's ``none``) with ``summary: auto`` so that the
reasoning streams. The wire has no stop sequences: ``stop`` is not a supported option (the
adapter refuses it with ``UNSUPPORTED_OPTION`` before any I/O).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chunkscope.protocol import Message

from .._base import GenerateOptions, ModelInfo
from .._sent import SentOptions, listed

__all__ = ["OFF_EFFORT", "build_body", "sent_options"]

OFF_EFFORT = "none"
"""What ``reasoning_effort="off"`` sends as ``reasoning.effort`` (the API's name for no reasoning)."""


def sent_options(body: dict[str, Any]) -> SentOptions:
    """The options a Responses body carries: ``instructions`` and the system and developer
    messages of ``input``, no stop sequences (the wire has none), the names of the function
    ``tools``, ``max_output_tokens``, ``temperature``."""
    items = listed(body.get("input"))
    system = [body.get("instructions")] + [
        m for m in items if isinstance(m, dict) and m.get("role") in ("system", "developer")
    ]
    tools = [t.get("name") for t in listed(body.get("tools")) if isinstance(t, dict)]
    return SentOptions(system, [], tools, body.get("max_output_tokens"), body.get("temperature"))


def build_body(options: GenerateOptions, info: ModelInfo | None = None) -> dict[str, Any]:
    """The streaming request body for ``options``; ``info`` supplies the model's default effort."""
    body: dict[str, Any] = {
        "model": options.model,
        "input": _input_items(options.messages),
        "stream": True,
        "store": False,
    }
    if options.system:
        body["instructions"] = options.system
    if options.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            }
            for t in options.tools
        ]
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.max_tokens is not None:
        body["max_output_tokens"] = options.max_tokens
    reasoning = _reasoning(options.reasoning_effort, info)
    if reasoning is not None:
        body["reasoning"] = reasoning
    return body


def _reasoning(effort: str | None, info: ModelInfo | None) -> dict[str, str] | None:
    """The body's ``reasoning`` for ``effort`` (else the model's default effort); None for none."""
    if effort is None and info is not None and info.reasoning is not None:
        effort = info.reasoning.default
    if effort == "off":
        return {"effort": OFF_EFFORT}
    if effort is not None:
        return {"effort": effort, "summary": "auto"}
    return None


def _text_of(blocks: Sequence[Any]) -> str:
    return "".join(b.text for b in blocks if b.type == "text")


def _input_items(messages: Sequence[Message]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            items.append({"role": "system", "content": _text_of(message.content)})
        elif message.role == "assistant":
            items.extend(_assistant(message))
        else:
            items.extend(_user(message))
    return items


def _assistant(message: Message) -> list[dict[str, Any]]:
    """An assistant message: its text as a message item, then one ``function_call`` per call."""
    items: list[dict[str, Any]] = []
    text = _text_of(message.content)
    if text:
        items.append({"role": "assistant", "content": text})
    for block in message.content:
        if block.type == "tool-call":
            items.append(
                {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": block.arguments,
                }
            )
    return items


def _user(message: Message) -> list[dict[str, Any]]:
    """A user message: one ``function_call_output`` per tool result, then its text (if any)."""
    results = [b for b in message.content if b.type == "tool-result"]
    items: list[dict[str, Any]] = [
        {
            "type": "function_call_output",
            "call_id": result.tool_call_id,
            "output": _text_of(result.content) or "(no output)",
        }
        for result in results
    ]
    text = _text_of(message.content)
    if text or not results:
        items.append({"role": "user", "content": text})
    return items
