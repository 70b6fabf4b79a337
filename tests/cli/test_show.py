"""``chunkscope show``: a recorded stream drawn in the terminal — lanes, usage, finish, violations, codes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _cli_streams import broken, example
from rich.console import Console

import chunkscope as cs
from chunkscope.cli import _args, _render, main, show
from chunkscope.protocol import PROFILES

MakeFile = Callable[..., Path]
CSS = Path(show.__file__).parents[1] / "notebook" / "timeline" / "timeline.css"


def drawn(path: Path, *, width: int = 100, profile: str = "strict") -> str:
    """What ``show`` prints for ``path`` on a ``width``-column terminal, as plain text."""
    console = Console(record=True, width=width, file=open("/dev/null", "w"), color_system=None)  # noqa: SIM115
    assert show.run_show(str(path), profile=profile, width=width, console=console) == 0
    return console.export_text()


def lane(text: str, index: int) -> str:
    """The lane row of block ``index``."""
    found = [line for line in text.splitlines() if re.match(rf"^│\s+{index}\s+[TRF] ", line)]
    assert len(found) == 1, text
    return found[0]


def test_a_clean_recording_shows_each_block_as_a_lane_with_usage_and_finish(make_recording: MakeFile) -> None:
    text = drawn(make_recording("clean.jsonl", example()))
    assert "provider scripted  model script-1  adapter ScriptedAdapter  chunks 9  axis 0-90 ms" in text
    text_lane, tool_lane = lane(text, 0), lane(text, 1)
    assert "T text" in text_lane and "0-3" in text_lane and "'Hello world'" in text_lane and "█" in text_lane
    assert "F tool-call" in tool_lane and "4-6" in tool_lane and 'bash({"cmd":"ls"})' in tool_lane
    assert "▓" in tool_lane and "█" not in tool_lane  # a pattern per kind, not colour alone
    assert re.search(r"usage\s+in 100\s+out 50", text)
    assert re.search(r"finish\s+tool-calls", text)
    assert "violation" not in text and "error " not in text


def test_lanes_are_placed_on_the_recorded_time_axis(make_recording: MakeFile) -> None:
    text = drawn(make_recording("clean.jsonl", example()), width=100)
    # chunk times 10..90 ms: the text block (10-40 ms) is drawn left of the tool call (50-70 ms)
    text_bar = lane(text, 0).index("█")
    tool_bar = lane(text, 1).index("▓")
    assert text_bar < tool_bar
    assert lane(text, 0).rindex("█") < tool_bar


def test_a_broken_stream_shows_its_violations_with_positions_and_rule_ids(make_log: MakeFile) -> None:
    text = drawn(make_log("broken.jsonl", broken()))
    assert "axis 0-8 chunk" in text  # a chunk log has no clock: the axis counts chunks
    marks = next(line for line in text.splitlines() if "! violation" in line)
    assert marks.count("!") == 2  # the label's and the violation's mark (position 8)
    rows = [
        line.split()[1:4] for line in text.splitlines() if re.match(r"^│\s+\d+\s+(error|warning)\s", line)
    ]
    assert rows == [["8", "error", "usage-before-finish"]]
    assert "usage arrived after the finish (chunk 7)" in text


def test_a_recorded_failure_shows_its_code_the_open_block_and_the_partial_text(
    make_recording: MakeFile,
) -> None:
    error = cs.LlmError("the connection was reset", "TRANSPORT")
    text = drawn(make_recording("drop.jsonl", example()[:3], error))
    assert "T text open" in lane(text, 0) and "'Hello world'" in lane(text, 0)
    assert re.search(r"usage\s+none", text) and re.search(r"finish\s+none \(the stream raised\)", text)
    assert re.search(r"error\s+TRANSPORT \(retryable\)\s+the connection was reset", text)


def test_an_error_finish_shows_its_failure_code(make_log: MakeFile) -> None:
    failure = {"message": "filtered", "code": "CONTENT_FILTER"}
    chunks = [
        *example()[:4],
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "error", "failure": failure}},
    ]
    assert re.search(r"finish\s+error\s+CONTENT_FILTER\s+filtered", drawn(make_log("filtered.jsonl", chunks)))


def test_model_text_is_shown_as_text_never_as_markup_or_terminal_codes(make_log: MakeFile) -> None:
    chunks = example()
    hostile = "[bold red]x[/] \x1b]0;pwned\x07"
    chunks[1]["text"], chunks[2]["text"] = hostile, ""
    chunks[3]["block"]["text"] = hostile
    chunks[-1] = {"type": "finish", "reason": {"kind": "error", "failure": {"message": hostile, "code": "X"}}}
    console = Console(record=True, width=160, file=open("/dev/null", "w"), force_terminal=True)  # noqa: SIM115
    show.run_show(str(make_log("hostile.jsonl", chunks)), width=160, console=console)
    plain = console.export_text(styles=False)
    assert "[bold red]x[/]" in plain  # the brackets are the model's text, shown as such
    assert "\\x1b]0;pwned\\x07" in plain
    assert re.search(r"finish\s+error\s+X\s+\[bold red\]x\[/\] \\x1b\]0;pwned\\x07", plain)
    assert "\x1b]0" not in console.export_text(styles=True)


def test_show_prints_to_stdout_within_the_width(
    make_recording: MakeFile, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(make_recording("clean.jsonl", example())), "--width", "72"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "T text" in out and "F tool-call" in out
    assert max(len(line) for line in out.splitlines()) <= 72


def test_the_lane_colours_are_the_notebook_timelines() -> None:
    css = CSS.read_text(encoding="utf-8")
    light = css[css.index(".cs-timeline, .cs-repr {") :]
    for kind, variable in (
        ("text", "text"),
        ("reasoning", "reasoning"),
        ("tool-call", "tool"),
        ("usage", "usage"),
    ):
        value = re.search(rf"--cs-{variable}:\s*(#[0-9a-f]{{6}})", light)
        assert value is not None and _render.COLORS[kind] == value.group(1), kind
    assert re.search(rf"--cs-error:\s*{_render.COLORS['error']}", light)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "the following arguments are required: FILE"),
        (["x.jsonl", "--width", "10"], "--width"),
        (["x.jsonl", "--profile", "loose"], "invalid choice: 'loose'"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["show", *argv])
    _, err = capsys.readouterr()
    assert exited.value.code == 2
    assert err.count("\n") == 1 and err.startswith("chunkscope show: ") and says in err


@pytest.mark.parametrize("command", ["check", "record", "show"])
def test_every_subcommand_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    out, _ = capsys.readouterr()
    assert exited.value.code == 0 and out.startswith(f"usage: chunkscope {command}")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert command in capsys.readouterr().out


def test_the_readme_lists_every_subcommand(repo_root: Path) -> None:
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Command line") :].split("\n## ", 1)[0]
    from chunkscope.cli import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "==SUPPRESS==" and getattr(a, "choices", None))
    commands = set(action.choices)  # type: ignore[arg-type]
    assert {"check", "record", "show"} <= commands
    for command in commands:
        assert f"`chunkscope {command}" in section, command


def test_a_stream_with_many_blocks_and_violations_is_drawn_in_bounded_rows(make_log: MakeFile) -> None:
    # 250 text blocks, each at a wrong index: 250 lanes, a violation per block-start
    chunks = []
    for n in range(250):
        index = 2 * n + 1
        chunks += [
            {"type": "block-start", "index": index, "blockType": "text"},
            {"type": "text-delta", "index": index, "text": f"w{n}"},
            {"type": "block-end", "index": index, "block": {"type": "text", "text": f"w{n}"}},
        ]
    chunks += example()[7:]  # usage, and a tool-calls finish with no call: one more violation
    text = drawn(make_log("many.jsonl", chunks), width=100)
    lanes = [line for line in text.splitlines() if re.match(r"^│\s+\d+\s+T text", line)]
    assert len(lanes) == _render.MAX_ROWS
    assert re.search(r"… 150 more\s", text)  # lanes
    assert re.search(r"… 151 more\s+chunkscope check lists them all", text)  # violations
    assert len(text.splitlines()) < 4 * _render.MAX_ROWS  # lanes + violations (two lines each), not 750


def test_the_profile_choices_are_the_protocols() -> None:
    assert _args.PROFILE_CHOICES == PROFILES


def test_the_command_starts_without_loading_rich_or_the_adapters() -> None:
    # `chunkscope lab` and `--help` must not pay for what only check/record/show use
    probe = "import sys, chunkscope.cli; print(sorted({'rich', 'httpx', 'pydantic'} & set(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(Path(cs.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "[]"
