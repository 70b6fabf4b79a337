"""Every exception class hangs from a tree drawn in a module docstring, as ``httpx/_exceptions.py`` does.

The trees are read from the docstrings themselves (box-drawing lines), and each drawn edge is checked
against the real class: a class that is drawn under the wrong parent, or not drawn at all, fails.
Classes private to their module (``_Stopped``) never reach a user and are not drawn.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "chunkscope"

# The command line's argument errors are being folded into one CLI error type by the move to the
# chunkscope/cli/ package; that package's docstring draws its tree (remove these once it lands).
_BRANCH = re.compile(r"^(?P<lead>[\s│]*)[├└]── (?P<name>\w+)")
_ROOT = re.compile(r"^(?P<lead>\s*)(?P<name>[A-Z]\w+)\b")


def drawn_edges(docstring: str) -> dict[str, str]:
    """``{class: parent}`` for every branch of every tree drawn in ``docstring``."""
    edges: dict[str, str] = {}
    stack: list[tuple[int, str]] = []  # (column of the name, name) from the root down
    root: tuple[int, str] | None = None  # a line just above that may start a tree
    for line in docstring.splitlines():
        branch = _BRANCH.match(line)
        if branch is None:
            match = _ROOT.match(line)
            root = (len(match["lead"]), match["name"]) if match else None
            continue
        column = len(branch["lead"]) + 4
        if root is not None:  # the first branch under a root line: a new tree
            stack, root = [root], None
        while stack and stack[-1][0] >= column:
            stack.pop()
        if stack:
            edges[branch["name"]] = stack[-1][1]
        stack.append((column, branch["name"]))
    return edges


def _modules() -> list[tuple[Path, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append((path, ".".join(parts)))
    return found


def all_drawn_edges() -> dict[str, str]:
    edges: dict[str, str] = {}
    for path, _ in _modules():
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        edges.update(drawn_edges(docstring))
    return edges


def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in src (by name), found by reading each module's classes."""
    found: dict[str, type[BaseException]] = {}
    for path, module_name in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
        if not names:
            continue
        module = importlib.import_module(module_name)
        for name in names:
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException) and not name.startswith("_"):
                found[name] = value
    return found


def test_the_reader_follows_nesting_and_starts_a_new_tree_at_each_root() -> None:
    docstring = (
        "Prose.\n\n"
        "    ValueError\n"
        "     └── SourceError      text\n"
        "          ├── ChunkFileError   text\n"
        "          │    └── RecordingFileError\n"
        "          └── DshLogError\n"
        "    UserWarning\n"
        "     └── UnpricedModelWarning\n"
    )
    assert drawn_edges(docstring) == {
        "SourceError": "ValueError",
        "ChunkFileError": "SourceError",
        "RecordingFileError": "ChunkFileError",
        "DshLogError": "SourceError",
        "UnpricedModelWarning": "UserWarning",
    }


def test_every_exception_class_is_drawn_under_its_real_parent() -> None:
    classes = exception_classes()
    # the families of the issue: protocol, sources, extras, conformance, usage, runtime
    assert {"LlmError", "SourceError", "MissingExtraError", "ConformanceError", "UsageSchemaError"} <= {
        *classes
    }
    assert len(classes) >= 18
    edges = all_drawn_edges()
    undrawn = sorted(set(classes) - set(edges))
    assert undrawn == [], f"exception classes drawn in no module docstring's tree: {undrawn}"
    wrong = {
        name: (edges[name], [base.__name__ for base in cls.__bases__])
        for name, cls in classes.items()
        if edges[name] not in [base.__name__ for base in cls.__bases__]
    }
    assert wrong == {}, "drawn parent vs the class's real bases"
