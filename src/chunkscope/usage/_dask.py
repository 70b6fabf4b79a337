"""Many session logs and usage datasets at once: pandas, or Dask with one partition per file.

``read_dsh_sessions(pattern)`` reads every session log a glob names into one
usage frame; ``dask=True`` returns a Dask DataFrame instead, built with
``dask.dataframe.from_map`` (one partition per file, each read by
``read_dsh_session`` on a worker), so ``summary`` and ``PriceTable.add_costs``
(through ``map_partitions``) run on a ``dask.distributed`` cluster unchanged.
``read_parquet_dask`` does the same for Parquet files and datasets. Dask is
imported only by the Dask paths.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from chunkscope._extras import needs_extra
from chunkscope.sources.dsh import iter_dsh_paths, read_dsh_session

from ._schema import COLUMNS, DSH_COLUMNS, categories, check_columns, coerce, empty_frame

__all__ = ["dsh_frame_meta", "read_dsh_sessions", "read_parquet_dask"]


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


def read_parquet_dask(path: str | os.PathLike[str]) -> Any:
    """A Dask DataFrame over a usage Parquet file or dataset, one partition per file.

    Each partition is cast to the usage dtypes (``coerce``), as ``read_parquet``
    does for pandas; a dataset's ``date`` partition column is dropped.
    """
    with needs_extra("read_parquet(dask=True)"):
        import dask.dataframe as dd
        from dask.dataframe.utils import clear_known_categories

    source = Path(path)
    files = sorted(str(p) for p in source.rglob("*.parquet")) if source.is_dir() else [str(source)]
    if not files:
        raise FileNotFoundError(f"no Parquet file under {str(source)!r}")
    meta = clear_known_categories(empty_frame())  # type: ignore[no-untyped-call]
    return dd.from_map(  # type: ignore[no-untyped-call]
        _parquet_part, files, meta=meta, label="read-usage-parquet", enforce_metadata=False
    )


def _parquet_part(path: str) -> pd.DataFrame:
    frame = pd.read_parquet(path, engine="pyarrow")
    frame = frame.drop(columns=[c for c in ("date",) if c in frame.columns and c not in COLUMNS])
    check_columns(frame, path)
    frame = coerce(frame)
    ordered = [name for name in COLUMNS if name in frame.columns]
    return frame[ordered + [c for c in frame.columns if c not in COLUMNS]]
