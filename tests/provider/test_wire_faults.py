"""Fault scenarios are observable at the HTTP level, on both wires, as the table says."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from _provider_wire_reader import fold_anthropic, fold_openai, parse_sse

from chunkscope.provider import SCENARIOS, LocalProvider

USER = [{"role": "user", "content": "Hi"}]
WIRES = ["openai", "anthropic"]


def request(
    provider: LocalProvider, wire: str, model: str, *, stream: bool = True
) -> tuple[str, dict[str, Any]]:
    if wire == "openai":
        body: dict[str, Any] = {"model": model, "messages": USER, "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        return provider.base_url + "/chat/completions", body
    return provider.url + "/v1/messages", {
        "model": model,
        "messages": USER,
        "max_tokens": 64,
        "stream": stream,
    }


async def post(provider: LocalProvider, wire: str, model: str, *, stream: bool = True) -> httpx.Response:
    url, body = request(provider, wire, model, stream=stream)
    async with httpx.AsyncClient() as client:
        return await client.post(url, json=body)


def error_message(wire: str, body: dict[str, Any]) -> str:
    if wire == "anthropic":
        assert body["type"] == "error"
    return str(body["error"]["message"])


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("model", "status", "wording"),
    [
        ("fault-401", 401, ""),
        ("fault-402", 402, "Insufficient Balance"),
        ("fault-429", 429, "Rate limit"),
        ("fault-500", 500, "Internal server error"),
        ("fault-context", 400, "context"),
    ],
)
async def test_status_faults_answer_with_their_status_and_error_body(
    provider: LocalProvider, wire: str, stream: bool, model: str, status: int, wording: str
) -> None:
    response = await post(provider, wire, model, stream=stream)
    assert response.status_code == status
    assert wording in error_message(wire, response.json())


@pytest.mark.parametrize("wire", WIRES)
async def test_429_carries_retry_after_and_request_id(provider: LocalProvider, wire: str) -> None:
    response = await post(provider, wire, "fault-429")
    assert response.headers["retry-after"] == "2"
    assert response.headers["x-request-id"] == "req-429"
    assert response.headers["request-id"] == "req-429"


async def test_context_fault_uses_each_wires_wording(provider: LocalProvider) -> None:
    openai = error_message("openai", (await post(provider, "openai", "fault-context")).json())
    anthropic = error_message("anthropic", (await post(provider, "anthropic", "fault-context")).json())
    assert "maximum context length is 65536 tokens" in openai
    assert "input length and max_tokens exceed context limit" in anthropic


async def test_401_body_is_the_documented_one(provider: LocalProvider) -> None:
    body = (await post(provider, "openai", "fault-401")).json()
    assert body["error"]["message"] == "Authentication Fails, Your api key is invalid"
    assert body["error"]["type"] == "authentication_error"
    assert (await post(provider, "anthropic", "fault-401")).json()["error"]["type"] == "authentication_error"


@pytest.mark.parametrize("wire", WIRES)
async def test_malformed_sends_two_deltas_then_a_payload_that_is_not_json(
    provider: LocalProvider, wire: str
) -> None:
    response = await post(provider, wire, "fault-malformed")
    assert response.status_code == 200
    events = parse_sse(response.text)
    with pytest.raises(json.JSONDecodeError):
        json.loads(events[-1].data)
    fold = fold_openai if wire == "openai" else fold_anthropic
    reply = fold(events[:-1])
    assert reply.text == "Hello!" and not reply.ended


@pytest.mark.parametrize("wire", WIRES)
async def test_truncated_ends_cleanly_without_the_end_marker(provider: LocalProvider, wire: str) -> None:
    response = await post(provider, wire, "fault-truncated")
    assert response.status_code == 200
    fold = fold_openai if wire == "openai" else fold_anthropic
    reply = fold(parse_sse(response.text))
    assert reply.text == "Hello! I"
    assert not reply.ended
    assert reply.finish is None


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("stream", [True, False])
async def test_drop_cuts_the_connection_mid_body(provider: LocalProvider, wire: str, stream: bool) -> None:
    url, body = request(provider, wire, "fault-drop", stream=stream)
    received = ""
    async with httpx.AsyncClient() as client, client.stream("POST", url, json=body) as response:
        assert response.status_code == 200
        with pytest.raises(httpx.RemoteProtocolError):
            async for text in response.aiter_text():
                received += text
    if stream:
        fold = fold_openai if wire == "openai" else fold_anthropic
        assert fold(parse_sse(received)).text == "Hello! I"


@pytest.mark.parametrize("wire", WIRES)
async def test_stall_goes_silent_after_two_deltas(provider: LocalProvider, wire: str) -> None:
    url, body = request(provider, wire, "fault-stall")
    received = ""
    client = httpx.AsyncClient(timeout=httpx.Timeout(5.0, read=0.3))
    async with client, client.stream("POST", url, json=body) as response:
        with pytest.raises(httpx.ReadTimeout):
            async for text in response.aiter_text():
                received += text
    fold = fold_openai if wire == "openai" else fold_anthropic
    assert fold(parse_sse(received)).text == "Hello!"


async def test_stall_does_not_hold_up_other_requests(provider: LocalProvider) -> None:
    url, body = request(provider, "openai", "fault-stall")
    async with httpx.AsyncClient(timeout=5.0) as client, client.stream("POST", url, json=body) as stalled:
        assert stalled.status_code == 200
        response = await post(provider, "openai", "text")
        assert fold_openai(parse_sse(response.text)).ended


async def test_openai_in_stream_error_is_an_error_object_in_a_200(provider: LocalProvider) -> None:
    response = await post(provider, "openai", "fault-in-stream-error")
    assert response.status_code == 200
    events = parse_sse(response.text)
    assert json.loads(events[-1].data) == {
        "error": {"message": "The server is overloaded", "type": "server_error", "code": "server_overloaded"}
    }
    assert fold_openai(events[:-1]).text == "Hello!"


async def test_anthropic_in_stream_error_is_an_error_event(provider: LocalProvider) -> None:
    response = await post(provider, "anthropic", "fault-in-stream-error")
    events = parse_sse(response.text)
    assert events[-1].event == "error"
    assert json.loads(events[-1].data)["error"]["type"] == "overloaded_error"
    assert fold_anthropic(events[:-1]).text == "Hello!"


@pytest.mark.parametrize(("wire", "reason"), [("openai", "content_filter"), ("anthropic", "refusal")])
async def test_content_filter_finishes_with_the_wires_reason(
    provider: LocalProvider, wire: str, reason: str
) -> None:
    fold = fold_openai if wire == "openai" else fold_anthropic
    reply = fold(parse_sse((await post(provider, wire, "fault-content-filter")).text))
    assert (reply.text, reply.finish, reply.ended) == ("I can't help with that.", reason, True)


@pytest.mark.parametrize("wire", WIRES)
async def test_empty_is_a_complete_stream_without_content(provider: LocalProvider, wire: str) -> None:
    fold = fold_openai if wire == "openai" else fold_anthropic
    reply = fold(parse_sse((await post(provider, wire, "fault-empty")).text))
    assert reply.ended and reply.block_types == [] and reply.finish in ("stop", "end_turn")


@pytest.mark.parametrize("wire", WIRES)
async def test_unknown_model_is_404_model_not_found(provider: LocalProvider, wire: str) -> None:
    response = await post(provider, wire, "gpt-nonexistent")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found"
    if wire == "openai":
        assert response.json()["error"]["type"] == "invalid_request_error"


async def test_bad_request_bodies_are_400(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        not_json = await client.post(provider.base_url + "/chat/completions", content=b"{nope")
        no_model = await client.post(provider.url + "/v1/messages", json={"messages": USER})
    assert not_json.status_code == 400 and not_json.json()["error"]["type"] == "invalid_request_error"
    assert no_model.status_code == 400 and no_model.json()["type"] == "error"


async def test_models_lists_every_scenario(provider: LocalProvider) -> None:
    async with httpx.AsyncClient() as client:
        body = (await client.get(provider.base_url + "/models")).json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == list(SCENARIOS)
    assert all(
        m["object"] == "model" and m["owned_by"] == "chunkscope" and m["created"] == 0 for m in body["data"]
    )


async def test_any_api_key_is_accepted(provider: LocalProvider) -> None:
    url, body = request(provider, "openai", "text")
    async with httpx.AsyncClient() as client:
        response = await client.post(url, json=body, headers={"Authorization": "Bearer sk-whatever"})
        anthropic_url, anthropic_body = request(provider, "anthropic", "text")
        other = await client.post(anthropic_url, json=anthropic_body, headers={"x-api-key": "whatever"})
    assert response.status_code == other.status_code == 200


@pytest.mark.parametrize("wire", WIRES)
async def test_non_streaming_faults_are_acted_out_on_the_body(provider: LocalProvider, wire: str) -> None:
    for model in ["fault-malformed", "fault-truncated"]:
        response = await post(provider, wire, model, stream=False)
        assert response.status_code == 200
        with pytest.raises(json.JSONDecodeError):
            response.json()
    error = (await post(provider, wire, "fault-in-stream-error", stream=False)).json()
    assert "overloaded" in json.dumps(error).lower()
    url, body = request(provider, wire, "fault-stall", stream=False)
    client = httpx.AsyncClient(timeout=httpx.Timeout(5.0, read=0.3))
    async with client, client.stream("POST", url, json=body) as response:
        assert response.status_code == 200
        with pytest.raises(httpx.ReadTimeout):
            await response.aread()
