"""Small real-shaped OpenAI Responses events for the translator's tests (no HTTP).

``Events`` numbers each event's ``sequence_number`` as the API does; ``sse`` frames a list of
events as the body bytes a server sends.
"""

from __future__ import annotations

import json
from typing import Any

from chunkscope.adapters.openai_responses.translate import ResponsesTranslator
from chunkscope.protocol import AnyChunk


class Events:
    """A stream under construction: each helper appends one event with the next sequence number."""

    def __init__(self, start: int = 0) -> None:
        self.sequence = start
        self.events: list[dict[str, Any]] = []

    def add(self, kind: str, **fields: Any) -> Events:
        self.events.append({"type": kind, **fields, "sequence_number": self.sequence})
        self.sequence += 1
        return self

    def created(self) -> Events:
        response = {
            "id": "resp_1",
            "object": "response",
            "status": "in_progress",
            "output": [],
            "usage": None,
        }
        return self.add("response.created", response=response).add("response.in_progress", response=response)

    def message(self, index: int, *texts: str, item_id: str = "msg_1", part: int = 0) -> Events:
        self.add(
            "response.output_item.added",
            output_index=index,
            item={
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            },
        )
        self.text_part(index, *texts, item_id=item_id, part=part)
        return self.item_done(index, {"id": item_id, "type": "message", "content": []})

    def text_part(self, index: int, *texts: str, item_id: str = "msg_1", part: int = 0) -> Events:
        self.add(
            "response.content_part.added",
            item_id=item_id,
            output_index=index,
            content_index=part,
            part={"type": "output_text", "text": "", "annotations": []},
        )
        for text in texts:
            self.add(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=part,
                delta=text,
                logprobs=[],
            )
        return self.add(
            "response.output_text.done",
            item_id=item_id,
            output_index=index,
            content_index=part,
            text="".join(texts),
        )

    def reasoning(self, index: int, *parts: list[str], item_id: str = "rs_1", raw: bool = False) -> Events:
        """A reasoning item: each list of fragments one summary part (``raw``: reasoning_text parts)."""
        self.add(
            "response.output_item.added",
            output_index=index,
            item={"id": item_id, "type": "reasoning", "summary": []},
        )
        for number, fragments in enumerate(parts):
            if raw:
                for fragment in fragments:
                    self.add(
                        "response.reasoning_text.delta",
                        item_id=item_id,
                        output_index=index,
                        content_index=number,
                        delta=fragment,
                    )
                continue
            self.add(
                "response.reasoning_summary_part.added",
                item_id=item_id,
                output_index=index,
                summary_index=number,
                part={"type": "summary_text", "text": ""},
            )
            for fragment in fragments:
                self.add(
                    "response.reasoning_summary_text.delta",
                    item_id=item_id,
                    output_index=index,
                    summary_index=number,
                    delta=fragment,
                )
            self.add(
                "response.reasoning_summary_part.done",
                item_id=item_id,
                output_index=index,
                summary_index=number,
                part={"type": "summary_text", "text": "".join(fragments)},
            )
        return self.item_done(index, {"id": item_id, "type": "reasoning", "summary": []})

    def call(self, index: int, call_id: str, name: str, *fragments: str, item_id: str = "fc_1") -> Events:
        self.call_added(index, call_id, name, item_id=item_id)
        for fragment in fragments:
            self.add(
                "response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=fragment
            )
        arguments = "".join(fragments)
        self.add(
            "response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=arguments
        )
        return self.item_done(
            index,
            {
                "id": item_id,
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
            },
        )

    def call_added(self, index: int, call_id: str, name: str, item_id: str = "fc_1") -> Events:
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "call_id": call_id,
            "name": name,
            "arguments": "",
        }
        return self.add("response.output_item.added", output_index=index, item=item)

    def item_done(self, index: int, item: dict[str, Any]) -> Events:
        return self.add("response.output_item.done", output_index=index, item={**item, "status": "completed"})

    def terminal(
        self,
        kind: str = "response.completed",
        *,
        usage: dict[str, Any] | None = None,
        reason: str | None = None,
        error: dict[str, Any] | None = None,
    ) -> Events:
        status = {"response.completed": "completed", "response.incomplete": "incomplete"}.get(kind, "failed")
        response: dict[str, Any] = {
            "id": "resp_1",
            "object": "response",
            "status": status,
            "incomplete_details": {"reason": reason} if reason else None,
            "error": error,
            "output": [],
            "usage": usage if usage is not None else USAGE,
        }
        return self.add(kind, response=response)


USAGE: dict[str, Any] = {
    "input_tokens": 40,
    "input_tokens_details": {"cached_tokens": 30},
    "output_tokens": 25,
    "output_tokens_details": {"reasoning_tokens": 20},
    "total_tokens": 65,
}
"""Usage whose input includes 30 cache hits and whose output includes 20 reasoning tokens."""


def sse(events: list[dict[str, Any]]) -> bytes:
    """The SSE body of ``events`` (``event:`` names as the API sends them)."""
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def translate(
    events: list[dict[str, Any]] | Events, **kwargs: Any
) -> tuple[list[AnyChunk], ResponsesTranslator]:
    """Feed every event (as SSE ``(name, data)``) to a fresh translator; the chunks and the translator."""
    listed = events.events if isinstance(events, Events) else events
    translator = ResponsesTranslator(**kwargs)
    chunks: list[AnyChunk] = []
    for event in listed:
        chunks += translator.feed((str(event.get("type", "")), json.dumps(event)))
    return chunks, translator
