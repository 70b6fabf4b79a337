"""An event's JSON payload on the hot path: pydantic-core's parser first, ``json`` the reference.

``parse_fast`` is ``pydantic_core.from_json`` (jiter, in Rust; pydantic-core is a declared
dependency): about twice as fast as ``json``'s own C scanner on the wires' event payloads
(measured in benchmarks/bench_adapters.py), which is most of an adapter's time per event.
Where it reads a text, it reads the value ``json.loads`` reads (numbers, strings and escapes,
duplicate keys, ``NaN``/``Infinity``: tests/adapters/test_payload_json.py compares them).
What it refuses (``PARSE_FAST_REFUSES``: bad JSON, nesting past its limit of a few hundred,
a lone surrogate, whitespace ``json`` allows and it does not) a translator hands to
``parse_reference``, the one ``json`` path every translator shares, which reads it or says
why not: a refusal never changes what a stream yields, only how fast.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic_core import from_json

__all__ = ["PARSE_FAST_REFUSES", "parse_fast", "parse_reference", "scan_json"]

parse_fast: Callable[[str], Any] = from_json
"""A JSON text's value, or one of ``PARSE_FAST_REFUSES`` (then ask ``json``)."""

PARSE_FAST_REFUSES = (ValueError, TypeError, RecursionError)
"""What ``parse_fast`` raises for a text it does not read (a lone surrogate is a TypeError)."""


# The decoder's scanner, which ``json.loads`` ends up calling through ``raw_decode``: the same C
# parser without the Python frames around it. It raises StopIteration where there is no JSON
# value at all; ``json.loads`` then says why.
scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def parse_reference(data: str | bytes) -> Any:
    """``json``'s reading of a payload (called only when ``parse_fast`` refused it).

    The C scanner first (a whole JSON value, maybe followed by whitespace); else ``json.loads``
    (which allows leading whitespace and reads bytes in any UTF). Raises the ``ValueError``
    that says why it is not JSON (a ``json.JSONDecodeError``, a ``UnicodeDecodeError``, or
    "JSON nested too deeply"), which each translator words as its ``MALFORMED_RESPONSE``.
    """
    if isinstance(data, str):
        try:
            obj, end = scan_json(data, 0)
        except (ValueError, RecursionError, StopIteration):
            pass
        else:
            if end == len(data) or data[end:].isspace():
                return obj
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
