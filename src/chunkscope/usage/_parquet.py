"""Usage frames on disk: one Parquet file, or a dataset partitioned by date.

A dataset is a directory ``<path>/date=YYYY-MM-DD/part-<log>-<n>.parquet``
(hive partitioning on the UTC date of ``started_at``; ``date=unknown`` when
the start time is). Each file is written whole under a temporary name and
renamed into place, so a reader (pandas, pyarrow, DuckDB) never sees half a
file, and a process killed at any moment leaves only complete files. DuckDB
reads it as it is::

    duckdb.sql("SELECT model, sum(output_tokens) FROM read_parquet('usage/**/*.parquet', "
               "hive_partitioning = true) GROUP BY model")
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import uuid
import weakref
from pathlib import Path
from typing import Any, Literal, Protocol, overload

import pandas as pd

from ._schema import COLUMNS, MONEY_COLUMNS, check_columns, coerce, empty_frame, is_decimal


class _Rows(Protocol):
    """What a sink reads of its log (a ``UsageLog``): how many rows, and a frame of some."""

    def __len__(self) -> int: ...

    def to_frame(self, *, start: int = 0, stop: int | None = None) -> pd.DataFrame: ...


__all__ = ["ParquetSink", "read_parquet", "to_parquet"]


def to_parquet(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write a usage frame to one Parquet file; ``read_parquet`` gives back the same dtypes
    (a ``cost_type=Decimal`` cost as exact Decimals)."""
    target = Path(path)
    _write(frame, target)
    return target


DECIMAL_COST = (38, 18)
"""The Parquet type of a Decimal cost: ``decimal128(38, 18)``, one type for every file of a
dataset (pyarrow would size each file's to its own values, and a dataset of files with
different ones cannot be read as one). 18 places hold any per-million rate's cost exactly."""


def _write(frame: pd.DataFrame, target: Path) -> None:
    """``frame`` to a Parquet file; Decimal money as ``DECIMAL_COST`` (pandas' types otherwise)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    for name in MONEY_COLUMNS:
        if name in frame.columns and is_decimal(frame[name]):
            at = table.schema.get_field_index(name)
            field = table.schema.field(at).with_type(pa.decimal128(*DECIMAL_COST))
            table = table.set_column(at, field, table.column(at).cast(field.type))
    pq.write_table(table, target)


@overload
def read_parquet(path: str | os.PathLike[str], *, dask: Literal[False] = False) -> pd.DataFrame: ...
@overload
def read_parquet(path: str | os.PathLike[str], *, dask: Literal[True]) -> Any: ...
def read_parquet(path: str | os.PathLike[str], *, dask: bool = False) -> Any:
    """A usage frame from one Parquet file or a dataset directory (e.g. a ``UsageLog(path=...)``'s).

    Dtypes are those of ``COLUMNS``; a file of another schema (a column
    missing, or holding another kind of value) raises ``UsageSchemaError``
    naming the column. The ``date`` partition column of a
    dataset is dropped (``started_at`` holds it). Rows come in file order.
    ``dask=True`` returns a Dask DataFrame with one partition per file instead
    (``read_parquet_dask``).
    """
    if dask:
        from ._dask import read_parquet_dask

        return read_parquet_dask(path)
    source = Path(path)
    if source.is_dir() and not any(source.rglob("*.parquet")):
        return empty_frame()
    frame = pd.read_parquet(source, engine="pyarrow")
    if source.is_dir() and "date" in frame.columns and "date" not in COLUMNS:
        frame = frame.drop(columns="date")
    check_columns(frame, str(source))
    return _in_schema_order(coerce(frame).reset_index(drop=True))


def _in_schema_order(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the usage columns first, in ``COLUMNS`` order, then any others as they came."""
    ordered = [name for name in COLUMNS if name in frame.columns]
    return frame[ordered + [c for c in frame.columns if c not in COLUMNS]]


class ParquetSink:
    """Appends a ``UsageLog``'s rows to a date-partitioned Parquet dataset as they come.

    Rows are written when ``flush_rows`` of them are waiting, or
    ``flush_seconds`` after the first one of a batch (a daemon timer), on
    ``flush()`` / ``close()`` and at interpreter exit. So a kernel that dies
    abruptly loses at most the rows of the last ``flush_seconds``, fewer than
    ``flush_rows`` of them; ``flush_rows=1`` writes every row at once.
    """

    def __init__(
        self,
        log: _Rows,
        path: str | os.PathLike[str],
        *,
        flush_rows: int = 20,
        flush_seconds: float = 1.0,
    ) -> None:
        if flush_rows < 1:
            raise ValueError("flush_rows must be >= 1")
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self._log = weakref.ref(log)
        self._written = 0
        self._files = 0
        self._name = uuid.uuid4().hex[:12]
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._closed = False
        atexit.register(_flush_at_exit, weakref.ref(self))

    def notify(self) -> None:
        """A row was recorded: write now if enough are waiting, else make sure the timer runs."""
        log = self._log()
        if log is None or self._closed:
            return
        if len(log) - self._written >= self.flush_rows:
            self.flush()
            return
        with self._lock:
            if self._timer is None and self.flush_seconds > 0:
                self._timer = threading.Timer(self.flush_seconds, self._on_timer)
                self._timer.daemon = True
                self._timer.start()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = None
        self.flush()

    def flush(self) -> int:
        """Write every row not yet written; return how many were written."""
        log = self._log()
        if log is None:
            return 0
        with self._lock:
            start, stop = self._written, len(log)
            if stop <= start:
                return 0
            frame = log.to_frame(start=start, stop=stop)
            self._write(frame)
            self._written = stop
            return stop - start

    def _write(self, frame: pd.DataFrame) -> None:
        dates = frame["started_at"].dt.strftime("%Y-%m-%d").fillna("unknown")
        for date, part in frame.groupby(dates.to_numpy(), sort=True):
            folder = self.path / f"date={date}"
            folder.mkdir(parents=True, exist_ok=True)
            self._files += 1
            final = folder / f"part-{self._name}-{self._files:06d}.parquet"
            temporary = folder / f".{final.name}.tmp"
            _write(part.reset_index(drop=True), temporary)
            os.replace(temporary, final)  # atomic: readers see the whole file or none

    def close(self) -> None:
        """Stop the timer and write what is waiting."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self.flush()


def _flush_at_exit(ref: weakref.ref[ParquetSink]) -> None:
    sink = ref()
    if sink is not None:
        with contextlib.suppress(Exception):  # nothing to report to at exit
            sink.close()


# --- recordings ----------------------------------------------------------------------
