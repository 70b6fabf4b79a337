"""``chunkscope usage``: the usage summary of recordings as a table, CSV or Parquet; bad input is one line."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from _cli_streams import example, write_log
from rich.console import Console

import chunkscope as cs
from chunkscope.cli import main
from chunkscope.cli import usage as usage_command

MakeFile = Callable[..., Path]


def shown(*paths: Path | str, width: int = 100, **options: str) -> tuple[int, str]:
    """``usage``'s exit status and its table as plain text on a ``width``-column terminal."""
    console = Console(record=True, width=width, file=open(os.devnull, "w"), color_system=None)  # noqa: SIM115
    code = usage_command.run_usage([str(p) for p in paths], console=console, **options)
    return code, console.export_text()


@pytest.fixture
def two_calls(make_recording: MakeFile) -> list[Path]:
    """A clean call (100 in, 50 out) and one that raised RATE_LIMIT after three chunks."""
    return [
        make_recording("ok.jsonl", example()),
        make_recording("limited.jsonl", example()[:3], cs.LlmError("slow down", "RATE_LIMIT")),
    ]


def test_the_table_sums_calls_failures_and_tokens_per_provider_and_model(two_calls: list[Path]) -> None:
    code, text = shown(*two_calls)
    assert code == 0
    assert "usage of 2 attempts" in text
    header = next(line for line in text.splitlines() if "provider" in line)
    assert header.split() == [
        "provider",
        "model",
        "calls",
        "retries",
        "failed",
        "in",
        "out",
        "cache",
        "cost",
        "p50",
        "s",
    ]
    row = next(line for line in text.splitlines() if line.strip().startswith("scripted"))
    # 2 calls, no retry, 1 failed, 100 in / 50 out, no cache figures (unknown, not 0.0%), no price
    # table: no cost
    assert row.split()[:9] == ["scripted", "script-1", "2", "0", "1", "100", "50", "-", "-"]
    assert "errors by code, scripted script-1: RATE_LIMIT 1" in text


def test_the_table_fits_an_80_column_terminal_without_dropping_columns(two_calls: list[Path]) -> None:
    code, text = shown(*two_calls, width=80)
    assert code == 0
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "p50 s" in text and "cost" in text and "RATE_LIMIT 1" in text


