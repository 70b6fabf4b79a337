"""The gaps between a stream's chunks: one home for the usage frame's gap columns and ``cadence``.

A *gap* is the time between two consecutive chunks' arrivals (``Timings.chunk_times``, the times
the timeline draws). The gap before chunk ``n`` is ``chunk_times[n] - chunk_times[n - 1]``, so a
gap is named by the chunk that ended it, as the timeline says "max gap before chunk n". The time
to the first chunk is not a gap (``ttfc_s`` has it).

A stream's timing is *known* when it kept one arrival time per chunk, every one finite; with
fewer than two chunks there is no gap. Either way its gap figures are ``<NA>``, never 0.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

__all__ = ["GapStats", "NO_GAPS", "gap_stats", "known_gaps", "quantile", "result_gaps"]

GapStats = tuple[float, int, float, float]
"""``(max_gap_s, max_gap_at, p50_gap_s, p99_gap_s)``; NaN and -1 where unknown."""

NO_GAPS: GapStats = (math.nan, -1, math.nan, math.nan)


def known_gaps(chunk_times: Sequence[float], chunks: int) -> list[float] | None:
    """The gaps between ``chunks`` chunks that arrived at ``chunk_times``; None when the timing is
    not known (a time missing or not finite) or there is no gap (fewer than two chunks)."""
    if chunks < 2 or len(chunk_times) != chunks:
        return None
    if not all(map(math.isfinite, chunk_times)):
        return None
    return list(map(operator.sub, chunk_times[1:], chunk_times))  # at C speed: record() calls this


def quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``ordered`` (sorted, not empty), interpolated linearly between the two
    nearest values: numpy's default (``numpy.quantile(..., method="linear")``), so a row's p50 and
    p99 and ``cadence``'s percentiles are one definition."""
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def gap_stats(chunk_times: Sequence[float], chunks: int) -> GapStats:
    """One attempt's gap columns: the largest gap, the chunk it ended (the first such chunk, as the
    timeline's ``max gap before chunk n``), the median and p99 gap; ``NO_GAPS`` when unknown."""
    gaps = known_gaps(chunk_times, chunks)
    if gaps is None:
        return NO_GAPS
    ordered = sorted(gaps)
    largest = ordered[-1]
    return largest, gaps.index(largest) + 1, quantile(ordered, 0.5), quantile(ordered, 0.99)


def result_gaps(result: Any) -> list[float] | None:
    """The gaps of a ``StreamResult`` (None when its timing is unknown or it has no gap)."""
    return known_gaps(result.timings.chunk_times, len(result.chunks))
