"""The wire table: each wire named once, its adapter joined to the neutral facts everyone reads."""

from __future__ import annotations

from typing import Any

import pytest

import chunkscope as cs
from chunkscope._wires import DEFAULT_WIRE, WIRE_FACTS
from chunkscope.adapters.wires import WIRES, wire_named
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
    assert adapter.path.endswith(facts.request_path) or wire.name in ("gemini", "bedrock")  # model in path
    for variable in facts.key_variables:
        monkeypatch.delenv(variable, raising=False)
    last = facts.key_variables[-1]  # the last variable the row names is read when the others are unset
    monkeypatch.setenv(last, "sk-from-the-last-variable-12345")
    made = adapter(base_url="http://127.0.0.1:9", signing="bearer") if name == "bedrock" else adapter(
        base_url="http://127.0.0.1:9"
    )
    assert made._credential.resolve("test") == "sk-from-the-last-variable-12345"
