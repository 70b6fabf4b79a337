"""The violation vocabulary: rule ids (``RULES``), profiles, and ``Violation``.

What a violation *is*, apart from how one is found (``_checker``) or reported
(``_validate``, ``LlmError.violations``): every module that names a rule or
carries violations imports this one, and it imports nothing of the package, so
no import cycle can pass through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Rule", "RULES", "PROFILES", "Profile", "Severity", "Violation"]

Severity = Literal["error", "warning"]
Profile = Literal["strict", "dsh"]
PROFILES: tuple[str, ...] = ("strict", "dsh")
"""The rule profiles ``Checker``, ``check``, ``validated`` and ``collect`` accept."""


@dataclass(frozen=True)
class Rule:
    """One protocol rule: its stable id, severity, what it requires, and the profiles applying it."""

    id: str
    severity: Severity
    description: str
    profiles: tuple[str, ...] = ("strict",)


def _rules(*rows: tuple[str, Severity, str, tuple[str, ...]]) -> dict[str, Rule]:
    return {rid: Rule(rid, severity, text, profiles) for rid, severity, text, profiles in rows}


_BOTH = ("strict", "dsh")
RULES: dict[str, Rule] = _rules(
    (
        "block-pairing",
        "error",
        "Every block-start has exactly one matching block-end and every block-end an "
        "open block-start; blocks may stay open only at an error or aborted finish.",
        _BOTH,
    ),
    (
        "index-order",
        "error",
        "Block indexes are 0, 1, 2, … in order of block-start and never reused "
        "(dsh: non-negative safe integers, at most 2**53 - 1, not reused while open).",
        _BOTH,
    ),
    (
        "arguments-json",
        "error",
        "A tool call's argumentsDelta texts concatenate to a JSON object (held until "
        "the finish: max-tokens, error and aborted may cut it short).",
        ("strict",),
    ),
    ("finish-last", "error", "Exactly one finish, and it is the last chunk.", _BOTH),
    (
        "usage-before-finish",
        "error",
        "usage comes before finish, at most once (a usage after the finish breaks this rule).",
        _BOTH,
    ),
    ("delta-index", "error", "Every delta carries the index of an open block of its own kind.", _BOTH),
    (
        "no-interleave",
        "error",
        "Blocks do not interleave: a block-start only after the previous block's "
        "block-end, deltas only for the block opened last.",
        ("strict",),
    ),
    (
        "block-end-match",
        "error",
        "block-end's block has the block's type (dsh: only this) and the content its deltas built.",
        _BOTH,
    ),
    (
        "tool-call-id",
        "error",
        "A tool call keeps one non-empty id, unique in the stream, across its deltas and block-end.",
        ("strict",),
    ),
    ("tool-call-name", "error", "A tool-call block has a non-empty name by its block-end.", ("strict",)),
    (
        "finish-consistency",
        "error",
        "A tool-calls finish follows at least one tool-call block; a stop finish follows at least one block.",
        ("strict",),
    ),
    ("usage-valid", "error", "Usage counts are non-negative integers.", ("strict",)),
    ("usage-missing", "warning", "A successful finish has a usage chunk before it.", ("strict",)),
    ("schema", "error", "Every chunk is one of the seven chunk shapes (type, fields, field types).", _BOTH),
)
"""Every rule by its stable id. Ids, once published, never change."""


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
