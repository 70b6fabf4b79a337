"""One error family for every stored-stream reader: one ``except cs.SourceError`` catches them all."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import chunkscope as cs
from chunkscope.sources import (
    ChunkFileError,
    DshLogError,
    RecordingFileError,
    SourceError,
    UnreadableSourceError,
    _errors,
    load_streams,
)


def test_every_reader_error_is_a_source_error_and_a_value_error() -> None:
    for cls in (ChunkFileError, RecordingFileError, DshLogError, UnreadableSourceError):
        assert issubclass(cls, SourceError) and issubclass(cls, ValueError)
    assert issubclass(RecordingFileError, ChunkFileError)
    assert cs.SourceError is SourceError and cs.DshLogError is DshLogError


def test_the_module_docstring_draws_every_class_of_the_tree() -> None:
    doc = _errors.__doc__ or ""
    tree = [name for name in _errors.__all__ if isinstance(getattr(_errors, name), type)]
    assert tree and all(f"── {name}" in doc for name in tree)


@pytest.mark.parametrize(
    "error",
    [
        ChunkFileError("f, line 2, column 3: bad", "f", 2, 3),
        RecordingFileError("f, line 1: bad", "f", 1),
        DshLogError("f, line 4: bad", "f", 4, "json"),
        UnreadableSourceError("f: empty file", "f"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_a_source_error_pickles_with_its_fields(error: SourceError) -> None:
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error)
    assert (back.path, back.line) == (error.path, error.line)
    assert getattr(back, "code", None) == getattr(error, "code", None)
    assert getattr(back, "column", None) == getattr(error, "column", None)


def test_one_except_catches_each_kind_of_unreadable_file(tmp_path: Path) -> None:
    bad_chunks = tmp_path / "a.jsonl"
    bad_chunks.write_text('{"type": "finish", "reason": {"kind": "stop"}}\n{"type": \n', encoding="utf-8")
    bad_recording = tmp_path / "b.jsonl"
    bad_recording.write_text('{"recording": "chunkscope", "version": 1}\n{"t": -1}\n', encoding="utf-8")
    bad_session = tmp_path / "c.jsonl"
    bad_session.write_text('{"type": "session", "version": 3}\n', encoding="utf-8")
    caught = []
    for path in (bad_chunks, bad_recording, bad_session, tmp_path / "missing.jsonl"):
        with pytest.raises(SourceError) as error:
            load_streams(path)
        caught.append(type(error.value).__name__)
    assert caught == ["UnreadableSourceError", "RecordingFileError", "DshLogError", "UnreadableSourceError"]
