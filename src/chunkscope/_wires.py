"""The neutral wire facts: every wire chunkscope speaks, named once, importing only the standard library.

``WIRE_FACTS`` holds what every layer may know of a wire without loading its adapter: its
name, its title, the environment variables its key is read from, the provider name its
calls are logged under, where its base URL sits relative to a server's root, and the order of
its prompt's fields (``prompt_parts``: what a provider's prompt cache reads, in order). It sits
at the package root and imports only the standard library (not even pydantic), so the local
provider — which imports nothing of the adapters it judges — and the command line at start-up
read the same rows the adapters do. ``chunkscope.adapters.wires.WIRES`` joins each row to its adapter
class; ``chunkscope.provider.wires`` to the routes the local provider serves.

Adding a wire: docs/architecture.md, "Where a new wire goes" (one row here, one folder under
``adapters/``, one module under ``provider/wires/``, their rows, docs and tests). An adapter
reads its provider name, key variables, request path and media type from its row here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_WIRE", "PROMPT_SECTIONS", "WIRE_FACTS", "WireFacts", "prompt_parts"]


@dataclass(frozen=True)
class WireFacts:
    """What a caller needs to know of a wire, whatever server is behind it.

    Attributes:
        name: the wire's id (``wire=`` in conformance, ``--wire`` on the command line).
        title: the wire's name for people (help texts).
        label: the wire's short name for people (``chunkscope serve``'s banner).
        key_variables: environment variables a key is looked for in, in order.
        provider: the provider name its calls are registered and logged under.
        base_path: what follows a server's root in the base URL this wire's adapters
            (and its official SDK) take: ``"/v1"`` for ``{root}/v1``, ``""`` for the root.
        dialects: the variants of this wire real servers speak that the local provider's
            scenarios reproduce (``chunkscope.provider.DIALECTS``, ``docs/scenarios.md``).
        withheld_code: the ``LlmError`` code an adapter reports when the server withholds
            the answer (a content-filter finish; the ``fault-content-filter`` scenario).
        request_path: how the path of this wire's model call ends (the tap tells a call's
            wire by it).
        request_prefix: what an adapter puts between its base URL and ``request_path``: an
            API version, the model (``{model}``: percent-encoded; ``{api_version}``: the
            adapter's version, Gemini's ``api_version=``). Empty for most wires.
        stream_query: the query a streamed call adds after the base URL's own (Gemini's
            ``alt=sse``: the SSE form of the answer).
        whole_path: how the path of its non-streaming call ends, where that differs from
            ``request_path`` (Gemini's ``:generateContent``, Bedrock's ``/converse``); empty
            when one path serves both (a ``stream`` flag in the body).
        model_in_path: a regular expression whose ``model`` group finds the model in a
            request path, for a wire that names it there (Gemini, Bedrock); empty when the
            model is the body's ``model``.
        reasoning_tokens: whether the wire reports reasoning tokens apart from the output
            (Bedrock's usage has no such field: its reasoning stays inside ``outputTokens``).
        zero_details: whether the wire sends its cache-read and reasoning counts on every
            answer, 0 when there were none (OpenAI Responses): a reported 0 stays 0, so they
            are 0, not absent, in what an adapter reads.
        media_type: the content type of its streamed answer (what an adapter asks for and
            requires, what the tap recognises a stream by).
        credential_headers: the request headers that carry its credential (the tap never
            stores their values).
        prompt_fields: the request body's fields in the order the provider's prompt cache
            reads them (its prefix order); the last is the conversation, read item by item.
        cache_rules: the provider's rules that can make its cache read less than a prefix it
            has seen (the prompt-cache report names them for an unexplained miss).
    """

    name: str
    title: str
    label: str
    key_variables: tuple[str, ...]
    provider: str
    base_path: str
    dialects: tuple[str, ...]
    withheld_code: str
    request_path: str
    request_prefix: str = ""
    stream_query: str = ""
    whole_path: str = ""
    model_in_path: str = ""
    reasoning_tokens: bool = True
    zero_details: bool = False
    media_type: str = "text/event-stream"
    credential_headers: tuple[str, ...] = ("authorization",)
    prompt_fields: tuple[str, ...] = ("tools", "messages")
    cache_rules: str = ""

    def base_url(self, root: str) -> str:
        """The base URL this wire's adapters take for a server whose root is ``root``."""
        return root.rstrip("/") + self.base_path


WIRE_FACTS: dict[str, WireFacts] = {
    facts.name: facts
    for facts in (
        WireFacts(
            name="openai",
            title="DeepSeek / OpenAI chat completions",
            label="OpenAI / DeepSeek",
            key_variables=("DEEPSEEK_API_KEY", "OPENAI_API_KEY"),
            provider="deepseek",
            base_path="/v1",
            dialects=("content-parts", "reasoning-details", "xai-usage", "done-no-blank-line"),
            withheld_code="CONTENT_FILTER",  # finish_reason content_filter
            request_path="/chat/completions",
            cache_rules="DeepSeek: best-effort, 64-token units, entries kept hours to days; OpenAI: "
            "minimum 1,024 tokens, 128-token increments, expiry after 5-10 min idle (up to 24 h "
            "with prompt_cache_retention), routing by prompt_cache_key and eviction",
        ),
        WireFacts(
            name="anthropic",
            title="Anthropic Messages",
            label="Anthropic",
            key_variables=("ANTHROPIC_API_KEY",),
            provider="anthropic",
            base_path="",
            dialects=("usage-iterations",),
            withheld_code="REFUSAL",  # stop_reason refusal
            request_path="/messages",
            request_prefix="/v1",  # {root}/v1/messages, as the official SDK posts it
            prompt_fields=("tools", "system", "messages"),  # Anthropic's cache order
            cache_rules="breakpoints: only prefixes ending at a cache_control mark are read "
            "(20-block lookback); minimum 1,024 tokens (2,048 Haiku); TTL 5 min (1 h with ttl) "
            "and eviction",
            credential_headers=("x-api-key", "authorization"),  # authorization: a bearer token
        ),
        WireFacts(
            name="responses",
            title="OpenAI Responses",
            label="OpenAI Responses",
            key_variables=("OPENAI_API_KEY",),
            provider="openai",
            base_path="/v1",
            dialects=("several-output-items", "summary-parts", "reasoning-text"),
            withheld_code="CONTENT_FILTER",  # response.incomplete, reason content_filter
            request_path="/responses",
            prompt_fields=("tools", "instructions", "input"),
            cache_rules="OpenAI: minimum 1,024 tokens, 128-token increments, expiry after 5-10 min "
            "idle (up to 24 h with prompt_cache_retention), routing by prompt_cache_key and eviction",
            zero_details=True,  # input_tokens_details / output_tokens_details on every response
        ),
        WireFacts(
            name="gemini",
            title="Google Gemini",
            label="Gemini",
            key_variables=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            provider="google",  # genai-prices' provider id for Gemini models
            base_path="",  # the root: google-genai's base_url, to which it appends /v1beta/models/…
            dialects=("partial-args", "crlf-framing"),
            withheld_code="CONTENT_FILTER",  # finishReason SAFETY
            request_path=":streamGenerateContent",
            request_prefix="/{api_version}/models/{model}",  # {root}/v1beta/models/{model}:stream…
            stream_query="alt=sse",
            whole_path=":generateContent",
            model_in_path=r"/models/(?P<model>[^/:]+):",
            prompt_fields=("cachedContent", "tools", "systemInstruction", "contents"),
            cache_rules="implicit caching is best-effort: minimum 1,024 (Flash) / 4,096 (Pro) "
            "tokens, expiry and eviction; explicit cachedContent: its TTL",
            credential_headers=("x-goog-api-key", "authorization"),  # authorization: OAuth
        ),
        WireFacts(
            name="bedrock",
            title="AWS Bedrock ConverseStream",
            label="Bedrock",
            key_variables=("AWS_BEARER_TOKEN_BEDROCK",),
            provider="aws",  # genai-prices' provider id for Bedrock
            base_path="",
            dialects=(),  # exception frames and metadata after messageStop are in every stream
            withheld_code="CONTENT_FILTER",  # stopReason guardrail_intervened / content_filtered
            request_path="/converse-stream",
            request_prefix="/model/{model}",  # {root}/model/{modelId}/converse-stream
            whole_path="/converse",
            model_in_path=r"/model/(?P<model>[^/]+)/converse",
            reasoning_tokens=False,
            media_type="application/vnd.amazon.eventstream",
            # Claude on Bedrock caches as on Anthropic's API: tools, then system, then messages
            prompt_fields=("toolConfig", "system", "messages"),
            cache_rules="cachePoint blocks mark what is cached; minimum tokens per checkpoint "
            "(1,024 for most Claude models); TTL 5 min and eviction",
            # a bearer API key, or SigV4's signature, its credential scope and session token
            credential_headers=(
                "authorization",
                "x-amz-security-token",
                "x-amz-signature",
                "x-amz-credential",
                "x-amz-content-sha256",
            ),
        ),
    )
}
"""Every wire, by name, in the order help texts and banners list them."""

DEFAULT_WIRE = next(iter(WIRE_FACTS))
"""The wire used when none is named (the first row)."""

PROMPT_SECTIONS: dict[str, str] = {
    "tools": "tools",
    "toolConfig": "tools",
    "system": "system",
    "instructions": "system",
    "systemInstruction": "system",
    "cachedContent": "cached content",
}
"""The section a prompt field is named by in reports (the conversation's items: ``message N``)."""

_SYSTEM_ROLES = frozenset({"system", "developer"})


def prompt_parts(facts: WireFacts, body: Mapping[str, Any]) -> list[tuple[str, Any, str]]:
    """A request body's prompt in its wire's cache order: ``(section, value, serialized)`` per part.

    The parts are the body's ``prompt_fields`` present in it, the conversation one part per
    item (``message N``; a chat message of role system or developer is ``system``). The
    serialization is compact JSON in the order sent, so a reordered key is a changed prefix,
    as it is to a provider's cache. The local provider caches this text; ``cache_report``
    compares it.
    """
    *leading, conversation = facts.prompt_fields
    parts: list[tuple[str, Any, str]] = []
    for name in leading:
        if name in body:
            parts.append((PROMPT_SECTIONS.get(name, name), body[name], _compact(body[name])))
    items = body.get(conversation)
    if not isinstance(items, list):
        items = [] if items is None else [items]
    for number, item in enumerate(items):
        role = item.get("role") if isinstance(item, dict) else None
        section = "system" if role in _SYSTEM_ROLES else f"message {number}"
        parts.append((section, item, _compact(item)))
    return parts


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
