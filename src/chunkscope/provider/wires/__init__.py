"""The local provider's wires: one module per wire, joined to the neutral wire table.

Each module (one per row of ``chunkscope._wires.WIRE_FACTS``) renders a neutral script in its
wire's shapes and says how its errors look; ``PROVIDER_WIRES`` joins it to its row of ``chunkscope._wires``
with the routes the provider serves for it, and ``_app.build_app`` builds its routes from
this table. Nothing here imports the adapters the provider judges.

Adding a wire: one module here with ``error_body``, ``stream``, ``whole``,
``IN_STREAM_ERROR`` and its routes in a row below (the neutral facts' row comes first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..._wires import WIRE_FACTS, WireFacts
from .._scenarios import HttpFault, Script
from . import anthropic, bedrock, gemini, openai, responses
from ._conversation import chat_conversation
from ._frames import Frame

__all__ = ["PROVIDER_WIRES", "Frame", "ProviderWire"]


def _model_in_body(params: Mapping[str, str], body: Mapping[str, Any]) -> object:
    return body.get("model")


def _stream_in_body(path: str, body: Mapping[str, Any]) -> bool:
    return body.get("stream") is True


def _no_headers(status: int, error_type: str) -> Mapping[str, str]:
    return {}


@dataclass(frozen=True)
class ProviderWire:
    """One wire as the local provider serves it.

    Attributes:
        facts: the wire's neutral row (name, base-URL form …).
        routes: the POST paths this wire's requests arrive on.
        not_found_type: the error ``type`` of an unknown model on this wire.
        error_body: ``(message, type, code) -> body`` of an error answer.
        stream: ``(script, request body, response number, created) -> frames`` of a streamed answer.
        whole: the same, as one JSON body.
        in_stream_error: the error object ``fault-in-stream-error`` sends inside a 200 answer.
        fault_body: the body of a scenario's HTTP fault on this wire.
        model_of: ``(path parameters, body) -> model`` (the body's ``model``; Gemini and
            Bedrock name it in the path, ``{model}`` in a route).
        streamed: ``(path, body) -> bool``: whether the request asks for a stream (the body's
            ``stream: true``; Gemini and Bedrock tell it by the route).
        conversation: ``body -> (last user text, trailing tool result or None)``, read in
            this wire's message shapes (the scenarios echo and quote them).
        media_type: the streamed answer's content type.
        error_headers: ``(status, error type) -> headers`` an error answer carries (Bedrock
            names its error in ``x-amzn-ErrorType``).
    """

    facts: WireFacts
    routes: tuple[str, ...]
    not_found_type: str
    error_body: Callable[[str, str, str | None], dict[str, Any]]
    stream: Callable[[Script, dict[str, Any], int, int], Iterator[Frame]]
    whole: Callable[[Script, dict[str, Any], int, int], dict[str, Any]]
    in_stream_error: Mapping[str, Any]
    fault_body: Callable[[HttpFault], Mapping[str, Any]]
    model_of: Callable[[Mapping[str, str], Mapping[str, Any]], object] = _model_in_body
    streamed: Callable[[str, Mapping[str, Any]], bool] = _stream_in_body
    conversation: Callable[[Mapping[str, Any]], tuple[str, str | None]] = chat_conversation
    media_type: str = "text/event-stream"
    error_headers: Callable[[int, str], Mapping[str, str]] = _no_headers

    @property
    def name(self) -> str:
        """The wire's id."""
        return self.facts.name


def _rows() -> Iterator[ProviderWire]:
    yield ProviderWire(
        WIRE_FACTS["openai"],
        routes=("/v1/chat/completions", "/chat/completions"),
        not_found_type="invalid_request_error",
        error_body=openai.error_body,
        stream=openai.stream,
        whole=openai.whole,
        in_stream_error=openai.IN_STREAM_ERROR,
        fault_body=openai.fault_body,
    )
    yield ProviderWire(
        WIRE_FACTS["anthropic"],
        routes=("/v1/messages",),
        not_found_type="not_found_error",
        error_body=anthropic.error_body,
        stream=anthropic.stream,
        whole=anthropic.whole,
        in_stream_error=anthropic.IN_STREAM_ERROR,
        fault_body=anthropic.fault_body,
    )
    yield ProviderWire(
        WIRE_FACTS["responses"],
        routes=("/v1/responses", "/responses"),
        not_found_type="invalid_request_error",
        error_body=responses.error_body,
        stream=responses.stream,
        whole=responses.whole,
        in_stream_error=responses.IN_STREAM_ERROR,
        fault_body=openai.fault_body,  # the Responses API's errors are OpenAI-shaped
        conversation=responses.conversation,
    )
    yield ProviderWire(
        WIRE_FACTS["gemini"],
        routes=gemini.ROUTES,
        not_found_type="NOT_FOUND",
        error_body=gemini.error_body,
        stream=gemini.stream,
        whole=gemini.whole,
        in_stream_error=gemini.IN_STREAM_ERROR,
        fault_body=gemini.fault_body,
        model_of=gemini.model_of,
        streamed=gemini.streamed,
        conversation=gemini.conversation,
    )
    yield ProviderWire(
        WIRE_FACTS["bedrock"],
        # {model:path}: boto3 percent-encodes the id, and an inference-profile ARN holds '/'
        routes=("/model/{model:path}/converse-stream", "/model/{model:path}/converse"),
        not_found_type="ResourceNotFoundException",
        error_body=bedrock.error_body,
        stream=bedrock.stream,
        whole=bedrock.whole,
        in_stream_error=bedrock.IN_STREAM_ERROR,
        fault_body=bedrock.fault_body,
        model_of=bedrock.model_of,
        streamed=bedrock.streamed,
        conversation=bedrock.conversation,
        media_type="application/vnd.amazon.eventstream",
        error_headers=bedrock.error_headers,
    )


PROVIDER_WIRES: dict[str, ProviderWire] = {wire.name: wire for wire in _rows()}
"""Every wire the local provider serves, in the wire table's order."""

if list(PROVIDER_WIRES) != list(WIRE_FACTS):  # a wire row without its provider module, or the reverse
    raise RuntimeError(f"the provider serves {list(PROVIDER_WIRES)}, the wire table lists {list(WIRE_FACTS)}")
