"""Usage that does not add up: each wire's raw counts against the provider's own definitions.

A translator maps a wire's usage to disjoint ``TokenUsage`` counts and keeps them as sent; only
it sees the raw counts, so it asks here whether they contradict each other, and hands the
findings on with its usage chunk (``BlockWriter.finish(findings=)``), where the strict checker
reports them as ``USAGE_RULES`` warnings. The definitions, with their sources, are in
docs/usage.md ("Usage that does not add up"). Each function runs once per stream, at its end.

A count the wire did not send checks nothing; a relation is judged only on counts that are
non-negative integers (anything else is the translator's ``MALFORMED_RESPONSE`` or
``usage-valid``'s business).
"""

from __future__ import annotations

from typing import Any

from chunkscope.protocol.shared import UsageFinding

__all__ = [
    "ENABLED",
    "anthropic_decrease",
    "anthropic_findings",
    "bedrock_findings",
    "chat_findings",
    "gemini_findings",
    "responses_findings",
]

ENABLED = True
"""Whether translators look for findings (``benchmarks/bench_adapters.py`` measures both ways)."""

_NONE: tuple[UsageFinding, ...] = ()


def _n(raw: Any, key: str) -> int | None:
    value = raw.get(key) if type(raw) is dict else None
    return value if type(value) is int and value >= 0 else None


def _over(
    rule: str, part: int | None, part_name: str, whole: int | None, whole_name: str
) -> list[UsageFinding]:
    """``part`` is inside ``whole``: a finding when it is more."""
    if part is None or whole is None or part <= whole:
        return []
    return [
        (rule, f"{part_name} {part} > {whole_name} {whole}: the {part_name} are part of the {whole_name}")
    ]


def _total(
    total: int | None, total_name: str, parts: list[tuple[str, int | None]], *also: int
) -> list[UsageFinding]:
    """``total`` is the sum of ``parts`` (a missing part counts 0); ``also`` are sums the provider's
    documented variants give. A finding names the relation and the numbers."""
    known = [(name, n) for name, n in parts if n is not None]
    if total is None or len(known) < 2:
        return []
    expected = sum(n for _, n in known)
    if total == expected or total in also:
        return []
    terms = " + ".join(f"{name} {n}" for name, n in known)
    return [("usage-total", f"{total_name} {total} is not {terms} (= {expected})")]


def chat_findings(raw: Any) -> tuple[UsageFinding, ...]:
    """OpenAI chat completions (and DeepSeek, xAI …): total = prompt + completion; cached within
    prompt; reasoning within completion (xAI leaves it out, and its total says so: accepted);
    DeepSeek's cache hit + miss = prompt."""
    if not ENABLED or type(raw) is not dict:
        return _NONE
    prompt, completion, total = (
        _n(raw, "prompt_tokens"),
        _n(raw, "completion_tokens"),
        _n(raw, "total_tokens"),
    )
    cached = _n(raw.get("prompt_tokens_details"), "cached_tokens")
    reasoning = _n(raw.get("completion_tokens_details"), "reasoning_tokens")
    outside = (  # xAI: reasoning counted beside the completion, as its total shows
        reasoning is not None
        and None not in (prompt, completion, total)
        and total == (prompt or 0) + (completion or 0) + reasoning
    )
    found = _over("usage-cached-over-prompt", cached, "cached_tokens", prompt, "prompt_tokens")
    if not outside:
        found += _over(
            "usage-reasoning-over-output", reasoning, "reasoning_tokens", completion, "completion_tokens"
        )
    if not outside:
        found += _total(total, "total_tokens", [("prompt_tokens", prompt), ("completion_tokens", completion)])
    found += _cache_split(raw, prompt)
    return tuple(found)


def _cache_split(raw: dict[str, Any], prompt: int | None) -> list[UsageFinding]:
    """DeepSeek: the cache hits and misses are the prompt, split in two."""
    hit, miss = _n(raw, "prompt_cache_hit_tokens"), _n(raw, "prompt_cache_miss_tokens")
    if hit is None or miss is None or prompt is None or hit + miss == prompt:
        return []
    sums = f"prompt_cache_hit_tokens {hit} + prompt_cache_miss_tokens {miss} (= {hit + miss})"
    return [("usage-cache-split", f"{sums} is not prompt_tokens {prompt}")]


def responses_findings(raw: Any) -> tuple[UsageFinding, ...]:
    """OpenAI Responses: total = input + output; cached within input; reasoning within output."""
    if not ENABLED or type(raw) is not dict:
        return _NONE
    given, output, total = _n(raw, "input_tokens"), _n(raw, "output_tokens"), _n(raw, "total_tokens")
    cached = _n(raw.get("input_tokens_details"), "cached_tokens")
    reasoning = _n(raw.get("output_tokens_details"), "reasoning_tokens")
    found = _over("usage-cached-over-prompt", cached, "cached_tokens", given, "input_tokens")
    found += _over("usage-reasoning-over-output", reasoning, "reasoning_tokens", output, "output_tokens")
    found += _total(total, "total_tokens", [("input_tokens", given), ("output_tokens", output)])
    return tuple(found)


def gemini_findings(raw: Any) -> tuple[UsageFinding, ...]:
    """Gemini: total = prompt + candidates + thoughts + tool-use prompt; cached content within
    the prompt."""
    if not ENABLED or type(raw) is not dict:
        return _NONE
    prompt = _n(raw, "promptTokenCount")
    found = _over(
        "usage-cached-over-prompt",
        _n(raw, "cachedContentTokenCount"),
        "cachedContentTokenCount",
        prompt,
        "promptTokenCount",
    )
    parts = [
        ("promptTokenCount", prompt),
        ("candidatesTokenCount", _n(raw, "candidatesTokenCount")),
        ("thoughtsTokenCount", _n(raw, "thoughtsTokenCount")),
        ("toolUsePromptTokenCount", _n(raw, "toolUsePromptTokenCount")),
    ]
    found += _total(_n(raw, "totalTokenCount"), "totalTokenCount", parts)
    return tuple(found)


def bedrock_findings(raw: Any) -> tuple[UsageFinding, ...]:
    """Bedrock Converse: total = input + output + cache read + cache write (input excludes the
    cache counts); a total of input + output alone is accepted too (models that leave the cache
    out of it)."""
    if not ENABLED or type(raw) is not dict:
        return _NONE
    given, output = _n(raw, "inputTokens"), _n(raw, "outputTokens")
    parts = [
        ("inputTokens", given),
        ("outputTokens", output),
        ("cacheReadInputTokens", _n(raw, "cacheReadInputTokens")),
        ("cacheWriteInputTokens", _n(raw, "cacheWriteInputTokens")),
    ]
    plain = (given or 0) + (output or 0)
    return tuple(_total(_n(raw, "totalTokens"), "totalTokens", parts, plain))


def anthropic_decrease(name: str, before: int | None, after: int) -> tuple[UsageFinding, ...]:
    """Anthropic's usage counts are cumulative (message_start, then each message_delta): a
    count that goes down contradicts the stream's own earlier count."""
    if not ENABLED or before is None or after >= before:
        return _NONE
    return (
        ("usage-decreased", f"{name} went down from {before} to {after}; Anthropic's counts are cumulative"),
    )


def anthropic_findings(output: int | None, thinking: int | None) -> tuple[UsageFinding, ...]:
    """Anthropic: thinking tokens (``output_tokens_details.thinking_tokens``) within the output."""
    if not ENABLED:
        return _NONE
    return tuple(_over("usage-reasoning-over-output", thinking, "thinking_tokens", output, "output_tokens"))
