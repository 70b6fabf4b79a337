"""The StreamChunk vocabulary: chunks, blocks, usage, finish reasons.

Every model is a frozen pydantic model whose JSON form is the TypeScript
reference's form field for field: camelCase keys, optional keys omitted (never
``null``). Python attributes are snake_case.

Validation happens at the edges (``parse_chunk``, reading files); adapters
build chunks with keyword arguments and the hot path never re-validates.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, Literal, NewType, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

__all__ = [
    "CallId",
    "BlockType",
    "FinishKind",
    "TextBlock",
    "ReasoningBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "ImageAttachment",
    "ImageBlock",
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
]

CallId = NewType("CallId", str)
"""A provider-issued tool-call id (a branded string): ``CallId("call-123")``."""

BlockType = Literal["text", "reasoning", "tool-call", "image", "tool-result"]
"""The content block kinds a ``block-start`` names: the TypeScript reference's block types. A model's
stream opens ``text``, ``reasoning`` and ``tool-call`` blocks; ``image`` and ``tool-result`` pass
under the ``dsh`` profile only (``strict`` reports them under ``schema``)."""

STREAM_BLOCK_TYPES = frozenset({"text", "reasoning", "tool-call"})
"""The block kinds the ``strict`` profile lets a stream open."""

FinishKind = Literal["stop", "tool-calls", "max-tokens", "error", "aborted"]
"""Why a stream ended; ``error`` and ``aborted`` carry an ``LlmFailure``."""


_M = TypeVar("_M", bound="_Model")
_D = TypeVar("_D", "TextDelta", "ReasoningDelta")


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


class ImageDimensions(_Model):
    """An image's size in pixels."""

    width: int
    height: int


class ImageAttachment(_Model):
    """A durable reference to one stored image, as the TypeScript reference's attachment service keeps it.

    ``attachment_id`` is opaque (never a path or URL); ``bytes`` the exact encoded length;
    ``original_dimensions`` is set when normalization scaled the image down.
    """

    attachment_id: str
    media_type: str
    bytes: int
    width: int
    height: int
    name: str | None = None
    original_dimensions: ImageDimensions | None = None


class ImageBlock(_Model):
    """A raster image in a message's content (a user's picture; the bytes stay in the store)."""

    type: Literal["image"] = "image"
    attachment: ImageAttachment


ContentBlock = Annotated[
    Union[TextBlock, ReasoningBlock, ToolCallBlock, ToolResultBlock, ImageBlock],
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
    # Finite: JSON has no Infinity, and the TypeScript side must read the failure back.
    provider_retry_after_ms: float | None = Field(default=None, gt=0, allow_inf_nan=False)
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
        """The JSON form; ``replayState`` (opaque provider data) keeps its inner nulls verbatim."""
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

AnyBlock = Union[TextBlock, ReasoningBlock, ToolCallBlock, ToolResultBlock, ImageBlock]
"""A parsed content block model (the plain union, for annotations)."""

ChunkLike = Union[AnyChunk, "dict[str, Any]"]
"""What stream consumers accept: a chunk model or a camelCase dict (as the protocol's examples write them)."""

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
# BaseModel's own slot descriptors, called directly: what ``object.__setattr__`` ends up calling,
# minus the lookup by name (~0.1 µs less per chunk on the adapters' hot path).
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_FIELDS_SET: dict[type[Any], set[str]] = {}


def trusted(cls: type[_M], fields: dict[str, Any]) -> _M:
    """Build a model from already-valid python-named ``fields`` (``type`` included).

    The hot path's constructor: about half the cost of ``TextDelta(index=..., text=...)``. Only for
    values the caller built itself from checked data; never for user input.
    """
    obj = _new(cls)
    _set_dict(obj, fields)
    fields_set = _FIELDS_SET.get(cls)
    if fields_set is None:
        fields_set = _FIELDS_SET[cls] = set(cls.model_fields)
    _set_fields_set(obj, fields_set)
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


UsageFinding = tuple[str, str]
"""A usage-arithmetic finding: a rule id of ``USAGE_RULES`` and its message."""

_FINDINGS = "usage_findings"


def attach_usage_findings(chunk: Usage, findings: tuple[UsageFinding, ...]) -> None:
    """Hand a translator's usage-arithmetic findings on with its usage chunk, for the checker.

    They ride on the chunk's private data, not its JSON (the counts stay as the wire sent them):
    whatever reads the wire's raw counts again (a tap recording's replay) finds them again.
    """
    _set_private(chunk, {_FINDINGS: findings})


def usage_findings(chunk: Any) -> tuple[UsageFinding, ...]:
    """The usage-arithmetic findings a translator attached to ``chunk`` (none for most)."""
    private = getattr(chunk, "__pydantic_private__", None)
    return private.get(_FINDINGS, ()) if type(private) is dict else ()


# --- fast parsing ------------------------------------------------------------------
#
# Each fast parser accepts exactly what full validation accepts for the
# common shapes (exact key sets, exact types — strict mode takes no bool for an
# int) and returns None for anything else, which then goes through full
# validation and its error message. They build models with ``trusted``.

_TEXT_DELTA_KEYS = frozenset({"type", "index", "text"})
_BLOCK_KINDS = frozenset({"text", "reasoning", "tool-call"})
_FINISH_KINDS = frozenset({"stop", "tool-calls", "max-tokens", "error", "aborted"})
_USAGE_KEYS = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "cacheReadTokens": "cache_read_tokens",
    "cacheWriteTokens": "cache_write_tokens",
    "reasoningTokens": "reasoning_tokens",
}


