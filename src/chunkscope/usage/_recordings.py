"""Folders of recordings as a usage frame, one row per file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from chunkscope.adapters.recording import recording_result, recording_started
from chunkscope.sources.recording import Recording

from ._log import UsageLog

__all__ = ["parse_started", "read_recordings"]


def read_recordings(folder: str | os.PathLike[str], pattern: str = "*.jsonl") -> pd.DataFrame:
    """One usage frame from a folder of recordings (``RecordingAdapter``'s or the tap's; one row per file).

    Provider, model and start time come from each recording's header, the
    timings from its ``t`` stamps, a recorded failure becomes the row's error
    (a tap's recording is read again from its raw reads, as ``ReplayAdapter``
    replays it); ``call_id`` is the file name without its suffix. A file that
    is not a recording raises ``RecordingFileError`` naming the file and line.
    """
    log = UsageLog()
    for path in sorted(Path(folder).glob(pattern)):
        recording = Recording.read(path)
        header = recording.header
        log.record(
            recording_result(recording, label=f"the recording {path.name}"),
            provider=str(header.get("provider") or "unknown"),
            model=str(header.get("model") or "unknown"),
            call_id=path.stem,
        )
    return log.to_frame()


def parse_started(value: Any) -> float | None:
    """A recording header's ISO ``started`` as seconds since the epoch (None when it is none)."""
    return recording_started({"started": value})
