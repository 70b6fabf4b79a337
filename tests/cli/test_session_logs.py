"""``check``, ``show`` and ``usage`` read DeepSeek Harness session logs (plain, zstd): one per attempt."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from _cli_streams import example, write_session_log
from rich.console import Console

import chunkscope as cs
from chunkscope import sources
from chunkscope.cli import _inputs, main, show
from chunkscope.usage import DshLogWriter

LABELS = ["turn 1 step 1 attempt 1", "turn 2 step 1 attempt 1", "turn 2 step 1 attempt 2"]


@pytest.fixture(params=["plain", "zstd"])
def session_log(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    name = "session.jsonl" if request.param == "plain" else "session.jsonl.zstd"
    return write_session_log(tmp_path / name, compress=request.param == "zstd")


def test_a_zstd_session_log_is_told_by_its_magic_bytes_not_its_name(tmp_path: Path) -> None:
    path = write_session_log(tmp_path / "session.bin", compress=True)
    assert path.read_bytes()[:4] == sources.ZSTD_MAGIC
    streams = _inputs.load_streams(path)
    assert [s.label for s in streams] == LABELS and {s.kind for s in streams} == {"dsh"}


def test_check_reads_each_attempt_of_a_session_log_as_a_stream(
    session_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(session_log)]) == 0
    out = capsys.readouterr().out
    for label, chunks in zip(LABELS, (9, 3, 9), strict=True):
        assert f"{session_log} [{label}]: session log, {chunks} chunks, profile strict: clean" in out
    assert "3 streams checked, 0 with errors, 0 files unreadable" in out

    assert main(["check", str(session_log), "--format", "json", "--profile", "dsh"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [s["label"] for s in report["streams"]] == LABELS and report["ok"]
    assert {s["kind"] for s in report["streams"]} == {"dsh"}


def test_check_flags_a_broken_attempt_with_its_rule_position_and_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "session.jsonl"
    with DshLogWriter(path) as log:
        log.turn_start(1)
        log.event("step/start", {"turn": 1, "step": 1})
        log.chunks(1, 1, example()[1:])  # the text block's start left out
        log.event("step/end", {"turn": 1, "step": 1})
        log.turn_end(1)
    assert main(["check", str(path), "--profile", "dsh"]) == 1
    out = capsys.readouterr().out
    assert f"{path} [turn 1 step 1 attempt 1]: session log, 8 chunks, profile dsh: 3 errors" in out
    rows = [line.split()[:4] for line in out.splitlines() if "delta-index" in line or "block-pairing" in line]
    assert rows == [
        ["0", "text-delta", "error", "delta-index"],
        ["1", "text-delta", "error", "delta-index"],
        ["2", "block-end", "error", "block-pairing"],
    ]


def test_show_draws_every_attempt_with_its_route_and_the_failure_code(
    session_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(session_log.parent)  # a short name: the titles are not cut
    console = Console(record=True, width=100, file=open("/dev/null", "w"), color_system=None)  # noqa: SIM115
    assert show.run_show(session_log.name, width=100, console=console) == 0
    text = console.export_text()
    for label in LABELS:
        assert f"{session_log.name} [{label}]" in text
    assert "provider deepseek-official  model deepseek-v4-flash  adapter DeepSeek Harness" in text
    assert "model deepseek-v4-pro" in text
    assert "TRANSPORT  DeepSeek API stream failed" in text
    assert "'Hello world'" in text and "axis 0-" in text


def test_usage_of_a_session_log_is_the_session_readers_summary(
    session_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "summary.csv"
    assert main(["usage", str(session_log), "-o", str(out)]) == 0
    written = pd.read_csv(out).set_index(["provider", "model"])
    expected = cs.summary(cs.read_dsh_session(session_log).to_frame())
    assert written.index.tolist() == expected.index.tolist()
    for column in (
        "calls",
        "attempts",
        "retries",
        "errors",
        "input_tokens",
        "output_tokens",
        "errors_TRANSPORT",
    ):
        assert written[column].tolist() == expected[column].astype("int64").tolist(), column
    # the failed attempt and its retry are one call
    pro = written.loc[("deepseek-official", "deepseek-v4-pro")]
    assert (pro["calls"], pro["attempts"], pro["retries"], pro["errors_TRANSPORT"]) == (1, 2, 1, 1)


def test_usage_mixes_recordings_and_session_logs(
    session_log: Path, make_recording: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    recording = make_recording("call.jsonl", example())
    assert main(["usage", str(session_log), str(recording), "--by", ""]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("all"))
    assert row.split()[:4] == ["all", "3", "1", "0"]  # 3 calls, 1 retry, none failed in the end


@pytest.mark.parametrize("command", ["check", "show", "usage"])
def test_a_corrupt_zstd_session_log_is_one_line_and_exit_2(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_session_log(tmp_path / "good.jsonl.zstd", compress=True).read_bytes()
    bad = tmp_path / "bad.jsonl.zstd"
    bad.write_bytes(good[: len(good) // 2])  # cut mid-frame
    code = main([command, str(bad)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    first = err.splitlines()[0]
    assert first.startswith(f"chunkscope {command}: {bad}") and "not a readable session log" in first
    assert "Traceback" not in err


def test_a_zstd_file_over_the_size_limit_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_session_log(tmp_path / "session.jsonl.zstd", compress=True)
    monkeypatch.setattr(_inputs, "MAX_BYTES", 100)
    assert main(["check", str(path)]) == 2
    assert "over the 100-byte limit" in capsys.readouterr().err
