"""An event's JSON payload on the hot path: pydantic-core's parser first, ``json`` the reference.

``parse_fast`` is ``pydantic_core.from_json`` (jiter, in Rust; pydantic-core is a declared
dependency): about twice as fast as ``json``'s own C scanner on the wires' event payloads
(measured in benchmarks/bench_adapters.py), which is most of an adapter's time per event.
Where it reads a text, it reads the value ``json.loads`` reads (numbers, strings and escapes,
duplicate keys, ``NaN``/``Infinity``: tests/adapters/test_payload_json.py compares them).
What it refuses (``PARSE_FAST_REFUSES``: bad JSON, nesting past its limit of a few hundred,
a lone surrogate, whitespace ``json`` allows and it does not) a translator hands to its
``json`` path, which reads it or says why not exactly as before: a refusal never changes
what a stream yields, only how fast.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic_core import from_json

__all__ = ["PARSE_FAST_REFUSES", "parse_fast"]

parse_fast: Callable[[str], Any] = from_json
"""A JSON text's value, or one of ``PARSE_FAST_REFUSES`` (then ask ``json``)."""

PARSE_FAST_REFUSES = (ValueError, TypeError, RecursionError)
"""What ``parse_fast`` raises for a text it does not read (a lone surrogate is a TypeError)."""