def test_csv_holds_every_summary_column_and_equals_the_library_summary(
    two_calls: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "summary.csv"
    assert main(["usage", *map(str, two_calls), "-o", str(out)]) == 0
    assert f"1 group of 2 attempts written to {out}" in capsys.readouterr().out
    written = pd.read_csv(out)
    assert list(written.columns) == ["provider", "model", *cs.usage.SUMMARY_COLUMNS, "errors_RATE_LIMIT"]
    # the command reads the files as read_recordings does: same numbers as the library's summary
    expected = cs.summary(cs.read_recordings(tmp_path)).reset_index()
    for column in (
        "calls",
        "attempts",
        "failed_calls",
        "errors",
        "input_tokens",
        "output_tokens",
        "errors_RATE_LIMIT",
    ):
        assert written[column].tolist() == expected[column].astype("int64").tolist(), column
    assert written["duration_p50_s"].tolist() == pytest.approx(expected["duration_p50_s"].tolist())


def test_parquet_output_keeps_the_groups_and_dtypes(
    two_calls: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "summary.parquet"
    assert main(["usage", *map(str, two_calls), "--by", "model,error_code", "-o", str(out)]) == 0
    written = pd.read_parquet(out).set_index(["model", "error_code"])
    assert written.loc[("script-1", "RATE_LIMIT"), "failed_calls"] == 1
    assert written["calls"].sum() == 2
    assert str(written["input_tokens"].dtype) == "Int64"


def test_prices_fill_the_cost_column(two_calls: list[Path], tmp_path: Path) -> None:
    prices = cs.PriceTable(
        [
            cs.Price(
                provider="scripted", model="script-1", cache_miss_input=2.0, cache_hit_input=0.5, output=10.0
            )
        ]
    )
    path = prices.save(tmp_path / "prices.toml")
    code, text = shown(*two_calls, prices=str(path))
    assert code == 0
    row = next(line for line in text.splitlines() if line.strip().startswith("scripted"))
    # (100 * 2.0 + 50 * 10.0) / 1e6 for the clean call; the failed one has no usage and adds nothing
    assert "0.000700" in row.split()
    assert "cost USD" in text


def test_a_model_the_price_table_lacks_is_named_on_stderr_and_left_unpriced(
    two_calls: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = cs.PriceTable.deepseek_example().save(tmp_path / "prices.json")
    out = tmp_path / "s.csv"
    assert main(["usage", *map(str, two_calls), "--prices", str(path), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("chunkscope usage: note: ") and "script-1" in err and err.count("\n") == 1
    assert pd.isna(pd.read_csv(out)["cost"][0])


def test_by_nothing_gives_one_overall_row(two_calls: list[Path]) -> None:
    code, text = shown(*two_calls, by="")
    assert code == 0
    row = next(line for line in text.splitlines() if line.strip().startswith("all"))
    assert row.split()[:3] == ["all", "2", "0"]


def test_grouping_by_error_code_counts_each_code_once(two_calls: list[Path]) -> None:
    table = cs.summary(cs.read_recordings(two_calls[0].parent), by="error_code")
    assert table.loc["RATE_LIMIT", "errors_RATE_LIMIT"] == 1
    code, text = shown(*two_calls, by="error_code")
    assert code == 0 and "errors by code, RATE_LIMIT: RATE_LIMIT 1" in text


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "the following arguments are required: FILE"),
        (["{ok}", "--by", "modle"], "--by: no column 'modle'"),
        (["{ok}", "--by", "model,model"], "--by: a column named twice"),
        (["{ok}", "-o", "{dir}/out.txt"], "write a .csv or a .parquet file"),
        (["{ok}", "-o", "{dir}/nowhere/out.csv"], "no directory"),
        (["{ok}", "--prices", "{dir}/missing.toml"], "--prices {dir}/missing.toml: cannot read it"),
        (["{ok}", "--prices", "{dir}/bad.toml"], "--prices {dir}/bad.toml: "),
        (["{ok}", "--prices", "{dir}/bad.json"], "a price table needs a list 'prices'"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    argv: list[str], says: str, two_calls: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.toml").write_text("prices = [[[", encoding="utf-8")
    (tmp_path / "bad.json").write_text('{"prices": 3}', encoding="utf-8")
    argv = [a.format(ok=two_calls[0], dir=tmp_path) for a in argv]
    try:
        code = main(["usage", *argv])
    except SystemExit as exited:  # argparse's own refusals
        code = exited.code  # type: ignore[assignment]
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("chunkscope usage: ") and says.format(dir=tmp_path) in err


def test_unreadable_files_are_named_one_line_each_and_give_no_summary(
    two_calls: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\x01")
    chunk_log = write_log(tmp_path / "log.jsonl", example())
    missing = tmp_path / "missing.jsonl"
    code = main(["usage", str(two_calls[0]), str(binary), str(chunk_log), str(missing)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 4
    assert f"{binary}: a binary file" in lines[0]
    assert f"{chunk_log}: a chunk log names no provider or model" in lines[1]
    assert f"{missing}: cannot read it" in lines[2]
    assert lines[3] == "chunkscope usage: 3 of 4 files unreadable; no summary"


def test_the_installed_command_prints_the_table_and_never_a_traceback(
    two_calls: list[Path], tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(cs.__file__).parents[1]), "COLUMNS": "100"}
    command = [sys.executable, "-m", "chunkscope.cli", "usage"]
    done = subprocess.run([*command, *map(str, two_calls)], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "scripted" in done.stdout and done.stderr == ""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"recording": "chunkscope", "version": 1}\n{"t": 0, "chunk": [[[\n', encoding="utf-8")
    done = subprocess.run([*command, str(bad)], capture_output=True, text=True, env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0].startswith(f"chunkscope usage: {bad}")


def test_usage_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["usage", "--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0 and out.startswith("usage: chunkscope usage") and "--prices" in out


@pytest.mark.parametrize(
    ("argv", "prefix", "says"),
    [
        (["frob"], "chunkscope: ", "invalid choice: 'frob'"),
        (["--frob"], "chunkscope: ", "unrecognized arguments: --frob"),
        # a subcommand's flag mistake is reported in the subcommand's name
        (["show", "x.jsonl", "--frob"], "chunkscope show: ", "unrecognized arguments: --frob"),
        (["check", "x.jsonl", "--bogus"], "chunkscope check: ", "unrecognized arguments: --bogus"),
        (["usage", "x.jsonl", "--bogus"], "chunkscope usage: ", "unrecognized arguments: --bogus"),
    ],
)
def test_top_level_argument_errors_are_one_line_and_exit_2(argv: list[str], prefix: str, says: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(cs.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, "-m", "chunkscope.cli", *argv], capture_output=True, text=True, env=env
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(prefix) and says in done.stderr


def test_a_folder_is_read_as_a_whole_as_its_files_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/usage.md's `chunkscope usage logs/`: the recordings and session logs in a folder and its
    subfolders, with what is not a stream left out (a README, the tap's unfinished .part, a hidden
    checkpoint folder)."""
    from _cli_streams import write_recording, write_session_log

    folder = tmp_path / "logs"
    (folder / "sessions" / "s1").mkdir(parents=True)
    (folder / ".ipynb_checkpoints").mkdir()
    files = [
        write_recording(folder / "ok.jsonl", example()),
        write_recording(folder / "limited.jsonl", example()[:3], cs.LlmError("slow down", "RATE_LIMIT")),
        write_session_log(folder / "sessions" / "s1" / "session.jsonl.zstd", compress=True),
    ]
    (folder / "README.md").write_text("recordings of last week\n")
    (folder / "00007-openai-m.jsonl.part").write_text('{"half": ')
    (folder / ".ipynb_checkpoints" / "ok-checkpoint.jsonl").write_text("not a recording\n")
    by_folder, by_files = tmp_path / "folder.csv", tmp_path / "files.csv"
    assert main(["usage", str(folder), "-o", str(by_folder)]) == 0, capsys.readouterr().err
    assert main(["usage", *map(str, files), "-o", str(by_files)]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(by_folder), pd.read_csv(by_files))
    assert pd.read_csv(by_folder)["attempts"].sum() == 2 + 3


def test_a_group_whose_usage_was_missing_shows_missing_not_zero(tmp_path: Path) -> None:
    """A stream that ended well but reported no usage: its tokens are unknown, not `in 0 out 0`."""
    from _cli_streams import write_recording

    silent = [c for c in example() if c["type"] != "usage"]
    path = write_recording(tmp_path / "silent.jsonl", silent)
    code, text = shown(path)
    assert code == 0
    row = next(line for line in text.splitlines() if line.strip().startswith("scripted"))
    assert row.split()[5:7] == ["-", "-"], row
    assert "usage missing, scripted script-1: 1 attempt, none with usage reported" in text


def test_a_folder_without_streams_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("nothing recorded\n")
    assert main(["usage", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"chunkscope usage: {tmp_path}: a folder without recordings" in err
    assert "Traceback" not in err
