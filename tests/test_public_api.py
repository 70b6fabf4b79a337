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
    ):
        assert name in chunkscope.__all__
        assert getattr(chunkscope, name) is getattr(protocol, name)


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
