"""``chunkscope serve``: a bad value names its flag in one line; an unknown flag prints serve's usage."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import chunkscope.provider
from chunkscope.cli import main

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def never_serves(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    """Providers `chunkscope serve` tried to make; a bad value must stop it before that."""
    made: list[dict[str, object]] = []

    class NoProvider:
        def __init__(self, **kwargs: object) -> None:
            made.append(kwargs)
            raise AssertionError("serve started a provider for bad input")

    monkeypatch.setattr(chunkscope.provider, "LocalProvider", NoProvider)
    return made


NOT_A_PORT = "is not a port (1-65535, or 0 for any free port)"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--token-delay", "-1"], "chunkscope serve: --token-delay -1 must be a number of seconds >= 0"),
        (["--token-delay", "nan"], "chunkscope serve: --token-delay nan must be a number of seconds >= 0"),
        (["--token-delay", "inf"], "chunkscope serve: --token-delay inf must be a number of seconds >= 0"),
        (["--token-delay", "soon"], "chunkscope serve: --token-delay 'soon' is not a number of seconds"),
        (
            ["--port", "99999"],
            f"chunkscope serve: --port 99999 {NOT_A_PORT}",
        ),
        (["--port", "-1"], f"chunkscope serve: --port -1 {NOT_A_PORT}"),
        (
            ["--port", "x"],
            "chunkscope serve: --port 'x' is not a port number (1-65535, or 0 for any free port)",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_the_flag(
    args: list[str], line: str, never_serves: list[dict[str, object]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", *args]) == 2
    assert never_serves == []
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [line]
    assert "token_delay" not in captured.err  # the Python name is not what the user typed
    assert captured.out == ""


def test_the_serve_function_names_the_flags_too(
    never_serves: list[dict[str, object]], capsys: pytest.CaptureFixture[str]
) -> None:
    from chunkscope.cli import serve

    assert serve(token_delay=-0.5) == 2
    assert serve(port=70000) == 2
    assert capsys.readouterr().err.splitlines() == [
        "chunkscope serve: --token-delay -0.5 must be a number of seconds >= 0",
        "chunkscope serve: --port 70000 is not a port (1-65535, or 0 for any free port)",
    ]


def test_an_unknown_flag_prints_the_serve_usage(
    never_serves: list[dict[str, object]], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--token_delay", "1"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: chunkscope serve [-h] [--port N] [--token-delay S]")
    assert "chunkscope serve: error: unrecognized arguments: --token_delay 1" in err


def test_a_port_in_use_names_the_flag_and_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"chunkscope serve: --port {port}: cannot listen on 127.0.0.1: "), line


def test_the_real_command_names_the_flag_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chunkscope.cli", "serve", "--token-delay", "-1"],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["chunkscope serve: --token-delay -1 must be a number of seconds >= 0"]
