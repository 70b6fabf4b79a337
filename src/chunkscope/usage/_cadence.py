"""``cs.cadence(source)``: is a stream stalled or just slow? The gaps between chunks, per model.

Per provider and model: the distribution of gaps between chunks (p50, p90, p99, p99.9, max and
how many), the *stalls* (gaps far beyond that model's usual gap, each pointing at its call and
chunk) and a suggested idle timeout with its reasoning. The gaps are the ones the timeline and
the usage frame's gap columns measure (``_gaps``): the time before chunk ``n`` since chunk
``n - 1``.

A source with every chunk's arrival time (a ``Tap`` or ``TapReplay``, their ``calls``, a folder
of recordings, a recording, a DeepSeek Harness session log keeping ``dt``) gives every gap. A
usage frame keeps three figures per attempt (its largest gap, where, and its median gap), so on
a frame the distribution is that of the attempts' *largest* gaps and a stall is an attempt's
largest gap: ``Cadence.basis`` says which.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from chunkscope.adapters.recording import recording_result
from chunkscope.sources import load_streams
from chunkscope.sources.dsh import DshSession
from chunkscope.sources.recording import Recording

from ._gaps import known_gaps
from ._log import UsageLog
from ._schema import UsageSchemaError

__all__ = [
    "CADENCE_COLUMNS",
    "STALL_COLUMNS",
    "Cadence",
    "cadence",
]

EVERY_GAP = "every gap"
LARGEST_GAPS = "each attempt's largest gap"

QUANTILES = {"p50_gap_s": 0.5, "p90_gap_s": 0.9, "p99_gap_s": 0.99, "p999_gap_s": 0.999}

CADENCE_COLUMNS = (
    "provider",
    "model",
    "attempts",
    "timed",
    "gaps",
    *QUANTILES,
    "max_gap_s",
    "max_gap_call",
    "max_gap_chunk",
    "usual_gap_s",
    "stall_threshold_s",
    "stalls",
    "max_ttfc_s",
    "suggested_timeout_s",
    "reasoning",
)
"""``Cadence.models``' columns, in order (``docs/usage.md`` says what each holds)."""

STALL_COLUMNS = (
    "provider",
    "model",
    "call_id",
    "attempt",
    "chunk",
    "gap_s",
    "at_s",
    "usual_gap_s",
    "threshold_s",
    "times_usual",
)
"""``Cadence.stalls``' columns, in order: one row per stall, the longest first."""

_FRAME_NEEDS = ("provider", "model", "call_id", "attempt", "ttfc_s", "max_gap_s", "max_gap_at", "p50_gap_s")


@dataclass(frozen=True)
class _Timed:
    """One attempt of a source with its chunks' arrival times (None when it kept none)."""

    provider: str
    model: str
    call_id: str
    attempt: int
    chunk_times: list[float]
    chunks: int
    ttfc_s: float | None
    dropped: int = 0  # chunks a windowed stream no longer keeps: the kept ones' numbers start after them


