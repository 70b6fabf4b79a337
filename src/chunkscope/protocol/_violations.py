"""The violation vocabulary: rule ids (``RULES``), profiles, and ``Violation``.

``RULES`` is one row per rule: id, severity, text, profiles and the rule's
smallest breaking example (a chunk sequence, as data, and the position the
checker reports). The README's rule table, the rule tests, notebook 01's walk
through the rules and ``chunkscope.testing``'s invalid streams all read these
rows: a new rule is a row here, a branch in ``_checker`` and a mutation in
``chunkscope.testing._mutations``.

What a violation *is*, apart from how one is found (``_checker``) or reported
(``_validate``, ``LlmError.violations``): every module that names a rule or
carries violations imports this one, and it imports nothing of the package, so
no import cycle can pass through it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Rule", "RULES", "PROFILES", "Profile", "Severity", "USAGE_RULES", "Violation"]

Severity = Literal["error", "warning"]
Profile = Literal["strict", "dsh"]
PROFILES: tuple[str, ...] = ("strict", "dsh")
"""The rule profiles ``Checker``, ``check``, ``validated`` and ``collect`` accept."""


@dataclass(frozen=True)
class Rule:
    """One protocol rule: its stable id, severity, what it requires, the profiles applying it,
    and its smallest breaking example.

    ``example`` is a stream (chunks in their JSON form, as ``cs.check`` and
    ``cs.show`` take them) that breaks this rule and no other, under every
    profile in ``profiles`` (and checks clean under the others); the checker
    reports it at ``example_position`` (0-based; None = the end of the stream).
    Each example is the smallest clean stream of one block (block-start, one
    delta, block-end, usage, finish) with one edit. Copy it before changing it:
    the registry is shared.
    """

    id: str
    severity: Severity
    description: str
    profiles: tuple[str, ...] = ("strict",)
    example: tuple[Any, ...] = field(default=(), hash=False, repr=False)
    example_position: int | None = None


# One row per rule: id, severity, text, profiles, smallest breaking example, where it breaks.
_Row = tuple[str, Severity, str, tuple[str, ...], tuple[Any, ...], int | None]


def _rules(*rows: _Row) -> dict[str, Rule]:
    # Each rule its own copy of the chunks (the rows share the "Hi" block's dicts).
    return {
        rid: Rule(rid, severity, text, profiles, copy.deepcopy(example), position)
        for rid, severity, text, profiles, example, position in rows
    }


# --- the examples' chunks, in their JSON form -------------------------------------


def _start(kind: str = "text", index: int = 0) -> dict[str, Any]:
    return {"type": "block-start", "index": index, "blockType": kind}


def _text(text: str = "Hi", index: int = 0, kind: str = "text") -> dict[str, Any]:
    return {"type": f"{kind}-delta", "index": index, "text": text}


def _end(text: str = "Hi", index: int = 0, kind: str = "text") -> dict[str, Any]:
    return {"type": "block-end", "index": index, "block": {"type": kind, "text": text}}


_CALL = {"id": "call_1", "name": "get_weather"}
_ARGUMENTS = '{"city":"Tokyo"}'


def _tool(arguments: str = _ARGUMENTS, **fields: Any) -> dict[str, Any]:
    call = {k: v for k, v in {**_CALL, **fields}.items() if v is not None}
    return {"type": "tool-call-delta", "index": 0, **call, "argumentsDelta": arguments}


def _end_tool(arguments: str = _ARGUMENTS, **fields: Any) -> dict[str, Any]:
    block = {"type": "tool-call", **_CALL, **fields, "arguments": arguments}
    return {"type": "block-end", "index": 0, "block": block}


def _usage(input_tokens: int = 3, output_tokens: int = 1) -> dict[str, Any]:
    return {"type": "usage", "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens}}


def _finish(kind: str = "stop") -> dict[str, Any]:
    return {"type": "finish", "reason": {"kind": kind}}


_HI = (_start(), _text(), _end())  # the smallest text block: "Hi"
_CUT = '{"city":'

_BOTH = ("strict", "dsh")
RULES: dict[str, Rule] = _rules(
    (
        "block-pairing",
        "error",
        "Every block-start has exactly one matching block-end and every block-end an "
        "open block-start; blocks may stay open only at an error or aborted finish.",
        _BOTH,
        (_start(), _text(), _usage(), _finish()),  # the block-end is missing
        3,
    ),
    (
        "index-order",
        "error",
        "Block indexes are 0, 1, 2, … in order of block-start and never reused "
        "(dsh: non-negative safe integers, at most 2**53 - 1, not reused while open).",
        _BOTH,
        (_start(index=-1), _text(index=-1), _end(index=-1), _usage(), _finish()),
        0,
    ),
    (
        "arguments-json",
        "error",
        "A tool call's argumentsDelta texts concatenate to a JSON object (held until "
        "the finish: max-tokens, error and aborted may cut it short).",
        ("strict",),
        (_start("tool-call"), _tool(_CUT), _end_tool(_CUT), _usage(), _finish("tool-calls")),
        2,
    ),
    (
        "finish-last",
        "error",
        "Exactly one finish, and it is the last chunk.",
        _BOTH,
        (*_HI, _usage()),  # the stream ends without a finish
        None,
    ),
    (
        "usage-before-finish",
        "error",
        "usage comes before finish, at most once (a usage after the finish breaks this rule).",
        _BOTH,
        (*_HI, _finish(), _usage()),
        4,
    ),
    (
        "delta-index",
        "error",
        "Every delta carries the index of an open block of its own kind.",
        _BOTH,
        (*_HI, _text("!"), _usage(), _finish()),  # a delta after its block ended
        3,
    ),
    (
        "no-interleave",
        "error",
        "Blocks do not interleave: a block-start only after the previous block's "
        "block-end, deltas only for the block opened last.",
        ("strict",),
        (
            _start(),
            _text(),
            _start("reasoning", 1),  # block 1 starts while block 0 is open
            _end(),
            _end("", 1, "reasoning"),
            _usage(),
            _finish(),
        ),
        2,
    ),
    (
        "block-end-match",
        "error",
        "block-end's block has the block's type (dsh: only this) and the content its deltas built.",
        _BOTH,
        (_start(), _text(), _end(kind="reasoning"), _usage(), _finish()),
        2,
    ),
    (
        "tool-call-id",
        "error",
        "A tool call keeps one non-empty id, unique in the stream, across its deltas and block-end.",
        ("strict",),
        (_start("tool-call"), _tool(), _end_tool(id="call_2"), _usage(), _finish("tool-calls")),
        2,
    ),
    (
        "tool-call-name",
        "error",
        "A tool-call block has a non-empty name by its block-end.",
        ("strict",),
        (_start("tool-call"), _tool(name=None), _end_tool(name=""), _usage(), _finish("tool-calls")),
        2,
    ),
    (
        "finish-consistency",
        "error",
        "A tool-calls finish follows at least one tool-call block; a stop finish follows at least one block.",
        ("strict",),
        (*_HI, _usage(), _finish("tool-calls")),
        4,
    ),
    (
        "usage-valid",
        "error",
        "Usage counts are non-negative integers.",
        ("strict",),
        (*_HI, _usage(3, -1), _finish()),
        3,
    ),
    (
        "usage-missing",
        "warning",
        "A successful finish has a usage chunk before it.",
        ("strict",),
        (*_HI, _finish()),
        3,
    ),
    (
        "schema",
        "error",
        "Every chunk is one of the seven chunk shapes (type, fields, field types; dsh: unknown keys "
        "ignored, image and tool-result blocks allowed).",
        _BOTH,
        (*_HI, {"type": "text-delta", "index": 0}, _usage(), _finish()),  # a delta without its text
        3,
    ),
)
"""Every rule by its stable id. Ids, once published, never change."""


# The usage-arithmetic findings: a provider's usage that contradicts the provider's own
# definitions (docs/usage.md, "Usage that does not add up"). Only a translator sees the raw
# counts, so these have no chunk example: the translator finds them and hands them on with its
# usage chunk, and the strict checker reports them at that chunk, as warnings (the counts are
# kept as the provider sent them; the finding says they do not add up).
_ARITHMETIC: Severity = "warning"
USAGE_RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule(
            "usage-cached-over-prompt",
            _ARITHMETIC,
            "Cached prompt tokens are part of the prompt: never more than the prompt count "
            "(OpenAI chat, DeepSeek, Responses, Gemini).",
        ),
        Rule(
            "usage-reasoning-over-output",
            _ARITHMETIC,
            "Reasoning tokens are part of the output: never more than the output count "
            "(OpenAI chat, Responses, Anthropic).",
        ),
        Rule(
            "usage-total",
            _ARITHMETIC,
            "The total is the sum of its parts as the provider defines it (OpenAI chat, "
            "Responses, Gemini, Bedrock).",
        ),
        Rule(
            "usage-decreased",
            _ARITHMETIC,
            "A cumulative count never goes down within a stream (Anthropic message_start, message_delta).",
        ),
        Rule(
            "usage-cache-split",
            _ARITHMETIC,
            "DeepSeek's prompt_cache_hit_tokens + prompt_cache_miss_tokens is prompt_tokens.",
        ),
    )
}
"""The usage-arithmetic findings by id (warnings, under ``strict``; ``docs/usage.md``)."""


@dataclass(frozen=True)
class Violation:
    """A broken rule: which, how bad, where (0-based chunk number; None = end of stream) and why.

    ``chunk`` is the chunk judged (the parsed model; for a ``schema``
    violation, the value as it came; None at the end of the stream).
    """

    rule: str
    severity: Severity
    position: int | None
    chunk: Any
    message: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form: rule, severity, position, message, and the chunk in its JSON form."""
        chunk = self.chunk
        if hasattr(chunk, "to_dict"):
            chunk = chunk.to_dict()
        return {
            "rule": self.rule,
            "severity": self.severity,
            "position": self.position,
            "message": self.message,
            "chunk": chunk,
        }

    def __str__(self) -> str:
        where = "end of stream" if self.position is None else f"chunk {self.position}"
        label = "" if self.severity == "error" else " (warning)"
        return f"{where}: {self.rule}{label}: {self.message}"
