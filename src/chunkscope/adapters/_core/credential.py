"""The credential: an API key that never shows in ``repr``, ``vars`` or a pickle."""

from __future__ import annotations

from typing import Any

from chunkscope.protocol import LlmError

from .._http import resolve_api_key

__all__ = ["Credential"]


class Credential:
    """An API key held so that no ``repr``, ``vars()``, log line or pickle shows it.

    ``resolve(label)`` gives the key to send: the given one, else the ``env``
    variable read at that moment (``MISSING_CREDENTIAL`` / ``INVALID_CREDENTIAL``
    otherwise). A pickle carries only the variable's name: the receiving
    process reads its own environment.
    """

    __slots__ = ("_value", "env")

    def __init__(self, value: str | None, env: str | tuple[str, ...] | None) -> None:
        self._value = value
        self.env = env

    @property
    def given(self) -> bool:
        """True when a key was passed (rather than left to the environment)."""
        return self._value is not None

    def resolve(self, label: str) -> str:
        """The key to send (raises ``LlmError`` ``MISSING_CREDENTIAL`` / ``INVALID_CREDENTIAL``)."""
        return resolve_api_key(self._value, self.env, label=label)

    def peek(self) -> str | None:
        """The key if one can be resolved now, else None (for redaction only; never raises)."""
        try:
            return resolve_api_key(self._value, self.env, label="")
        except LlmError:
            return None

    def __repr__(self) -> str:
        if self._value is not None:
            return "<set>"
        names = (self.env,) if isinstance(self.env, str) else (self.env or ())
        return f"<from {' or '.join('$' + name for name in names)}>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Credential, (None, self.env))
