"""The usage layer: token usage as DataFrames, costs, storage, session logs.

Needs the ``usage`` extra (pandas, pyarrow, zstandard; dask for the Dask paths).
"""

from __future__ import annotations

from ._dsh import DshAttempt, DshLogError, DshProblem, DshSession, DshStep, read_dsh_session
from ._dsh_writer import DshLogWriter

__all__ = [
    "DshAttempt",
    "DshLogError",
    "DshProblem",
    "DshSession",
    "DshStep",
    "DshLogWriter",
    "read_dsh_session",
]
