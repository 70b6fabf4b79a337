"""Counted nouns and articles for messages: "1 file", "2 files", "an int" — never "1 files", "a int".

Internal to the package (every layer's messages use it, so it sits in the lowest one).
"""

from __future__ import annotations

__all__ = ["a", "plural", "type_phrase"]

_IRREGULAR = {"child": "children", "index": "indices", "process": "processes", "class": "classes"}


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural unless ``count`` is 1 (``many`` when irregular)."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {many or _IRREGULAR.get(noun) or noun + 's'}"


def a(word: str) -> str:
    """``word`` after its indefinite article: "an int", "a str", "an OSError", "a unicode escape"."""
    first = word[:1].lower()
    vowel_sound = first in "aeio" or (first == "u" and not word.lower().startswith(("uni", "use", "usa")))
    # letters spelled out ("an SSE event", "an HTTP error") start with a vowel sound too
    if word[:2].isupper() and first in "fhlmnrsx":
        vowel_sound = True
    return f"{'an' if vowel_sound else 'a'} {word}"


def type_phrase(value: object) -> str:
    """``value``'s type name after its article ("an int", "a list") for "is …, not …" messages."""
    return a(type(value).__name__)
