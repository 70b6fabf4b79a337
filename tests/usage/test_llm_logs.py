"""cs.read_llm_logs / `chunkscope usage logs.db`: a logs.db written by the real `llm` package.

The database is made in the test by llm itself: its migrations, and ``response.log_to_db`` for
responses of an in-process fake model (an ``llm.Model`` subclass, no network, no plugin
installed), with llm's user directory in a temporary folder. Hostile files: not SQLite, SQLite
without llm's tables, counts llm would never write (negative, huge, text).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

llm = pytest.importorskip("llm")
sqlite_utils = pytest.importorskip("sqlite_utils")
llm_migrations = pytest.importorskip("llm.migrations")

import chunkscope as cs  # noqa: E402
from chunkscope.sources import SourceError  # noqa: E402

# (prompt, input tokens, output tokens, token_details) as each provider's plugin reports them
REPLIES: list[tuple[str, int, int, dict[str, Any] | None]] = [
    ("plain", 12, 5, None),
    # OpenAI: prompt_tokens include the cached ones; reasoning inside completion tokens
    (
        "openai-style",
        1000,
        300,
        {
            "prompt_tokens_details": {"cached_tokens": 800},
            "completion_tokens_details": {"reasoning_tokens": 200},
        },
    ),
    # Anthropic: input_tokens exclude cache reads and writes
    ("anthropic-style", 40, 60, {"cache_read_input_tokens": 5000, "cache_creation_input_tokens": 700}),
]


class FakeModel(llm.Model):
    """Replies with the prompt's text and the usage scripted for it."""

    model_id = "fake-model"
    can_stream = True

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        for text, inp, out, details in REPLIES:
            if prompt.prompt == text:
                response.set_usage(input=inp, output=out, details=details)
        yield f"echo: {prompt.prompt}"


@pytest.fixture
def logs_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[Any]]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm-home"))
    path = tmp_path / "logs.db"
    db = sqlite_utils.Database(path)
    llm_migrations.migrate(db)
    model = FakeModel()
    conversation = model.conversation()
    responses = []
    for text, *_ in REPLIES:
        response = conversation.prompt(text)
        response.text()
        response.log_to_db(db)
        responses.append(response)
    db.close()
    return path, responses


def test_read_llm_logs_gives_one_usage_row_per_response(logs_db: tuple[Path, list[Any]]) -> None:
    path, responses = logs_db
    frame = cs.read_llm_logs(path)
    assert list(frame.columns) == list(cs.usage.COLUMNS)
    assert len(frame) == 3
    assert set(frame["model"].astype(str)) == {"fake-model"}
    assert set(frame["provider"].astype(str)) == {"llm"}
    assert frame["call_id"].tolist() == [r.id for r in responses]
    conversation = responses[0].conversation.id
    assert {json.loads(t)["conversation"] for t in frame["tags"].astype(str)} == {conversation}
    started = [pd.Timestamp(r._start_utcnow) for r in responses]
    assert (frame["started_at"] - pd.Series(started)).abs().max() < pd.Timedelta(milliseconds=1)
    rows = frame.set_index(frame["call_id"])
    plain, openai, anthropic = (rows.loc[r.id] for r in responses)
    assert (plain["input_tokens"], plain["output_tokens"]) == (12, 5)
    assert pd.isna(plain["cache_read_tokens"]) and pd.isna(plain["reasoning_tokens"])
    # OpenAI's inclusive prompt count made disjoint: 1000 - 800 cached
    assert (openai["input_tokens"], openai["cache_read_tokens"], openai["reasoning_tokens"]) == (
        200,
        800,
        200,
    )
    assert openai["billed_input_tokens"] == 1000
    assert (anthropic["input_tokens"], anthropic["cache_read_tokens"], anthropic["cache_write_tokens"]) == (
        40,
        5000,
        700,
    )
    assert set(frame["usage_source"].astype(str)) == {"reported"}


