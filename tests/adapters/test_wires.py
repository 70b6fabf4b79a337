"""The wire table: each wire named once, its adapter joined to the neutral facts everyone reads."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import httpx
import pytest

import chunkscope as cs
from chunkscope._wires import DEFAULT_WIRE, WIRE_FACTS
from chunkscope.adapters.wires import WIRES, detect_wire, wire_named
from chunkscope.provider import WIRES as PROVIDER_WIRES


def test_the_adapter_table_and_the_neutral_facts_name_the_same_wires_in_the_same_order() -> None:
    assert list(WIRES) == list(WIRE_FACTS) == list(PROVIDER_WIRES)
    assert DEFAULT_WIRE == "openai"
    for name, wire in WIRES.items():
        assert wire.facts is WIRE_FACTS[name] and wire.name == name
        assert issubclass(wire.adapter, cs.LlmAdapter)
        assert wire.adapter.provider == wire.facts.provider


async def test_each_wire_reaches_the_local_provider_at_the_base_url_its_table_row_gives() -> None:
    expected = cs.SCENARIOS["text"].expected.text
    async with cs.LocalProvider() as provider:
        assert WIRES["openai"].base_url(provider.url) == provider.base_url
        assert WIRES["anthropic"].base_url(provider.url) == provider.url
        for wire in WIRES.values():
            adapter: Any = wire.adapter
            async with adapter(base_url=wire.base_url(provider.url), api_key="sk-local") as built:
                options = cs.GenerateOptions(wire.facts.provider, "text", [{"role": "user", "content": "hi"}])
                result = await cs.collect(built.stream(options))
            assert result.ok and result.text == expected, wire.name


def test_an_unknown_wire_is_a_clear_error_naming_the_wires() -> None:
    listed = ", ".join(repr(name) for name in WIRE_FACTS)
    assert listed.startswith("'openai', 'anthropic'")  # the two first wires lead every list
    with pytest.raises(ValueError, match=f"unknown wire 'grpc': the wires are {listed}$"):
        wire_named("grpc")


@pytest.mark.parametrize("name", list(WIRE_FACTS))
def test_each_adapter_reads_its_key_variables_and_media_type_from_its_row(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire = wire_named(name)
    facts = wire.facts
    adapter: Any = wire.adapter
    assert adapter.wire is facts and adapter.default_api_key_env == facts.key_variables
    assert adapter.content_type == facts.media_type == wire.media_type
    for variable in facts.key_variables:
        monkeypatch.delenv(variable, raising=False)
    last = facts.key_variables[-1]  # the last variable the row names is read when the others are unset
    monkeypatch.setenv(last, "sk-from-the-last-variable-12345")
    made = (
        adapter(base_url="http://127.0.0.1:9", signing="bearer")
        if name == "bedrock"
        else adapter(base_url="http://127.0.0.1:9")
    )
    assert made._credential.resolve("test") == "sk-from-the-last-variable-12345"


MODEL = "family/model:v1"  # a model id with the characters a path must encode


async def _sent(name: str, base_url: str, api_key: str | None = None) -> httpx.Request:
    """The request wire ``name``'s adapter sends for one call (answered with a 400)."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(400, json={"error": {"message": "no"}})

    adapter: Any = wire_named(name).adapter
    extra = {"signing": "bearer"} if name == "bedrock" else {}
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        made = adapter(base_url=base_url, api_key=api_key, http_client=client, **extra)
        options = cs.GenerateOptions("p", MODEL, [{"role": "user", "content": "hi"}])
        result = await cs.collect(made.stream(options))
    assert result.error is not None and len(seen) == 1
    return seen[0]


@pytest.mark.parametrize("name", list(WIRE_FACTS))
async def test_what_each_adapter_sends_agrees_with_its_wire_row(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path, query, media type and key variables an adapter really uses are its row's: the
    tap tells the call's wire and model from the same row."""
    wire = wire_named(name)
    facts = wire.facts
    for variable in facts.key_variables:
        monkeypatch.delenv(variable, raising=False)
    sent = await _sent(name, "http://wire.test/base?tenant=a", api_key="sk-given-123456")
    path, _, query = sent.url.raw_path.decode().partition("?")
    assert path.startswith("/base/") and path.endswith(facts.request_path), path
    assert detect_wire(path) is wire
    in_path = wire.model_of(path)
    assert (in_path if facts.model_in_path else json.loads(sent.content)["model"]) == MODEL
    assert in_path is None or urllib.parse.quote(MODEL, safe="") in path  # one segment, encoded
    assert query.split("&") == ["tenant=a", *filter(None, [facts.stream_query])]
    assert sent.headers["accept"] == facts.media_type
    for variable in facts.key_variables:  # each variable the row names is read, none other
        for other in facts.key_variables:
            monkeypatch.delenv(other, raising=False)
        monkeypatch.setenv(variable, f"sk-{variable.lower()}-123456")
        sent = await _sent(name, "http://wire.test")
        assert f"sk-{variable.lower()}-123456" in " ".join(sent.headers.values()), variable
        assert sent.url.raw_path.decode().partition("?")[1:] == ("?", facts.stream_query) or (
            "?" not in str(sent.url) and not facts.stream_query
        )