@dataclass(frozen=True)
class Cadence:
    """What ``cs.cadence`` found: ``models`` (one row per provider and model, ``CADENCE_COLUMNS``),
    ``stalls`` (one row per stall, the longest first, ``STALL_COLUMNS``) and ``gaps`` (the values
    the distribution is over: one row per gap, or per attempt on a usage frame; ``basis``).

    ``suggested_timeout_s`` is one idle timeout for every model (the largest suggestion);
    ``plot()`` draws one distribution per model. Shown in a notebook as tables with the reasoning.
    """

    models: pd.DataFrame
    stalls: pd.DataFrame
    gaps: pd.DataFrame = field(repr=False)
    basis: str
    stall_factor: float
    stall_floor_s: float
    timeout_factor: float

    @property
    def suggested_timeout_s(self) -> float | None:
        """One idle timeout for every model: the largest per-model suggestion (None without gaps)."""
        values = self.models["suggested_timeout_s"].dropna()
        return float(values.max()) if len(values) else None

    def stall_rule(self) -> str:
        """The stall definition in one sentence, with this report's numbers."""
        return (
            f"a stall is a gap longer than max({self.stall_factor:g} x the model's usual gap, "
            f"{self.stall_floor_s:g} s); the usual gap is the median "
            + ("gap" if self.basis == EVERY_GAP else "of the attempts' median gaps")
        )

    def __str__(self) -> str:
        lines = [f"cadence over {self.basis}: {self.stall_rule()}"]
        for row in self.models.itertuples(index=False):
            lines.append(f"{row.provider} / {row.model}: {row.reasoning}")
        lines.append(_overall(self.suggested_timeout_s, len(self.models)))
        if len(self.stalls):
            lines.append(f"{len(self.stalls)} stall(s), the longest first:")
            lines.extend(_stall_line(row) for row in self.stalls.head(_SHOWN_STALLS).itertuples(index=False))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"Cadence({len(self.models)} model(s), {len(self.gaps)} values over {self.basis}, "
            f"{len(self.stalls)} stall(s), suggested timeout {_seconds(self.suggested_timeout_s)})"
        )

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if cycle else str(self))  # IPython's terminal: the reasoning, as print() shows it

    def _repr_html_(self) -> str:
        shown = [c for c in CADENCE_COLUMNS if c != "reasoning"]
        reasons = "".join(
            f"<li><b>{escape(f'{row.provider} / {row.model}')}</b>: {escape(str(row.reasoning))}</li>"
            for row in self.models.itertuples(index=False)
        )
        stalls = (
            self.stalls.head(_SHOWN_STALLS).to_html(index=False, escape=True, na_rep="<NA>")
            if len(self.stalls)
            else "<p>no stall</p>"
        )
        return (
            f"<div class='cs-cadence'><p>Cadence over {escape(self.basis)}: {escape(self.stall_rule())}.</p>"
            f"{self.models[shown].to_html(index=False, escape=True, na_rep='<NA>')}"
            f"<p><b>Suggested idle timeout</b>: "
            f"{escape(_overall(self.suggested_timeout_s, len(self.models)))}</p><ul>{reasons}</ul>"
            f"<p><b>Stalls</b> ({len(self.stalls)}, the longest first)</p>{stalls}</div>"
        )

    def plot(self, *, title: str | None = None) -> Any:
        """One distribution per model on a log time axis: the p50 to p99 span, the p99.9 and largest
        gap, each stall as a red x, the suggested timeout as a dashed mark. Returns the matplotlib
        ``Figure`` (closed for pyplot, so a notebook shows it once)."""
        from ._plots import plot_cadence

        return plot_cadence(self, title=title)


_SHOWN_STALLS = 20


def _stall_line(row: Any) -> str:
    where = f"call {row.call_id} attempt {row.attempt}, before chunk {row.chunk}"
    return f"  {row.provider} / {row.model}: {row.gap_s:.3f} s gap ({where})"


def _overall(timeout: float | None, models: int) -> str:
    if timeout is None:
        return "no timed gap: no timeout to suggest"
    if models == 1:
        return f"suggested idle timeout: {timeout:g} s"
    return f"one idle timeout for every model: {timeout:g} s (the largest suggestion)"


def _seconds(value: float | None) -> str:
    return "none" if value is None else f"{value:g} s"


# --- the entry point -----------------------------------------------------------------


