"""A tap's recordings hold the raw reads; ``TapReplay`` shows them in the tap's view as the tap saw them."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from _tap_helpers import ANTHROPIC_AUTH, AUTH, KEY, anthropic_body, stream_body

import chunkscope as cs
from chunkscope.adapters.recording import ReplayAdapter
from chunkscope.notebook.tap_table._widget import TapTable
from chunkscope.sources import Recording, RecordingFileError
from chunkscope.tap import REDACTED, Tap, TapCall, TapReplay

# A spread of what a call can be: plain, reasoning, tool calls, an in-band error, a cut stream,
# an upstream drop, an HTTP error status and a non-streaming answer.
CHAT_MODELS = ["text", "reasoning", "tool-call", "fault-in-stream-error", "fault-truncated", "fault-drop"]


def _through(tap: Tap) -> None:
    with httpx.Client(base_url=tap.base_url, timeout=10) as client:
        for model in CHAT_MODELS:
            try:
                client.post("/v1/chat/completions", json=stream_body(model), headers=AUTH)
            except httpx.RemoteProtocolError:
                assert model == "fault-drop"  # the client sees the drop the upstream made
        client.post("/v1/chat/completions", json=stream_body("fault-429"), headers=AUTH)
        client.post("/v1/chat/completions", json=stream_body("text", stream=False), headers=AUTH)
        client.post("/v1/messages", json=anthropic_body("tool-call"), headers=ANTHROPIC_AUTH)
    assert all(call.wait(5) for call in tap.calls)


def _seen(call: TapCall) -> dict[str, Any]:
    """What the tap's view shows of a call, and what its timeline and usage row are made of."""
    assert call.result is not None
    usage = call.result.usage
    return {
        "row": {k: v for k, v in call.row().items() if k != "id"},
        "chunks": [chunk.to_dict() for chunk in call.chunks],
        "chunk_times": call.chunk_times,  # exact: the tap stamps its marks as a recording keeps them
        "violations": [(v.rule, v.position, v.message) for v in call.violations],
        "code": call.error_code,
        "timings": dict(vars(call.timings)),
        "raw": call.raw,
        "request": (call.method, call.path, call.request_headers, call.request_body),
        "response": (call.status, call.response_headers, call.streaming),
        "usage": None if usage is None else usage.to_dict(),
    }


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A folder of the tap's recordings of every kind of call, and what the tap showed of each live."""
    folder = tmp_path_factory.mktemp("recordings")
    with cs.LocalProvider() as provider, Tap(upstream=provider.url, record=folder) as tap:
        _through(tap)
        live = [_seen(call) for call in tap.calls]
    return folder, live


def test_replay_shows_every_call_as_the_tap_saw_it_live(recorded: tuple[Path, list[dict[str, Any]]]) -> None:
    folder, live = recorded
    replay = TapReplay(folder)
    assert len(replay.calls) == len(live) == len(CHAT_MODELS) + 3
    assert [_seen(call) for call in replay.calls] == live
    codes = [seen["code"] for seen in live]
    assert {"RATE_LIMIT", "TRANSPORT"} <= set(codes) and None in codes  # failures and good calls both
    frame = replay.usage.to_frame()
    assert len(frame) == len(live) and set(frame["tags"].map(lambda tags: json.loads(tags)["via"])) == {
        "tap-replay"
    }
    tokens = [seen["usage"]["outputTokens"] if seen["usage"] else None for seen in live]
    assert [None if pd.isna(v) else v for v in frame["output_tokens"].astype(object)] == tokens
    assert [None if pd.isna(v) else v for v in frame["error_code"].astype(object)] == codes


def test_a_recording_holds_each_raw_read_at_its_time_and_no_key(
    recorded: tuple[Path, list[dict[str, Any]]],
) -> None:
    folder, live = recorded
    files = sorted(folder.glob("*.jsonl"))
    assert len(files) == len(live) and not list(folder.glob("*.part"))
    for path, seen in zip(files, live, strict=True):
        recording = Recording.read(path)
        assert recording.header["version"] == 2
        assert b"".join(data for _, data in recording.reads) == seen["raw"]
        times = [t for t, _ in recording.reads]
        assert times == sorted(times) and all(t > 0 for t in times)
        tap = recording.header["tap"]
        assert [tuple(pair) for pair in tap["request_headers"]] == seen["request"][2]
        text = path.read_text(encoding="utf-8")
        decoded = b"".join(
            base64.b64decode(json.loads(line)["read"]) for line in text.splitlines()[1:] if '"read"' in line
        )
        for where in (text, decoded.decode("utf-8", "replace"), json.dumps(tap)):
            assert KEY not in where  # not as text, not inside the base64 of a read
        sent = {name: value for name, value in tap["request_headers"]}
        assert REDACTED in (sent.get("authorization"), sent.get("x-api-key"))


def test_a_tap_recording_still_replays_through_replay_adapter(
    recorded: tuple[Path, list[dict[str, Any]]],
) -> None:
    import asyncio

    folder, live = recorded
    path = sorted(folder.glob("*.jsonl"))[0]  # the "text" call

    async def replayed() -> cs.StreamResult:
        adapter = ReplayAdapter(path, speed=None)
        options = cs.GenerateOptions(
            provider="local", model="text", messages=[{"role": "user", "content": "hi"}]
        )
        return await cs.collect(adapter.stream(options))

    result = asyncio.run(replayed())
    assert result.ok and [c.to_dict() for c in result.chunks] == live[0]["chunks"]


