"""JSONL chunk files: lazy reading with line-numbered errors, compact UTF-8 writing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkscope.protocol import parse_chunk
from chunkscope.sources import ChunkFileError, read_chunks, write_chunks
from protocol._streams import SEED_CHUNKS


def test_write_then_read_round_trips_the_seed(tmp_path: Path) -> None:
    path = tmp_path / "seed.jsonl"
    assert write_chunks(path, SEED_CHUNKS) == len(SEED_CHUNKS)
    assert list(read_chunks(path)) == [parse_chunk(c) for c in SEED_CHUNKS]


def test_written_lines_are_compact_camel_case_utf8(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_chunks(str(path), [parse_chunk(c) for c in SEED_CHUNKS])
    raw = path.read_bytes().decode("utf-8")
    lines = raw.splitlines()
    assert lines[1] == '{"type":"text-delta","index":0,"text":"サンプル"}'
    assert lines[0] == '{"type":"block-start","index":0,"blockType":"text"}'
    assert [json.loads(line) for line in lines] == SEED_CHUNKS
    assert raw.endswith("\n") and "null" not in raw


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text(
        "\n" + json.dumps(SEED_CHUNKS[0]) + "\n   \n" + json.dumps(SEED_CHUNKS[1]) + "\n\n", "utf-8"
    )
    assert len(list(read_chunks(path))) == 2


def test_a_malformed_line_raises_when_reached_after_the_lines_before_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps(c) for c in SEED_CHUNKS[:2]] + ["", '{"type": "text-delta", "index": 0', "ignored"]
    path.write_text("\n".join(lines), "utf-8")
    chunks = read_chunks(path)
    got = [next(chunks), next(chunks)]
    assert got == [parse_chunk(c) for c in SEED_CHUNKS[:2]]
    with pytest.raises(ChunkFileError) as caught:
        next(chunks)
    error = caught.value
    assert isinstance(error, ValueError)
    assert (error.path, error.line) == (str(path), 4)
    # the column is the real one: just past the 33 characters of the cut-short line
    assert str(error) == f"{path}, line 4, column 34: not valid JSON (Expecting ',' delimiter)"
    assert error.column == 34


def test_a_line_that_is_json_but_not_a_chunk_names_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "shape.jsonl"
    path.write_text(json.dumps(SEED_CHUNKS[0]) + '\n{"type": "text-delta", "index": 0}\n', "utf-8")
    with pytest.raises(
        ChunkFileError,
        match=r"line 2: not a chunk: the text-delta chunk is malformed: 'text' is "
        r"missing",
    ) as caught:
        list(read_chunks(path))
    assert caught.value.line == 2


def test_reading_is_lazy(tmp_path: Path) -> None:
    chunks = read_chunks(tmp_path / "does-not-exist-yet.jsonl")  # nothing opened until iterated
    (tmp_path / "does-not-exist-yet.jsonl").write_text(json.dumps(SEED_CHUNKS[-1]) + "\n", "utf-8")
    assert [c.type for c in chunks] == ["finish"]


def test_writing_a_dict_that_is_not_a_chunk_fails_before_writing_it(tmp_path: Path) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        write_chunks(tmp_path / "x.jsonl", [SEED_CHUNKS[0], {"type": "nope"}])


def test_numbers_json_cannot_carry_are_refused_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "nan.jsonl"
    finish = {"type": "finish", "reason": {"kind": "stop"}, "replayState": {"score": float("nan")}}
    with pytest.raises(ValueError, match="chunk 1 holds a NaN"):
        write_chunks(path, [SEED_CHUNKS[0], finish])
    path.write_text(
        '{"type": "finish", "reason": {"kind": "stop"}, "replayState": {"x": Infinity}}\n', "utf-8"
    )
    with pytest.raises(ChunkFileError, match="line 1: not valid JSON \\(Infinity is not a JSON value\\)"):
        list(read_chunks(path))
