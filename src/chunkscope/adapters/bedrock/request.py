"""GenerateOptions → the JSON body of a Bedrock ConverseStream request (pure, no I/O).

The model is not in the body: it is the URL's path (``/model/{modelId}/converse-stream``,
the id percent-encoded: ids hold ``:`` and ARNs ``/``), and the path says the answer is a
stream (there is no ``stream`` flag). Messages keep their order; ``system``-role messages
join ``options.system`` in the top-level ``system`` list of text blocks. Per block:

=============  ==========================================================
ours           Bedrock ``ContentBlock``
=============  ==========================================================
text           ``{"text"}`` (empty text is skipped: the API refuses it)
tool-call      assistant ``{"toolUse": {"toolUseId", "name", "input"}}`` (arguments parsed)
tool-result    user ``{"toolResult": {"toolUseId", "content": [{"text"}], "status"}}``
reasoning      left out: replaying it needs the signature the stream sent, which this
               adapter does not keep (Bedrock ignores earlier turns' reasoning anyway)
=============  ==========================================================

Tools are ``toolConfig.tools[].toolSpec {name, description, inputSchema.json}``; the
output limit, temperature and stop sequences are ``inferenceConfig`` (``maxTokens``,
``temperature``, ``stopSequences``). Reasoning efforts go in
``additionalModelRequestFields``, by model family (``reasoning_fields``):

- Anthropic Claude (``anthropic.claude-…``, also behind a region prefix ``us.`` / ``eu.`` /
  ``global.``): ``thinking: {"type": "enabled", "budget_tokens"}`` with the budgets of
  ``THINKING_BUDGETS`` (``off`` → ``{"type": "disabled"}``); ``maxTokens`` must exceed the
  budget, so an unset one becomes ``DEFAULT_MAX_TOKENS`` + the budget;
- Amazon Nova 2 (``amazon.nova-2…``): ``reasoningConfig: {"type": "enabled",
  "maxReasoningEffort": low | medium | high}`` (``off`` → ``{"type": "disabled"}``);
- every other model: no efforts (``reasoning_effort`` is ``UNSUPPORTED_REASONING_EFFORT``).

Anything the wire cannot carry raises ``LlmError`` ``UNSUPPORTED_OPTION`` before any I/O.
"""

from __future__ import annotations

from typing import Any

from chunkscope.protocol import LlmError, Message, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock

from .._base import GenerateOptions, ReasoningEffort, ReasoningInfo
from .._request import only_in, only_text, text_parts, tool_arguments
from .._sent import SentOptions, listed

__all__ = [
    "CLAUDE_EFFORTS",
    "DEFAULT_MAX_TOKENS",
    "NOVA_EFFORTS",
    "THINKING_BUDGETS",
    "build_body",
    "model_family",
    "reasoning_fields",
    "sent_options",
]

DEFAULT_MAX_TOKENS = 4096
"""``maxTokens`` sent with Claude thinking when ``GenerateOptions.max_tokens`` is unset (the
budget is added on top); without thinking an unset limit is left to the model's default."""

THINKING_BUDGETS: dict[str, int] = {"low": 1024, "medium": 4096, "high": 16384}
"""Effort id → Claude's ``thinking.budget_tokens`` (its minimum budget is 1024)."""

CLAUDE_EFFORTS = ReasoningInfo(
    efforts=(
        ReasoningEffort("off", "Off", "no extended thinking"),
        *(ReasoningEffort(e, e.title(), f"thinking budget {b} tokens") for e, b in THINKING_BUDGETS.items()),
    )
)
"""The efforts of a Claude model with extended thinking on Bedrock."""

NOVA_EFFORTS = ReasoningInfo(
    efforts=(
        ReasoningEffort("off", "Off", "reasoning disabled"),
        ReasoningEffort("low", "Low", "maxReasoningEffort low"),
        ReasoningEffort("medium", "Medium", "maxReasoningEffort medium"),
        ReasoningEffort("high", "High", "maxReasoningEffort high"),
    )
)
"""The efforts of Amazon Nova 2 (``reasoningConfig.maxReasoningEffort``)."""

