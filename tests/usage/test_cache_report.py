"""The prompt-cache report on the local provider's cache, through the tap, with the official SDKs.

Each test drives a real client (openai, anthropic) at a tap in front of the local provider
(whose cache is on by default), then reads the report from what the tap kept: its calls, its
recordings on disk. The estimates must land within the stated tolerance of what the provider
reported: ``estimate_tolerance`` plus one cache unit of the provider (its hits are whole units).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import openai
import pandas as pd
import pytest

import chunkscope as cs
from chunkscope.provider import LocalProvider
from chunkscope.tap import Tap, TapReplay
from chunkscope.usage import CACHE_REPORT_COLUMNS, Price, PriceTable

KEY = "sk-cache-report-7d1e0c9b55"
OTHER_KEY = "sk-cache-report-other-2a8f"
UNIT = 64  # the local provider's cache unit (its default)
RULES = "long-standing rules: answer briefly, cite sources, never guess. " * 100  # ~1,600 tokens
SYSTEM = "You are a careful assistant. Now: 2026-12-05T03:14:00Z. " + RULES


@pytest.fixture
def tap(provider: LocalProvider, tmp_path: Path) -> Iterator[Tap]:
    provider.clear_cache()  # each test starts cold
    with Tap(upstream=provider.url, record=tmp_path / "recordings") as running:
        yield running


def _chat(tap: Tap, messages: list[dict[str, Any]], key: str = KEY) -> None:
    with openai.OpenAI(base_url=f"{tap.base_url}/v1", api_key=key, max_retries=0) as client:
        stream = client.chat.completions.create(
            model="text",
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},  # type: ignore[arg-type]
        )
        for _ in stream:
            pass


def _claude(tap: Tap, tools: list[dict[str, Any]], system: str = SYSTEM) -> None:
    with anthropic.Anthropic(base_url=tap.base_url, api_key=KEY, max_retries=0) as client:
        client.messages.create(
            model="text",
            max_tokens=64,
            system=system,
            tools=tools,  # type: ignore[arg-type]
            messages=[{"role": "user", "content": "what is the weather?"}],
        )


def _report(tap: Tap, **options: Any) -> pd.DataFrame:
    for call in tap.calls:
        assert call.wait(5)
    return cs.cache_report(tap, **options)


def _within_tolerance(row: pd.Series) -> None:
    # The provider reports whole units of the prefix it saw; the estimate is the prefix in tokens.
    assert abs(int(row.shared_prefix_tokens) - int(row.cached_tokens)) <= row.estimate_tolerance + UNIT


def _turn(question: str, answer: str | None = None) -> list[dict[str, Any]]:
    turn: list[dict[str, Any]] = [{"role": "user", "content": question}]
    if answer is not None:
        turn.append({"role": "assistant", "content": answer})
    return turn


def test_first_call_a_hit_a_changed_system_prompt_and_an_edited_message(tap: Tap) -> None:
    system = {"role": "system", "content": SYSTEM}
    answer = "Use sorted(), which returns a new list; list.sort() sorts in place. " * 20  # ~350 tokens
    first = [system, *_turn("how do I sort a list?", answer)]
    _chat(tap, first[:2])  # cold: nothing cached yet
    _chat(tap, [*first, *_turn("and in reverse?")])  # the conversation grows: a hit
    later = {"role": "system", "content": SYSTEM.replace("03:14:00", "03:15:00")}
    _chat(tap, [later, *first[1:], *_turn("and in reverse?")])  # a timestamp in the system prompt
    edited = [later, *_turn("how do I sort a tuple?", answer), *_turn("and in reverse?")]
    _chat(tap, edited)  # message 1 edited

    report = _report(tap)
    assert list(report.columns) == list(CACHE_REPORT_COLUMNS)
    cold, hit, timestamp, edit = (report.iloc[i] for i in range(4))

    assert cold.cached_tokens == 0 and cold.verdict == "miss-explained"
    assert cold.change_section == "(first call)" and cold.shared_prefix_tokens == 0

    assert hit.verdict == "hit" and hit.cached_tokens > 1000 and pd.isna(hit.change_section)
    _within_tolerance(hit)

    assert timestamp.verdict == "miss-explained" and timestamp.change_section == "system"
    assert timestamp.change_field == "content"
    assert "03:14:00" in timestamp.before and "03:15:00" in timestamp.after
    assert timestamp.cached_tokens < UNIT and timestamp.missed_tokens > 1000
    _within_tolerance(timestamp)

    assert edit.verdict == "miss-explained" and edit.change_section == "message 1"
    assert edit.change_field == "content" and "list" in edit.before and "tuple" in edit.after
    assert edit.cached_tokens > 1000  # the system prompt before the edit is still read
    assert edit.missed_tokens > 300  # the answer after the edit is not
    _within_tolerance(edit)
    assert report.key.nunique() == 1 and report.key.iloc[0].startswith("key-")
    assert KEY not in report.to_csv()


def test_a_cleared_provider_cache_is_an_unexplained_miss_naming_the_rules(
    tap: Tap, provider: LocalProvider
) -> None:
    messages = [{"role": "system", "content": SYSTEM}, *_turn("hello")]
    _chat(tap, messages)
    _chat(tap, messages)
    provider.clear_cache()  # as a provider's cache expiring
    _chat(tap, messages)
    report = _report(tap)
    assert list(report.verdict) == ["miss-explained", "hit", "miss-unexplained"]
    cleared = report.iloc[2]
    assert cleared.cached_tokens == 0 and pd.isna(cleared.change_section)
    assert cleared.shared_prefix_tokens == cleared.prompt_tokens  # the very same request
    assert "expiry" in cleared.rules and "64-token units" in cleared.rules
    assert cleared.missed_tokens == cleared.prompt_tokens


def test_reordered_tools_on_the_anthropic_wire(tap: Tap) -> None:
    weather = {"name": "weather", "description": "The weather in a city.", "input_schema": {"type": "object"}}
    clock = {"name": "clock", "description": "The time in a city.", "input_schema": {"type": "object"}}
    _claude(tap, [weather, clock])
    _claude(tap, [weather, clock])
    _claude(tap, [clock, weather])
    report = _report(tap)
    assert list(report.verdict) == ["miss-explained", "hit", "miss-explained"]
    assert report.wire.tolist() == ["anthropic"] * 3
    moved = report.iloc[2]
    assert moved.change_section == "tools" and moved.change_field.startswith("order")
    assert "weather" in moved.before and "clock" in moved.after
    assert moved.cached_tokens == 0 and moved.missed_tokens == report.iloc[1].prompt_tokens
    _within_tolerance(report.iloc[1])


def test_recordings_and_a_replay_give_the_same_report_and_keys_part_the_cache(
    tap: Tap, tmp_path: Path
) -> None:
    messages = [{"role": "system", "content": SYSTEM}, *_turn("hello")]
    _chat(tap, messages)
    _chat(tap, messages, key=OTHER_KEY)  # another key: its own cache, its own first call
    _chat(tap, messages)
    live = _report(tap)
    assert list(live.verdict) == ["miss-explained", "miss-explained", "hit"]
    assert live.key.iloc[0] == live.key.iloc[2] != live.key.iloc[1]
    folder = tmp_path / "recordings"
    on_disk = cs.cache_report(folder)
    pd.testing.assert_frame_equal(on_disk, live)
    pd.testing.assert_frame_equal(cs.cache_report(TapReplay(folder)), live)
    assert not any(KEY in p.read_text() or OTHER_KEY in p.read_text() for p in folder.iterdir())


@pytest.mark.parametrize("cost_type", [float, Decimal])
def test_the_miss_cost_is_the_missed_tokens_at_the_rows_prices(tap: Tap, cost_type: type) -> None:
    messages = [{"role": "system", "content": SYSTEM}, *_turn("hello")]
    _chat(tap, messages)
    _chat(tap, [{"role": "system", "content": "Changed. " + SYSTEM}, *_turn("hello")])
    prices = PriceTable(
        [Price("*", "text", Decimal("0.27"), Decimal("0.07"), Decimal("1.10"))], cost_type=cost_type
    )
    report = _report(tap, prices=prices)
    row = report.iloc[1]
    assert row.verdict == "miss-explained" and row.change_section == "system"
    expected = Decimal(int(row.missed_tokens)) * Decimal("0.20") / 1_000_000
    assert isinstance(row.miss_cost, cost_type)
    assert row.miss_cost == (expected if cost_type is Decimal else pytest.approx(float(expected)))
    assert row.currency == "USD"
    assert pd.isna(cs.cache_report(tap).miss_cost.iloc[1])  # no prices: no cost


def test_calls_without_a_request_or_usage_have_na_not_zero() -> None:
    usage = cs.TokenUsage(input_tokens=5, output_tokens=1)
    report = cs.cache_report(
        [
            {"wire": "openai", "model": "m", "body": b"not json", "usage": usage},
            {"wire": "openai", "model": "m", "body": {"messages": [{"role": "user", "content": "x"}]}},
        ]
    )
    assert report.prompt_tokens.tolist()[0] == 5 and pd.isna(report.cached_tokens.iloc[0])
    assert report.verdict.isna().all() and report.shared_prefix_tokens.isna().all()
    assert str(report.prompt_tokens.dtype) == "Int64"


def test_the_display_and_the_command_show_the_same_rows_and_escape_the_request(
    tap: Tap, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from chunkscope.cli import main

    _chat(tap, [{"role": "system", "content": SYSTEM}, *_turn("hello")])
    _chat(tap, [{"role": "system", "content": "<b>now</b>[red]! " + SYSTEM}, *_turn("hello")])
    _report(tap)  # every call ended
    view = cs.CacheView(tap)
    html = view._repr_html_()
    assert html.count("<details><summary>") == 2  # one per call (after the heading)
    assert "&lt;b&gt;now&lt;/b&gt;" in html and "<b>now</b>" not in html  # request text is text
    assert "first change: <b>system, field content</b>" in html and "miss-explained" in html
    assert KEY not in html and "CacheView calls=2" in repr(view)

    folder = str(tmp_path / "recordings")
    assert main(["cache", folder]) == 0
    out = capsys.readouterr().out
    assert "miss-explained" in out and "system · content" in out and "(first call)" in out
    assert "<b>now</b>[red]!" in out  # request text is printed as text, never read as markup
    assert KEY not in out

    assert main(["cache", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.strip().endswith("no such folder or file")

    def interrupted(*args: Any, **kwargs: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr("chunkscope.cli.cache.run_cache", interrupted)
    assert main(["cache", folder]) == 130
    assert capsys.readouterr().err == "chunkscope cache: interrupted\n"

    def no_pandas(*args: Any, **kwargs: Any) -> int:
        raise ModuleNotFoundError("No module named 'pandas'", name="pandas")

    monkeypatch.setattr("chunkscope.cli.cache.run_cache", no_pandas)
    assert main(["cache", folder]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("chunkscope cache: ") and "chunkscope[usage]" in err


def test_the_command_fits_the_width_a_caller_sets_in_columns(
    tap: Tap, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from chunkscope.cli import main

    _chat(tap, [{"role": "system", "content": SYSTEM}, *_turn("hello")])
    _chat(tap, [{"role": "system", "content": SYSTEM.replace("03:14", "03:15")}, *_turn("hello")])
    _report(tap)
    folder = str(tmp_path / "recordings")
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["cache", folder]) == 0
    piped = capsys.readouterr().out.splitlines()
    assert max(map(len, piped)) > 150  # captured without a width: wide, the excerpts whole
    monkeypatch.setenv("COLUMNS", "120")  # as notebook 06 says its output area's width
    assert main(["cache", folder]) == 0
    fitted = capsys.readouterr().out
    assert max(map(len, fitted.splitlines())) <= 120
    assert "miss-explained" in fitted and "system · content" in fitted


def test_the_provider_cache_knobs_off_unit_and_minimum() -> None:
    def usage(provider: LocalProvider, system: str) -> tuple[int, int | None]:
        with openai.OpenAI(base_url=provider.base_url, api_key=KEY, max_retries=0) as client:
            reply = client.chat.completions.create(
                model="text",
                messages=[{"role": "system", "content": system}, *_turn("hi")],  # type: ignore[list-item]
            )
        assert reply.usage is not None
        details = reply.usage.prompt_tokens_details
        return reply.usage.prompt_tokens, details.cached_tokens if details is not None else None

    with LocalProvider(prompt_cache=False) as off:
        assert usage(off, SYSTEM) == usage(off, SYSTEM) == (12, None)  # the scenario's own usage
    with LocalProvider(cache_unit=500, cache_min=100) as coarse:
        prompt, cached = usage(coarse, SYSTEM)
        assert cached == 0 and prompt > 1000
        assert usage(coarse, SYSTEM) == (prompt, prompt // 500 * 500)  # whole units of 500
        assert usage(coarse, "short") == (12, None)  # under the minimum: not cached
    with pytest.raises(ValueError, match="cache_unit must be a positive number of tokens"):
        LocalProvider(cache_unit=0)
