"""The public face: every protocol-layer name in ``chunkscope.__all__`` resolves."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import chunkscope
import chunkscope.protocol as protocol

PROTOCOL_NAMES = [name for name, module in chunkscope._EXPORTS.items() if module.startswith(".protocol")]


@pytest.mark.parametrize("name", PROTOCOL_NAMES)
def test_protocol_name_resolves_from_the_top_level(name: str) -> None:
    assert name in chunkscope.__all__
    value = getattr(chunkscope, name)
    module = importlib.import_module(chunkscope._EXPORTS[name], "chunkscope")
    assert value is getattr(module, name)


@pytest.mark.parametrize("name", protocol.__all__)
def test_protocol_face_exports_resolve(name: str) -> None:
    assert getattr(protocol, name) is not None


def test_design_doc_protocol_names_are_public() -> None:
    for name in (
        "StreamChunk",
        "BlockStart",
        "TextDelta",
        "ReasoningDelta",
        "ToolCallDelta",
        "BlockEnd",
        "Usage",
        "Finish",
        "TextBlock",
        "ReasoningBlock",
        "ToolCallBlock",
        "ToolResultBlock",
        "TokenUsage",
        "FinishReason",
        "LlmFailure",
        "CallId",
        "parse_chunk",
        "chunk_to_dict",
        "LlmError",
        "ERROR_CODES",
        "error_chain",
        "check",
        "validated",
        "Violation",
        "RULES",
        "BlockAssembler",
        "collect",
        "StreamResult",
    ):
        assert name in chunkscope.__all__
        assert getattr(chunkscope, name) is getattr(protocol, name)
    # chunk logs are a stream stored on disk: the sources layer reads and writes them
    from chunkscope import sources

    for name in ("read_chunks", "write_chunks", "SourceError"):
        assert name in chunkscope.__all__
        assert getattr(chunkscope, name) is getattr(sources, name)


def test_importing_the_protocol_layer_pulls_in_no_jupyter_or_pandas() -> None:
    import subprocess
    import sys

    code = (
        "import sys, chunkscope.protocol, chunkscope.testing; "
        "bad = [m for m in ('pandas', 'ipywidgets', 'anywidget', 'IPython', 'httpx') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


FINISHED_LAYERS = (".protocol", ".provider", ".adapters.anthropic")


@pytest.mark.parametrize(
    "name", [name for name, module in chunkscope._EXPORTS.items() if module.startswith(FINISHED_LAYERS)]
)
def test_public_name_resolves_to_the_module_the_face_names(name: str) -> None:
    module = importlib.import_module(chunkscope._EXPORTS[name], "chunkscope")
    assert getattr(chunkscope, name) is getattr(module, name)


def test_the_face_lists_each_name_in_exports_all_and_type_checking_imports() -> None:
    import ast
    from pathlib import Path

    tree = ast.parse(Path(chunkscope.__file__).read_text(encoding="utf-8"))
    checked = next(
        node for node in tree.body if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test)
    )
    typed = {
        (alias.asname or alias.name, "." * node.level + (node.module or ""))
        for node in checked.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typed == set(chunkscope._EXPORTS.items())
    assert set(chunkscope.__all__) == {"__version__", *chunkscope._EXPORTS}
    assert len(chunkscope.__all__) == len(set(chunkscope.__all__))


def test_stream_helpers_and_scenarios_are_public_in_their_layers() -> None:
    from chunkscope import provider

    for name in ("ValidatedStream", "Timings", "PROFILES"):
        assert name in protocol.__all__ and name not in chunkscope.__all__
    assert "SCENARIOS" in chunkscope.__all__
    assert provider.get_scenario("text") is chunkscope.SCENARIOS["text"]
    assert isinstance(chunkscope.SCENARIOS["text"], provider.Scenario)
    assert protocol.PROFILES == ("strict", "dsh")


def test_the_protocol_face_lists_its_names_by_hand_and_keeps_helpers_private() -> None:
    import ast
    from pathlib import Path

    tree = ast.parse(Path(protocol.__file__).read_text(encoding="utf-8"))
    assigned = next(
        node
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
    )
    listed = ast.literal_eval(assigned.value)  # a literal list, not assembled from the private modules
    assert listed == protocol.__all__
    assert len(set(listed)) == len(listed)
    for helper in ("trusted", "describe_invalid", "http_status_code", "is_retryable", "open_source"):
        assert helper not in protocol.__all__
        assert not hasattr(protocol, helper)


def test_usage_sink_and_stream_inspector_are_public_at_the_protocol_face() -> None:
    from chunkscope.protocol._assembly import UsageSink

    assert protocol.UsageSink is UsageSink
    assert protocol.StreamInspector is chunkscope.StreamInspector
    from chunkscope.protocol._assembly import StreamInspector

    assert protocol.StreamInspector is StreamInspector


def test_every_top_level_name_comes_from_a_layer_face() -> None:
    # _EXPORTS names faces only, so another engineer may move private modules freely.
    for name, module in chunkscope._EXPORTS.items():
        # a layer's face: one public subpackage below chunkscope, never a private module
        assert module.count(".") == 1 and not module.startswith("._"), (name, module)
        face = importlib.import_module(module, "chunkscope")
        assert name in face.__all__, (name, module)


def test_import_chunkscope_is_lazy_until_a_name_is_used() -> None:
    import subprocess
    import sys

    code = (
        "import sys; before = set(sys.modules); import chunkscope; "
        "new = set(sys.modules) - before; "
        "layers = ('chunkscope', 'pydantic', 'httpx', 'anywidget'); "
        "print(sorted(m for m in new if m.split('.')[0] in layers)); "
        "chunkscope.check; print(sorted(m for m in set(sys.modules) - before if m.startswith('chunkscope')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = out.stdout.strip().splitlines()
    assert first == "['chunkscope']"
    # using a protocol name loads the protocol layer only
    assert all(m.startswith(("chunkscope.protocol", "chunkscope")) for m in eval(second))
    assert not any(m.startswith(("chunkscope.adapters", "chunkscope.notebook")) for m in eval(second))


# What the project promises at the top level whether or not a page shows it (docs/architecture.md).
PROMISED = {
    "StreamChunk",
    "BlockStart",
    "TextDelta",
    "ReasoningDelta",
    "ToolCallDelta",
    "BlockEnd",
    "Usage",
    "Finish",
    "TextBlock",
    "ReasoningBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "TokenUsage",
    "FinishReason",
    "LlmFailure",
    "CallId",
    "parse_chunk",
    "chunk_to_dict",
    "read_chunks",
    "write_chunks",
    "LlmError",
    "ERROR_CODES",
    "error_chain",
    "check",
    "validated",
    "Violation",
    "RULES",
    "BlockAssembler",
    "collect",
    "StreamResult",
    "LlmAdapter",
    "GenerateOptions",
    "AbortController",
    "ModelInfo",
    "ReasoningInfo",
    "attribution_headers",
    "OpenAICompatAdapter",
    "AnthropicAdapter",
    "ScriptedAdapter",
    "ReplayAdapter",
    "RecordingAdapter",
    "LlmRuntime",
    "RetryPolicy",
    "AgentLoop",
    "tool",
    "conformance",
    "ConformanceReport",
    "LocalProvider",
    "UsageLog",
    "batch",
    "summary",
    "plot_usage",
    "read_parquet",
    "PriceTable",
    "read_dsh_session",
    "read_dsh_sessions",
    "Timeline",
    "show",
    "DshLogError",  # caught around any session-log read, with no extra installed
}

_ROOT = Path(__file__).resolve().parents[1]


def _taught_text() -> str:
    """The README, the docs and the tutorial notebooks' code: what users are taught to write."""
    import json

    texts = [(_ROOT / "README.md").read_text(encoding="utf-8")]
    texts += [path.read_text(encoding="utf-8") for path in sorted((_ROOT / "docs").glob("*.md"))]
    for path in sorted((_ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        texts += ["".join(cell["source"]) for cell in cells]
    return "\n".join(texts)


def _taught(name: str, text: str) -> bool:
    import re

    return bool(re.search(rf"\b(?:cs|chunkscope)\.{name}\b|from chunkscope import [^\n]*\b{name}\b", text))


def test_the_top_level_face_is_what_the_pages_teach_and_the_promised_minimum() -> None:
    text = _taught_text()
    assert set(chunkscope._EXPORTS) >= PROMISED
    assert {name for name in chunkscope._EXPORTS if name not in PROMISED and not _taught(name, text)} == set()


def test_no_page_teaches_a_name_the_face_no_longer_carries() -> None:
    text = _taught_text()
    assert sorted(name for name in chunkscope._MOVED if _taught(name, text)) == []


@pytest.mark.parametrize("name", sorted(chunkscope._MOVED))
def test_a_moved_name_still_resolves_with_a_warning_naming_its_layer(name: str) -> None:
    layer = "chunkscope" + chunkscope._MOVED[name]
    face = importlib.import_module(layer)
    assert name in face.__all__ and name not in chunkscope.__all__ and name not in dir(chunkscope)
    expected = rf"chunkscope\.{name} is deprecated .* {layer}\.{name}"
    with pytest.warns(DeprecationWarning, match=expected) as seen:
        value = getattr(chunkscope, name)
    assert value is getattr(face, name)
    assert seen[0].filename == __file__  # the warning points at the line that used the old path


def test_the_exported_and_the_moved_names_are_apart() -> None:
    assert set(chunkscope._EXPORTS).isdisjoint(chunkscope._MOVED)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        chunkscope.NoSuchName  # noqa: B018