class ToolModel(llm.Model):
    """Replies as a provider plugin would log it: a tool call, reasoning and text, a raw JSON."""

    model_id = "tool-model"
    can_stream = True
    supports_tools = True

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[Any]:
        from llm.parts import StreamEvent

        if prompt.prompt == "weather?":  # a chat completion's finish, as llm's OpenAI plugin folds it
            response.add_tool_call(llm.ToolCall(name="get_weather", arguments={"city": "Paris"}))
            response.response_json = {"content": "", "finish_reason": "tool_calls"}
        elif prompt.prompt == "think":  # an Anthropic message, cut at its token limit
            yield StreamEvent(type="reasoning", chunk="Let me see.")
            yield StreamEvent(type="text", chunk="The answer")
            response.response_json = {"type": "message", "role": "assistant", "stop_reason": "max_tokens"}
        elif prompt.prompt == "searched":  # a search the provider ran itself is no tool call of the client
            yield StreamEvent(
                type="tool_call_name", chunk="web_search", tool_call_id="s1", server_executed=True
            )
            yield StreamEvent(type="text", chunk="Found it.")
        else:  # a plugin that logs no raw response: nothing says how it finished
            yield "hello"


def test_the_frame_holds_what_the_log_holds_and_leaves_the_rest_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm-home"))
    path = tmp_path / "logs.db"
    db = sqlite_utils.Database(path)
    llm_migrations.migrate(db)
    model = ToolModel()
    tool = llm.Tool.function(lambda city: "sunny", name="get_weather")
    ids = {}
    for prompt in ("weather?", "think", "searched", "plain"):
        response = model.prompt(prompt, tools=[tool])
        response.text()
        response.log_to_db(db)
        ids[prompt] = response.id
    with sqlite3.connect(path) as legacy:  # llm before 0.36: the response text, the tool_calls table
        legacy.execute(
            "insert into responses (id, model, response, reasoning, datetime_utc, duration_ms) "
            "values ('old-1', 'gpt-4o-mini', '', null, '2024-05-01T10:00:00', 900)"
        )
        legacy.execute(
            "insert into tool_calls (response_id, name, arguments, tool_call_id) "
            "values ('old-1', 'get_weather', '{}', 'call-1')"
        )
    legacy.close()
    db.close()
    rows = cs.read_llm_logs(path).set_index("call_id")

    def shown(call_id: str) -> tuple[object, ...]:
        row = rows.loc[call_id]
        finish = None if pd.isna(row["finish"]) else row["finish"]
        blocks = (row["text_blocks"], row["reasoning_blocks"], row["tool_call_blocks"])
        return finish, *blocks, row["usage_source"]

    assert shown(ids["weather?"]) == ("tool-calls", 0, 0, 1, "missing")
    assert shown(ids["think"]) == ("max-tokens", 1, 1, 0, "missing")
    assert shown(ids["searched"]) == (None, 1, 0, 0, "missing")
    assert shown(ids["plain"]) == (None, 1, 0, 0, "missing")  # no finish logged: <NA>, not "stop"
    assert shown("old-1") == (None, 0, 0, 1, "missing")
    with sqlite3.connect(path) as broken:  # a turn whose messages are gone: its blocks are unknown
        broken.execute(
            "delete from messages where hash = (select tip_message_hash from turns where id = ?)",
            (ids["plain"],),
        )
    broken.close()
    again = cs.read_llm_logs(path).set_index("call_id").loc[ids["plain"]]
    assert again[["text_blocks", "reasoning_blocks", "tool_call_blocks"]].isna().all()


