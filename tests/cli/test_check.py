"""``chunkscope check``: exit 0 on clean streams, 1 with rule ids on broken ones, 2 on unreadable input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cli_streams import broken, example

import chunkscope as cs
from chunkscope import sources
from chunkscope.cli import _inputs, main
from chunkscope.sources import _load as sources_load

MakeFile = Callable[..., Path]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def rows(out: str) -> list[tuple[str, str, str, str]]:
    """(position, chunk type, severity, rule) of each violation row of a text report."""
    found = []
    for line in out.splitlines():
        cells = line.split()
        if line.startswith("  ") and len(cells) >= 4 and cells[2] in ("error", "warning"):
            found.append((cells[0], cells[1], cells[2], cells[3]))
    return found


def test_a_clean_recording_exits_0(capsys: pytest.CaptureFixture[str], make_recording: MakeFile) -> None:
    path = make_recording("clean.jsonl", example())
    code, out, err = run(capsys, str(path))
    assert (code, err) == (0, "")
    assert out.strip() == f"{path}: recording, 9 chunks, profile strict: clean"


def test_a_broken_recording_exits_1_with_rule_ids_and_positions(
    capsys: pytest.CaptureFixture[str], make_recording: MakeFile
) -> None:
    path = make_recording("broken.jsonl", broken())
    code, out, _ = run(capsys, str(path))
    assert code == 1
    assert out.splitlines()[0].endswith("1 error")
    assert rows(out) == [("8", "usage", "error", "usage-before-finish")]
    assert "usage arrived after the finish (chunk 7)" in out


def test_a_chunk_log_is_checked_like_a_recording(
    capsys: pytest.CaptureFixture[str], make_log: MakeFile
) -> None:
    clean, bad = make_log("clean.jsonl", example()), make_log("bad.jsonl", broken())
    assert run(capsys, str(clean))[0] == 0
    code, out, _ = run(capsys, str(bad))
    assert code == 1 and "chunk log, 9 chunks" in out
    assert [row[3] for row in rows(out)] == ["usage-before-finish"]


def test_warnings_are_shown_but_exit_0(capsys: pytest.CaptureFixture[str], make_log: MakeFile) -> None:
    chunks = example()
    del chunks[7]  # no usage: the usage-missing warning only
    code, out, _ = run(capsys, str(make_log("nousage.jsonl", chunks)))
    assert code == 0
    assert rows(out) == [("7", "finish", "warning", "usage-missing")]
    assert "0 errors" not in out and "1 warning" in out


def test_a_line_that_is_json_but_not_a_chunk_is_a_schema_violation_at_its_position(
    capsys: pytest.CaptureFixture[str], make_log: MakeFile
) -> None:
    chunks: list[Any] = example()
    chunks.insert(2, {"type": "text-delta", "index": 0})  # no text
    code, out, _ = run(capsys, str(make_log("schema.jsonl", chunks)))
    assert code == 1
    assert ("2", "text-delta", "error", "schema") in rows(out)


def test_profile_dsh_accepts_interleaved_blocks_that_strict_rejects(
    capsys: pytest.CaptureFixture[str], make_log: MakeFile
) -> None:
    chunks = example()
    chunks.insert(6, chunks.pop(3))  # the text block closes after the tool call: interleaved
    path = str(make_log("interleaved.jsonl", chunks))
    code, out, _ = run(capsys, path)
    assert code == 1 and rows(out) == [("3", "block-start", "error", "no-interleave")]
    code, out, _ = run(capsys, path, "--profile", "dsh")
    assert code == 0 and "profile dsh: clean" in out


def test_a_recorded_failure_is_no_violation_and_its_code_is_shown(
    capsys: pytest.CaptureFixture[str], make_recording: MakeFile
) -> None:
    partial = example()[:3]  # a text block still open when the connection dropped
    path = make_recording("dropped.jsonl", partial, cs.LlmError("connection reset", "TRANSPORT"))
    code, out, _ = run(capsys, str(path))
    assert code == 0, out  # raising LlmError with a code is what a failing stream must do
    assert "clean" in out and "the stream raised TRANSPORT: connection reset" in out


def test_json_format_is_one_machine_readable_document(
    capsys: pytest.CaptureFixture[str], make_recording: MakeFile, make_log: MakeFile
) -> None:
    clean = make_recording("clean.jsonl", example())
    bad = make_log("bad.jsonl", broken())
    code, out, err = run(capsys, str(clean), str(bad), "--format", "json")
    assert (code, err) == (1, "")
    document = json.loads(out)
    assert document["ok"] is False and document["profile"] == "strict" and document["unreadable"] == 0
    first, second = document["streams"]
    assert (first["path"], first["kind"], first["errors"], first["violations"]) == (
        str(clean),
        "recording",
        0,
        [],
    )
    assert (second["kind"], second["errors"], second["warnings"]) == ("chunks", 1, 0)
    assert [(v["rule"], v["severity"], v["position"]) for v in second["violations"]] == [
        ("usage-before-finish", "error", 8),
    ]
    assert second["violations"][0]["chunk"]["type"] == "usage"


def test_several_files_are_each_reported_then_summed_up(
    capsys: pytest.CaptureFixture[str], make_log: MakeFile
) -> None:
    code, out, _ = run(capsys, str(make_log("a.jsonl", example())), str(make_log("b.jsonl", broken())))
    assert code == 1
    assert out.splitlines()[-1] == "2 streams checked, 1 with errors, 0 files unreadable"


# --- bad input: one line on stderr, exit 2, never a traceback -----------------------------------


def _bad_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, what its one stderr line must say)."""
    deep = tmp / "deep.jsonl"
    deep.write_text('{"type": "usage", "usage": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
    binary = tmp / "binary.jsonl"
    binary.write_bytes(b'{"type": "finish"}\n\x00\x01\x02\xff')
    latin = tmp / "latin1.jsonl"
    latin.write_bytes(
        '{"type": "block-start", "index": 0, "blockType": "text"}\n{"text": "caf\xe9"}\n'.encode("latin-1")
    )
    notjson = tmp / "notjson.jsonl"
    notjson.write_text(
        '{"type": "block-start", "index": 0, "blockType": "text"}\n{"type": \n', encoding="utf-8"
    )
    nan = tmp / "nan.jsonl"
    nan.write_text('{"type": "usage", "usage": {"inputTokens": NaN, "outputTokens": 1}}\n', encoding="utf-8")
    empty = tmp / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    other = tmp / "other.json"
    other.write_text('{"name": "not a stream"}\n', encoding="utf-8")
    # another JSONL with a "type" that is not a chunk's is not read as chunks
    unknown = tmp / "events.jsonl"
    unknown.write_text('{"type": "tool/call", "data": {}}\n', encoding="utf-8")
    # a session log's header and nothing else: no stream to check
    session = tmp / "session.jsonl"
    session.write_text('{"type": "session", "version": 0, "id": "s1"}\n', encoding="utf-8")
    # a session log of a version the harness refuses
    future = tmp / "future.jsonl"
    future.write_text('{"type": "session", "version": 7, "id": "s1"}\n', encoding="utf-8")
    version = tmp / "v9.jsonl"
    version.write_text('{"recording": "chunkscope", "version": 9}\n', encoding="utf-8")
    badline = tmp / "badline.jsonl"
    badline.write_text(
        '{"recording": "chunkscope", "version": 1}\n{"t": -1, "chunk": {}}\n', encoding="utf-8"
    )
    files = {
        "missing": (tmp / "nope.jsonl", "cannot read it"),
        "directory": (tmp, "is a directory"),
        "binary": (binary, "binary file"),
        "not-utf8": (latin, "line 2: not UTF-8"),
        "not-json": (notjson, "line 2: not valid JSON"),
        "nan": (nan, "line 1: not valid JSON (NaN is not a JSON value)"),
        "too-deep": (deep, "nested too deeply"),
        "empty": (empty, "empty file"),
        "not-a-stream": (other, "not a chunkscope recording"),
        "unknown-chunk-type": (unknown, "line 1: not a chunkscope recording"),
        "empty-session-log": (session, "a session log with no model call in it"),
        "session-log-version": (future, "line 1: not a readable session log"),
        # the recording format's own reader words these two: pin only where it points
        "recording-version": (version, "version 9"),
        "recording-bad-line": (badline, "line 2"),
    }
    assert sorted(files) == sorted(BAD)
    return files


BAD = [
    "missing",
    "directory",
    "binary",
    "not-utf8",
    "not-json",
    "nan",
    "too-deep",
    "empty",
    "not-a-stream",
    "unknown-chunk-type",
    "empty-session-log",
    "session-log-version",
    "recording-version",
    "recording-bad-line",
]


@pytest.mark.parametrize("name", BAD)
@pytest.mark.parametrize("command", ["check", "show"])
def test_an_unreadable_file_is_one_stderr_line_and_exit_2(
    name: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, says = _bad_files(tmp_path)[name]
    code = main([command, str(path)])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"chunkscope {command}: "), err
    assert says in lines[0] and str(path) in lines[0]
    assert "Traceback" not in err


def test_a_file_over_the_size_limit_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make_log: MakeFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_log("big.jsonl", example())
    monkeypatch.setattr(_inputs, "MAX_BYTES", 100)
    code, _, err = run(capsys, str(path))
    assert code == 2 and err.count("\n") == 1 and "over the 100-byte limit" in err


def test_an_unreadable_file_does_not_stop_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make_log: MakeFile
) -> None:
    code, out, err = run(capsys, str(tmp_path / "missing.jsonl"), str(make_log("ok.jsonl", example())))
    assert code == 2
    assert "missing.jsonl: cannot read it" in err
    assert "ok.jsonl: chunk log, 9 chunks, profile strict: clean" in out


