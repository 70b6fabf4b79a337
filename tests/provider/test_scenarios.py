"""The scenario table in code matches docs/scenarios.md, and each expectation is what the table says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chunkscope._wires import WIRE_FACTS
from chunkscope.provider import SCENARIOS, get_scenario
from chunkscope.provider._scenarios import LONG_DEFAULT_TOKENS

HELLO = "Hello! I am the chunkscope local provider."


def documented_models(repo_root: Path) -> set[str]:
    table = (repo_root / "docs" / "scenarios.md").read_text(encoding="utf-8")
    names: set[str] = set()
    for line in table.splitlines():
        match = re.match(r"\| `([a-z0-9-]+)`", line)
        if match:
            names.add(match.group(1))
    return names


def test_every_documented_model_is_a_scenario_and_back(repo_root: Path) -> None:
    assert documented_models(repo_root) == set(SCENARIOS)


def test_faults_are_flagged_and_carry_codes_for_both_wires() -> None:
    for name, scenario in SCENARIOS.items():
        assert scenario.fault == name.startswith("fault-")
        if scenario.fault:
            assert scenario.expected_codes is not None
            assert set(scenario.expected_codes) == set(WIRE_FACTS)
        else:
            assert scenario.expected_codes is None


@pytest.mark.parametrize(
    ("name", "text", "reasoning", "tool_calls", "usage", "finish"),
    [
        ("text", HELLO, "", [], {"inputTokens": 12, "outputTokens": 8}, "stop"),
        (
            "reasoning",
            "Hello there!",
            "The user greets me. I should greet back.",
            [],
            {"inputTokens": 12, "outputTokens": 11},
            "stop",
        ),
        (
            "reasoning-resume",
            "Partial answer. Final answer.",
            "First thought.Second thought.",
            [],
            {"inputTokens": 12, "outputTokens": 8},
            "stop",
        ),
        (
            "tool-call",
            "Let me check.",
            "",
            [("get_weather", '{"city": "Tokyo", "unit": "celsius"}')],
            {"inputTokens": 12, "outputTokens": 8},
            "tool-calls",
        ),
        (
            "parallel-tools",
            "",
            "",
            [("get_weather", '{"city": "Tokyo"}'), ("get_time", '{"timezone": "Asia/Tokyo"}')],
            {"inputTokens": 12, "outputTokens": 6},
            "tool-calls",
        ),
        (
            "interleaved-tools",
            "",
            "",
            [("get_weather", '{"city": "Tokyo"}'), ("get_time", '{"timezone": "Asia/Tokyo"}')],
            {"inputTokens": 12, "outputTokens": 6},
            "tool-calls",
        ),
        ("late-id", "", "", [("lookup", '{"q": "x"}')], {"inputTokens": 12, "outputTokens": 2}, "tool-calls"),
        ("no-id", "", "", [("lookup", '{"q": "x"}')], {"inputTokens": 12, "outputTokens": 2}, "tool-calls"),
        ("no-args", "", "", [("ping", "{}")], {"inputTokens": 12, "outputTokens": 1}, "tool-calls"),
        ("max-tokens", "This reply is cut", "", [], {"inputTokens": 12, "outputTokens": 4}, "max-tokens"),
        (
            "cache-hit",
            "Cached hello.",
            "",
            [],
            {"inputTokens": 120, "outputTokens": 9, "cacheReadTokens": 7680, "reasoningTokens": 4},
            "stop",
        ),
        ("slow-tokens", HELLO, "", [], {"inputTokens": 12, "outputTokens": 8}, "stop"),
        ("stall-recovers", HELLO, "", [], {"inputTokens": 12, "outputTokens": 8}, "stop"),
        (
            "reasoning-text-tools",
            "Checking both.",
            "Two lookups needed.",
            [("get_weather", '{"city": "Paris"}'), ("get_time", '{"timezone": "Europe/Paris"}')],
            {"inputTokens": 12, "outputTokens": 8},
            "tool-calls",
        ),
        ("slow-first-byte", HELLO, "", [], {"inputTokens": 12, "outputTokens": 8}, "stop"),
        (
            "dialect-content-parts",
            "Parts are text.",
            "Thinking in parts.",
            [],
            {"inputTokens": 12, "outputTokens": 6},
            "stop",
        ),
        (
            "dialect-reasoning-details",
            "Done thinking.",
            "Details first, then both.",
            [],
            {"inputTokens": 12, "outputTokens": 6},
            "stop",
        ),
        (
            "dialect-xai-usage",
            "Tokens add up.",
            "Counting apart.",
            [],
            {"inputTokens": 12, "outputTokens": 25, "reasoningTokens": 20},
            "stop",
        ),
        ("dialect-done-no-blank-line", HELLO, "", [], {"inputTokens": 12, "outputTokens": 8}, "stop"),
        (
            "dialect-usage-iterations",
            "Compacted hello.",
            "",
            [],
            {"inputTokens": 3012, "outputTokens": 182},
            "stop",
        ),
        (
            "dialect-partial-args",
            "Looking it up.",
            "",
            [
                (
                    "get_forecast",
                    '{"city": "San Francisco", "days": 3, "hourly": true, '
                    '"units": {"temp": "celsius", "wind": "km/h"}, "alerts": ["rain", null]}',
                )
            ],
            {"inputTokens": 12, "outputTokens": 6},
            "tool-calls",
        ),
        ("dialect-crlf-framing", HELLO, "", [], {"inputTokens": 12, "outputTokens": 8}, "stop"),
        ("fault-cut-before-usage", "Hello! I", "", [], None, None),
        ("fault-malformed", "Hello!", "", [], None, None),
        ("fault-truncated", "Hello! I", "", [], None, None),
        ("fault-drop", "Hello! I", "", [], None, None),
        ("fault-stall", "Hello!", "", [], None, None),
        ("fault-in-stream-error", "Hello!", "", [], None, None),
        (
            "fault-content-filter",
            "I can't help with that.",
            "",
            [],
            {"inputTokens": 12, "outputTokens": 1},
            "error",
        ),
        ("fault-empty", "", "", [], {"inputTokens": 12, "outputTokens": 0}, "error"),
        ("fault-429", "", "", [], None, None),
    ],
)
def test_expected_result_is_the_documented_one(
    name: str,
    text: str,
    reasoning: str,
    tool_calls: list[tuple[str, str]],
    usage: dict[str, int] | None,
    finish: str | None,
) -> None:
    expected = SCENARIOS[name].expected
    assert (expected.text, expected.reasoning, expected.tool_calls, expected.usage, expected.finish) == (
        text,
        reasoning,
        tool_calls,
        usage,
        finish,
    )


def test_reasoning_resume_opens_four_blocks_and_interleaved_tools_two() -> None:
    assert SCENARIOS["reasoning-resume"].expected.block_types == ["reasoning", "text", "reasoning", "text"]
    assert SCENARIOS["interleaved-tools"].expected.block_types == ["tool-call", "tool-call"]
    assert SCENARIOS["tool-call"].expected.block_types == ["text", "tool-call"]


def test_reasoning_text_tools_opens_reasoning_text_and_two_calls_in_that_order() -> None:
    assert SCENARIOS["reasoning-text-tools"].expected.block_types == [
        "reasoning",
        "text",
        "tool-call",
        "tool-call",
    ]


def test_dialect_scenarios_belong_to_their_own_wires_matrix_only() -> None:
    wires = {name: s.wires for name, s in SCENARIOS.items() if s.dialect is not None}
    assert wires == {
        "dialect-content-parts": ("openai",),
        "dialect-reasoning-details": ("openai",),
        "dialect-xai-usage": ("openai",),
        "dialect-done-no-blank-line": ("openai",),
        "dialect-usage-iterations": ("anthropic",),
        "dialect-several-output-items": ("responses",),
        "dialect-summary-parts": ("responses",),
        "dialect-reasoning-text": ("responses",),
        "dialect-partial-args": ("gemini",),
        "dialect-crlf-framing": ("gemini",),
    }
    assert SCENARIOS["text"].wires == tuple(WIRE_FACTS)


def test_documented_fault_codes() -> None:
    codes = {name: s.expected_codes or {} for name, s in SCENARIOS.items() if s.fault}
    withheld = {
        "openai": "CONTENT_FILTER",
        "anthropic": "REFUSAL",
        "responses": "CONTENT_FILTER",
        "gemini": "CONTENT_FILTER",
        "bedrock": "CONTENT_FILTER",
    }
    assert codes["fault-content-filter"] == withheld
    for name, code in (
        ("fault-429", "RATE_LIMIT"),
        ("fault-context", "CONTEXT_WINDOW_EXCEEDED"),
        ("fault-stall", "TIMEOUT"),
        ("fault-cut-before-usage", "STREAM_CLOSED"),
    ):
        assert codes[name] == dict.fromkeys(WIRE_FACTS, code), name


def test_long_resolves_any_token_count() -> None:
    assert SCENARIOS["long"].expected.usage == {"inputTokens": 12, "outputTokens": LONG_DEFAULT_TOKENS}
    long3 = get_scenario("long-3")
    assert long3 is not None
    assert long3.expected.text == "word0 word1 word2"
    assert get_scenario("long-0") is None
    assert get_scenario("long-x") is None
    assert get_scenario("no-such-model") is None


def test_stall_recovers_pauses_once_for_the_time_its_name_gives() -> None:
    from chunkscope.provider._scenarios import Stall

    def pauses(name: str) -> list[float]:
        scenario = get_scenario(name)
        assert scenario is not None, name
        return [step.seconds for step in scenario.script().steps if isinstance(step, Stall)]

    assert pauses("stall-recovers") == [1.0]
    assert pauses("stall-recovers-250") == [0.25]
    assert get_scenario("stall-recovers-250").expected.text == HELLO  # type: ignore[union-attr]
    assert get_scenario("stall-recovers-0") is None
    assert get_scenario("stall-recovers-600001") is None
    assert get_scenario("stall-recovers-x") is None


def test_echo_expectation_follows_the_prompt() -> None:
    echo = SCENARIOS["echo"]
    assert echo.expected_for("  two  words ").text == "  two  words "
    assert echo.expected_for("").text == "(nothing to echo)"
