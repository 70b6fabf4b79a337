"""A tiny, independent reader of the two wires, for the provider's own tests.

It shares no code with chunkscope (neither the provider nor the adapters): it
splits SSE text into events and folds them into what a reply says, so a test
can compare the provider's bytes with the scenario table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SseEvent:
    event: str | None
    data: str


def parse_sse(text: str) -> list[SseEvent]:
    """Events of a complete SSE text (an unterminated tail is dropped, as the spec says)."""
    events: list[SseEvent] = []
    for raw in text.replace("\r\n", "\n").split("\n\n")[:-1]:
        name: str | None = None
        data: list[str] = []
        for line in raw.split("\n"):
            if line.startswith("event:"):
                name = line[len("event:") :].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:") :].removeprefix(" "))
        if data or name:
            events.append(SseEvent(name, "\n".join(data)))
    return events


@dataclass
class Reply:
    """What a stream said, folded the way a non-interleaving adapter would assemble it."""

    text: str = ""
    reasoning: str = ""
    tools: dict[int, dict[str, Any]] = field(default_factory=dict)  # key -> {id, name, arguments}
    block_types: list[str] = field(default_factory=list)
    finish: str | None = None
    usage: dict[str, int] | None = None
    ended: bool = False  # [DONE] / message_stop seen

    @property
    def tool_calls(self) -> list[tuple[str, str]]:
        return [(t["name"], t["arguments"] or "{}") for t in self.tools.values()]


def fold_openai(events: list[SseEvent]) -> Reply:
    reply = Reply()
    last_kind: str | None = None
    for event in events:
        if event.data == "[DONE]":
            reply.ended = True
            break
        chunk = json.loads(event.data)
        assert chunk["object"] == "chat.completion.chunk"
        assert {"id", "created", "model", "choices"} <= chunk.keys()
        for choice in chunk["choices"]:
            delta = choice["delta"]
            for kind, key in (("reasoning", "reasoning_content"), ("text", "content")):
                piece = delta.get(key)
                if piece:
                    if last_kind != kind:
                        reply.block_types.append(kind)
                    last_kind = kind
                    if kind == "text":
                        reply.text += piece
                    else:
                        reply.reasoning += piece
            for call in delta.get("tool_calls") or []:
                tool = reply.tools.get(call["index"])
                if tool is None:
                    tool = reply.tools[call["index"]] = {"id": None, "name": "", "arguments": ""}
                    reply.block_types.append("tool-call")
                last_kind = "tool-call"
                tool["id"] = call.get("id") or tool["id"]
                function = call.get("function") or {}
                tool["name"] = function.get("name") or tool["name"]
                tool["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                reply.finish = choice["finish_reason"]
        if chunk.get("usage"):
            u = chunk["usage"]
            cached = u.get("prompt_tokens_details", {}).get("cached_tokens", u.get("prompt_cache_hit_tokens"))
            usage = {
                "inputTokens": u["prompt_tokens"] - (cached or 0),
                "outputTokens": u["completion_tokens"],
            }
            if cached is not None:
                usage["cacheReadTokens"] = cached
            reasoning = u.get("completion_tokens_details", {}).get("reasoning_tokens")
            if reasoning is not None:
                usage["reasoningTokens"] = reasoning
            reply.usage = usage
    return reply


OPENAI_FINISH = {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens"}
ANTHROPIC_FINISH = {"end_turn": "stop", "tool_use": "tool-calls", "max_tokens": "max-tokens"}


def fold_anthropic(events: list[SseEvent]) -> Reply:
    reply = Reply()
    kinds: dict[int, str] = {}
    usage: dict[str, int] = {}
    for event in events:
        payload = json.loads(event.data)
        assert payload["type"] == event.event, (payload, event.event)
        if event.event == "message_start":
            message = payload["message"]
            assert {"id", "type", "role", "model", "content", "usage"} <= message.keys()
            u = message["usage"]
            usage["inputTokens"] = u["input_tokens"]
            if u.get("cache_read_input_tokens") is not None:
                usage["cacheReadTokens"] = u["cache_read_input_tokens"]
        elif event.event == "content_block_start":
            block = payload["content_block"]
            index = payload["index"]
            assert index == len(kinds), "Anthropic block indexes are sequential"
            kind = {"text": "text", "thinking": "reasoning", "tool_use": "tool-call"}[block["type"]]
            kinds[index] = kind
            reply.block_types.append(kind)
            if kind == "tool-call":
                reply.tools[index] = {"id": block["id"], "name": block["name"], "arguments": ""}
        elif event.event == "content_block_delta":
            delta = payload["delta"]
            index = payload["index"]
            if delta["type"] == "text_delta":
                reply.text += delta["text"]
            elif delta["type"] == "thinking_delta":
                reply.reasoning += delta["thinking"]
            elif delta["type"] == "input_json_delta":
                reply.tools[index]["arguments"] += delta["partial_json"]
        elif event.event == "message_delta":
            reply.finish = payload["delta"]["stop_reason"]
            usage["outputTokens"] = payload["usage"]["output_tokens"]
            details = payload["usage"].get("output_tokens_details")
            if details:
                usage["reasoningTokens"] = details["thinking_tokens"]
            reply.usage = dict(usage)
        elif event.event == "message_stop":
            reply.ended = True
    return reply
