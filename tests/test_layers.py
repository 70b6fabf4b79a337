"""Layering (docs/architecture.md): each layer imports only from layers above it, only its own
libraries, and only what another layer offers: its face or a public module, never a private one.

Every module under ``src/chunkscope`` is read with ``ast`` (nothing is
imported), every ``import``/``from … import`` in it — top level, inside
functions and under ``TYPE_CHECKING`` alike — and every
``importlib.import_module("literal")`` is resolved to an absolute name and
judged against the table below. ``chunkscope/__init__.py`` (the lazy public
face) is the one module that may name every layer. Across layers, a module
path with a part starting ``_`` (``chunkscope.adapters._core.loop``) or a
name starting ``_`` (``from chunkscope.protocol._chunks import _new``) is a
private reach: the exporting layer publishes a seam instead (its face, or a
public module such as ``chunkscope.protocol.shared``).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "chunkscope"

# layer -> the chunkscope layers it may import (itself included)
MAY_IMPORT: dict[str, set[str]] = {
    # The neutral wire facts (chunkscope/_wires.py): plain data every layer may read, importing nothing.
    "wires": {"wires"},
    "protocol": {"protocol"},
    # every stream stored on disk: reads protocol's vocabulary, nothing of the layers that use it
    "sources": {"wires", "protocol", "sources"},
    "adapters": {"wires", "protocol", "sources", "adapters"},
    "runtime": {"wires", "protocol", "adapters", "runtime"},
    # The provider judges the adapters: it shares nothing with them, so the two cannot be wrong together.
    "provider": {"wires", "protocol", "provider"},
    # runtime: only for batch's old path (chunkscope.usage.batch), which warns and leads there
    "usage": {"wires", "protocol", "sources", "adapters", "runtime", "usage"},
    # The conformance kit drives adapters against the provider (docs/architecture.md).
    "conformance_kit": {"wires", "protocol", "adapters", "provider", "conformance_kit"},
    # The tap sits below usage: it parses through the adapters' translators and records into a UsageLog.
    "tap": {"wires", "protocol", "sources", "adapters", "usage", "tap"},
    "testing": {"protocol", "testing"},
    "notebook": {
        "wires",
        "protocol",
        "sources",
        "adapters",
        "runtime",
        "conformance_kit",
        "provider",
        "usage",
        "tap",
        "testing",
        "notebook",
    },
    "cli": {
        "wires",
        "protocol",
        "sources",
        "adapters",
        "runtime",
        "conformance_kit",
        "provider",
        "usage",
        "tap",
        "testing",
        "notebook",
        "cli",
        "face",
    },
}

# layer -> the third-party top-level packages it may import (None: unrestricted)
LIBRARIES: dict[str, set[str] | None] = {
    "wires": set(),
    "protocol": {"pydantic", "pydantic_core", "typing_extensions"},
    # zstandard: compressed session logs, imported lazily (a one-line error names the extra)
    "sources": {"pydantic", "pydantic_core", "typing_extensions", "zstandard"},
    # botocore: the Bedrock adapter's SigV4 signing, imported lazily (the "bedrock" extra)
    "adapters": {"pydantic", "pydantic_core", "typing_extensions", "httpx", "httpx_sse", "botocore"},
    # nest_asyncio: the sync face (generate_sync/run_sync) inside a running Jupyter loop, imported lazily.
    "runtime": {
        "pydantic",
        "pydantic_core",
        "typing_extensions",
        "httpx",
        "httpx_sse",
        "nest_asyncio",
    },
    "provider": {"starlette", "uvicorn", "anyio", "typing_extensions"},
    "usage": {
        "pydantic",
        "typing_extensions",
        "pandas",
        "pyarrow",
        "numpy",
        "matplotlib",
        "duckdb",
        "dask",
        "distributed",
        "opentelemetry",
        "genai_prices",
    },
    # pandas for the report's frame; pytest (and _pytest) for the plugin the layer ships.
    "conformance_kit": {"pandas", "pytest", "_pytest", "typing_extensions"},
    # asyncio's transports for the relay (heads read by tap/_framing); httpx for URLs, TLS contexts and
    # error types
    "tap": {"pydantic", "typing_extensions", "httpx"},
    "testing": {"pydantic", "hypothesis"},
    "notebook": None,
    "cli": None,
}

_TOP_LEVEL_LAYERS = {
    "_wires.py": "wires",
    "_extras.py": "protocol",  # the missing-extra message: stdlib only, so every layer may use it
}


# The package root's two modules every layer reads: plain data and the missing-extra message,
# importing nothing of any layer (they are the root's, not a layer's private modules).
ROOT_SHARED = {"chunkscope._wires", "chunkscope._extras"}

# TEMPORARY (issue 24, branch `rooms`): private cross-layer imports in files the `reader` branch
# rewrites at the same time. Each seam now exists on the exporting side (after the arrow); when
# the import switches to it, delete its line, and delete this list once it is empty (the test
# below fails on a line whose import is gone, so none outlives its reason).
PENDING_PRIVATE_IMPORTS: dict[tuple[str, str], str] = {
    # (file under chunkscope/, the private module it imports): the seam to import instead
}


def layer_of_file(path: Path) -> str:
    """The layer a source file belongs to; a file no rule places fails the test that lists it."""
    relative = path.relative_to(PACKAGE)
    if len(relative.parts) > 1:
        return relative.parts[0]
    return _TOP_LEVEL_LAYERS.get(relative.name, "unplaced")


def layer_of_module(name: str) -> str | None:
    """The chunkscope layer an absolute module name belongs to; None for anything outside chunkscope."""
    parts = name.split(".")
    if parts[0] != "chunkscope":
        return None
    if len(parts) == 1:
        return "face"
    if parts[1] in MAY_IMPORT:
        return parts[1]
    return _TOP_LEVEL_LAYERS.get(parts[1] + ".py", "unplaced")


def package_of(path: Path) -> str:
    """The package a file's relative imports start from."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1])