def cadence(
    source: Any,
    *,
    stall_factor: float = 20.0,
    stall_floor_s: float = 0.1,
    timeout_factor: float = 3.0,
) -> Cadence:
    """The gaps between chunks of ``source``, per provider and model: distribution, stalls, timeout.

    ``source``: a usage frame (or a ``UsageLog``); a ``Tap`` or ``TapReplay`` (its ``calls``), or
    a list of its calls (a call still streaming is left out); a folder of recordings (``*.jsonl``),
    a recording or session-log file, or a ``DshSession``; or a list of any of these but frames.

    A stall is a gap longer than ``max(stall_factor x the model's usual gap, stall_floor_s)``. The
    suggested idle timeout of a model is its p99.9 gap x ``timeout_factor``, never below the
    longest gap seen (a stream that recovered after it would have been cut), rounded up to the
    next whole second.
    """
    _check_settings(stall_factor, stall_floor_s, timeout_factor)
    settings = {
        "stall_factor": stall_factor,
        "stall_floor_s": stall_floor_s,
        "timeout_factor": timeout_factor,
    }
    if isinstance(source, UsageLog):
        source = source.to_frame()
    if isinstance(source, pd.DataFrame):
        tables = _frame_tables(source)
        basis = LARGEST_GAPS
    else:
        tables = _timed_tables(list(_timed(source)))
        basis = EVERY_GAP
    models, stalls = _report(tables, basis, settings)
    return Cadence(models=models, stalls=stalls, gaps=tables.gaps, basis=basis, **settings)