_CLAUDE_THINKING = ("claude-3-7-sonnet", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4")
_REGION_PREFIXES = ("us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global.")


def model_family(model: str) -> str | None:
    """``"claude"`` for a Claude model with extended thinking, ``"nova"`` for Nova 2, else None.

    The id may be a cross-region inference profile (``us.anthropic.claude-…``) or an ARN
    ending in one; the family is read after the last ``/``.
    """
    base = model.rsplit("/", 1)[-1]
    for prefix in _REGION_PREFIXES:
        if base.startswith(prefix):
            base = base[len(prefix) :]
            break
    if base.startswith("anthropic.") and base[len("anthropic.") :].startswith(_CLAUDE_THINKING):
        return "claude"
    if base.startswith("amazon.nova-2"):
        return "nova"
    return None


def reasoning_fields(
    model: str, effort: str | None, max_tokens: int | None
) -> tuple[dict[str, Any], int | None]:
    """The ``additionalModelRequestFields`` for ``effort`` on ``model``, and the ``maxTokens`` to send."""
    if effort is None:
        return {}, max_tokens
    family = model_family(model)
    if family == "nova":
        if effort == "off":
            return {"reasoningConfig": {"type": "disabled"}}, max_tokens
        return {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": effort}}, max_tokens
    if effort == "off":
        return {"thinking": {"type": "disabled"}}, max_tokens
    budget = THINKING_BUDGETS.get(effort)
    if budget is None:
        known = ", ".join(["off", *THINKING_BUDGETS])
        raise LlmError(
            f"reasoning effort {effort!r} has no Bedrock thinking budget; use one of {known}",
            "UNSUPPORTED_REASONING_EFFORT",
        )
    if max_tokens is None:
        return {"thinking": {"type": "enabled", "budget_tokens": budget}}, DEFAULT_MAX_TOKENS + budget
    return {"thinking": {"type": "enabled", "budget_tokens": max(1, min(budget, max_tokens - 1))}}, max_tokens


def _message(message: Message) -> dict[str, Any] | None:
    content: list[dict[str, Any]] = []
    role = message.role
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text:
                content.append({"text": block.text})
        elif isinstance(block, ToolCallBlock):
            only_in(role, "assistant", "a tool-call block")
            content.append(
                {
                    "toolUse": {
                        "toolUseId": block.id,
                        "name": block.name,
                        "input": tool_arguments(block, "Bedrock's toolUse input"),
                    }
                }
            )
        elif isinstance(block, ToolResultBlock):
            only_in(role, "user", "a tool-result block")
            content.append(_tool_result(block))
        elif isinstance(block, ReasoningBlock):
            only_in(role, "assistant", "a reasoning block")  # left out (module docstring)
    if not content:
        return None  # the API refuses empty content
    return {"role": role, "content": content}


def _tool_spec(tool: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": tool.name, "inputSchema": {"json": dict(tool.parameters)}}
    if tool.description:
        spec["description"] = tool.description
    return {"toolSpec": spec}


def build_body(options: GenerateOptions) -> dict[str, Any]:
    """The ConverseStream request body for ``options`` (the model goes in the URL, not here).

    Raises ``LlmError`` ``UNSUPPORTED_OPTION`` for content the wire cannot carry.
    """
    system, messages = _conversation(options)
    fields, max_tokens = reasoning_fields(options.model, options.reasoning_effort, options.max_tokens)
    body: dict[str, Any] = {"messages": messages}
    if system:
        body["system"] = system
    inference = _inference_config(options, max_tokens)
    if inference:
        body["inferenceConfig"] = inference
    if options.tools:
        body["toolConfig"] = {"tools": [_tool_spec(tool) for tool in options.tools]}
    if fields:
        body["additionalModelRequestFields"] = fields
    return body


def _conversation(options: GenerateOptions) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The body's ``system`` blocks (``options.system``, then each system message's text) and
    ``messages``."""
    system: list[dict[str, Any]] = [{"text": options.system}] if options.system else []
    messages: list[dict[str, Any]] = []
    for message in options.messages:
        if message.role == "system":
            text = only_text(message.content, "a system message")
            if text:
                system.append({"text": text})
            continue
        wire = _message(message)
        if wire is not None:
            messages.append(wire)
    return system, messages


def _inference_config(options: GenerateOptions, max_tokens: int | None) -> dict[str, Any]:
    """The body's ``inferenceConfig``: the token limit, temperature and stops (empty for none)."""
    inference: dict[str, Any] = {}
    if max_tokens is not None:
        inference["maxTokens"] = max_tokens
    if options.temperature is not None:
        inference["temperature"] = options.temperature
    if options.stop:
        inference["stopSequences"] = list(options.stop)
    return inference


def sent_options(body: dict[str, Any]) -> SentOptions:
    """The options a ConverseStream body carries: ``system`` blocks, ``inferenceConfig``'s
    ``stopSequences``, ``maxTokens`` and ``temperature``, the ``toolSpec`` names of ``toolConfig``."""
    inference = body.get("inferenceConfig")
    inference = inference if isinstance(inference, dict) else {}
    config = body.get("toolConfig")
    tools = listed(config.get("tools")) if isinstance(config, dict) else []
    names = [
        t["toolSpec"].get("name")
        for t in tools
        if isinstance(t, dict) and isinstance(t.get("toolSpec"), dict)
    ]
    return SentOptions(
        body.get("system"),
        listed(inference.get("stopSequences")),
        names,
        inference.get("maxTokens"),
        inference.get("temperature"),
    )


def _tool_result(block: ToolResultBlock) -> dict[str, Any]:
    content = [{"text": text} for text in text_parts(block)]
    result: dict[str, Any] = {"toolUseId": block.tool_call_id, "content": content}
    if block.is_error is not None:
        result["status"] = "error" if block.is_error else "success"
    return {"toolResult": result}
