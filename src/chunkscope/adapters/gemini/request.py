"""GenerateOptions → the JSON body of a Gemini ``streamGenerateContent`` request (pure, no I/O).

The model and the stream are in the URL (``/v1beta/models/{model}:streamGenerateContent
?alt=sse``), so the body holds neither. Messages keep their order as ``contents``, roles
``user`` and ``model`` (consecutive turns of one role merged); ``system``-role messages join
``options.system`` in ``systemInstruction``. Per block:

=============  ==========================================================
ours           Gemini part
=============  ==========================================================
text           ``{"text"}`` (empty text is skipped)
tool-call      model ``{"functionCall": {"name", "args", "id"?}, "thoughtSignature"?}`` (arguments
               parsed; a made-up id is left out, the server never knew it; the signature the call
               streamed with, when known: Gemini 3 refuses a replayed call without it)
tool-result    user ``{"functionResponse": {"name", "response": {"output" | "error": text}, "id"?}}``
               (the name is the earlier call's: the wire names results by function)
reasoning      left out (thought summaries are not sent back; their signatures ride on the calls)
=============  ==========================================================

``generationConfig`` carries ``temperature``, ``maxOutputTokens``, ``stopSequences`` and
``thinkingConfig``: ``includeThoughts`` for a model with thinking (so that reasoning streams),
``thinkingBudget`` for a Gemini 2.5 effort (``off`` = 0), ``thinkingLevel`` for Gemini 3.
Tools are ``functionDeclarations`` with ``parametersJsonSchema`` (a JSON Schema as given).
Anything the wire cannot carry raises ``LlmError`` ``UNSUPPORTED_OPTION`` before any I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chunkscope.protocol import LlmError, Message, TextBlock, ToolCallBlock, ToolResultBlock

from .._base import GenerateOptions, ModelInfo, ReasoningEffort, ReasoningInfo
from .._request import only_text, tool_arguments, unsupported
from .._sent import SentOptions, listed
from .translate import MADE_UP_ID_PREFIX

__all__ = [
    "BUDGET_EFFORTS",
    "LEVEL_EFFORTS",
    "THINKING_BUDGETS",
    "build_body",
    "sent_options",
    "thinking_config",
]

THINKING_BUDGETS: dict[str, int] = {"low": 1024, "medium": 8192, "high": 24576}
"""Effort id → ``thinkingBudget`` for the Gemini 2.5 models (``off`` sends 0; 24576 is Flash's top)."""

BUDGET_EFFORTS = ReasoningInfo(
    (
        ReasoningEffort("off", "Off", "thinkingBudget 0"),
        *(ReasoningEffort(k, k.title(), f"thinkingBudget {v} tokens") for k, v in THINKING_BUDGETS.items()),
    )
)
"""Gemini 2.5 Flash / Flash-Lite: thinking off, or a token budget."""

LEVEL_EFFORTS = ReasoningInfo(
    tuple(ReasoningEffort(level, level.title(), f"thinkingLevel {level}") for level in ("low", "high"))
)
"""Gemini 3 Pro: ``thinkingLevel`` low or high (thinking cannot be turned off)."""


def thinking_config(model: str, effort: str | None, info: ModelInfo | None) -> dict[str, Any] | None:
    """The ``thinkingConfig`` for ``effort`` (else the model's default) on ``model``.

    None for a model the adapter knows no thinking of and no effort; ``{"includeThoughts":
    true}`` for a thinking model and no effort (the thoughts stream, at the server's budget);
    ``off`` → ``{"thinkingBudget": 0}``; on a ``gemini-3*`` model an effort is its
    ``thinkingLevel``; otherwise a ``THINKING_BUDGETS`` budget (else
    ``UNSUPPORTED_REASONING_EFFORT``).
    """
    reasoning = info.reasoning if info is not None else None
    if effort is None and reasoning is not None:
        effort = reasoning.default
    if effort is None:
        return {"includeThoughts": True} if reasoning is not None else None
    if effort == "off":
        return {"thinkingBudget": 0}
    if model.startswith("gemini-3"):
        return {"includeThoughts": True, "thinkingLevel": effort}
    budget = THINKING_BUDGETS.get(effort)
    if budget is None:
        known = ", ".join(["off", *THINKING_BUDGETS])
        raise LlmError(
            f"reasoning effort {effort!r} has no Gemini thinking budget; use one of {known}",
            "UNSUPPORTED_REASONING_EFFORT",
        )
    return {"includeThoughts": True, "thinkingBudget": budget}


def _wire_id(call_id: str) -> str | None:
    """The id to send: a wire id as it came, none for one this package made up."""
    return None if call_id.startswith(MADE_UP_ID_PREFIX) else call_id


class _Contents:
    """The ``contents`` list being built: a part goes into the last turn when its role matches."""

    def __init__(self, signature_of: Callable[[str], str | None]) -> None:
        self.turns: list[dict[str, Any]] = []
        self.names: dict[str, str] = {}  # tool-call id → function name (results are named by it)
        self.signature_of = signature_of

    def add(self, role: str, part: dict[str, Any]) -> None:
        if self.turns and self.turns[-1]["role"] == role:
            self.turns[-1]["parts"].append(part)
        else:
            self.turns.append({"role": role, "parts": [part]})

    def message(self, message: Message) -> None:
        role = "model" if message.role == "assistant" else "user"
        for block in message.content:
            if isinstance(block, TextBlock):
                if block.text:
                    self.add(role, {"text": block.text})
            elif isinstance(block, ToolCallBlock):
                if role != "model":
                    raise unsupported(
                        f"a tool-call block can only be sent in an assistant message, not {message.role}"
                    )
                self.add(role, self._call(block))
            elif isinstance(block, ToolResultBlock):
                if role != "user":
                    raise unsupported(
                        f"a tool-result block can only be sent in a user message, not {message.role}"
                    )
                self.add(role, self._result(block))
            elif role != "model":  # reasoning: only an assistant's, and left out (see the module)
                raise unsupported(
                    f"a reasoning block can only be sent in an assistant message, not {message.role}"
                )

    def _call(self, block: ToolCallBlock) -> dict[str, Any]:
        self.names[block.id] = block.name
        call: dict[str, Any] = {
            "name": block.name,
            "args": tool_arguments(block, "Gemini's functionCall args"),
        }
        wire_id = _wire_id(block.id)
        if wire_id is not None:
            call["id"] = wire_id
        part: dict[str, Any] = {"functionCall": call}
        signature = self.signature_of(block.id)
        if signature is not None:
            part["thoughtSignature"] = signature
        return part

    def _result(self, block: ToolResultBlock) -> dict[str, Any]:
        name = self.names.get(block.tool_call_id)
        if name is None:
            raise unsupported(
                f"tool result for {block.tool_call_id}: no earlier tool call has that id, and Gemini's "
                "functionResponse must name the function it answers"
            )
        text = only_text(block.content, f"tool result for {block.tool_call_id}")
        response: dict[str, Any] = {"name": name, "response": {"error" if block.is_error else "output": text}}
        wire_id = _wire_id(block.tool_call_id)
        if wire_id is not None:
            response["id"] = wire_id
        return {"functionResponse": response}


def build_body(
    options: GenerateOptions,
    info: ModelInfo | None = None,
    signature_of: Callable[[str], str | None] = lambda call_id: None,
) -> dict[str, Any]:
    """The request body for ``options``; ``info`` gives the model's thinking, ``signature_of``
    the ``thoughtSignature`` a tool call streamed with (by its id)."""
    system: list[str] = [options.system] if options.system else []
    contents = _Contents(signature_of)
    for message in options.messages:
        if message.role == "system":
            text = only_text(message.content, "a system message")
            if text:
                system.append(text)
        else:
            contents.message(message)
    body: dict[str, Any] = {"contents": contents.turns}
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    if options.tools:
        body["tools"] = [{"functionDeclarations": [_declaration(tool) for tool in options.tools]}]
    config = _generation_config(options, info)
    if config:
        body["generationConfig"] = config
    return body


def _declaration(tool: Any) -> dict[str, Any]:
    """One tool as a ``functionDeclarations`` entry."""
    declaration: dict[str, Any] = {"name": tool.name, "parametersJsonSchema": dict(tool.parameters)}
    if tool.description:
        declaration["description"] = tool.description
    return declaration


def _generation_config(options: GenerateOptions, info: ModelInfo | None) -> dict[str, Any]:
    """The body's ``generationConfig``: sampling, limits, stops and thinking (empty for none)."""
    config: dict[str, Any] = {}
    if options.temperature is not None:
        config["temperature"] = options.temperature
    if options.max_tokens is not None:
        config["maxOutputTokens"] = options.max_tokens
    if options.stop:
        config["stopSequences"] = list(options.stop)
    thinking = thinking_config(options.model, options.reasoning_effort, info)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    return config


def sent_options(body: dict[str, Any]) -> SentOptions:
    """The options a Gemini body carries: ``systemInstruction``, and in ``generationConfig``
    ``stopSequences``, ``maxOutputTokens`` and ``temperature``; the names of the
    ``functionDeclarations``. (The model is in the URL, not the body.)"""
    config = body.get("generationConfig")
    config = config if isinstance(config, dict) else {}
    names = [
        declaration.get("name")
        for tool in listed(body.get("tools"))
        if isinstance(tool, dict)
        for declaration in listed(tool.get("functionDeclarations"))
        if isinstance(declaration, dict)
    ]
    return SentOptions(
        body.get("systemInstruction"),
        listed(config.get("stopSequences")),
        names,
        config.get("maxOutputTokens"),
        config.get("temperature"),
    )
