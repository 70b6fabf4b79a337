"""``chunkscope usage FILES...``: the usage summary of recorded streams, as a table or a file.

A folder given as a FILE is read as a whole: every file in it and its subfolders whose
name ends as a recording, a session log or an llm database does (``FOLDER_SUFFIXES``;
the kind is still told by the content), hidden folders and files left out, in name order.

Each file is read by ``cli._inputs`` (bounded, refused with one sentence when it
cannot be read) and must carry a provider and a model: a recording (its header
names them) or a DeepSeek Harness session log (``.jsonl`` or ``.jsonl.zstd``;
its attempts are recorded as ``DshSession.record_into`` records them: retries
share a call id). Every recorded stream becomes one attempt of a usage frame (``UsageLog``),
costs come from ``--prices`` (a ``PriceTable`` file, ``.toml`` or ``.json``), and
``chunkscope.summary`` groups it ``--by`` the named frame columns.

Output: a rich table on stdout (the main figures of each group), or with
``-o OUT.csv`` / ``-o OUT.parquet`` every column of the summary written to that
file (index columns included).

Exit status: 0 summarised; 2 bad arguments or any file that cannot be read or
holds a token count out of range (negative, or 2**63 and above) — each such file
named on stderr, one line each, and no summary (a total that silently leaves a
file or a count out would be wrong).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._args import CommandLineError, plural, report, terse_errors
from ._inputs import analyze, load_streams, read_bounded
from ._output import pipe_safe, printable

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from chunkscope.sources import LoadedStream

__all__ = ["USAGE_HELP", "add_usage_parser", "build_frame", "run_usage"]

USAGE_HELP = (
    "the usage summary (calls, errors by code, tokens, cache hits, cost, latency) of recordings "
    "and DeepSeek Harness session logs"
)

_USABLE_KINDS = ("recording", "dsh")
"""File kinds that name their provider and model (a chunk log names neither)."""

_OUTPUT_SUFFIXES = (".csv", ".parquet")

FOLDER_SUFFIXES = (".jsonl", ".jsonl.zstd", ".jsonl.zst", ".db", ".sqlite", ".sqlite3")
"""The file names read in a folder: recordings and session logs (``.jsonl``, zstd-compressed
ones) and llm databases (``logs.db``). Others (a README, the tap's unfinished ``.part``) are
not streams."""


def expand_folders(paths: list[str]) -> tuple[list[str], list[str]]:
    """``paths`` with each folder replaced by the files it holds (``FOLDER_SUFFIXES``, sorted,
    recursively, hidden ones left out), and one problem per folder that holds none."""
    files: list[str] = []
    problems: list[str] = []
    for path in paths:
        if not os.path.isdir(path):
            files.append(path)
            continue
        found = _streams_in(path)
        if not found:
            kinds = ", ".join(f"*{suffix}" for suffix in FOLDER_SUFFIXES)
            problems.append(f"{path}: a folder without recordings, session logs or llm logs ({kinds})")
        files.extend(found)
    return files, problems


def _streams_in(folder: str) -> list[str]:
    """The stream files under ``folder`` (``FOLDER_SUFFIXES``), sorted, hidden ones left out."""
    found = []
    for root, folders, names in os.walk(folder):
        folders[:] = [f for f in folders if not f.startswith(".")]  # .ipynb_checkpoints, .git
        found += [
            os.path.join(root, name)
            for name in names
            if not name.startswith(".") and name.lower().endswith(FOLDER_SUFFIXES)
        ]
    return sorted(found)


def _record(log: Any, stream: LoadedStream, call_id: str) -> None:
    """One stream as one attempt of ``log``, with the recording's own clock."""
    result = analyze(stream, "strict")
    if stream.times is not None:
        times = stream.times
        result.timings.first_chunk_s = times[0] if times else None
        result.timings.chunk_times = list(times)
        ends = [*times, stream.error_t] if stream.error_t is not None else times
        result.timings.total_s = max(ends) if ends else 0.0
    from chunkscope.adapters.recording import recording_started

    result.timings.started_at = recording_started(stream.header)
    log.record(
        result,
        provider=str(stream.header.get("provider") or "unknown"),
        model=str(stream.header.get("model") or "unknown"),
        call_id=call_id,
    )


def _call_id(path: str, stream: LoadedStream) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    return f"{stem}:{stream.label}" if stream.label else stem


def _record_file(log: Any, path: str) -> None:
    """Every stream of one file into ``log``; ``CommandLineError`` when the file cannot be used."""
    if _llm_logs(log, path):  # an llm logs.db: one row per logged response
        return
    streams = load_streams(path)
    if any(s.kind not in _USABLE_KINDS for s in streams):
        raise CommandLineError(
            f"{path}: a chunk log names no provider or model; usage reads recordings "
            "(chunkscope record, RecordingAdapter), session logs and llm logs.db files"
        )
    if streams[0].kind == "dsh":
        # the session-log reader's own record (the file is not read again: a pipe reads once):
        # call ids, attempts, retries and tags as in its frame
        streams[0].source.record_into(log)
        return
    for stream in streams:
        _record(log, stream, _call_id(path, stream))


def _file_problem(log: Any, path: str) -> str | None:
    """Record one file into ``log``; the one sentence saying why it cannot be used, else None."""
    invalid_before = log.totals()["invalid_usage"]
    try:
        _record_file(log, path)
    except CommandLineError as exc:
        return str(exc)
    except RecursionError:
        return f"{path}: JSON nested too deeply"
    except (ValueError, TypeError) as exc:  # a value the usage log refuses (an attempt number)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"{path}: {first}"
    invalid = log.totals()["invalid_usage"] - invalid_before
    if invalid:
        # A total that leaves such a count out would look right and be wrong: refused.
        return (
            f"{path}: {plural(invalid, 'usage report')} with a token count out of "
            f"range (negative, or 2**63 and above)"
        )
    return None


def build_frame(paths: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """The usage frame of every stream in ``paths`` (one attempt each) and the problems met.

    A problem is one sentence per file that could not be used; the frame holds the others.
    """
    from chunkscope import UsageLog

    log = UsageLog()
    problems = [problem for problem in (_file_problem(log, path) for path in paths) if problem is not None]
    return log.to_frame(), problems


def _llm_logs(log: Any, path: str) -> bool:
    """Record ``path`` into ``log`` if it is a SQLite file (an llm logs.db); False when it is not one."""
    from chunkscope.sources import SourceError
    from chunkscope.sources.llm_logs import is_sqlite, read_llm_responses
    from chunkscope.usage import record_llm_logs

    if not os.path.isfile(path):
        return False  # a pipe is read once, by load_streams (SQLite needs a real file anyway)
    try:
        with open(path, "rb") as handle:
            if not is_sqlite(handle.read(16)):
                return False
    except OSError:
        return False  # load_streams reports it, in its words
    try:
        record_llm_logs(log, read_llm_responses(path))
    except SourceError as exc:
        raise CommandLineError(str(exc)) from None
    return True


def _keys(by: str) -> list[str]:
    from chunkscope.usage import COLUMNS

    keys = [key.strip() for key in by.split(",") if key.strip()]
    unknown = [key for key in keys if key not in COLUMNS]
    if unknown:
        choices = "provider, model, finish, error_code, tags, call_id, ..."
        raise CommandLineError(
            f"--by: no column {', '.join(map(repr, unknown))} in a usage frame ({choices})"
        )
    if len(set(keys)) != len(keys):
        raise CommandLineError(f"--by: a column named twice ({by!r})")
    return keys


def _prices(path: str) -> Any:
    from chunkscope import PriceTable

    if path == "genai-prices" and not os.path.exists(path):  # the name, unless a file is so named
        return PriceTable.from_genai_prices()
    try:
        if not os.path.isfile(path):
            # a pipe, a FIFO, /dev/stdin, a device: read once and bounded, then read as a table
            return _prices_from_stream(path)
        if os.path.getsize(path) > MAX_PRICES_BYTES:
            raise ValueError(f"over the {MAX_PRICES_BYTES:,}-byte limit; not read")
        return PriceTable.load(path)
    except OSError as exc:
        raise CommandLineError(f"--prices {path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise CommandLineError(f"--prices {path}: not UTF-8 text") from None
    except ValueError as exc:
        message = str(exc).splitlines()[0] if str(exc) else "not a price table"
        # PriceTable.load names its file first; the flag's prefix already does
        message = message.removeprefix(f"{os.fspath(Path(path))}: ").removeprefix(f"{path}: ")
        raise CommandLineError(f"--prices {path}: {message}") from None


MAX_PRICES_BYTES = 16 * 1024 * 1024
"""The largest ``--prices`` file read (16 MiB: a price table is a few KiB)."""


def _prices_from_stream(path: str) -> Any:
    """A price table from a file that is not a regular one, read once (at most ``MAX_PRICES_BYTES``).

    ``PriceTable.load`` reads a path by its suffix; the bytes are handed to it in a private
    temporary file named ``.json`` when they start as JSON does, else ``.toml``.
    """
    import tempfile

    from chunkscope import PriceTable

    data = read_bounded(path, MAX_PRICES_BYTES)
    suffix = ".toml" if path.lower().endswith(".toml") or not data.lstrip().startswith(b"{") else ".json"
    with tempfile.TemporaryDirectory(prefix="chunkscope-prices-") as folder:
        copy = os.path.join(folder, "prices" + suffix)
        with open(copy, "wb") as handle:
            handle.write(data)
        try:
            return PriceTable.load(copy)
        except ValueError as exc:
            raise ValueError(str(exc).replace(copy, path)) from None


def _check_output(out: str | None) -> None:
    if out is None:
        return
    if os.path.splitext(out)[1].lower() not in _OUTPUT_SUFFIXES:
        raise CommandLineError(f"-o {out}: write a .csv or a .parquet file")
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        raise CommandLineError(f"-o {out}: no directory {folder}")


def _write(table: pd.DataFrame, out: str) -> None:
    flat = table.reset_index()
    if out.lower().endswith(".csv"):
        flat.to_csv(out, index=False)
    else:
        flat.to_parquet(out, index=False, engine="pyarrow")


def _missing(value: Any) -> bool:
    import pandas as pd

    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


def _number(value: Any, *, digits: int = 0, percent: bool = False) -> str:
    if _missing(value):
        return "-"
    if percent:
        return f"{float(value) * 100:.1f}%"
    if digits:
        return f"{float(value):.{digits}f}"
    return f"{int(value):,}"


def _figure(name: str, value: Any) -> str:
    """One summary figure as the table shows it: rates in percent, costs to 6 places, seconds to 2."""
    if name == "cache_hit_rate":
        return _number(value, percent=True)
    if name == "cost":
        return _number(value, digits=6)
    if name.endswith("_s"):
        return _number(value, digits=2)
    return _number(value)


def _currency(frame: pd.DataFrame) -> str:
    """The one currency of every cost, or "" when there is none or more than one."""
    if "currency" not in frame.columns:
        return ""
    seen = [str(c) for c in frame["currency"].dropna().unique()]
    return seen[0] if len(seen) == 1 else ""


def _empty_table(keys: list[str], currency: str, attempts: int) -> Any:
    from rich import box
    from rich.table import Table

    out = Table(
        title=f"usage of {plural(attempts, 'attempt')}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for key in keys:
        out.add_column(key, overflow="fold")  # long names wrap; the figures never do
    for _, title in _TABLE_COLUMNS:
        title = f"{title} {currency}" if title == "cost" and currency else title
        out.add_column(title, justify="right", min_width=len(title), no_wrap=True)
    return out


def render_table(table: pd.DataFrame, frame: pd.DataFrame) -> Any:
    """The summary's main figures as rich renderables: a table, one row per group, then one
    line per group that had failures with its errors by code."""
    from rich.console import Group
    from rich.text import Text

    out = _empty_table([name or "group" for name in table.index.names], _currency(frame), len(frame))
    codes = [c for c in table.columns if c.startswith("errors_")]
    notes: list[Text] = []
    for (index, row), reported in zip(table.iterrows(), _reported(table, frame), strict=True):
        group = _group_names(index)
        # A group none of whose attempts reported usage has unknown tokens, not 0 of them.
        figures = [
            "-" if name in _TOKEN_FIGURES and not reported else _figure(name, row[name])
            for name, _ in _TABLE_COLUMNS
        ]
        out.add_row(*group, *figures)
        notes += [Text(line) for line in _row_notes(" ".join(group), row, reported, codes)]
    return Group(out, *notes)


def _row_notes(group: str, row: pd.Series, reported: bool, codes: list[str]) -> list[str]:
    """The lines under the table for one group: usage none of its attempts reported, its errors by code."""
    notes = []
    if not reported:
        attempts = plural(int(row["attempts"]), "attempt")
        notes.append(f"usage missing, {group}: {attempts}, none with usage reported")
    errors = [f"{printable(c.removeprefix('errors_'))} {int(row[c])}" for c in codes if int(row[c])]
    if errors:
        notes.append(f"errors by code, {group}: {', '.join(errors)}")
    return notes


_TOKEN_FIGURES = frozenset({"input_tokens", "output_tokens"})


def _reported(table: pd.DataFrame, frame: pd.DataFrame) -> list[bool]:
    """For each summary row, whether any attempt of its group reported usage."""
    keys = [name for name in table.index.names if name is not None]
    if not keys:  # one row for the whole frame
        return [bool(frame["input_tokens"].notna().any())] * len(table)
    counts = frame.groupby(keys, observed=True, dropna=False)["input_tokens"].count()
    return [bool(n) for n in counts.reindex(table.index).fillna(0)]


def _group_names(index: Any) -> list[str]:
    """A summary row's group, one printable name per ``--by`` column ("-" for a missing one)."""
    values = index if isinstance(index, tuple) else (index,)
    return ["-" if _missing(v) else printable(str(v)) for v in values]


_TABLE_COLUMNS = (
    ("calls", "calls"),
    ("retries", "retries"),
    ("failed_calls", "failed"),
    ("input_tokens", "in"),
    ("output_tokens", "out"),
    ("cache_hit_rate", "cache"),
    ("cost", "cost"),
    ("duration_p50_s", "p50 s"),
)
"""The summary columns the table shows (every one goes to ``-o``), with their headings."""


def _refuse(problems: list[str], files: int) -> int:
    """Name every file that cannot be used, one line each, and give no summary: exit status 2."""
    for problem in problems:
        print(f"chunkscope usage: {printable(problem)}", file=sys.stderr)
    return report("usage", f"{len(problems)} of {plural(files, 'file')} unreadable; no summary")


def _priced(frame: pd.DataFrame, prices: Any) -> pd.DataFrame:
    """``frame`` with its costs from ``prices`` (None: as it is); a model without a price is noted."""
    if prices is None:
        return frame
    from chunkscope import UnpricedModelWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnpricedModelWarning)
        frame = prices.add_costs(frame)
    for warning in caught:
        print(f"chunkscope usage: note: {printable(str(warning.message))}", file=sys.stderr)
    return frame


def _write_out(table: pd.DataFrame, frame: pd.DataFrame, out: str) -> int:
    try:
        _write(table, out)
    except OSError as exc:
        return report("usage", f"-o {printable(out)}: cannot write it ({exc.strerror or exc})")
    print(f"{plural(len(table), 'group')} of {plural(len(frame), 'attempt')} written to {printable(out)}")
    return 0


def run_usage(
    paths: list[str],
    *,
    by: str = "provider,model",
    prices: str | None = None,
    out: str | None = None,
    console: Console | None = None,
) -> int:
    """Summarise ``paths``; print the table or write ``out``; return the exit status."""
    try:
        keys = _keys(by)
        table_of_prices = _prices(prices) if prices is not None else None
        _check_output(out)
    except CommandLineError as exc:
        return report("usage", printable(str(exc)))
    files, empty = expand_folders(paths)
    frame, problems = build_frame(files)
    if empty or problems:
        return _refuse(empty + problems, len(files) + len(empty))
    frame = _priced(frame, table_of_prices)
    from chunkscope import summary

    try:
        table = summary(frame, by=keys)
    except (ValueError, TypeError) as exc:  # --by was checked against the columns; this is a guard
        return report("usage", f"--by: {printable(str(exc))}")
    if out is not None:
        return _write_out(table, frame, out)
    from rich.console import Console

    (console or Console(highlight=False)).print(render_table(table, frame))
    return 0


def add_usage_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``chunkscope usage``."""
    parser = subparsers.add_parser(
        "usage",
        help=USAGE_HELP,
        description=USAGE_HELP
        + ". Exit status: 0 summarised, 2 bad arguments or a file that cannot be read (then no summary).",
    )
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="a recording (chunkscope record, RecordingAdapter, the tap), a session log (.jsonl / "
        ".jsonl.zstd), an llm logs.db, or a folder of them (read as a whole)",
    )
    parser.add_argument(
        "--by",
        default="provider,model",
        metavar="COLUMNS",
        help="usage-frame columns to group by, comma-separated (default provider,model; '' for one row)",
    )
    parser.add_argument(
        "--prices",
        metavar="FILE",
        default=None,
        help="a PriceTable file (.toml or .json), or genai-prices, for the cost column",
    )
    parser.add_argument(
        "-o",
        "--output",
        dest="out",
        metavar="OUT",
        default=None,
        help="write every summary column to OUT.csv or OUT.parquet instead of printing a table",
    )
    terse_errors(parser)
    parser.set_defaults(
        func=lambda args: pipe_safe(
            lambda: run_usage(args.files, by=args.by, prices=args.prices, out=args.out)
        )
    )
