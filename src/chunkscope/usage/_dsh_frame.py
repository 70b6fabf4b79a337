"""The usage frame of a DeepSeek Harness session log: ``DshSession.to_frame`` (the pandas part).

The session-log reader lives in ``chunkscope.sources.dsh`` and needs no
pandas; this module adds the frame projection: a ``UsageLog`` row per
attempt, then the session columns (``_schema.DSH_COLUMNS``). Importing the usage
layer binds it as ``DshSession.to_frame``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from chunkscope.sources.dsh import DshAttempt, DshSession

from ._log import UsageLog
from ._schema import categories

__all__ = ["session_frame"]


def session_frame(session: DshSession, prices: Any = None, tags: Mapping[str, str] | None = None) -> Any:
    """``session.to_frame(prices=, tags=)``: one ``UsageLog`` row per attempt, then the session columns."""
    log = session.record_into(UsageLog(prices=prices), tags=tags)
    return _with_session_columns(log.to_frame(), session.attempts, session.id)


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
