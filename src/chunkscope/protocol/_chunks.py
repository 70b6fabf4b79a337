"""The StreamChunk vocabulary: chunks, blocks, usage, finish reasons.

Every model is a frozen pydantic model whose JSON form is the TypeScript
reference's form field for field: camelCase keys, optional keys omitted (never
``null``). Python attributes are snake_case.

Validation happens at the edges (``parse_chunk``, reading files); adapters
build chunks with keyword arguments and the hot path never re-validates.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NewType, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

__all__ = [
    "CallId",
    "BlockType",
    "FinishKind",
    "TextBlock",
    "ReasoningBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "ContentBlock",
    "TokenUsage",
    "LlmFailure",
    "FinishReason",
    "BlockStart",
    "TextDelta",
    "ReasoningDelta",
    "ToolCallDelta",
    "BlockEnd",
    "Usage",
    "Finish",
    "StreamChunk",
    "AnyChunk",
    "AnyBlock",
    "ChunkLike",
    "parse_block",
    "CHUNK_TYPES",
    "parse_chunk",
    "chunk_to_dict",
    "block_to_dict",
    "trusted",
]

CallId = NewType("CallId", str)
"""A provider-issued tool-call id (a branded string): ``CallId("call-123")``."""

BlockType = Literal["text", "reasoning", "tool-call"]
"""The content block kinds a stream can open."""

FinishKind = Literal["stop", "tool-calls", "max-tokens", "error", "aborted"]
"""Why a stream ended; ``error`` and ``aborted`` carry an ``LlmFailure``."""


_M = TypeVar("_M", bound="_Model")


class _Model(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        strict=True,
    )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: camelCase keys, unset optional keys omitted."""
        return self.model_dump(by_alias=True, exclude_none=True)


# --- blocks -------------------------------------------------------------------


class TextBlock(_Model):
    """Plain text visible to the end user."""

    type: Literal["text"] = "text"
    text: str


class ReasoningBlock(_Model):
    """Reasoning / thinking content, distinct from visible text."""

    type: Literal["reasoning"] = "reasoning"
    text: str


class ToolCallBlock(_Model):
    """A tool invocation requested by the model; ``arguments`` is raw JSON text."""

    type: Literal["tool-call"] = "tool-call"
    id: str
    name: str
    arguments: str


class ToolResultBlock(_Model):
    """The result of a tool invocation, sent back to the model."""

    type: Literal["tool-result"] = "tool-result"
    tool_call_id: str
    content: list[ContentBlock]
    is_error: bool | None = None


ContentBlock = Annotated[
    Union[TextBlock, ReasoningBlock, ToolCallBlock, ToolResultBlock],
    Field(discriminator="type"),
]
"""Any content block, discriminated by ``type``."""

ToolResultBlock.model_rebuild()


# --- usage and finish ---------------------------------------------------------


class TokenUsage(_Model):
    """Token accounting for one model call.

    Counts are DISJOINT: ``input_tokens`` is uncached input only; cache reads
    and writes are reported apart (billed input = the sum of the three).
    Parsing accepts a negative count (a real adapter can emit one); the
    ``usage-valid`` rule of the ``strict`` profile flags it.
    """

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None


class LlmFailure(_Model):
    """Serializable provider or transport failure facts (``LlmError.failure``)."""

    message: str
    code: str
    status: int | None = Field(default=None, ge=100, le=599)
    provider_retry_after_ms: float | None = Field(default=None, gt=0)
    request_id: str | None = None


class FinishReason(_Model):
    """Why a response stopped. ``failure`` is set exactly for ``error`` and ``aborted``."""

    kind: FinishKind
    failure: LlmFailure | None = None

    @property
    def ok(self) -> bool:
        """True for the successful kinds: ``stop``, ``tool-calls``, ``max-tokens``."""
        return self.kind in _SUCCESS_KINDS


_SUCCESS_KINDS = frozenset({"stop", "tool-calls", "max-tokens"})


# --- chunks -------------------------------------------------------------------


class BlockStart(_Model):
    """Opens content block ``index`` of kind ``block_type``."""

    type: Literal["block-start"] = "block-start"
    index: int
    block_type: BlockType


class TextDelta(_Model):
    """Appends ``text`` to the open text block ``index``."""

    type: Literal["text-delta"] = "text-delta"
    index: int
    text: str


class ReasoningDelta(_Model):
    """Appends ``text`` to the open reasoning block ``index``."""

    type: Literal["reasoning-delta"] = "reasoning-delta"
    index: int
    text: str


class ToolCallDelta(_Model):
    """Appends raw JSON text to tool call ``index``'s arguments."""

    type: Literal["tool-call-delta"] = "tool-call-delta"
    index: int
    id: str
    name: str | None = None
    arguments_delta: str


class BlockEnd(_Model):
    """Closes block ``index``; ``block`` is the complete, authoritative block."""

    type: Literal["block-end"] = "block-end"
    index: int
    block: ContentBlock


class Usage(_Model):
    """Token accounting, once, before ``finish``."""

    type: Literal["usage"] = "usage"
    usage: TokenUsage


class Finish(_Model):
    """The last chunk of every stream."""

    type: Literal["finish"] = "finish"
    reason: FinishReason
    replay_state: Any | None = None

    def to_dict(self) -> dict[str, Any]:
        # replayState is opaque provider data: keep its inner nulls verbatim.
        out: dict[str, Any] = {"type": "finish", "reason": self.reason.to_dict()}
        if self.replay_state is not None:
            out["replayState"] = self.replay_state
        return out


