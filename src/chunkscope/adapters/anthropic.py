"""``AnthropicAdapter``: the Anthropic Messages API as a StreamChunk stream.

It POSTs ``{base_url}/v1/messages`` with ``stream: true`` (``base_url`` is the
root, as the official Anthropic SDK takes it: ``LocalProvider.url`` or
``https://api.anthropic.com``) and translates the event stream
(``_anthropic_wire``) into chunks that pass the ``strict`` profile: blocks in
order 0, 1, 2, …, never interleaved, each closed with its complete block;
usage once, then the finish.

Failures are ``LlmError`` with the codes of PROTOCOL.md §3: HTTP errors as
every adapter maps them (``_http``; Anthropic's ``prompt is too long`` and
``billing_error`` refine a 400 into ``CONTEXT_WINDOW_EXCEEDED`` / ``QUOTA``;
529 "overloaded" is ``SERVER``), ``error`` events inside the stream by their
Anthropic type, ``STREAM_CLOSED`` without ``message_stop``,
``MALFORMED_RESPONSE`` for a payload that is not the wire shape, ``TIMEOUT``,
``TRANSPORT``, ``ABORTED``. In-band stops that are not ``end_turn``,
``stop_sequence``, ``tool_use`` or ``max_tokens`` end the stream with an
``error`` finish whose code is the upper-cased ``stop_reason`` (``REFUSAL``).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable
from typing import ClassVar

import httpx
from httpx_sse import EventSource

from chunkscope.protocol._chunks import AnyChunk
from chunkscope.protocol._errors import LlmError

from ._anthropic_request import DEFAULT_MAX_TOKENS, THINKING_BUDGETS, THINKING_EFFORTS, build_body
from ._anthropic_wire import AnthropicTranslator, anthropic_error_code
from ._base import OPTIONAL_OPTIONS, GenerateOptions, LlmAdapter, ModelInfo
from ._http import (
    ClientSlot,
    ProviderErrorBody,
    StreamGuard,
    endpoint_url,
    error_detail,
    merge_headers,
    public_url,
    redact,
    request_id,
    resolve_api_key,
)

__all__ = ["AnthropicAdapter", "THINKING_EFFORTS", "THINKING_BUDGETS", "DEFAULT_MAX_TOKENS"]

_API = "Anthropic API"
_ENV_KEY = "ANTHROPIC_API_KEY"

# Model families with extended thinking, for when no ``models`` list is given.
_THINKING_PREFIXES = ("claude-3-7-sonnet", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4")

_SIGNATURES_KEPT = 512  # thinking signatures remembered for replay (oldest dropped first)


class AnthropicAdapter(LlmAdapter):
    """Streams Anthropic Messages (``POST {base_url}/v1/messages``) as StreamChunks.

    ``api_key`` defaults to the ``ANTHROPIC_API_KEY`` environment variable,
    read when a stream starts; none is ``MISSING_CREDENTIAL``, one an HTTP
    header cannot carry is ``INVALID_CREDENTIAL`` (both before any I/O). The
    key never appears in the repr, in errors or in logs. ``http_client`` is
    used as given (and not closed); without one the adapter owns a client,
    released by ``aclose()``. ``idle_timeout`` (seconds, None = none) is the
    longest silence tolerated while streaming (``TIMEOUT``). ``models``
    publishes ``ModelInfo``s; without it, Claude model ids of the families with
    extended thinking get the efforts ``THINKING_EFFORTS`` (off, low, medium,
    high), and other ids no reasoning metadata. Every ``GenerateOptions``
    field is honoured; content the wire cannot carry is ``UNSUPPORTED_OPTION``.

    Reasoning blocks replay as ``thinking`` blocks with the signature they
    streamed with (the adapter remembers the latest signatures it saw);
    reasoning it never streamed is left out of the request, as the API refuses
    unsigned thinking. The finish's ``replay_state`` carries the signatures
    and redacted thinking of the turn.
    """

    provider: ClassVar[str] = "anthropic"
    supported_options: ClassVar[frozenset[str]] = frozenset(OPTIONAL_OPTIONS)

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        http_client: httpx.AsyncClient | None = None,
        idle_timeout: float | None = 60.0,
        models: Iterable[ModelInfo] | None = None,
        anthropic_version: str = "2023-06-01",
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            example = "'https://api.anthropic.com'"
            shown = public_url(base_url) if isinstance(base_url, str) else repr(base_url)
            raise ValueError(f"base_url must be an http(s) URL such as {example}, not {shown}")
        self.base_url = base_url.rstrip("/")
        self.idle_timeout = idle_timeout
        self.anthropic_version = anthropic_version
        self._api_key = api_key
        self._clients = ClientSlot(http_client, _timeout)
        # Errors name the server, never the credentials a URL may carry (user info, query).
        self._label = f"{_API} at {public_url(self.base_url)}"
        self._models = tuple(models) if models is not None else None
        self._signatures: OrderedDict[str, str] = OrderedDict()

    @property
    def messages_url(self) -> str:
        """The endpoint every request goes to: ``{base_url}/v1/messages`` (a query in base_url is kept)."""
        return endpoint_url(self.base_url, "/v1/messages")

    def __repr__(self) -> str:
        key = "set" if self._api_key is not None else f"from ${_ENV_KEY}"
        return f"AnthropicAdapter(base_url={public_url(self.base_url)!r}, api_key=<{key}>)"

    # --- models ---------------------------------------------------------------

    def models(self) -> list[ModelInfo]:
        """The ``models`` given at construction (empty when none were)."""
        return list(self._models or ())

    def model_info(self, model: str) -> ModelInfo | None:
        """The given ``ModelInfo`` of ``model``; without a list, efforts for Claude thinking families."""
        if self._models is not None:
            return super().model_info(model)
        if model.startswith(_THINKING_PREFIXES):
            return ModelInfo(id=model, reasoning=THINKING_EFFORTS)
        return None

    # --- streaming ------------------------------------------------------------

    @property
    def http_client(self) -> httpx.AsyncClient | None:
        """The caller's client, or the one the adapter made for the running loop (None before any)."""
        return self._clients.current

    def _signature_of(self, text: str) -> str | None:
        return self._signatures.get(text)

    def _remember(self, translator: AnthropicTranslator) -> None:
        for text, signature in translator.signatures():
            self._signatures[text] = signature
            self._signatures.move_to_end(text)
        while len(self._signatures) > _SIGNATURES_KEPT:
            self._signatures.popitem(last=False)

    async def stream(self, options: GenerateOptions) -> AsyncIterator[AnyChunk]:
        """Stream one response; raise ``LlmError`` on failure after yielding the partial output."""
        options = self.prepare(options)
        label = self._label
        key = resolve_api_key(self._api_key, _ENV_KEY, label=label)
        body = build_body(options, signature_of=self._signature_of)
        client = self._clients.get()
        headers = merge_headers(
            client,
            {
                "x-api-key": key,
                "anthropic-version": self.anthropic_version,
                "content-type": "application/json",
                "accept": "text/event-stream",
            },
        )
        # Per request, so a caller's client (httpx's 5 s read timeout by default) cannot cut a
        # thinking pause short: the guard's idle timeout governs.
        request = client.build_request(
            "POST", self.messages_url, content=json.dumps(body).encode(), headers=headers, timeout=_timeout()
        )
        guard = StreamGuard(signal=options.signal, idle_timeout=self.idle_timeout, label=label, secrets=[key])
        signal = options.signal
        tail: list[AnyChunk] = []
        async with guard:
            try:
                response = await guard.send(client, request)
            except LlmError as exc:
                raise _refine(exc) from exc.cause
            rid = request_id(response.headers)
            content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
            if content_type != "text/event-stream":
                # Checked here: httpx-sse's own error is an httpx.TransportError, not a payload error.
                raise LlmError(
                    f"{label} answered HTTP {response.status_code} with "
                    f"{content_type or 'no content type'}, not an event stream",
                    "MALFORMED_RESPONSE",
                    status=response.status_code,
                    request_id=rid,
                )
            translator = AnthropicTranslator(request_id=rid)
            async for event in EventSource(response).aiter_sse():
                if translator.finished:
                    continue  # after message_stop: read to the end of the body so the connection is reused
                try:
                    chunks = translator.feed_text(event.event, event.data)
                except LlmError as exc:
                    raise _redacted(exc, key) from exc.cause
                if translator.finished:
                    tail = chunks  # usage and finish go out after the connection is released
                    # Bounded: a server that keeps the body open or trickles on costs the
                    # connection's reuse, never the complete response.
                    guard.drain()
                    continue
                for chunk in chunks:
                    guard.reader = None
                    yield chunk
                    guard.resume()
                    if signal is not None and signal.aborted:
                        # The guard hears of an abort one loop step later; the flag is immediate.
                        signal.throw_if_aborted()
            translator.close()
            await guard.close()
        self._remember(translator)
        for chunk in tail:
            yield chunk

    async def aclose(self) -> None:
        """Close the client the adapter created (a given ``http_client`` stays open). Idempotent."""
        await self._clients.aclose()


def _timeout() -> httpx.Timeout:
    # Reads never time out in httpx: StreamGuard enforces ``idle_timeout`` (None = wait forever).
    return httpx.Timeout(30.0, read=None)


def _redacted(error: LlmError, key: str) -> LlmError:
    """``error`` without the API key in its message (a provider may echo what it was sent)."""
    message = redact(error.message, [key])
    if message == error.message:
        return error
    return LlmError(message, error.code, status=error.status, request_id=error.request_id)


def _refine(error: LlmError) -> LlmError:
    """Sharpen a 400/413 with Anthropic's own vocabulary (``billing_error``, ``prompt is too long``)."""
    if error.code != "INVALID_REQUEST" or not isinstance(error.cause, ProviderErrorBody):
        return error
    message, _, obj = error_detail(str(error.cause))
    error_type = obj.get("type") if obj is not None else None
    if not isinstance(error_type, str):
        error_type = None
    code = anthropic_error_code(error_type, message or "", error.status)
    if code not in ("CONTEXT_WINDOW_EXCEEDED", "QUOTA"):
        return error
    return LlmError(
        error.message,
        code,
        status=error.status,
        retry_after_ms=error.retry_after_ms,
        request_id=error.request_id,
        cause=error.cause,
    )