def imports_of(source: str, package: str) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) for every import ``source`` makes, wherever it stands."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, target] if target else base)
            yield node.lineno, target
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
        ):
            yield node.lineno, node.args[0].value


def imported_names(source: str, package: str) -> Iterator[tuple[int, str, list[str]]]:
    """(line, absolute module name, names taken from it) for every import in ``source``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            [(_, target)] = imports_of(ast.unparse(node), package)
            yield node.lineno, target, [alias.name for alias in node.names]
        elif isinstance(node, (ast.Import, ast.Call)):
            for _, target in imports_of(ast.unparse(node), package):
                yield node.lineno, target, []


def private_reaches(name: str, layer: str, source: str, package: str) -> list[str]:
    """Every import in ``source`` that takes a private module or name of another layer."""
    found = []
    for line, target, names in imported_names(source, package):
        target_layer = layer_of_module(target)
        if target_layer in (None, layer, "face") or target in ROOT_SHARED:
            continue
        if target_layer not in MAY_IMPORT.get(layer, set()):
            continue  # already a reach up, reported as one
        private_parts = [part for part in target.split(".")[1:] if part.startswith("_")]
        private_names = [each for each in names if each.startswith("_")]
        if not (private_parts or private_names):
            continue
        if (name.removeprefix("chunkscope/"), target.removeprefix("chunkscope.")) in PENDING_PRIVATE_IMPORTS:
            continue
        what = target if private_parts else f"{', '.join(private_names)} from {target}"
        found.append(f"{name}:{line} (layer {layer}) reaches into layer {target_layer}'s private {what}")
    return found


def problems(name: str, layer: str, source: str, package: str) -> list[str]:
    """Every import in ``source`` (file ``name`` of ``layer``) that the layer table forbids."""
    if layer not in MAY_IMPORT:
        return [f"{name} belongs to no layer; place it in MAY_IMPORT or _TOP_LEVEL_LAYERS"]
    libraries = LIBRARIES[layer]
    found = []
    for line, target in imports_of(source, package):
        where = f"{name}:{line} (layer {layer})"
        target_layer = layer_of_module(target)
        if target_layer is not None:
            if target_layer not in MAY_IMPORT[layer]:
                found.append(f"{where} imports {target} (layer {target_layer})")
            continue
        top = target.split(".")[0]
        if libraries is not None and top not in sys.stdlib_module_names and top not in libraries:
            found.append(f"{where} imports {top} (a library layer {layer} may not use)")
    return found + private_reaches(name, layer, source, package)


SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if p != PACKAGE / "__init__.py")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_from_layers_above_it(path: Path) -> None:
    name = str(path.relative_to(SRC))
    assert problems(name, layer_of_file(path), path.read_text(encoding="utf-8"), package_of(path)) == []


def test_the_scan_finds_reach_ups_hidden_in_relative_nested_and_type_checking_imports() -> None:
    source = (
        "import importlib\n"
        "from typing import TYPE_CHECKING\n"
        "from . import _chunks\n"
        "from ..adapters import _base\n"
        "if TYPE_CHECKING:\n"
        "    from chunkscope.notebook import Timeline\n"
        "def later():\n"
        "    import pandas\n"
        "    importlib.import_module('chunkscope.provider')\n"
    )
    found = problems("chunkscope/protocol/_probe.py", "protocol", source, "chunkscope.protocol")
    assert [problem.split(" imports ")[1] for problem in found] == [
        "chunkscope.adapters (layer adapters)",
        "chunkscope.notebook (layer notebook)",
        "pandas (a library layer protocol may not use)",
        "chunkscope.provider (layer provider)",
    ]


def test_the_scan_finds_private_reaches_across_layers_wherever_they_stand() -> None:
    source = (
        "from chunkscope.protocol._chunks import TextDelta\n"
        "from chunkscope.protocol import _words\n"
        "from chunkscope.protocol.shared import trusted\n"
        "from chunkscope.adapters._core import SseDecoder\n"
        "from . import _log\n"
        "from ._schema import COLUMNS\n"
        "from chunkscope._extras import needs_extra\n"
        "def later():\n"
        "    from ..sources._json import json_line\n"
        "    import chunkscope.adapters._failures\n"
        "    importlib.import_module('chunkscope.protocol._clock')\n"
    )
    found = problems("chunkscope/usage/_probe.py", "usage", source, "chunkscope.usage")
    assert [problem.split(" reaches into ")[1] for problem in found] == [
        "layer protocol's private chunkscope.protocol._chunks",
        "layer protocol's private _words from chunkscope.protocol",
        "layer adapters's private chunkscope.adapters._core",
        "layer sources's private chunkscope.sources._json",
        "layer adapters's private chunkscope.adapters._failures",
        "layer protocol's private chunkscope.protocol._clock",
    ]


def test_every_pending_private_import_is_still_there_and_its_seam_exists() -> None:
    import importlib

    for (name, target), seam in PENDING_PRIVATE_IMPORTS.items():
        path = PACKAGE / name
        source = path.read_text(encoding="utf-8")
        targets = {found for _, found, _ in imported_names(source, package_of(path))}
        assert f"chunkscope.{target}" in targets, f"{name} no longer imports {target}: delete its line"
        module, _, names = seam.partition(" (")
        face = importlib.import_module(module)
        assert all(hasattr(face, each) for each in names.rstrip(")").split(", ") if each), seam


def test_the_provider_may_not_import_the_adapters_it_judges() -> None:
    source = "from chunkscope.adapters._http import redact\n"
    assert problems("p.py", "provider", source, "chunkscope.provider") == [
        "p.py:1 (layer provider) imports chunkscope.adapters._http (layer adapters)"
    ]


def test_every_module_has_a_layer() -> None:
    assert {path.name for path in SOURCES if layer_of_file(path) not in MAY_IMPORT} == set()


def test_sources_read_nothing_of_the_layers_that_use_them_not_even_inside_a_function() -> None:
    source = (
        "def frame(session):\n"
        "    from chunkscope.usage._log import UsageLog\n"
        "    from ...adapters.scripted import parse_or_keep\n"
        "    import pandas\n"
        "    return UsageLog, parse_or_keep, pandas\n"
    )
    found = problems("chunkscope/sources/dsh/_probe.py", "sources", source, "chunkscope.sources.dsh")
    assert [problem.split(" imports ")[1] for problem in found] == [
        "chunkscope.usage._log (layer usage)",
        "chunkscope.adapters.scripted (layer adapters)",
        "pandas (a library layer sources may not use)",
    ]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(files: list[Path]) -> dict[str, set[str]]:
    """module -> the chunkscope modules it imports anywhere in its text (functions included).

    ``from package import name`` counts as importing ``package.name`` when that is a module.
    Imports of a package's face (``__init__``) are left out: a face imports its own modules by
    design, and a module reaching its own face is not a cycle of logic.
    """
    modules = {_module_name(path): path for path in files}
    faces = {name for name, path in modules.items() if path.name == "__init__.py"}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                _, base = next(imports_of(ast.unparse(node), package))
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            graph[name].update(t for t in targets if t in modules and t not in faces and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_import_closes_a_cycle_function_level_imports_included() -> None:
    assert cycles(import_graph([*SOURCES, PACKAGE / "__init__.py"])) == []


def test_the_cycle_scan_sees_a_cycle_closed_inside_a_function(tmp_path: Path) -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
