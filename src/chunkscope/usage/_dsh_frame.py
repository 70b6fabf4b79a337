"""The usage frame of a DeepSeek Harness session log: ``DshSession.to_frame`` (the pandas part).

The session-log reader lives in ``chunkscope.sources.dsh`` and needs no
pandas; this module adds the frame projection: a ``UsageLog`` row per
attempt, then the session columns (``_schema.DSH_COLUMNS``). ``read_dsh_session`` here
is the sources reader whose sessions carry it (``DshSession.to_frame``), whatever was
imported before. ``read_dsh_sessions(pattern)`` reads every session log a glob names into one
usage frame; ``dask=True`` returns a Dask DataFrame instead, built with
``dask.dataframe.from_map`` (one partition per file, each read on a worker).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from chunkscope._extras import needs_extra
from chunkscope.sources.dsh import MAX_LINE_BYTES, DshAttempt, DshLogError, DshSession, iter_dsh_paths
from chunkscope.sources.dsh import read_dsh_session as read_session

from ._log import UsageLog
from ._schema import DSH_COLUMNS, categories, coerce, empty_frame

__all__ = ["dsh_frame_meta", "read_dsh_session", "read_dsh_sessions", "session_frame"]


def session_frame(session: DshSession, prices: Any = None, tags: Mapping[str, str] | None = None) -> Any:
    """``session.to_frame(prices=, tags=)``: one ``UsageLog`` row per attempt, then the session columns."""
    log = session.record_into(UsageLog(prices=prices), tags=tags)
    return _with_session_columns(log.to_frame(), session.attempts, session.id)


def read_dsh_session(
    path: str | os.PathLike[str],
    *,
    strict: bool = True,
    include_seed: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_bytes: int | None = None,
) -> DshSession:
    """``chunkscope.sources.read_dsh_session``, its session able to give its usage frame (``to_frame``).

    The same arguments and errors; the session a ``DshLogError`` carries has its frame too.
    """
    try:
        session = read_session(
            path, strict=strict, include_seed=include_seed, max_line_bytes=max_line_bytes, max_bytes=max_bytes
        )
    except DshLogError as exc:
        if exc.session is not None:
            exc.session.projection = session_frame
        raise
    session.projection = session_frame
    return session


def _with_session_columns(frame: Any, attempts: list[DshAttempt], session_id: str) -> Any:
    untimed = np.array([a.started_ms is None for a in attempts], dtype=bool)
    if untimed.any():
        frame["duration_s"] = frame["duration_s"].where(~untimed)
    frame["session_id"] = pd.Categorical([session_id] * len(attempts), categories=categories([session_id]))
    frame["turn"] = np.array([a.turn for a in attempts], dtype="int64")
    frame["step"] = np.array([a.step for a in attempts], dtype="int64")
    frame["kind"] = pd.Categorical([a.kind for a in attempts], categories=categories(["step", "compaction"]))
    frame["synthesized"] = np.array([a.synthesized for a in attempts], dtype=bool)
    return frame


def dsh_frame_meta() -> pd.DataFrame:
    """An empty frame with the columns and dtypes of ``DshSession.to_frame()``."""
    frame = empty_frame()
    for name, dtype in DSH_COLUMNS.items():
        if dtype == "category":
            frame[name] = pd.Categorical([], categories=categories([]))
        else:
            frame[name] = pd.Series([], dtype=dtype)
    return frame


def _session_frame(path: str, strict: bool, include_seed: bool, prices: Any) -> pd.DataFrame:
    """One file's usage frame (a Dask partition, or one piece of the pandas concat).

    ``prices`` is a ``PriceTable`` or its rows (what the Dask path ships: plain
    data that Dask can hash and send to a worker).
    """
    if isinstance(prices, list):
        from ._prices import PriceTable

        prices = PriceTable(prices)
    session = read_dsh_session(path, strict=strict, include_seed=include_seed)
    frame: pd.DataFrame = session.to_frame(prices=prices)
    return frame


def read_dsh_sessions(
    pattern: str | os.PathLike[str],
    *,
    dask: bool = False,
    prices: Any = None,
    strict: bool = True,
    include_seed: bool = False,
) -> Any:
    """Every session log that ``pattern`` names (a glob, ``**`` allowed, or a directory) as one usage frame.

    A directory is searched for ``session.jsonl`` and ``session.jsonl.zstd``
    files. Rows are those of ``DshSession.to_frame`` in path order. With
    ``dask=True`` the result is a ``dask.dataframe.DataFrame`` with one
    partition per file (nothing is read until it is computed), on whatever
    scheduler or ``dask.distributed`` client is active. ``strict`` and
    ``include_seed`` are passed to ``read_dsh_session``; ``prices`` (a
    ``PriceTable``) fills ``cost`` (on Dask, each partition warns about the
    unpriced models it meets). No file matching is a ``FileNotFoundError``.
    """
    paths = list(iter_dsh_paths(pattern))
    if not paths:
        raise FileNotFoundError(f"no session log matches {os.fspath(pattern)!r}")
    if dask:
        with needs_extra("read_dsh_sessions(dask=True)"):
            import dask.dataframe as dd
            from dask.dataframe.utils import clear_known_categories

        meta = clear_known_categories(dsh_frame_meta())  # type: ignore[no-untyped-call]
        return dd.from_map(  # type: ignore[no-untyped-call]
            _session_frame,
            paths,
            strict=strict,
            include_seed=include_seed,
            prices=prices.to_dict()["prices"] if prices is not None else None,
            meta=meta,
            divisions=[None] * (len(paths) + 1),
            label="read-dsh-session",
            enforce_metadata=False,
        )
    frames = [_session_frame(path, strict, include_seed, prices) for path in paths]
    return _concat(frames)


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    combined = pd.concat(frames, ignore_index=True)
    combined = coerce(combined)  # categories unioned back from object
    for name, dtype in DSH_COLUMNS.items():
        if dtype == "category":
            column = combined[name].astype("str")
            combined[name] = pd.Categorical(column, categories=categories(sorted(set(column))))
    return combined
