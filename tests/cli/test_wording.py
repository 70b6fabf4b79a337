"""What the command line says, word for word: counted nouns, articles, flag names, help text."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from _cli_streams import example

from chunkscope.cli import main
from chunkscope.protocol import Checker, parse_chunk
from chunkscope.protocol._words import a, plural


def test_plural_counts_and_articles() -> None:
    assert [plural(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]
    assert plural(3, "index") == "3 indices" and plural(1, "index") == "1 index"
    assert [a(w) for w in ("int", "str", "error", "aborted", "OSError", "HTTP error", "unicode", "list")] == [
        "an int", "a str", "an error", "an aborted", "an OSError", "an HTTP error", "a unicode", "a list",
    ]  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, chunks: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in chunks), encoding="utf-8")
    return path


def test_check_counts_one_stream_one_chunk_one_file_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = write(tmp_path / "one.jsonl", [{"type": "finish", "reason": {"kind": "stop"}}])
    missing = tmp_path / "missing.jsonl"
    code, out, _ = run(capsys, "check", str(one), str(missing))
    assert code == 2
    assert f"{one}: chunk log, 1 chunk, profile strict: 1 error, 1 warning" in out
    assert out.splitlines()[-1] == "1 stream checked, 1 with errors, 1 file unreadable"


def test_an_error_finish_is_an_error_finish_not_a_error_finish() -> None:
    checker = Checker("strict")
    found = checker.feed(parse_chunk({"type": "finish", "reason": {"kind": "error"}}))
    messages = [v.message for v in found]
    assert any(m.startswith("an error finish carries no failure") for m in messages), messages


def test_usage_says_one_group_of_one_attempt(
    make_recording: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pandas")
    log = make_recording("ok.jsonl", example())
    out_file = tmp_path / "summary.csv"
    code, out, _ = run(capsys, "usage", str(log), "-o", str(out_file))
    assert code == 0
    assert f"1 group of 1 attempt written to {out_file}" in out


def test_show_width_too_small_names_the_flag_not_a_function(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write(tmp_path / "a.jsonl", example())
    for value, says in [
        ("5", "5 columns is too narrow (at least 40)"),
        ("abc", "'abc' is not a whole number"),
    ]:
        with pytest.raises(SystemExit) as exited:
            main(["show", str(log), "--width", value])
        err = capsys.readouterr().err
        assert exited.value.code == 2 and err.count("\n") == 1
        assert err.startswith("chunkscope show: argument --width: ") and says in err, err
        assert "_width" not in err


def test_a_prices_file_that_is_no_table_is_named_once(
    make_recording: Callable[..., Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    log = make_recording("ok.jsonl", example())
    code, _, err = run(capsys, "usage", str(log), "--prices", "notes.txt")
    assert code == 2
    assert err.startswith("chunkscope usage: --prices notes.txt: not a price table"), err
    assert err.count("notes.txt") == 1, err


def test_record_help_explains_max_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["record", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--max-tokens N the most output tokens the model may generate" in out


def test_a_factory_that_is_an_int_is_an_int(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from chunkscope.conformance_kit import ConformanceError, load_factory

    with pytest.raises(
        ConformanceError, match=r"json:JSONDecodeError.__init__.__code__.co_argcount is an int"
    ):
        load_factory("json:JSONDecodeError.__init__.__code__.co_argcount")
