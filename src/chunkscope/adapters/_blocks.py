"""The block writer every translator writes through: it owns the output side of a stream.

A translator reads its wire and says what happened ("text arrived", "a tool call began",
"its arguments grew", "the model finished"); the writer turns that into StreamChunks that
pass the ``strict`` profile, as pydantic-ai's parts manager does for every model:

- block indexes count 0, 1, 2, … in the order blocks open, and at most one block is open,
  so blocks never interleave: opening a block closes the open one first;
- text or reasoning that resumes after another block opens a NEW block;
- a tool call whose id is not known yet has its argument fragments held until the id
  arrives (``tool_call``), or until it closes, when an id is made up (``<prefix><index>``,
  unique among the ids the wire used, see ``reserve_id``);
- a tool call that never got a name cannot be routed: closing it raises the translator's
  ``MALFORMED_RESPONSE``;
- ``finish`` closes the open block before usage and the finish chunk, so nothing follows it;
- ``take`` hands over the chunks written so far: after each event, and after a failure
  (the chunks an event wrote before it raised are valid output: the translator's ``salvage``).

What stays in a translator is its wire: field names, its own buffering policy (which wire
block may go live while another is still open) and its finish and usage mapping.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from chunkscope.protocol import (
    AnyChunk,
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    LlmError,
    ReasoningBlock,
    ReasoningDelta,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
)
from chunkscope.protocol.shared import (  # chunk models without re-validation (hot path)
    UsageFinding,
    attach_usage_findings,
    join_pieces,
    new_chunk,
    set_dict,
    set_extra,
    set_fields,
    set_private,
    trusted,
)

__all__ = [
    "DELTA_FIELDS",
    "REASONING",
    "TEXT",
    "TOOL_CALL",
    "BlockWriter",
    "WholePart",
    "new_chunk",
    "set_dict",
    "set_extra",
    "set_fields",
    "set_private",
    "whole_call",
    "whole_chunks",
    "whole_dicts",
]

TEXT: Final = "text"
REASONING: Final = "reasoning"
TOOL_CALL: Final = "tool-call"
_NONE = ""  # no block open

# Per text-like kind: the delta model and its type, the block model.
_TEXTUAL: dict[str, tuple[type[TextDelta | ReasoningDelta], str, type[TextBlock | ReasoningBlock]]] = {
    TEXT: (TextDelta, "text-delta", TextBlock),
    REASONING: (ReasoningDelta, "reasoning-delta", ReasoningBlock),
}


# ``trusted(TextDelta | ReasoningDelta, fields)`` spelled out, for a translator's per-event fast
# path to inline (the call and its look-up measured 0.1 to 0.3 µs per event, up to a tenth of
# the Responses floor's 2.8 µs): ``chunk = new_chunk(TextDelta); set_dict(chunk, fields);
# set_fields(chunk, DELTA_FIELDS); set_extra(chunk, None); set_private(chunk, None)``.
DELTA_FIELDS: Final = set(TextDelta.model_fields)
"""The fields a text or reasoning delta sets (the same three: ``type``, ``index``, ``text``)."""
assert set(ReasoningDelta.model_fields) == DELTA_FIELDS


def _nameless(message: str) -> LlmError:
    return LlmError(message, "MALFORMED_RESPONSE")


class BlockWriter:
    """The StreamChunks of one stream, written block by block (pure, no I/O).

    The open block's state is public for a translator's measured fast path (``kind``,
    ``index``, ``parts``, ``named``, ``held``); everything else goes through the methods.

    Args:
        id_prefix: the start of a made-up tool-call id (``call-`` makes ``call-3`` for block 3).
        malformed: builds the translator's ``MALFORMED_RESPONSE`` error from a message (its
            label and request id in it); used when a tool call closes without a name.
    """

    __slots__ = (
        "call_id",
        "held",
        "ids",
        "index",
        "key",
        "kind",
        "malformed",
        "name",
        "named",
        "next_index",
        "out",
        "parts",
        "prefix",
        "tool_blocks",
    )

    def __init__(self, id_prefix: str = "call-", malformed: Callable[[str], LlmError] = _nameless) -> None:
        self.prefix = id_prefix
        self.malformed = malformed
        self.out: list[AnyChunk] = []
        self.next_index = 0
        self.kind = _NONE
        self.index = -1
        self.parts: list[str] = []  # the open block's text, or its tool call's arguments sent
        self.call_id: str | None = None
        self.name: str | None = None
        self.named = False  # the open tool call's name has been sent on a delta
        self.held: list[str] = []  # argument fragments waiting for the open tool call's id
        self.key: object = None  # the wire's name for the open tool call, for messages
        self.ids: set[str] = set()
        self.tool_blocks = 0

    def compact(self) -> None:
        """Join the open block's pieces into one string (in place: a translator's fast path appends to
        the same list), so a long block costs its characters, not an object per delta."""
        join_pieces(self.parts)
        join_pieces(self.held)

    # -- output --

    def take(self) -> list[AnyChunk]:
        """Hand over the chunks written since the last ``take``.

        Returns:
            The chunks, in order (the writer keeps none of them).
        """
        out, self.out = self.out, []
        return out

    # -- text and reasoning --

    def text(self, kind: str, text: str) -> None:
        """Write a text or reasoning fragment: the open block of ``kind`` continues, else
        the open block closes and a new one of ``kind`` opens.

        Args:
            kind: ``TEXT`` or ``REASONING``.
            text: the fragment (non-empty).

        Raises:
            LlmError: ``MALFORMED_RESPONSE`` when closing an open tool call that has no name.
        """
        if self.kind != kind:
            self.open(kind)
        self.parts.append(text)
        delta_type, type_name, _ = _TEXTUAL[kind]
        self.out.append(trusted(delta_type, {"type": type_name, "index": self.index, "text": text}))

    def open(self, kind: str) -> int:
        """Close the open block, if any, and open a block of ``kind``.

        Args:
            kind: ``TEXT``, ``REASONING`` or ``TOOL_CALL`` (prefer ``open_tool`` for a call).

        Returns:
            The new block's index.

        Raises:
            LlmError: ``MALFORMED_RESPONSE`` when closing an open tool call that has no name.
        """
        self.close()
        index = self.index = self.next_index
        self.next_index += 1
        self.kind = kind
        self.out.append(trusted(BlockStart, {"type": "block-start", "index": index, "block_type": kind}))
        return index

    # -- tool calls --

    def reserve_id(self, call_id: str) -> None:
        """Note a tool-call id the wire uses, so that a made-up id never equals it.

        Args:
            call_id: an id seen on the wire (for any call, open or not).
        """
        self.ids.add(call_id)

    def open_tool(
        self, call_id: str | None, name: str | None, *, key: object = None, id_may_follow: bool = False
    ) -> int:
        """Close the open block and open a tool-call block.

        Args:
            call_id: the call's id, or None when the wire has not sent it.
            name: the tool's name, or None when it has not arrived yet (see ``tool_call``).
            key: how the wire names this call (its wire index), for error messages.
            id_may_follow: with no ``call_id``, hold the argument fragments until the id
                arrives (or the call closes); otherwise make the id up now.

        Returns:
            The new block's index.

        Raises:
            LlmError: ``MALFORMED_RESPONSE`` when closing an open tool call that has no name.
        """
        index = self.open(TOOL_CALL)
        self.tool_blocks += 1
        self.call_id = call_id if call_id is not None or id_may_follow else self._made_up_id()
        self.name = name or None
        self.named = False
        self.key = key
        return index

    def tool_call(self, call_id: str | None = None, name: str | None = None, fragment: str = "") -> None:
        """Update the open tool call: a late id or name, and argument text.

        The first id and the first name win; fragments go out in order, the first one that
        goes out while the name is known carrying it. Fragments wait while the id is unknown.

        Args:
            call_id: the call's id, when this wire event carries one.
            name: the tool's name, when this wire event carries one.
            fragment: more argument text (may be empty).
        """
        if call_id is not None and self.call_id is None:
            self.call_id = call_id
        if name and not self.name:
            self.name = name
        if fragment:
            self.held.append(fragment)
        if self.call_id is not None and self.held:
            held, self.held = self.held, []
            for piece in held:
                self._tool_delta(piece)

    def tool_arguments(self) -> str:
        """The open tool call's argument text so far (sent and held).

        Returns:
            The fragments joined.
        """
        return "".join(self.parts) + "".join(self.held)

    def _tool_delta(self, fragment: str) -> None:
        name: str | None = None
        if not self.named and self.name:
            name = self.name
            self.named = True
        self.parts.append(fragment)
        self.out.append(
            trusted(
                ToolCallDelta,
                {
                    "type": "tool-call-delta",
                    "index": self.index,
                    "id": self.call_id,
                    "name": name,
                    "arguments_delta": fragment,
                },
            )
        )

    def _made_up_id(self) -> str:
        made_up = f"{self.prefix}{self.index}"
        while made_up in self.ids:
            made_up += "_"
        self.ids.add(made_up)
        return made_up

    # -- closing --

    def close(self) -> None:
        """End the open block, if any, with its whole content.

        A tool call still without an id gets one made up; its held fragments go out; a call
        whose name never went out on a delta gets one empty-argument delta carrying it.

        Raises:
            LlmError: ``MALFORMED_RESPONSE`` when the open tool call has no name.
        """
        kind = self.kind
        if kind == _NONE:
            return
        if kind == TOOL_CALL:
            self._close_tool()
        else:
            block = trusted(_TEXTUAL[kind][2], {"type": kind, "text": "".join(self.parts)})
            self.out.append(trusted(BlockEnd, {"type": "block-end", "index": self.index, "block": block}))
        self.kind = _NONE
        self.parts = []

    def _close_tool(self) -> None:
        if not self.name:
            raise self.malformed(f"tool call {self.key} has no function name")
        if self.call_id is None:
            # Closed only once the wire finished with it, so every wire id is known by now.
            self.call_id = self._made_up_id()
        self.tool_call()
        if not self.named:
            self._tool_delta("")  # the name came on a fragment without arguments
        call = trusted(
            ToolCallBlock,
            {"type": "tool-call", "id": self.call_id, "name": self.name, "arguments": "".join(self.parts)},
        )
        self.out.append(trusted(BlockEnd, {"type": "block-end", "index": self.index, "block": call}))
        self.call_id = self.name = None

    def usage(self, usage: TokenUsage | None, findings: tuple[UsageFinding, ...] = ()) -> None:
        """Write the usage chunk (nothing when the wire reported none), its findings attached."""
        if usage is not None:
            chunk = trusted(Usage, {"type": "usage", "usage": usage})
            if findings:
                attach_usage_findings(chunk, findings)
            self.out.append(chunk)

    def finish(
        self,
        reason: FinishReason,
        usage: TokenUsage | None = None,
        replay_state: dict[str, Any] | None = None,
        findings: tuple[UsageFinding, ...] = (),
    ) -> None:
        """Close the open block, then write the usage (when given) and the finish chunk.

        Args:
            reason: why the stream ended.
            usage: the stream's token usage, or None when the wire reported none.
            replay_state: what a later request needs to replay this turn, or None.
            findings: the usage-arithmetic findings of the wire's raw counts (``_arithmetic``),
                handed on with the usage chunk for the checker.

        Raises:
            LlmError: ``MALFORMED_RESPONSE`` when closing an open tool call that has no name.
        """
        self.close()
        self.usage(usage, findings)
        self.out.append(trusted(Finish, {"type": "finish", "reason": reason, "replay_state": replay_state}))


WholePart = tuple[str, str] | tuple[str, str | None, str, str]
"""One block of a whole (non-streaming) answer, in order: ``(TEXT, text)``, ``(REASONING, text)``
or ``(TOOL_CALL, id or None, name, arguments)``."""


def whole_chunks(
    parts: list[WholePart],
    usage: TokenUsage | None,
    finish: FinishReason | None,
    id_prefix: str = "call-",
    findings: tuple[UsageFinding, ...] = (),
) -> list[AnyChunk]:
    """A whole answer as the chunks its stream would have been: its blocks, usage and finish.

    The tap reads a non-streaming call through the same reader as a stream, so its recording
    reads back (check, replay, usage frames) as the tap saw it; empty text parts write nothing.
    """
    writer = BlockWriter(id_prefix)
    for part in parts:
        if part[0] == TOOL_CALL and len(part) == 4:
            _, call_id, name, arguments = part
            if call_id is not None:
                writer.reserve_id(call_id)
            writer.open_tool(call_id, name)
            writer.tool_call(fragment=arguments)
        elif len(part) == 2 and part[1]:
            writer.text(part[0], part[1])
    if finish is not None:
        writer.finish(finish, usage, findings=findings)
    else:
        writer.close()
        writer.usage(usage, findings)
    return writer.take()


def whole_dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a whole answer's list field (nothing when it is not a list)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def whole_call(call_id: Any, name: Any, arguments: Any) -> list[WholePart]:
    """A whole answer's tool call as its one part (none without a name): the wire's id when it
    sent one, its arguments as text (a JSON value as JSON, a string as sent)."""
    if not isinstance(name, str) or not name:
        return []
    text = arguments if isinstance(arguments, str) else json.dumps(arguments or {}, ensure_ascii=False)
    return [(TOOL_CALL, call_id if isinstance(call_id, str) and call_id else None, name, text)]