def test_a_legacy_responses_row_is_read_too(logs_db: tuple[Path, list[Any]]) -> None:
    path, _ = logs_db
    with sqlite3.connect(path) as db:  # the table llm's own migrations created for older versions
        db.execute(
            "insert into responses (id, model, datetime_utc, duration_ms, input_tokens, output_tokens, "
            "conversation_id) values ('old-1', 'gpt-4o-mini', '2024-05-01T10:00:00', 1500, 100, 20, 'c-old')"
        )
    db.close()
    with pytest.warns(cs.UnpricedModelWarning, match="fake-model"):  # genai-prices does not know it
        frame = cs.read_llm_logs(path, prices="genai-prices")
    old = frame[frame["call_id"] == "old-1"].iloc[0]
    assert old["started_at"] == pd.Timestamp("2024-05-01T10:00:00", tz="UTC")
    assert old["duration_s"] == 1.5
    assert old["cost"] > 0  # priced by its model name (llm logs no provider)
    assert "gpt-4o-mini" in old["price_source"]


def test_chunkscope_usage_reads_a_logs_db(logs_db: tuple[Path, list[Any]], tmp_path: Path) -> None:
    path, _ = logs_db
    out = tmp_path / "summary.csv"
    run = subprocess.run(
        [sys.executable, "-m", "chunkscope.cli", "usage", str(path), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    table = pd.read_csv(out)
    assert table["calls"].tolist() == [3]
    assert table["input_tokens"].tolist() == [12 + 200 + 40]


def test_hostile_files_are_clear_errors_or_invalid_rows(
    logs_db: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    text = tmp_path / "notes.db"
    text.write_text("not a database\n")
    with pytest.raises(SourceError, match="not a SQLite database"):
        cs.read_llm_logs(text)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("create table things (x)")
    db.close()
    with pytest.raises(SourceError, match="without llm's tables"):
        cs.read_llm_logs(other)
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    with pytest.raises(SourceError, match="SQLite"):
        cs.read_llm_logs(broken)
    path, responses = logs_db
    with sqlite3.connect(path) as db:  # counts llm never writes: SQLite's loose typing lets them in
        db.execute("update turns set input_tokens = -5 where id = ?", (responses[0].id,))
        db.execute("update turns set output_tokens = ? where id = ?", (2**63 - 1, responses[1].id))
        db.execute(
            "update turns set input_tokens = 'lots', token_details = '{[' where id = ?", (responses[2].id,)
        )
    db.close()
    frame = cs.read_llm_logs(path)
    assert frame["usage_source"].astype(str).tolist()[0] == "invalid"
    assert frame["usage_source"].astype(str).tolist()[2] == "invalid"
    assert frame["input_tokens"].isna().tolist() == [True, False, True]
    run = subprocess.run(
        [sys.executable, "-m", "chunkscope.cli", "usage", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and "out of range" in run.stderr
    run = subprocess.run(
        [sys.executable, "-m", "chunkscope.cli", "usage", str(other)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and "without llm's tables" in run.stderr
    assert "Traceback" not in run.stderr


def test_the_docs_example_runs(logs_db: tuple[Path, list[Any]]) -> None:
    from usage_helpers import doc_examples

    [example] = doc_examples("The llm tool's logs")
    namespace: dict[str, Any] = {"cs": cs, "logs_db": logs_db[0]}
    with pytest.warns(cs.UnpricedModelWarning, match="fake-model"):
        exec(compile(example, "docs/usage.md", "exec"), namespace)
    assert len(namespace["frame"]) == 3
    assert namespace["priced"]["cost"].isna().all()  # the fake model has no price anywhere


def test_chunkscope_usage_prices_a_logs_db_with_genai_prices(
    logs_db: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    path, _ = logs_db
    with sqlite3.connect(path) as db:
        db.execute("update turns set model = 'gpt-4o-mini'")
    db.close()
    out = tmp_path / "summary.csv"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "chunkscope.cli",
            "usage",
            str(path),
            "--prices",
            "genai-prices",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    frame = cs.read_llm_logs(path, prices="genai-prices")
    assert pd.read_csv(out)["cost"].tolist() == pytest.approx([frame["cost"].sum()], rel=1e-9)
