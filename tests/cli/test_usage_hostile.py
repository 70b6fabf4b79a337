"""``chunkscope usage`` under hostile input (issue 15 §3): a line per problem, exit 2, no partial total."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from _cli_streams import example, write_recording
from rich.console import Console

import chunkscope as cs
from chunkscope.cli import main
from chunkscope.cli import usage as usage_command
from chunkscope.usage import DshLogWriter


def with_counts(**counts: int) -> list[dict[str, object]]:
    chunks = example()
    for chunk in chunks:
        if chunk["type"] == "usage":
            chunk["usage"].update(counts)  # type: ignore[attr-defined]
    return chunks


def session_log(path: Path, chunks: list[dict[str, object]]) -> Path:
    with DshLogWriter(path, session_id="sess-hostile") as log:
        log.turn_start(1)
        log.step(1, 1, chunks)
        log.turn_end(1)
    return path


@pytest.mark.parametrize("kind", ["recording", "session log"])
@pytest.mark.parametrize("counts", [{"inputTokens": 2**63}, {"outputTokens": -3}, {"cacheReadTokens": 2**70}])
def test_an_out_of_range_count_names_its_file_and_gives_no_total(
    kind: str, counts: dict[str, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_recording(tmp_path / "ok.jsonl", example())
    if kind == "recording":
        bad = write_recording(tmp_path / "bad.jsonl", with_counts(**counts))
    else:
        bad = session_log(tmp_path / "session.jsonl", with_counts(**counts))
    code = main(["usage", str(good), str(bad)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""  # no partial total
    first = err.splitlines()[0]
    assert first == (
        f"chunkscope usage: {bad}: 1 usage report with a token count out of range "
        "(negative, or 2**63 and above)"
    )
    assert "Traceback" not in err and "no summary" in err


def test_a_lone_surrogate_in_a_header_is_shown_escaped(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "ok.jsonl", example())
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["model"] = "model\ud800"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    console = Console(record=True, width=120, file=open(os.devnull, "w"), color_system=None)  # noqa: SIM115
    assert usage_command.run_usage([str(path)], console=console) == 0
    assert "model\\ud800" in console.export_text()
    out = tmp_path / "summary.parquet"
    assert usage_command.run_usage([str(path)], out=str(out)) == 0  # Parquet takes the escaped text
    assert list(pd.read_parquet(out)["model"].astype(str)) == ["model\\ud800"]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("[" * 100_000 + "]" * 100_000, "not a price table (JSON nested too deeply)"),
        (
            '{"prices": [{"provider": "*", "model": "script-1", "cache_miss_input": 1e308,'
            ' "cache_hit_input": 0, "output": 0}]}',
            "must be a finite number from 0 to 1e+09",
        ),
    ],
)
def test_a_hostile_price_file_is_one_line_and_exit_2(
    content: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_recording(tmp_path / "ok.jsonl", example())
    prices = tmp_path / "prices.json"
    prices.write_text(content, encoding="utf-8")
    code = main(["usage", str(good), "--prices", str(prices)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("chunkscope usage: --prices") and says in err


def test_grouping_by_a_timing_column_works(tmp_path: Path) -> None:
    good = write_recording(tmp_path / "ok.jsonl", example())
    console = Console(record=True, width=120, file=open(os.devnull, "w"), color_system=None)  # noqa: SIM115
    assert usage_command.run_usage([str(good)], by="ttfc_s", console=console) == 0
    assert "ttfc_s" in console.export_text()


def test_a_reported_cache_rate_is_shown_and_an_unknown_one_is_not_zero(tmp_path: Path) -> None:
    cached = write_recording(tmp_path / "cached.jsonl", with_counts(cacheReadTokens=300))
    plain = write_recording(tmp_path / "plain.jsonl", example())
    for paths, cell in (([cached], "75.0%"), ([plain], "-")):
        console = Console(record=True, width=120, file=open(os.devnull, "w"), color_system=None)  # noqa: SIM115
        assert usage_command.run_usage([str(p) for p in paths], console=console) == 0
        row = next(line for line in console.export_text().splitlines() if line.strip().startswith("scripted"))
        assert row.split()[7] == cell


def test_the_installed_command_ends_a_huge_count_in_one_line_not_a_traceback(tmp_path: Path) -> None:
    bad = session_log(tmp_path / "session.jsonl", with_counts(inputTokens=2**63))
    env = {**os.environ, "PYTHONPATH": str(Path(cs.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, "-m", "chunkscope.cli", "usage", str(bad)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0].startswith(f"chunkscope usage: {bad}: 1 usage report")
