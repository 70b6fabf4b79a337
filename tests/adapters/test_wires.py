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