def _fast_text_like(cls: type[_D], chunk_type: str) -> Callable[[dict[str, Any]], _D | None]:
    """The fast parser of ``text-delta`` or ``reasoning-delta`` (same fields: index, text)."""

    def parse(obj: dict[str, Any]) -> _D | None:
        if len(obj) == 3:
            index = obj.get("index")
            text = obj.get("text")
            if type(index) is int and type(text) is str:
                return trusted(cls, {"type": chunk_type, "index": index, "text": text})
        return None

    return parse


_fast_text = _fast_text_like(TextDelta, "text-delta")
_fast_reasoning = _fast_text_like(ReasoningDelta, "reasoning-delta")


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
            {
                "type": "tool-call-delta",
                "index": index,
                "id": call_id,
                "name": name,
                "arguments_delta": delta,
            },
        )
    return None


def _fast_start(obj: dict[str, Any]) -> BlockStart | None:
    index = obj.get("index")
    kind = obj.get("blockType")
    if len(obj) == 3 and type(index) is int and type(kind) is str and kind in _BLOCK_KINDS:
        return trusted(BlockStart, {"type": "block-start", "index": index, "block_type": kind})
    return None


def _fast_block(block: Any) -> AnyBlock | None:
    if type(block) is not dict:
        return None
    kind = block.get("type")
    if kind == "text" or kind == "reasoning":  # == on an unhashable value is False, never an error
        return _fast_text_block(kind, block)
    if kind == "tool-call":
        return _fast_tool_block(block)
    return None


def _fast_text_block(kind: str, block: dict[str, Any]) -> TextBlock | ReasoningBlock | None:
    text = block.get("text")
    if len(block) != 2 or type(text) is not str:
        return None
    if kind == "text":
        return trusted(TextBlock, {"type": "text", "text": text})
    return trusted(ReasoningBlock, {"type": "reasoning", "text": text})


def _fast_tool_block(block: dict[str, Any]) -> ToolCallBlock | None:
    call_id = block.get("id")
    name = block.get("name")
    arguments = block.get("arguments")
    if len(block) == 4 and type(call_id) is str and type(name) is str and type(arguments) is str:
        fields = {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}
        return trusted(ToolCallBlock, fields)
    return None


def _fast_end(obj: dict[str, Any]) -> BlockEnd | None:
    index = obj.get("index")
    if len(obj) == 3 and type(index) is int:
        block = _fast_block(obj.get("block"))
        if block is not None:
            return trusted(BlockEnd, {"type": "block-end", "index": index, "block": block})
    return None


