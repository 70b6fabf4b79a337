"""Public names carry their public path: ``chunkscope.LlmError``, not ``chunkscope.protocol._errors``.

As httpx does, every public class and function has ``__module__ == "chunkscope"``, so reprs,
tracebacks and docs show what users import; pickle finds each class at that path, so pickles of
exceptions, pydantic models and dataclasses keep working (and stay loadable in a fresh process).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import types
from typing import Any

import pytest

import chunkscope as cs
from chunkscope import conformance_kit, runtime, sources

PUBLIC = [name for name in cs._EXPORTS if isinstance(getattr(cs, name), (type, types.FunctionType))]


def test_the_scan_covers_the_classes_and_functions_of_the_face() -> None:
    # aliases (StreamChunk, CallId) and tables (ERROR_CODES) have no __module__ of their own to set
    assert {"LlmError", "TextDelta", "UsageLog", "check", "summary", "LocalProvider"} <= set(PUBLIC)
    assert len(PUBLIC) >= len(cs._EXPORTS) - 12


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_class_and_function_names_the_public_path(name: str) -> None:
    value = getattr(cs, name)
    assert value.__module__ == "chunkscope"
    assert value.__qualname__ == name
    # pickle finds a class or function by __module__ + __qualname__: the public path must lead back
    assert pickle.loads(pickle.dumps(value)) is value


def test_a_name_reached_through_its_layer_face_shows_the_public_path_too() -> None:
    from chunkscope import protocol

    cs.LlmError  # noqa: B018 - resolving the name publishes it
    assert protocol.LlmError.__module__ == "chunkscope"
    assert repr(protocol.TextDelta).startswith("<class 'chunkscope.TextDelta'")


def _instances() -> list[Any]:
    return [
        cs.LlmError("upstream said no", "RATE_LIMIT", status=429, retry_after_ms=1000),
        cs.SourceError("bad line", "session.jsonl", 3),
        cs.DshLogError("bad line", "session.jsonl", 3, "json"),
        sources.ChunkFileError("bad chunk", "chunks.jsonl", 2, 7),
        conformance_kit.ConformanceError("no such wire"),
        runtime.ToolArgumentsError("x must be an int"),
        cs.TextDelta(type="text-delta", index=0, text="hi"),
        cs.TokenUsage(input_tokens=3, output_tokens=5),
        cs.parse_chunk({"type": "finish", "reason": {"kind": "stop"}}),
        cs.Violation("R1", "error", 4, None, "text before start"),
        cs.RetryPolicy(max_retries=2),
    ]


@pytest.mark.parametrize("obj", _instances(), ids=lambda obj: type(obj).__name__)
def test_public_exceptions_models_and_dataclasses_pickle_round_trip(obj: Any) -> None:
    again = pickle.loads(pickle.dumps(obj))
    assert type(again) is type(obj)
    if isinstance(obj, BaseException):
        assert (again.args, str(again)) == (obj.args, str(obj))
        if isinstance(obj, cs.LlmError):
            assert (again.code, again.status, again.retry_after_ms) == ("RATE_LIMIT", 429, 1000)
    else:
        assert again == obj


def test_a_pickle_made_in_one_process_loads_in_a_fresh_one() -> None:
    code = (
        "import pickle, sys, chunkscope as cs; "
        "pair = [cs.LlmError('boom', 'TIMEOUT'), cs.TextDelta(index=0, text='x')]; "
        "sys.stdout.buffer.write(pickle.dumps(pair))"
    )
    blob = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    load = (
        "import pickle, sys; error, delta = pickle.loads(sys.stdin.buffer.read()); "
        "print(type(error).__module__, error.code, delta.text)"
    )
    out = subprocess.run([sys.executable, "-c", load], input=blob, capture_output=True, check=True)
    assert out.stdout.decode().split() == ["chunkscope", "TIMEOUT", "x"]
