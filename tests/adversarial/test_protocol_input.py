"""Hostile input to the protocol layer and recordings: a clear error with a rule id or a line, never a crash.

Issue 8 §2, the protocol half: deep nesting (100,000 nested arrays) in tool-call
arguments, in a chunk file and in a recording; invalid UTF-8 in a chunk file;
a lone surrogate from the wire in a recording; ``write_chunks`` cut short.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from chunkscope.adapters import GenerateOptions, RecordingAdapter, ReplayAdapter, ScriptedAdapter
from chunkscope.protocol import (
    BlockAssembler,
    LlmError,
    chunk_to_dict,
    collect,
    parse_chunk,
    validated,
)
from chunkscope.sources import ChunkFileError, read_chunks, write_chunks
from chunkscope.sources.recording import Recording, RecordingFileError

DEEP = "[" * 100_000 + "]" * 100_000


def _text_stream(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


def _tool_stream(arguments: str) -> list[dict[str, Any]]:
    return [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": "c1", "name": "f", "argumentsDelta": arguments},
        {
            "type": "block-end",
            "index": 0,
            "block": {"type": "tool-call", "id": "c1", "name": "f", "arguments": arguments},
        },
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ]


def _options() -> GenerateOptions:
    return GenerateOptions("scripted", "m", [{"role": "user", "content": "hi"}])


# --- deep nesting -------------------------------------------------------------------------


async def test_deeply_nested_tool_call_arguments_are_an_arguments_json_violation() -> None:
    result = await collect(_tool_stream(DEEP))
    assert [(v.rule, v.position) for v in result.violations] == [("arguments-json", 2)]
    assert "nested too deeply" in result.violations[0].message
    assert result.error is None
    assert result.tool_calls[0].arguments == DEEP  # the assembler keeps what arrived

    with pytest.raises(LlmError) as caught:
        async for _ in validated(_tool_stream(DEEP)):
            pass
    assert caught.value.code == "PROTOCOL_VIOLATION"
    assert [v.rule for v in caught.value.violations] == ["arguments-json"]

    assembler = BlockAssembler()
    for chunk in _tool_stream(DEEP):
        assembler.push(chunk)
    assert assembler.blocks()[0].arguments == DEEP  # type: ignore[union-attr]


def test_deep_nesting_in_a_chunk_file_is_a_chunk_file_error_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    good = [json.dumps(c) for c in _text_stream("hi")[:2]]
    path.write_text("\n".join([*good, DEEP, *good]) + "\n", "utf-8")
    chunks = read_chunks(path)
    assert [next(chunks), next(chunks)] == [parse_chunk(c) for c in _text_stream("hi")[:2]]
    with pytest.raises(ChunkFileError) as caught:
        next(chunks)
    assert (caught.value.path, caught.value.line) == (str(path), 3)
    assert str(caught.value) == f"{path}, line 3: JSON nested too deeply to read"


def _recording_lines(*entries: str) -> str:
    header = json.dumps({"recording": "chunkscope", "version": 1, "provider": "p", "model": "m"})
    return "\n".join([header, *entries]) + "\n"


def test_deep_nesting_in_a_recording_is_a_recording_file_error_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.rec.jsonl"
    first = json.dumps({"t": 0.0, "chunk": _text_stream("hi")[0]})
    path.write_text(_recording_lines(first, '{"t": 0.1, "chunk": ' + DEEP + "}"), "utf-8")
    with pytest.raises(RecordingFileError) as caught:
        Recording.read(path)
    assert isinstance(caught.value, ChunkFileError)
    assert caught.value.line == 3
    assert "line 3: JSON nested too deeply to read" in str(caught.value)


# --- invalid UTF-8 and column numbers ---------------------------------------------------


def test_invalid_utf8_in_a_chunk_file_comes_after_every_earlier_chunk(tmp_path: Path) -> None:
    # Far more than one 8 KB read block of good lines before the bad one: none may be lost.
    many = [{"type": "text-delta", "index": 0, "text": f"piece {k} ünïcode"} for k in range(2_000)]
    body = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in many).encode("utf-8")
    bad = '{"type": "text-delta", "index": 0, "text": "ü'.encode() + b"\xff\xfe" + b'"}\n'
    path = tmp_path / "bad-utf8.jsonl"
    path.write_bytes(body + bad + body)
    got: list[Any] = []
    with pytest.raises(ChunkFileError) as caught:
        for chunk in read_chunks(path):
            got.append(chunk)
    assert got == [parse_chunk(c) for c in many]
    error = caught.value
    assert (error.path, error.line, error.column) == (str(path), 2_001, 46)
    assert str(error) == f"{path}, line 2001, column 46: not valid UTF-8 (byte 0xff: invalid start byte)"
    assert error.__cause__ is None  # no decoder message with a byte offset into an 8 KB block


def test_invalid_utf8_in_a_recording_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.rec.jsonl"
    first = json.dumps({"t": 0.0, "chunk": _text_stream("hi")[0]})
    path.write_bytes(_recording_lines(first).encode() + b'{"t": 0.1, "chunk": "\xc3"}\n')
    with pytest.raises(RecordingFileError, match=r"line 3, column 22: not valid UTF-8"):
        Recording.read(path)


def test_json_error_columns_count_characters_in_the_line(tmp_path: Path) -> None:
    path = tmp_path / "column.jsonl"
    line = '{"type": "text-delta", "text": "日本語", "index": 0,, }'
    path.write_text(json.dumps(_text_stream("a")[0]) + "\n" + line + "\n", "utf-8")
    with pytest.raises(ChunkFileError) as caught:
        list(read_chunks(path))
    assert caught.value.column == line.index(",,") + 2  # the second comma, 1-based, in characters
    assert f"line 2, column {caught.value.column}: not valid JSON" in str(caught.value)


def test_a_line_over_the_size_bound_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps(_text_stream("a")[0]) + "\n" + json.dumps(_text_stream("x" * 5_000)[1]) + "\n")
    chunks = read_chunks(path, max_line_bytes=1_000)
    assert next(chunks) == parse_chunk(_text_stream("a")[0])
    with pytest.raises(ChunkFileError, match=r"line 2: longer than 1,000 bytes; not read"):
        next(chunks)


# --- lone surrogates and half lines -----------------------------------------------------


async def test_a_lone_surrogate_from_the_wire_is_recorded_as_valid_utf8_and_replays_identically(
    tmp_path: Path,
) -> None:
    text = "caf\u00e9 \ud83d and on"  # half of a surrogate pair, as a broken wire can deliver
    script = _text_stream(text)
    path = tmp_path / "surrogate.rec.jsonl"
    recorded = await collect(RecordingAdapter(ScriptedAdapter(script), path).stream(_options()))
    assert recorded.error is None and recorded.text == text  # the stream was not broken by recording

    raw = path.read_bytes()
    raw.decode("utf-8")  # strict: the file is valid UTF-8
    lines = raw.decode("utf-8").splitlines()
    assert len(lines) == 1 + len(script)
    assert all(json.loads(line) for line in lines)  # every line whole
    assert "\\ud83d" in lines[2]  # the delta's line is escaped, so the surrogate survives the round trip

    replayed = await collect(ReplayAdapter(path, speed=None).stream(_options()))
    assert [chunk_to_dict(c) for c in replayed.chunks] == [chunk_to_dict(c) for c in recorded.chunks]
    assert replayed.text == text


def test_write_chunks_escapes_a_lone_surrogate_and_reads_it_back(tmp_path: Path) -> None:
    path = tmp_path / "surrogate.jsonl"
    script = _text_stream("x\udc80y ü")
    assert write_chunks(path, script) == len(script)
    path.read_bytes().decode("utf-8")
    assert [chunk_to_dict(c) for c in read_chunks(path)] == [chunk_to_dict(parse_chunk(c)) for c in script]
    assert "\\udc80" in path.read_text("utf-8")


def test_write_chunks_never_leaves_half_a_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    script: list[Any] = _text_stream("ok")
    bad = {"type": "finish", "reason": {"kind": "stop"}, "replayState": {"blocks": [1.0, math.nan]}}
    with pytest.raises(ValueError, match="chunk 4 holds a NaN"):
        write_chunks(path, [*script[:4], bad, script[4]])
    text = path.read_text("utf-8")
    assert text.endswith("\n")
    expected = [chunk_to_dict(parse_chunk(c)) for c in script[:4]]
    assert [json.loads(line) for line in text.splitlines()] == expected
