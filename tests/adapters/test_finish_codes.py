"""Every code the adapters emit stands in the registry; finish reasons map the same on every wire.

A policy written against ``cs.ERROR_CODES`` must be able to know every code that comes out:
each local-provider scenario on each wire, every finish reason the wires document, and every
unknown reason (the ``<FINISH_REASON>`` family, marked unmapped). Anthropic's ``pause_turn`` is
a ``stop`` finish the agent loop continues on.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from fault_matrix import idle_timeout_for

import chunkscope as cs
from chunkscope.adapters import turn_paused
from chunkscope.adapters._finish import FINISH_CODES
from chunkscope.adapters.anthropic.translate import AnthropicTranslator, map_stop_reason
from chunkscope.adapters.openai_compat.translate import map_finish_reason
from chunkscope.adapters.wires import WIRES as WIRE_TABLE
from chunkscope.protocol import check, collect
from chunkscope.protocol._errors import (
    ERROR_CODES,
    FINISH_REASON_FAMILY,
    HTTP_STATUS_FAMILY,
    code_family,
    is_unmapped,
)
from chunkscope.provider import SCENARIOS, LocalProvider

from _anthropic_events import (  # isort: skip
    block_stop,
    message_delta,
    message_start,
    message_stop,
    text_delta,
    text_start,
)

WIRES = tuple(WIRE_TABLE)


def _codes_of(result: Any) -> list[str]:
    codes = []
    if result.error is not None:
        codes.append(result.error.code)
    if result.finish is not None and result.finish.failure is not None:
        codes.append(result.finish.failure.code)
    return codes


def _adapter(wire: str, provider: LocalProvider, client: httpx.AsyncClient, idle: float) -> cs.LlmAdapter:
    row = WIRE_TABLE[wire]
    adapter: Any = row.adapter  # every built-in adapter takes these arguments (the wire table says so)
    built: cs.LlmAdapter = adapter(
        base_url=row.base_url(provider.url), api_key="sk-local", http_client=client, idle_timeout=idle
    )
    return built


async def test_every_scenario_on_every_wire_emits_only_registered_codes() -> None:
    seen: dict[tuple[str, str], list[str]] = {}
    with LocalProvider(token_delay=0) as provider:
        async with httpx.AsyncClient() as client:

            async def run(name: str, wire: str) -> None:
                model = "long-20" if name == "long" else name
                adapter = _adapter(wire, provider, client, idle_timeout_for(name))
                options = cs.GenerateOptions(wire, model, [{"role": "user", "content": "hi"}])
                result = await asyncio.wait_for(collect(adapter.stream(options)), 10)
                seen[name, wire] = _codes_of(result)

            await asyncio.gather(*(run(name, wire) for name in SCENARIOS for wire in WIRES))
    assert len(seen) == len(SCENARIOS) * len(WIRES)
    for (name, wire), codes in seen.items():
        for code in codes:
            family = code_family(code)
            assert family in ERROR_CODES and family != FINISH_REASON_FAMILY, (name, wire, code)
            assert not is_unmapped(code)
        expected = (SCENARIOS[name].expected_codes or {}).get(wire)
        assert codes[:1] == ([expected] if expected else []), (name, wire, codes)


def test_the_finish_table_names_only_registered_codes() -> None:
    for reason, code in FINISH_CODES.items():
        assert code in ERROR_CODES, reason


@pytest.mark.parametrize(
    ("reason", "code", "retryable"),
    [
        ("content_filter", "CONTENT_FILTER", False),
        # the TypeScript reference's code (its upper-cased reason), registered as retryable
        ("insufficient_system_resource", "INSUFFICIENT_SYSTEM_RESOURCE", True),
    ],
)
def test_openai_compat_finish_reasons_map_to_registered_codes(
    reason: str, code: str, retryable: bool
) -> None:
    finish = map_finish_reason(reason)
    assert finish.kind == "error" and finish.failure is not None
    assert finish.failure.code == code and ERROR_CODES[code].retryable is retryable
    assert cs.LlmError.from_failure(finish.failure).retryable is retryable


@pytest.mark.parametrize(
    ("reason", "code"),
    [("refusal", "REFUSAL"), ("model_context_window_exceeded", "CONTEXT_WINDOW_EXCEEDED")],
)
def test_anthropic_stop_reasons_map_to_registered_codes(reason: str, code: str) -> None:
    finish = map_stop_reason(reason)
    assert finish.kind == "error" and finish.failure is not None and finish.failure.code == code


def test_a_reason_known_to_both_wires_gets_the_same_code_on_both() -> None:
    for reason in FINISH_CODES:
        openai, anthropic = map_finish_reason(reason), map_stop_reason(reason)
        assert openai.failure is not None and anthropic.failure is not None
        assert openai.failure.code == anthropic.failure.code == FINISH_CODES[reason]


@pytest.mark.parametrize("mapper", [map_finish_reason, map_stop_reason])
def test_an_unknown_reason_keeps_its_upper_cased_value_under_the_documented_family(mapper: Any) -> None:
    finish = mapper("brand_new_reason")
    assert finish.kind == "error" and finish.failure is not None
    assert finish.failure.code == "BRAND_NEW_REASON"  # the TypeScript reference's code, unchanged
    assert code_family("BRAND_NEW_REASON") == FINISH_REASON_FAMILY
    assert is_unmapped("BRAND_NEW_REASON") and not cs.LlmError("x", "BRAND_NEW_REASON").retryable
    assert FINISH_REASON_FAMILY in ERROR_CODES


def test_code_family_names_the_row_of_every_kind_of_code() -> None:
    assert code_family("RATE_LIMIT") == "RATE_LIMIT" and not is_unmapped("RATE_LIMIT")
    assert code_family("HTTP_404") == HTTP_STATUS_FAMILY and not is_unmapped("HTTP_404")
    assert code_family("PAUSE_TURN") == FINISH_REASON_FAMILY and is_unmapped("PAUSE_TURN")
    assert code_family("not a code") is None and is_unmapped("not a code")


@pytest.mark.parametrize("status", range(300, 600, 7))
def test_every_http_status_code_stands_in_the_registry(status: int) -> None:
    code = cs.adapters.error_code(status)
    assert code_family(code) in ERROR_CODES and not is_unmapped(code)


def _paused_stream(text: str = "Searching") -> list[Any]:
    translator = AnthropicTranslator()
    events = [
        message_start(),
        text_start(0),
        text_delta(0, text),
        block_stop(0),
        message_delta("pause_turn"),
        message_stop(),
    ]
    chunks: list[Any] = []
    for name, data in events:
        chunks += translator.feed_parsed(name, data)
    return chunks


def test_pause_turn_is_a_clean_stop_finish_marked_to_continue() -> None:
    chunks = _paused_stream()
    finish = chunks[-1]
    assert finish.type == "finish" and finish.reason.kind == "stop" and finish.reason.failure is None
    assert finish.replay_state == {"pauseTurn": True}
    assert turn_paused(finish) and turn_paused(finish.to_dict())
    assert check(chunks) == []


def test_a_pause_before_any_block_is_the_empty_response_an_empty_end_turn_is() -> None:
    # nothing to send back, so nothing to continue from: the finish must still follow the rules
    translator = AnthropicTranslator()
    chunks: list[Any] = []
    for name, data in [message_start(), message_delta("pause_turn"), message_stop()]:
        chunks += translator.feed_parsed(name, data)
    assert chunks[-1].reason.failure.code == "EMPTY_RESPONSE" and not turn_paused(chunks[-1])
    assert check(chunks) == []


def test_an_ordinary_stop_is_not_a_pause() -> None:
    translator = AnthropicTranslator()
    chunks: list[Any] = []
    events = [
        message_start(),
        text_start(0),
        text_delta(0, "hi"),
        block_stop(0),
        message_delta(),
        message_stop(),
    ]
    for name, data in events:
        chunks += translator.feed_parsed(name, data)
    assert not turn_paused(chunks[-1])


def test_the_agent_loop_continues_a_paused_turn_with_the_assistant_message() -> None:
    paused = _paused_stream("Searching the web")
    done = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "Found it."},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Found it."}},
        {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 2}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    seen: list[list[Any]] = []

    class TwoTurns(cs.ScriptedAdapter):
        def stream(self, options: cs.GenerateOptions) -> Any:
            seen.append(list(options.messages))
            return cs.ScriptedAdapter(paused if len(seen) == 1 else done).stream(options)

    result = cs.AgentLoop(TwoTurns([])).run_sync("look it up", model="scripted")
    assert result.outcome == "done" and len(result.steps) == 2
    assert result.text == "Found it."
    # the second call carries the paused assistant message back, so the provider continues it
    second = seen[1]
    assert [m.role for m in second] == ["user", "assistant"]
    assert second[1].content[0].text == "Searching the web"
