"""The command line's shape: one module per subcommand, each registered, and one error type."""

from __future__ import annotations

import ast
from pathlib import Path

import chunkscope.cli as cli

CLI = Path(cli.__file__).parent


def test_every_subcommand_module_is_registered() -> None:
    modules = {path.stem for path in CLI.glob("*.py") if not path.stem.startswith("_")}
    registered = {register.__module__.rsplit(".", 1)[1] for register in cli.SUBCOMMANDS}
    assert modules == registered
    assert all(
        register.__name__ == f"add_{register.__module__.rsplit('.', 1)[1]}_parser"
        for register in cli.SUBCOMMANDS
    )


def test_the_command_line_defines_one_error_type() -> None:
    classes = [
        f"{path.name}:{node.name}"
        for path in sorted(CLI.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        and any(
            isinstance(base, ast.Name) and base.id.endswith(("Error", "Exception")) for base in node.bases
        )
    ]
    assert classes == ["_args.py:CommandLineError"]
