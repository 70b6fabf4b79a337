"""``batch`` is the runtime's: it runs with no pandas, records into any sink, and its old path warns."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import chunkscope as cs
from chunkscope import runtime


def test_cs_batch_is_the_runtime_batch() -> None:
    assert cs.batch is runtime.batch


def test_the_usage_path_of_batch_warns_and_leads_to_the_runtime() -> None:
    import chunkscope.usage as usage

    for name in ("batch", "BatchProgressWarning", "partial_results"):
        with pytest.warns(DeprecationWarning, match=rf"use chunkscope\.runtime\.{name}"):
            assert getattr(usage, name) is getattr(runtime, name)


def test_a_batch_runs_and_records_into_any_sink_without_pandas() -> None:
    code = textwrap.dedent(
        """
        import asyncio, sys
        sys.modules["pandas"] = sys.modules["numpy"] = None  # a plain install: no usage extra
        from chunkscope.adapters import ScriptedAdapter
        from chunkscope.runtime import batch

        class ListSink:
            def __init__(self):
                self.rows = []
            def record(self, result, *, provider, model, tags=None, call_id=None, attempt=1, final=True):
                self.rows.append((provider, model, result.text))

        chunks = [
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "hi"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}},
            {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ]
        sink = ListSink()
        requests = [{"provider": "p", "model": f"m{i}", "messages": []} for i in range(3)]
        results = asyncio.run(batch(ScriptedAdapter(chunks), requests, concurrency=2, log=sink))
        print([r.text for r in results], sorted(sink.rows), sys.modules.get("pandas"))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == (
        "['hi', 'hi', 'hi'] [('p', 'm0', 'hi'), ('p', 'm1', 'hi'), ('p', 'm2', 'hi')] None"
    )