StreamChunk = Annotated[
    Union[BlockStart, TextDelta, ReasoningDelta, ToolCallDelta, BlockEnd, Usage, Finish],
    Field(discriminator="type"),
]
"""One chunk of an adapter's stream, discriminated by ``type``."""

AnyChunk = Union[BlockStart, TextDelta, ReasoningDelta, ToolCallDelta, BlockEnd, Usage, Finish]
"""A parsed chunk model (the plain union, for annotations)."""

AnyBlock = Union[TextBlock, ReasoningBlock, ToolCallBlock, ToolResultBlock]
"""A parsed content block model (the plain union, for annotations)."""

ChunkLike = Union[AnyChunk, "dict[str, Any]"]
"""What stream consumers accept: a chunk model or a seed-style camelCase dict."""

CHUNK_TYPES: dict[str, type[_Model]] = {
    "block-start": BlockStart,
    "text-delta": TextDelta,
    "reasoning-delta": ReasoningDelta,
    "tool-call-delta": ToolCallDelta,
    "block-end": BlockEnd,
    "usage": Usage,
    "finish": Finish,
}
"""The seven chunk types by their wire ``type``."""

_CHUNK_MODELS = tuple(CHUNK_TYPES.values())
_chunk_adapter: TypeAdapter[Any] = TypeAdapter(StreamChunk)
_block_adapter: TypeAdapter[Any] = TypeAdapter(ContentBlock)

_new = object.__new__
_setattr = object.__setattr__
_FIELDS_SET: dict[type[Any], set[str]] = {}


def trusted(cls: type[_M], fields: dict[str, Any]) -> _M:
    """Build a model from already-valid python-named ``fields`` (``type`` included).

    The hot path's constructor: about 4x cheaper than validation. Only for
    values the caller built itself from checked data; never for user input.
    """
    obj = _new(cls)
    _setattr(obj, "__dict__", fields)
    fields_set = _FIELDS_SET.get(cls)
    if fields_set is None:
        fields_set = _FIELDS_SET[cls] = set(cls.model_fields)
    _setattr(obj, "__pydantic_fields_set__", fields_set)
    _setattr(obj, "__pydantic_extra__", None)
    _setattr(obj, "__pydantic_private__", None)
    return obj


def _fast_text(cls: type[_M], obj: dict[str, Any]) -> _M | None:
    if len(obj) == 3:
        index = obj.get("index")
        text = obj.get("text")
        if type(index) is int and type(text) is str:
            return trusted(cls, {"type": obj["type"], "index": index, "text": text})
    return None


def _fast_tool(obj: dict[str, Any]) -> ToolCallDelta | None:
    index = obj.get("index")
    call_id = obj.get("id")
    delta = obj.get("argumentsDelta")
    name = obj.get("name")
    if (
        type(index) is int
        and type(call_id) is str
        and type(delta) is str
        and (name is None or type(name) is str)
        and len(obj) == (5 if "name" in obj else 4)
    ):
        return trusted(
            ToolCallDelta,
            {"type": "tool-call-delta", "index": index, "id": call_id, "name": name, "arguments_delta": delta},
        )
    return None


def _fast_start(obj: dict[str, Any]) -> BlockStart | None:
    index = obj.get("index")
    kind = obj.get("blockType")
    if len(obj) == 3 and type(index) is int and kind in ("text", "reasoning", "tool-call"):
        return trusted(BlockStart, {"type": "block-start", "index": index, "block_type": kind})
    return None


def parse_chunk(obj: Any) -> AnyChunk:
    """Return ``obj`` as a typed chunk.

    Accepts a chunk model (returned as is) or a camelCase dict as written in
    the seed. Raises ``pydantic.ValidationError`` for anything else; stream
    consumers turn that into a ``schema`` violation.
    """
    if type(obj) is dict:
        # Fast paths for the shapes that make up almost every stream; any
        # irregularity falls through to full validation and its error message.
        kind = obj.get("type")
        fast: AnyChunk | None = None
        if kind == "text-delta":
            fast = _fast_text(TextDelta, obj)
        elif kind == "reasoning-delta":
            fast = _fast_text(ReasoningDelta, obj)
        elif kind == "tool-call-delta":
            fast = _fast_tool(obj)
        elif kind == "block-start":
            fast = _fast_start(obj)
        if fast is not None:
            return fast
    elif type(obj) in _CHUNK_MODELS:  # exact type check: isinstance on models is slow
        return obj  # type: ignore[no-any-return]
    chunk: AnyChunk = _chunk_adapter.validate_python(obj)
    return chunk


def parse_block(obj: Any) -> AnyBlock:
    """Return ``obj`` as a typed content block (model or camelCase dict)."""
    if isinstance(obj, (TextBlock, ReasoningBlock, ToolCallBlock, ToolResultBlock)):
        return obj  # type: ignore[return-value]
    block: AnyBlock = _block_adapter.validate_python(obj)
    return block


def chunk_to_dict(chunk: ChunkLike) -> dict[str, Any]:
    """The JSON form of a chunk: exactly the TypeScript reference's fields."""
    return parse_chunk(chunk).to_dict()


def block_to_dict(block: AnyBlock) -> dict[str, Any]:
    """The JSON form of a content block."""
    return block.to_dict()
