"""LocalProvider inside a Jupyter kernel, whose main thread already runs an event loop."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient


@pytest.mark.notebook
def test_starts_and_answers_inside_a_kernel() -> None:
    cells = [
        "import httpx\nimport chunkscope as cs",
        # sync `with` in a cell: the kernel's loop is running in this thread
        "with cs.LocalProvider() as p:\n"
        "    sync_status = httpx.get(p.base_url + '/models').status_code\n"
        "assert sync_status == 200",
        # top-level `async with` and an async client
        "async with cs.LocalProvider() as p, httpx.AsyncClient() as client:\n"
        "    r = await client.post(p.base_url + '/chat/completions',\n"
        "                          json={'model': 'text', 'messages': [], 'stream': True})\n"
        "assert r.status_code == 200 and r.text.endswith('data: [DONE]\\n\\n')\n"
        "print('ok', repr(p))",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(notebook, timeout=60, kernel_name="python3").execute()
    outputs = notebook.cells[-1].outputs
    assert any("ok <LocalProvider not running" in out.get("text", "") for out in outputs)