def test_terminal_control_characters_from_a_file_are_escaped(
    capsys: pytest.CaptureFixture[str], make_recording: MakeFile
) -> None:
    # a message that would clear the screen and retitle the terminal if printed as it is
    error = cs.LlmError("reset\x1b[2J\x1b]0;pwned\x07 by peer", "TRANSPORT")
    code, out, _ = run(capsys, str(make_recording("esc.jsonl", example()[:3], error)))
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out
    assert "the stream raised TRANSPORT: reset\\x1b[2J\\x1b]0;pwned\\x07 by peer" in out


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "the following arguments are required: FILE"),
        (["x.jsonl", "--profile", "lenient"], "invalid choice: 'lenient'"),
        (["x.jsonl", "--format", "xml"], "invalid choice: 'xml'"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["check", *argv])
    _, err = capsys.readouterr()
    assert exited.value.code == 2
    assert err.count("\n") == 1 and err.startswith("chunkscope check: ") and says in err


def test_the_installed_command_never_prints_a_traceback(tmp_path: Path) -> None:
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    env = {**os.environ, "PYTHONPATH": str(Path(cs.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, "-m", "chunkscope.cli", "check", str(binary)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 2
    assert done.stderr == f"chunkscope check: {binary}: a binary file (it holds NUL bytes), not JSON lines\n"


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path, make_log: MakeFile) -> None:
    # `chunkscope check … --format json | head -1`: the pipe closes while the report is written
    chunks = example() * 2000  # a long report: thousands of violations
    path = make_log("long.jsonl", chunks)
    env = {**os.environ, "PYTHONPATH": str(Path(cs.__file__).parents[1])}
    command = [sys.executable, "-m", "chunkscope.cli", "check", str(path), "--format", "json"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline() == b"{\n"
        process.stdout.close()
        err = process.stderr.read().decode()
        status = process.wait()
    assert status == 141 and err == ""


def test_values_json_cannot_carry_still_give_a_strict_json_report(tmp_path: Path) -> None:
    # a recording (its reader accepts NaN) with a NaN count and a lone surrogate in its error message
    path = tmp_path / "odd.jsonl"
    path.write_text(
        '{"recording": "chunkscope", "version": 1, "provider": "p", "model": "m"}\n'
        '{"t": 0.1, "chunk": {"type": "usage", "usage": {"inputTokens": NaN, "outputTokens": 1}}}\n'
        '{"t": 0.2, "error": {"message": "bad \\ud800 byte", "code": "SERVER"}}\n',
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(Path(cs.__file__).parents[1])}
    for output in ("json", "text"):
        command = [sys.executable, "-m", "chunkscope.cli", "check", str(path), "--format", output]
        done = subprocess.run(command, capture_output=True, env=env)
        assert (done.returncode, done.stderr) == (1, b""), done.stderr.decode()
        if output == "json":
            refuse = lambda name: pytest.fail(f"{name} in the report")  # noqa: E731
            document = json.loads(done.stdout, parse_constant=refuse)
            (report,) = document["streams"]
            assert report["violations"][0]["rule"] == "schema"
            assert report["violations"][0]["chunk"]["usage"]["inputTokens"] == "NaN"
            assert report["error"] == {"message": "bad \ud800 byte", "code": "SERVER"}
        else:
            assert "the stream raised SERVER: bad \\ud800 byte" in done.stdout.decode()


def test_a_file_holding_several_streams_is_checked_and_drawn_stream_by_stream(
    capsys: pytest.CaptureFixture[str], make_log: MakeFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the shape a multi-stream reader (a session log's steps) plugs into: one LoadedStream per stream
    def two_steps(path: str, handle: object) -> list[sources.LoadedStream]:
        return [
            sources.LoadedStream(path=path, kind="chunks", chunks=example(), label="step 1"),
            sources.LoadedStream(path=path, kind="chunks", chunks=broken(), label="step 2"),
        ]

    monkeypatch.setitem(sources_load._READERS, "chunks", two_steps)
    path = make_log("session.jsonl", example())
    code, out, _ = run(capsys, str(path))
    assert code == 1
    headings = [line for line in out.splitlines() if line.startswith(str(path))]
    assert headings == [
        f"{path} [step 1]: chunk log, 9 chunks, profile strict: clean",
        f"{path} [step 2]: chunk log, 9 chunks, profile strict: 1 error",
    ]
    assert out.splitlines()[-1] == "2 streams checked, 1 with errors, 0 files unreadable"
    code, out, _ = run(capsys, str(path), "--format", "json")
    assert [(s["label"], s["errors"]) for s in json.loads(out)["streams"]] == [("step 1", 0), ("step 2", 1)]
    assert main(["show", str(path), "--width", "100"]) == 0
    drawn = capsys.readouterr().out
    assert f"{path} [step 1]" in drawn and f"{path} [step 2]" in drawn and "usage-before-finish" in drawn


def _failed_with(code: str) -> list[dict[str, Any]]:
    return [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "x"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "x"}},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "error", "failure": {"message": "stopped", "code": code}}},
    ]


def test_a_finish_code_outside_the_registry_is_marked_unmapped(
    capsys: pytest.CaptureFixture[str], make_log: MakeFile
) -> None:
    unmapped = make_log("new.jsonl", _failed_with("SOME_NEW_REASON"))
    known = make_log("cf.jsonl", _failed_with("CONTENT_FILTER"))
    code, out, _ = run(capsys, str(unmapped), str(known))
    assert code == 0  # a failure with a code is no rule broken
    marked = [line for line in out.splitlines() if "unmapped" in line]
    assert len(marked) == 1 and "SOME_NEW_REASON" in marked[0] and "CONTENT_FILTER" not in out
    code, out, _ = run(capsys, "--format", "json", str(unmapped), str(known))
    assert [r["unmappedCode"] for r in json.loads(out)["streams"]] == ["SOME_NEW_REASON", None]


def test_a_finish_code_the_typescript_reference_raises_is_not_marked_unmapped(
    capsys: pytest.CaptureFixture[str], make_log: MakeFile
) -> None:
    codes = ("PI_AI_ERROR", "INVALID_PREPARED_CALL", "INSUFFICIENT_SYSTEM_RESOURCE")
    logs = [str(make_log(f"{code.lower()}.jsonl", _failed_with(code))) for code in codes]
    code, out, _ = run(capsys, "--format", "json", *logs)
    assert code == 0
    assert [r["unmappedCode"] for r in json.loads(out)["streams"]] == [None, None, None]