def test_a_live_replay_keeps_the_original_timing_and_closes_cleanly(tmp_path: Path) -> None:
    with cs.LocalProvider(token_delay=0.02) as provider, Tap(upstream=provider.url, record=tmp_path) as tap:
        httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("reasoning"), headers=AUTH)
        httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("text"), headers=AUTH)
        assert all(call.wait(5) for call in tap.calls)
        recorded = [_seen(call) for call in tap.calls]
    span = tap.calls[1].started_at - tap.calls[0].started_at + (tap.calls[1].timings.total_s or 0)
    begun = time.monotonic()
    with TapReplay(tmp_path, live=True) as replay:
        time.sleep(0.05)
        assert replay.running and len(replay.calls) == 1 and not replay.calls[0].done  # streaming now
        assert 0 < len(replay.calls[0].chunks) < len(recorded[0]["chunks"])
        assert replay.wait(10)
    assert time.monotonic() - begun >= span * 0.9  # not faster than it happened
    assert [_seen(call)["chunks"] for call in replay.calls] == [seen["chunks"] for seen in recorded]
    assert [_seen(call)["timings"] for call in replay.calls] == [seen["timings"] for seen in recorded]

    cut = TapReplay(tmp_path, live=True)
    time.sleep(0.05)
    cut.close()
    assert not cut.running and cut.calls[0].done and cut.calls[0].error_code == "ABORTED"
    assert len(cut.calls) == 1 and len(cut.usage.to_frame()) == 1  # the call it cut still has its row


def test_a_replay_of_an_adapters_recording_shows_its_chunks(tmp_path: Path) -> None:
    import asyncio

    from chunkscope.adapters.recording import RecordingAdapter

    async def record() -> cs.StreamResult:
        async with (
            cs.LocalProvider() as provider,
            cs.OpenAICompatAdapter(provider.base_url, "sk-local") as inner,
        ):
            adapter = RecordingAdapter(inner, tmp_path / "call.jsonl")
            options = cs.GenerateOptions(
                provider="local", model="tool-call", messages=[{"role": "user", "content": "hi"}]
            )
            return await cs.collect(adapter.stream(options))

    result = asyncio.run(record())
    replay = TapReplay(tmp_path / "call.jsonl")
    (call,) = replay.calls
    assert call.done and [c.to_dict() for c in call.chunks] == [c.to_dict() for c in result.chunks]
    assert call.error_code is None and call.violations == [] and call.row()["chunks"] == len(result.chunks)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"t": 0.1, "read": "not base64!"}', "'read' is not valid base64"),
        ('{"t": 0.1, "read": 5}', "'read' is not base64 text"),
        ('{"t": 0.1, "other": 1}', "neither 'chunk', 'error' nor 'read'"),
    ],
)
def test_a_bad_read_line_names_its_file_and_line(tmp_path: Path, line: str, says: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"recording": "chunkscope", "version": 2}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(RecordingFileError, match=f"line 2: {says}"):
        TapReplay(path)


def test_a_bad_tap_header_and_an_unknown_version_are_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    header = {"recording": "chunkscope", "version": 2, "provider": "openai", "tap": {"request_headers": "x"}}
    path.write_text(json.dumps(header) + "\n", encoding="utf-8")
    with pytest.raises(RecordingFileError, match="'request_headers' is not a list of"):
        TapReplay(path)
    path.write_text('{"recording": "chunkscope", "version": 3}\n', encoding="utf-8")
    with pytest.raises(RecordingFileError, match=r"version 3 is not supported .*versions 1, 2"):
        TapReplay(path)


def test_replay_is_the_tap_tables_source_too(recorded: tuple[Path, list[dict[str, Any]]]) -> None:
    import asyncio

    folder, live = recorded
    replay = TapReplay(folder)
    table = TapTable(replay, interval=0.02)
    try:
        state = json.loads(table._state)
        assert state["where"] == f"replay of {len(live)} recorded calls in {folder}"
        assert state["rows"] == [call.row() for call in replay.calls]
        assert "RATE_LIMIT" in table.static_html() and "<script" not in table.static_html()

        async def opened() -> Any:
            return await table.show_call(replay.calls[0].id)

        result = asyncio.run(opened())
        assert result is not None and result.ok and table.timeline is not None
    finally:
        table.close()


def test_a_displayed_replay_shows_the_table() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from chunkscope.notebook import _reprs

    shell = InteractiveShell.instance()
    _reprs.enable(shell)
    formatter = shell.display_formatter.ipython_display_formatter
    assert formatter.lookup(TapReplay([])) is _reprs._display_tap


def test_the_command_line_replays_a_folder(
    recorded: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    folder, live = recorded
    run = [sys.executable, "-m", "chunkscope.cli", "tap", "--replay", str(folder)]
    done = subprocess.run(run, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"chunkscope tap: replay of {len(live)} recorded calls in {folder}"
    assert len(lines) == len(live) + 2 and "RATE_LIMIT" in done.stdout and KEY not in done.stdout
    assert (
        lines[-1] == f"chunkscope tap: {len(live)} calls replayed, {sum(1 for s in live if s['code'])} failed"
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    done = subprocess.run([*run[:-1], str(bad)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and str(bad) in done.stderr


def test_a_replay_keeps_only_the_latest_calls_but_every_usage_row(
    recorded: tuple[Path, list[dict[str, Any]]],
) -> None:
    folder, live = recorded
    replay = TapReplay(folder, keep_calls=2)
    assert [_seen(call) for call in replay.calls] == live[-2:]  # memory bounded by what is shown
    assert len(replay.usage.to_frame()) == len(live)
    with pytest.raises(ValueError, match="keep_calls"):
        TapReplay(folder, keep_calls=0)
