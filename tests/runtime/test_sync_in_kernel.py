"""``run_sync`` / ``generate_sync`` inside a real Jupyter kernel, whose event loop is already running."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.notebook

SRC = Path(__file__).resolve().parents[2] / "src"

SETUP = f"""
import sys
sys.path.insert(0, {str(SRC)!r})  # this checkout, not whatever chunkscope the kernel has installed
import asyncio
import chunkscope as cs
loop = asyncio.get_running_loop()  # the kernel's loop is running: asyncio.run() would refuse here
assert not getattr(loop, "_nest_patched", False), "nest-asyncio must not be applied at import"
"""

CELL = """
from chunkscope.adapters import ScriptedAdapter

@cs.tool
def add(a: int, b: int) -> int:
    '''Adds two numbers.'''
    return a + b

class Steps(ScriptedAdapter):
    def __init__(self, scripts):
        super().__init__([])
        self.scripts = scripts
    async def stream(self, options):
        chunks = self.scripts[min(len(self.calls), len(self.scripts) - 1)]
        self.calls.append(options)
        for c in chunks:
            yield cs.parse_chunk(c)

call = [
    {"type": "block-start", "index": 0, "blockType": "tool-call"},
    {"type": "tool-call-delta", "index": 0, "id": "c1", "name": "add", "argumentsDelta": '{"a": 2, "b": 3}'},
    {"type": "block-end", "index": 0,
     "block": {"type": "tool-call", "id": "c1", "name": "add", "arguments": '{"a": 2, "b": 3}'}},
    {"type": "finish", "reason": {"kind": "tool-calls"}},
]
answer = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "five"},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "five"}},
    {"type": "finish", "reason": {"kind": "stop"}},
]
result = cs.AgentLoop(Steps([call, answer]), tools=[add]).run_sync("2+3?", model="m")
assert result.ok and result.text == "five", result
assert [o.content for o in result.tool_outcomes] == ["5"]
assert getattr(loop, "_nest_patched", False), "applied to the running loop on first need"
runtime = cs.LlmRuntime()
runtime.register_adapter("s", Steps([answer]))
hi = [{"role": "user", "content": "hi"}]
print("sync:", runtime.generate_sync(provider="s", model="m", messages=hi).text)
"""


def test_run_sync_and_generate_sync_work_in_a_running_kernel(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell(CELL)]
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError (with the kernel's traceback) if an assert fails
    outputs = nb.cells[1].outputs
    assert any("sync: five" in o.get("text", "") for o in outputs), outputs
