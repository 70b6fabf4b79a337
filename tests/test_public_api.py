"""The public face: every protocol-layer name in ``chunkscope.__all__`` resolves."""

from __future__ import annotations

import importlib

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

    for name in ("read_chunks", "write_chunks", "ChunkFileError"):
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


def test_stream_helpers_and_scenarios_are_public() -> None:
    for name in ("ValidatedStream", "Timings", "PROFILES", "Scenario", "get_scenario", "SCENARIOS"):
        assert name in chunkscope.__all__
    assert chunkscope.get_scenario("text") is chunkscope.SCENARIOS["text"]
    assert isinstance(chunkscope.SCENARIOS["text"], chunkscope.Scenario)
    assert chunkscope.PROFILES == ("strict", "dsh")


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


def test_usage_sink_and_stream_inspector_are_public_at_both_faces() -> None:
    from chunkscope.protocol._assembly import UsageSink

    assert protocol.UsageSink is UsageSink is chunkscope.UsageSink
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