def _check_settings(stall_factor: float, stall_floor_s: float, timeout_factor: float) -> None:
    for name, value in (
        ("stall_factor", stall_factor),
        ("stall_floor_s", stall_floor_s),
        ("timeout_factor", timeout_factor),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
            raise ValueError(f"cadence: {name} must be a finite number >= 0, not {value!r}")


# --- sources: attempts with their arrival times ----------------------------------------


def _timed(source: Any) -> Iterator[_Timed]:
    """Every attempt of ``source`` (see ``cadence``) with its arrival times."""
    if isinstance(source, (str, os.PathLike)):
        yield from _timed_path(Path(source))
    elif isinstance(source, DshSession):
        yield from _timed_session(source)
    elif _is_call(source):
        yield from _timed_call(source)
    elif hasattr(source, "calls"):  # a Tap, a TapReplay (the tap layer is above this one)
        for call in list(source.calls):
            yield from _timed_call(call)
    elif isinstance(source, Iterable) and not isinstance(source, (bytes, dict, pd.DataFrame)):
        for item in source:
            yield from _timed(item)
    else:
        raise TypeError(
            "cadence: give a usage frame, a UsageLog, a Tap or TapReplay (or its calls), a folder of "
            f"recordings, a recording or session log, or a DshSession; not {type(source).__name__}"
        )


def _is_call(value: Any) -> bool:
    return all(hasattr(value, name) for name in ("result", "wire", "model", "id", "chunk_times"))


def _timed_call(call: Any) -> Iterator[_Timed]:
    result = call.result
    if result is None:  # still streaming: its gaps are not all known yet
        return
    yield _of_result(result, str(call.wire or "unknown"), str(call.model or "unknown"), str(call.id), 1)


def _of_result(result: Any, provider: str, model: str, call_id: str, attempt: int) -> _Timed:
    timings = result.timings
    return _Timed(
        provider=provider,
        model=model,
        call_id=call_id,
        attempt=attempt,
        chunk_times=list(timings.chunk_times),
        chunks=len(result.chunks),
        ttfc_s=timings.first_chunk_s,
        dropped=getattr(result, "chunks_dropped", 0),
    )


def _timed_session(session: DshSession) -> Iterator[_Timed]:
    for attempt in session.attempts:
        provider = attempt.provider or "unknown"
        yield _of_result(
            attempt.result, provider, attempt.model or "unknown", attempt.call_id, attempt.attempt
        )


def _timed_path(path: Path) -> Iterator[_Timed]:
    if path.is_dir():  # a folder of recordings, as cs.read_recordings reads it
        for file in sorted(path.glob("*.jsonl")):
            yield _timed_recording(Recording.read(file), file)
        return
    streams = load_streams(path)
    if streams and streams[0].kind == "dsh":
        yield from _timed_session(streams[0].source)
    elif streams and streams[0].kind == "recording":
        yield _timed_recording(Recording.read(path), path)
    else:  # a chunk log: no clock, so every attempt's timing is unknown
        for n, stream in enumerate(streams, 1):
            yield _Timed("unknown", "unknown", f"{path.stem}:{n}", 1, [], len(stream.chunks), None)


def _timed_recording(recording: Recording, path: Path) -> _Timed:
    header = recording.header
    result = recording_result(recording, label=f"the recording {path.name}")
    provider = str(header.get("provider") or "unknown")
    return _of_result(result, provider, str(header.get("model") or "unknown"), path.stem, 1)


# --- the tables the report is computed from --------------------------------------------


@dataclass
class _Tables:
    """What the report is computed from: ``gaps`` (the public table), each gap's attempt (a row of
    the attempt arrays), and per attempt its provider, model, wait for a first chunk, whether it
    had a measured gap, and its median gap (a frame's; NaN for sources with every gap)."""

    gaps: pd.DataFrame
    gap_rows: np.ndarray[Any, Any]
    provider: pd.Categorical
    model: pd.Categorical
    ttfc_s: np.ndarray[Any, Any]
    timed: np.ndarray[Any, Any]
    usual_s: np.ndarray[Any, Any]


_TEXT = pd.StringDtype("pyarrow")


def _timed_tables(attempts: list[_Timed]) -> _Tables:
    """One row per gap of every attempt with its arrival times."""
    columns: dict[str, list[Any]] = {name: [] for name in ("call_id", "attempt", "chunk", "gap_s", "at_s")}
    counts = np.zeros(len(attempts), dtype=np.int64)
    for n, attempt in enumerate(attempts):
        gaps = known_gaps(attempt.chunk_times, attempt.chunks)
        if gaps is None:
            continue
        size = counts[n] = len(gaps)
        columns["call_id"].append([attempt.call_id] * size)
        columns["attempt"].append(np.full(size, attempt.attempt, dtype=np.int64))
        first = attempt.dropped + 1  # a windowed stream's gaps: those of its kept chunks, at their numbers
        columns["chunk"].append(np.arange(first, first + size, dtype=np.int64))
        columns["gap_s"].append(np.asarray(gaps, dtype=np.float64))
        columns["at_s"].append(np.asarray(attempt.chunk_times[1:], dtype=np.float64))
    rows = np.repeat(np.arange(len(attempts)), counts)
    provider = pd.Categorical([a.provider for a in attempts])
    model = pd.Categorical([a.model for a in attempts])
    gaps = pd.DataFrame(
        {
            "provider": provider.take(rows),
            "model": model.take(rows),
            **{name: _joined(name, parts) for name, parts in columns.items()},
        }
    )
    ttfc = [math.nan if a.ttfc_s is None else float(a.ttfc_s) for a in attempts]
    return _Tables(
        gaps,
        rows,
        provider,
        model,
        np.array(ttfc, dtype=np.float64),
        counts > 0,
        np.full(len(attempts), np.nan),
    )


def _joined(name: str, parts: list[Any]) -> Any:
    if name == "call_id":
        return pd.array([value for part in parts for value in part], dtype=_TEXT)
    if not parts:
        return np.array([], dtype=np.int64 if name in ("attempt", "chunk") else np.float64)
    return np.concatenate(parts)


def _frame_tables(frame: pd.DataFrame) -> _Tables:
    """A usage frame's tables: one value per attempt with a gap, its largest."""
    for name in _FRAME_NEEDS:
        if name not in frame.columns:
            raise UsageSchemaError(
                f"cadence: not a usage frame with gap columns: it has no column {name!r} "
                "(cs.read_parquet reads a frame stored before them with them <NA>)",
                name,
            )
    largest = frame["max_gap_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    timed = np.isfinite(largest)  # a hand-made inf is no measured gap either
    rows = np.flatnonzero(timed)
    provider = pd.Categorical(frame["provider"])
    model = pd.Categorical(frame["model"])
    gaps = pd.DataFrame(
        {
            "provider": provider.take(rows),
            "model": model.take(rows),
            "call_id": pd.array(frame["call_id"].to_numpy()[rows], dtype=_TEXT),
            "attempt": frame["attempt"].to_numpy(dtype=np.int64)[rows],
            "chunk": frame["max_gap_at"].to_numpy(dtype=np.int64, na_value=-1)[rows],
            "gap_s": largest[rows],
            "at_s": np.full(len(rows), np.nan),
        }
    )
    ttfc = frame["ttfc_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    usual = frame["p50_gap_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    return _Tables(gaps, rows, provider, model, ttfc, timed, usual)


# --- the report ----------------------------------------------------------------------------


def _groups(
    provider: pd.Categorical, model: pd.Categorical
) -> tuple[np.ndarray[Any, Any], list[tuple[str, str]]]:
    """Each attempt's group (0, 1, ... in provider and model order) and the groups' names."""
    width = len(model.categories) + 1
    combined = (provider.codes.astype(np.int64) + 1) * width + (model.codes.astype(np.int64) + 1)
    codes, uniques = pd.factorize(combined, sort=True)
    names = [(_name(provider, int(u) // width), _name(model, int(u) % width)) for u in uniques]
    order = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    return rank[codes] if len(codes) else codes.astype(np.int64), [names[i] for i in order]


def _name(values: pd.Categorical, code: int) -> str:
    return "unknown" if code == 0 else str(values.categories[code - 1])


def _members(codes: np.ndarray[Any, Any], groups: int) -> list[np.ndarray[Any, Any]]:
    """The positions of each group's members (``codes`` sorted once, then cut)."""
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(groups + 1))
    return [order[bounds[g] : bounds[g + 1]] for g in range(groups)]


def _report(tables: _Tables, basis: str, settings: dict[str, float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    attempt_codes, names = _groups(tables.provider, tables.model)
    gap_codes = attempt_codes[tables.gap_rows]
    values = tables.gaps["gap_s"].to_numpy(dtype=np.float64)
    gap_members = _members(gap_codes, len(names))
    attempt_members = _members(attempt_codes, len(names))
    rows = [
        _model_row(name, values[gap_members[g]], gap_members[g], attempt_members[g], tables, basis, settings)
        for g, name in enumerate(names)
    ]
    models = _models_frame(rows)
    thresholds = models["stall_threshold_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    usual = models["usual_gap_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    stalls = _stalls(tables.gaps, gap_codes, thresholds, usual)
    found = gap_codes[stalls.index.to_numpy()]
    models["stalls"] = np.bincount(found, minlength=len(names)).astype(np.int64)
    models = _with_reasoning(models, basis, settings["timeout_factor"])
    return models[list(CADENCE_COLUMNS)], stalls.reset_index(drop=True)


def _usual(values: np.ndarray[Any, Any], medians: np.ndarray[Any, Any], basis: str) -> float:
    """A model's usual gap: its median gap (every gap) or the median of its attempts' medians."""
    pool = values if basis == EVERY_GAP else medians[~np.isnan(medians)]
    return float(np.median(pool)) if len(pool) else math.nan


def _model_row(
    name: tuple[str, str],
    values: np.ndarray[Any, Any],
    gap_positions: np.ndarray[Any, Any],
    attempts: np.ndarray[Any, Any],
    tables: _Tables,
    basis: str,
    settings: dict[str, float],
) -> dict[str, Any]:
    ttfc = tables.ttfc_s[attempts]
    usual = _usual(values, tables.usual_s[attempts], basis)
    threshold = max(settings["stall_factor"] * usual, settings["stall_floor_s"])
    row: dict[str, Any] = {
        "provider": name[0],
        "model": name[1],
        "attempts": len(attempts),
        "timed": int(tables.timed[attempts].sum()),
        "gaps": len(values),
        "max_ttfc_s": float(np.nanmax(ttfc)) if (~np.isnan(ttfc)).any() else math.nan,
        "usual_gap_s": usual,
        "stall_threshold_s": threshold if not math.isnan(usual) else math.nan,
    }
    if not len(values):
        row.update(dict.fromkeys(QUANTILES, math.nan), max_gap_s=math.nan, suggested_timeout_s=math.nan)
        row.update(max_gap_call=None, max_gap_chunk=None)
        return row
    row.update(zip(QUANTILES, (float(v) for v in np.quantile(values, list(QUANTILES.values()))), strict=True))
    longest = int(np.argmax(values))
    at = int(gap_positions[longest])
    row["max_gap_s"] = float(values[longest])
    row["max_gap_call"] = str(tables.gaps["call_id"].iloc[at])
    row["max_gap_chunk"] = int(tables.gaps["chunk"].iloc[at])
    row["suggested_timeout_s"] = suggested_timeout(
        row["p999_gap_s"], row["max_gap_s"], settings["timeout_factor"]
    )
    return row


def suggested_timeout(p999: float, longest: float, factor: float) -> float:
    """``max(p999 x factor, longest)`` rounded up to the next whole second above it (at least 1 s)."""
    return float(math.floor(max(p999 * factor, longest, 0.0)) + 1)


def _models_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=[c for c in CADENCE_COLUMNS if c not in ("stalls", "reasoning")])
    for name in ("provider", "model", "max_gap_call"):
        frame[name] = frame[name].astype("string")
    for name in ("attempts", "timed", "gaps"):
        frame[name] = frame[name].astype("int64")
    frame["max_gap_chunk"] = frame["max_gap_chunk"].astype("Int64")
    for name in (
        *QUANTILES,
        "max_gap_s",
        "usual_gap_s",
        "stall_threshold_s",
        "max_ttfc_s",
        "suggested_timeout_s",
    ):
        frame[name] = frame[name].astype("Float64")
    return frame


def _stalls(
    gaps: pd.DataFrame,
    codes: np.ndarray[Any, Any],
    thresholds: np.ndarray[Any, Any],
    usual: np.ndarray[Any, Any],
) -> pd.DataFrame:
    """One row per gap past its model's threshold, the longest first (index: the gap's row)."""
    threshold = thresholds[codes]
    found = np.flatnonzero(gaps["gap_s"].to_numpy() > threshold)
    stalls = gaps.iloc[found].copy()
    stalls["usual_gap_s"] = usual[codes[found]]
    stalls["threshold_s"] = threshold[found]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = stalls["gap_s"].to_numpy() / stalls["usual_gap_s"].to_numpy()
    stalls["times_usual"] = pd.array(np.where(np.isfinite(ratio), ratio, np.nan), dtype="Float64")
    stalls["at_s"] = pd.array(stalls["at_s"].to_numpy(), dtype="Float64")
    stalls.index = found
    return stalls.sort_values("gap_s", ascending=False, kind="stable")[list(STALL_COLUMNS)]


# --- the reasoning, in words -----------------------------------------------------------------


def _with_reasoning(models: pd.DataFrame, basis: str, factor: float) -> pd.DataFrame:
    models["reasoning"] = pd.array(
        [_reasoning(row, basis, factor) for row in models.itertuples(index=False)], dtype="string"
    )
    return models


def _reasoning(row: Any, basis: str, factor: float) -> str:
    if row.gaps == 0:
        unknown = "timing unknown, or under 2 chunks"
        return f"no timed gap in {row.attempts} attempt(s) ({unknown}): nothing to suggest"
    what = "gaps" if basis == EVERY_GAP else "attempts' largest gaps"
    scaled = row.p999_gap_s * factor
    parts = [f"p99.9 of {row.gaps:,} {what} = {row.p999_gap_s:.3f} s; x {factor:g} = {scaled:.3f} s."]
    where = f"call {row.max_gap_call}, before chunk {row.max_gap_chunk}"
    if row.max_gap_s > scaled:
        parts.append(
            f"The longest gap seen, {row.max_gap_s:.3f} s ({where}), is longer: the timeout must let "
            "a stream that recovered after it through."
        )
    parts.append(f"Rounded up to the next whole second: {row.suggested_timeout_s:g} s.")
    if row.gaps < 1000:
        parts.append(f"Under 1,000 {what}: the p99.9 is near their largest; more calls make it surer.")
    if not pd.isna(row.max_ttfc_s) and row.max_ttfc_s >= row.suggested_timeout_s:
        parts.append(
            f"The wait for a first chunk reached {row.max_ttfc_s:.3f} s: a timeout that also covers "
            "that wait must be longer."
        )
    return " ".join(parts)