def _fast_usage(obj: dict[str, Any]) -> Usage | None:
    counts = obj.get("usage")
    if len(obj) != 2 or type(counts) is not dict:
        return None
    fields: dict[str, Any] = {
        "input_tokens": None,
        "output_tokens": None,
        "cache_read_tokens": None,
        "cache_write_tokens": None,
        "reasoning_tokens": None,
    }
    for key, value in counts.items():
        name = _USAGE_KEYS.get(key)
        if name is None or not (type(value) is int or value is None):
            return None
        fields[name] = value
    if fields["input_tokens"] is None or fields["output_tokens"] is None:
        return None
    return trusted(Usage, {"type": "usage", "usage": trusted(TokenUsage, fields)})


def _fast_finish(obj: dict[str, Any]) -> Finish | None:
    # Only failure-free reasons; a failure goes through full validation (its ranges).
    reason = obj.get("reason")
    size = len(obj)
    if (
        type(reason) is dict
        and len(reason) == 1
        and type(kind := reason.get("kind")) is str
        and kind in _FINISH_KINDS
        and (size == 2 or (size == 3 and "replayState" in obj))
    ):
        return trusted(
            Finish,
            {
                "type": "finish",
                "reason": trusted(FinishReason, {"kind": kind, "failure": None}),
                "replay_state": obj.get("replayState"),
            },
        )
    return None


_FAST_PARSERS: dict[Any, Any] = {
    "text-delta": _fast_text,
    "reasoning-delta": _fast_reasoning,
    "tool-call-delta": _fast_tool,
    "block-start": _fast_start,
    "block-end": _fast_end,
    "usage": _fast_usage,
    "finish": _fast_finish,
}


def parse_chunk(obj: Any) -> AnyChunk:
    """Return ``obj`` as a typed chunk.

    Accepts a chunk model (returned as is) or a camelCase dict as the protocol's
    examples write it. Raises ``pydantic.ValidationError`` for anything else; stream
    consumers turn that into a ``schema`` violation.
    """
    if type(obj) is dict:
        # Fast paths for the regular shapes; any irregularity falls through to
        # full validation and its error message.
        kind = obj.get("type")
        fast = _FAST_PARSERS.get(kind) if type(kind) is str else None
        if fast is not None:
            chunk: AnyChunk | None = fast(obj)
            if chunk is not None:
                return chunk
    elif type(obj) in _CHUNK_MODELS:  # exact type check: isinstance on models is slow
        return obj  # type: ignore[no-any-return]
    parsed: AnyChunk = _chunk_adapter.validate_python(obj)
    return parsed


def parse_block(obj: Any) -> AnyBlock:
    """Return ``obj`` as a typed content block (model or camelCase dict)."""
    if isinstance(obj, (TextBlock, ReasoningBlock, ToolCallBlock, ToolResultBlock, ImageBlock)):
        return obj
    block: AnyBlock = _block_adapter.validate_python(obj)
    return block


def parse_chunk_ignoring_unknown_keys(obj: Any) -> AnyChunk:
    """``parse_chunk``, with keys no chunk model knows left out first, at every level: how the
    TypeScript reference's validator reads a chunk (it looks only at the fields it needs).

    The ``dsh`` profile parses this way; ``strict`` reports an unknown key under ``schema``.
    Raises ``pydantic.ValidationError`` for what is not a chunk even then.
    """
    try:
        return parse_chunk(obj)
    except ValidationError as exc:
        if type(obj) is not dict:
            raise
        try:
            known = _known_keys(obj, _CHUNK_OF_TYPE.get(obj.get("type")))
            unchanged = known == obj
        except RecursionError:  # hostile nesting: not a chunk, as parse_chunk said
            raise exc from None
        if unchanged:
            raise
        return parse_chunk(known)


@functools.cache
def _aliases(cls: type[_Model]) -> dict[str, type[_Model] | None]:
    """A model's JSON keys → the model a nested object under that key is (None: a plain value)."""
    nested: dict[str, type[_Model] | None] = {}
    for name, info in cls.model_fields.items():
        inner = _NESTED.get((cls, name))
        nested[info.alias or name] = inner
    return nested


