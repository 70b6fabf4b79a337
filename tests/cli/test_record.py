"""``chunkscope record``: one real stream from the local provider into a recording; the key stays secret."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import chunkscope as cs
from chunkscope.adapters.wires import WIRES
from chunkscope.cli import main

KEY = "sk-cli-test-0123456789abcdef"


@pytest.fixture(scope="module")
def provider() -> Iterator[cs.LocalProvider]:
    with cs.LocalProvider() as running:
        yield running


@pytest.fixture(autouse=True)
def only_our_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_KEY"):
        monkeypatch.delenv(name, raising=False)


def record(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["record", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def replayed(path: Path) -> cs.StreamResult:
    options = cs.GenerateOptions(provider="replay", model="any", messages=[{"role": "user", "content": "x"}])
    return asyncio.run(cs.collect(cs.ReplayAdapter(path, speed=None).stream(options)))


def test_record_writes_a_recording_that_replays_to_the_same_reply(
    provider: cs.LocalProvider,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    out_file = tmp_path / "tool.jsonl"
    code, out, err = record(
        capsys, "--base-url", provider.base_url, "--model", "tool-call", "Weather?", "-o", str(out_file)
    )
    assert (code, err) == (0, "")
    assert out == f"recorded 14 chunks to {out_file}: finish tool-calls, usage in 12 / out 8, 0 violations\n"
    header = lines(out_file)[0]
    assert (header["recording"], header["provider"], header["model"], header["adapter"]) == (
        "chunkscope",
        "deepseek",
        "tool-call",
        "OpenAICompatAdapter",
    )
    again = replayed(out_file)
    assert again.ok and again.text == "Let me check." and again.tool_calls[0].name == "get_weather"
    assert KEY not in out_file.read_text(encoding="utf-8")


def test_record_speaks_the_anthropic_wire_with_its_own_key_variable(
    provider: cs.LocalProvider,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    out_file = tmp_path / "anthropic.jsonl"
    argv = [
        "--base-url",
        provider.url,
        "--wire",
        "anthropic",
        "--model",
        "reasoning",
        "Hi",
        "-o",
        str(out_file),
    ]
    code, out, _ = record(capsys, *argv)
    assert code == 0 and "finish stop" in out
    assert lines(out_file)[0]["adapter"] == "AnthropicAdapter"
    again = replayed(out_file)
    assert [block.type for block in again.blocks] == ["reasoning", "text"] and again.text == "Hello there!"


def test_a_fault_exits_1_and_the_error_line_is_recorded(
    provider: cs.LocalProvider,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_KEY", KEY)
    out_file = tmp_path / "drop.jsonl"
    argv = [
        "--base-url",
        provider.base_url,
        "--model",
        "fault-drop",
        "Hi",
        "-o",
        str(out_file),
        "--api-key-env",
        "MY_KEY",
    ]
    code, out, err = record(capsys, *argv)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith(
        "chunkscope record: the stream failed with TRANSPORT after 4 chunks"
    )
    recorded = lines(out_file)
    assert [line["chunk"]["type"] for line in recorded[1:-1]] == ["block-start", *["text-delta"] * 3]  # type: ignore[index]
    assert recorded[-1]["error"]["code"] == "TRANSPORT"  # type: ignore[index]
    assert replayed(out_file).error_code == "TRANSPORT"
    # what the recording holds, `check` accepts: raising with a code is what a failing stream must do
    assert main(["check", str(out_file)]) == 0


def test_an_http_fault_is_recorded_with_its_code(
    provider: cs.LocalProvider,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the openai wire's second place to look
    out_file = tmp_path / "429.jsonl"
    code, _, err = record(
        capsys, "--base-url", provider.base_url, "--model", "fault-429", "Hi", "-o", str(out_file)
    )
    assert code == 1 and "RATE_LIMIT" in err
    error = lines(out_file)[-1]["error"]
    assert error == {  # type: ignore[comparison-overlap]
        **error,  # type: ignore[dict-item]
        "code": "RATE_LIMIT",
        "status": 429,
        "providerRetryAfterMs": 2000,
        "requestId": "req-429",
    }
    assert KEY not in err and KEY not in out_file.read_text(encoding="utf-8")


def test_no_key_is_one_line_naming_the_variables_and_writes_nothing(
    provider: cs.LocalProvider, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "none.jsonl"
    code, out, err = record(
        capsys, "--base-url", provider.base_url, "--model", "text", "Hi", "-o", str(out_file)
    )
    assert (code, out) == (2, "")
    assert err == (
        "chunkscope record: no API key: set $DEEPSEEK_API_KEY or $OPENAI_API_KEY "
        "(or name another variable with --api-key-env)\n"
    )
    assert not out_file.exists()


def test_the_key_is_never_printed_even_when_an_error_would_quote_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    code, _, err = record(
        capsys, "--base-url", f"ftp://{KEY}@example", "--model", "text", "Hi", "-o", "x.jsonl"
    )
    assert code == 2 and KEY not in err and "<redacted>" in err
    assert err.startswith("chunkscope record: --base-url must be an http(s) URL")


def test_an_output_that_cannot_be_written_fails_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    # no provider runs on this port: only a request would reveal it, and none is made
    code, _, err = record(
        capsys, "--base-url", "http://127.0.0.1:9/v1", "--model", "text", "Hi", "-o", str(tmp_path)
    )
    assert (
        code == 2 and err.startswith(f"chunkscope record: cannot write {tmp_path}: ") and err.count("\n") == 1
    )


def test_an_unreachable_provider_is_a_recorded_transport_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    out_file = tmp_path / "refused.jsonl"
    with cs.LocalProvider() as stopped:
        url = stopped.base_url  # a port that was just free, now closed again
    code, _, err = record(capsys, "--base-url", url, "--model", "text", "Hi", "-o", str(out_file))
    assert code == 1 and "TRANSPORT" in err and "Traceback" not in err
    assert lines(out_file)[-1]["error"]["code"] == "TRANSPORT"  # type: ignore[index]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["Hi", "-o", "x.jsonl", "--model", "text"], "the following arguments are required: --base-url"),
        (
            ["--base-url", "http://h", "--model", "m", "Hi"],
            "the following arguments are required: -o/--output",
        ),
        (
            ["--base-url", "http://h", "--model", "m", "Hi", "-o", "x", "--wire", "grpc"],
            "invalid choice: 'grpc'",
        ),
        (
            ["--base-url", "http://h", "--model", "m", "Hi", "-o", "x", "--idle-timeout", "0"],
            "--idle-timeout",
        ),
        (["--base-url", "http://h", "--model", "m", "Hi", "-o", "x", "--max-tokens", "many"], "--max-tokens"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["record", *argv])
    _, err = capsys.readouterr()
    assert exited.value.code == 2
    assert err.count("\n") == 1 and err.startswith("chunkscope record: ") and says in err


@pytest.mark.parametrize("wire", list(WIRES))
def test_every_wire_records_and_is_checked_shown_and_summed_from_its_recording(
    provider: cs.LocalProvider,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    wire: str,
) -> None:
    row = WIRES[wire]
    for name in row.facts.key_variables:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(row.facts.key_variables[0], KEY)  # the wire's own key variable
    out_file = tmp_path / f"{wire}.jsonl"
    argv = ["--base-url", row.base_url(provider.url), "--wire", wire, "--model", "reasoning-text-tools"]
    code, out, err = record(capsys, *argv, "Hi", "-o", str(out_file))
    assert (code, err) == (0, ""), out
    assert "finish tool-calls" in out and "0 violations" in out
    assert lines(out_file)[0]["adapter"] == row.adapter.__name__
    again = replayed(out_file)
    assert [block.type for block in again.blocks] == ["reasoning", "text", "tool-call", "tool-call"]
    assert KEY not in out_file.read_text(encoding="utf-8")
    assert main(["check", str(out_file)]) == 0
    assert main(["show", str(out_file)]) == 0
    assert main(["usage", str(out_file)]) == 0
    shown = capsys.readouterr().out
    assert row.facts.provider in shown  # the usage table names the wire's provider
