"""Usage datasets on Dask: ``read_parquet_dask``, one partition per Parquet file.

``summary`` and ``PriceTable.add_costs`` (through ``map_partitions``) run on a
``dask.distributed`` cluster unchanged. Session logs take the same path through
``read_dsh_sessions(dask=True)`` (``_dsh_frame``). Dask is imported only by the Dask paths.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from chunkscope._extras import needs_extra

from ._schema import COLUMNS, check_columns, coerce, empty_frame

__all__ = ["read_parquet_dask"]


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