def _known_keys(obj: Any, cls: type[_Model] | None) -> Any:
    """``obj`` with only the keys ``cls`` knows, nested objects likewise (blocks by their type)."""
    if cls is None or type(obj) is not dict:
        return obj
    if cls is _BLOCK:
        cls = _BLOCK_OF_TYPE.get(obj.get("type"))
        if cls is None:
            return obj
    keys = _aliases(cls)
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if key not in keys:
            continue
        inner = keys[key]
        if inner is _BLOCK and type(value) is list:  # a tool result's content: a list of blocks
            out[key] = [_known_keys(item, _BLOCK) for item in value]
        else:
            out[key] = _known_keys(value, inner)
    return out


class _BlockOfType(_Model):
    """Stands for "a content block, whichever its type says" in ``_NESTED``."""


_BLOCK: type[_Model] = _BlockOfType
_BLOCK_OF_TYPE: dict[Any, type[_Model]] = {
    "text": TextBlock,
    "reasoning": ReasoningBlock,
    "tool-call": ToolCallBlock,
    "tool-result": ToolResultBlock,
    "image": ImageBlock,
}
_CHUNK_OF_TYPE: dict[Any, type[_Model]] = dict(CHUNK_TYPES)
# The nested objects of each model: (model, field) → the model of the value.
_NESTED: dict[tuple[type[_Model], str], type[_Model]] = {
    (BlockEnd, "block"): _BLOCK,
    (ToolResultBlock, "content"): _BLOCK,
    (ImageBlock, "attachment"): ImageAttachment,
    (ImageAttachment, "original_dimensions"): ImageDimensions,
    (Usage, "usage"): TokenUsage,
    (Finish, "reason"): FinishReason,
    (FinishReason, "failure"): LlmFailure,
}


def chunk_to_dict(chunk: ChunkLike) -> dict[str, Any]:
    """The JSON form of a chunk: exactly the TypeScript reference's fields."""
    return parse_chunk(chunk).to_dict()


def block_to_dict(block: AnyBlock) -> dict[str, Any]:
    """The JSON form of a content block."""
    return block.to_dict()


def describe_invalid(obj: Any, exc: Exception | None = None) -> str:
    """One sentence saying why ``obj`` is not a chunk (for ``schema`` violations and file errors).

    ``exc`` is the ``pydantic.ValidationError`` that ``parse_chunk(obj)`` raised, when there is one.
    """
    if not isinstance(obj, dict):
        return f"expected a chunk (a model or a dict with a 'type'), got {type(obj).__name__}"
    kind = obj.get("type")
    if kind is None:
        return "the chunk has no 'type' field"
    if type(kind) is not str or kind not in CHUNK_TYPES:
        expected = ", ".join(CHUNK_TYPES)
        return f"unknown chunk type {kind!r} (expected one of {expected})"
    errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else []
    if not errors:
        return f"the {kind} chunk is malformed"
    parts = [_describe_error(obj, err) for err in errors[:3]]
    more = f" (and {len(errors) - 3} more problems)" if len(errors) > 3 else ""
    return f"the {kind} chunk is malformed: " + "; ".join(parts) + more


def _describe_error(obj: dict[str, Any], err: Any) -> str:
    where = ".".join(_written_location(obj, list(err.get("loc", ()))[1:])) or "the chunk"
    kind = err.get("type", "")
    if kind == "missing":
        return f"{where!r} is missing"
    if kind == "extra_forbidden":
        return f"unexpected field {where!r}"
    got = err.get("input")
    got_text = repr(got)
    if len(got_text) > 40:
        got_text = got_text[:37] + "..."
    return f"{where!r}: {str(err.get('msg', 'invalid')).lower()} (got {got_text})"


def _written_location(obj: dict[str, Any], location: list[Any]) -> list[str]:
    """A pydantic error location as the keys the user actually wrote.

    pydantic puts each discriminated union's tag into the location; the tag is
    dropped where the node at that point has no such key but has that ``type``.
    """
    loc: list[str] = []
    node: Any = obj
    tag_skipped = False
    for part in location:
        if not tag_skipped and isinstance(node, dict) and part not in node and node.get("type") == part:
            tag_skipped = True
            continue
        tag_skipped = False
        loc.append(str(part))
        node = _child(node, part)
    return loc


def _child(node: Any, part: Any) -> Any:
    """``node[part]`` for a dict key or a list index in range, else None."""
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and part < len(node):
        return node[part]
    return None
