"""The local provider's prompt cache: DeepSeek's model, so a cache miss can be shown offline.

A request's prompt is its body's prompt fields in the wire's cache order, serialized
(``chunkscope._wires.prompt_parts``). Its size in tokens is estimated as one token per
``CHARS_PER_TOKEN`` characters (rounded up). The cache remembers every prefix it has seen at a
whole number of units (``unit_tokens`` tokens each), per model and key; a request's cache hit is
the longest of its unit prefixes seen before, reported as the wire's cached tokens (the
prompt tokens include them, as DeepSeek counts). A request smaller than ``min_tokens``
(default 1,024, OpenAI's and Anthropic's minimum cacheable prompt) is not cached and keeps its
scenario's own usage (12 prompt tokens, no cache count), so short requests answer as they
always did; so does a scenario that scripts its own cache count or compaction. The key
partitions the cache by a hash held in memory only, never stored or logged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from .._wires import WireFacts, prompt_parts
from ._scenarios import Script

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_CACHE_MIN",
    "DEFAULT_CACHE_UNIT",
    "MAX_CACHED_PREFIXES",
    "PromptCache",
    "key_partition",
]

CHARS_PER_TOKEN = 4
"""The provider's token estimate: one token per this many characters of the serialized prompt."""

DEFAULT_CACHE_UNIT = 64
"""Tokens per cache unit (DeepSeek's storage unit): hits are whole units."""

DEFAULT_CACHE_MIN = 1024
"""The fewest prompt tokens the cache takes (shorter requests keep their scenario's usage)."""

MAX_CACHED_PREFIXES = 200_000
"""The unit prefixes the cache keeps (the least recently used go first: eviction)."""


def _prompt_text(facts: WireFacts, body: Mapping[str, Any]) -> str:
    return "".join(serialized for _, _, serialized in prompt_parts(facts, body))


def key_partition(facts: WireFacts, headers: Iterable[tuple[str, str]], query_key: str | None) -> str:
    """A hash of the request's credential (its wire's credential headers, else ``?key=``), held in memory.

    A SigV4 ``authorization`` is read for its access key id only (the signature changes per request).
    """
    names = set(facts.credential_headers)
    found = ""
    for name, value in headers:
        if name.lower() in names and value:
            found = value.split("Credential=", 1)[1].split("/", 1)[0] if "Credential=" in value else value
            break
    else:
        found = query_key or ""
    return hashlib.sha256(found.encode("utf-8", "replace")).hexdigest()


class PromptCache:
    """Prefixes seen, per model and key, in whole units; thread-safe; ``clear()`` forgets them all."""

    def __init__(
        self,
        *,
        enabled: bool = True,
        unit_tokens: int = DEFAULT_CACHE_UNIT,
        min_tokens: int = DEFAULT_CACHE_MIN,
    ) -> None:
        for name, value in (("cache_unit", unit_tokens), ("cache_min", min_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive number of tokens, not {value!r}")
        self.enabled = enabled
        self.unit_tokens = unit_tokens
        self.min_tokens = min_tokens
        self._seen: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every prefix (the next request of any prompt is a miss)."""
        with self._lock:
            self._seen.clear()

    def __len__(self) -> int:
        return len(self._seen)

    def hit(self, partition: str, text: str) -> tuple[int, int]:
        """``(prompt tokens, cached tokens)`` of ``text`` in ``partition``, remembering its unit prefixes."""
        prompt = -(-len(text) // CHARS_PER_TOKEN)
        step = self.unit_tokens * CHARS_PER_TOKEN
        running = hashlib.sha256(partition.encode())
        digests = []
        for start in range(0, len(text) - step + 1, step):
            running.update(text[start : start + step].encode("utf-8", "surrogatepass"))
            digests.append(running.copy().digest())
        with self._lock:
            units = 0
            for digest in digests:  # prefixes nest: the first unseen one ends the hit
                if digest not in self._seen:
                    break
                units += 1
            for digest in digests:
                self._seen[digest] = None
                self._seen.move_to_end(digest)
            while len(self._seen) > MAX_CACHED_PREFIXES:
                self._seen.popitem(last=False)
        return prompt, min(units * self.unit_tokens, prompt)

    def apply(self, facts: WireFacts, partition: str, body: Mapping[str, Any], script: Script) -> Script:
        """``script`` with its usage's prompt and cached tokens from this cache (see the module's note)."""
        usage = script.usage
        if not self.enabled or usage.cached is not None or usage.compaction is not None:
            return script
        text = _prompt_text(facts, body)
        if len(text) < self.min_tokens * CHARS_PER_TOKEN:
            return script  # below the minimum cacheable size: the scenario's own usage, nothing stored
        prompt, cached = self.hit(partition, text)
        return dataclasses.replace(script, usage=dataclasses.replace(usage, prompt=prompt, cached=cached))
