"""What a request body carries of the caller's options, read back the way its wire writes them.

Each wire's ``request`` module has a ``sent_options(body)`` returning a ``SentOptions``; the
conformance kit reads a recorded request through it (``adapters.wires.WIRES[name].sent``),
so it judges every wire with one check and spells no wire's name.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["SentOptions"]


class SentOptions(NamedTuple):
    """A request body's options as sent (each as found; nothing is validated).

    Attributes:
        system: whatever holds the system prompt (a JSON-able value; None when absent).
        stops: the stop sequences sent.
        tool_names: the names of the tools offered.
        max_tokens: the output limit sent, as found (None when absent).
        temperature: the temperature sent, as found (None when absent; a wire may nest it).
    """

    system: Any
    stops: list[Any]
    tool_names: list[Any]
    max_tokens: Any
    temperature: Any = None


def listed(value: Any) -> list[Any]:
    """``value`` when it is a list, else an empty list (a body's fields are not trusted)."""
    return value if isinstance(value, list) else []
