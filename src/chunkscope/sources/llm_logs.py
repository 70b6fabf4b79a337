"""The ``llm`` command-line tool's ``logs.db`` (Simon Willison's ``llm``): one record per logged response.

``llm`` logs every prompt and response to a SQLite database (``llm logs path``).
Since llm 0.36 a response is a row of ``turns`` (its ``thread_id`` is the
conversation); older versions wrote ``responses`` (with ``conversation_id``),
which newer ones keep and still read. Both are read here, a response logged in
both counted once. The database is opened read-only; nothing is written.

Each record keeps llm's own counts: ``input_tokens`` / ``output_tokens`` and the
provider's JSON ``token_details``. ``LlmLogResponse.counts()`` turns them into
chunkscope's disjoint counts (cache reads taken out of an inclusive input), and
the usage layer (``cs.read_llm_logs``) makes the frame. Uses only the standard
library (``sqlite3``).

What the response held is read from where llm keeps it, never assumed: a turn's
own messages (from its ``tip_message_hash`` back to its ``parent_message_hash``)
and their ``parts`` (``text``, ``reasoning``, ``tool_call``; a call the provider
ran on its own servers is no tool call for the client); for a legacy row, its
``response`` text, its ``reasoning`` and its rows in ``tool_calls``. The
plugin's ``response_json`` is kept for the usage layer, which reads the finish
from it with the wires' own readers; llm logs no finish of its own.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ._errors import UnreadableSourceError

__all__ = ["SQLITE_MAGIC", "Blocks", "LlmLogResponse", "is_sqlite", "read_llm_responses"]

SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""

_MAX_COUNT = 2**63  # a count at or above it is out of range: the usage layer marks the row invalid


def is_sqlite(first_bytes: bytes) -> bool:
    """True when the file's first bytes are SQLite's header string."""
    return first_bytes[:16] == SQLITE_MAGIC


@dataclass(frozen=True)
class Blocks:
    """How many blocks of each kind a logged response held."""

    text: int = 0
    reasoning: int = 0
    tool_calls: int = 0

    def __add__(self, other: Blocks) -> Blocks:
        return Blocks(
            self.text + other.text, self.reasoning + other.reasoning, self.tool_calls + other.tool_calls
        )


@dataclass(frozen=True)
class LlmLogResponse:
    """One logged response: ids, model, times and llm's token counts as stored."""

    id: str
    conversation_id: str | None
    model: str
    resolved_model: str | None
    started_at: float | None  # seconds since the epoch (llm's datetime_utc), None when unreadable
    duration_s: float
    input_tokens: Any  # as stored: an int, or NULL, or whatever else SQLite's loose typing let in
    output_tokens: Any
    token_details: dict[str, Any] | None
    blocks: Blocks | None = None  # what the response held, by kind; None when the log does not say
    response_json: dict[str, Any] | None = None  # the plugin's raw response, as logged

    def counts(self) -> dict[str, int] | None:
        """Disjoint counts for a ``TokenUsage``; None when llm logged no counts.

        From ``token_details`` where present: cache reads (OpenAI's ``cached_tokens`` in
        ``prompt_tokens_details`` / ``input_tokens_details``, Gemini's
        ``cachedContentTokenCount``: inside its input, so taken out of it; Anthropic's
        ``cache_read_input_tokens``: already apart), cache writes (Anthropic's
        ``cache_creation_input_tokens``) and reasoning (``reasoning_tokens`` in
        ``completion_tokens_details`` / ``output_tokens_details``, Gemini's
        ``thoughtsTokenCount``). A count that is not a whole number is out of range, so the
        usage layer marks the row ``invalid`` rather than guessing.
        """
        if self.input_tokens is None and self.output_tokens is None:
            return None
        details = self.token_details or {}
        inclusive_cached = _first(
            details,
            ("prompt_tokens_details", "cached_tokens"),
            ("input_tokens_details", "cached_tokens"),
            ("cachedContentTokenCount",),
        )
        apart_cached = _first(details, ("cache_read_input_tokens",))
        written = _first(details, ("cache_creation_input_tokens",))
        reasoning = _first(
            details,
            ("completion_tokens_details", "reasoning_tokens"),
            ("output_tokens_details", "reasoning_tokens"),
            ("thoughtsTokenCount",),
        )
        uncached = _count(self.input_tokens)
        if inclusive_cached is not None and uncached < _MAX_COUNT:
            uncached -= inclusive_cached  # negative when the details disagree: refused as invalid
        cache_read = apart_cached if inclusive_cached is None else inclusive_cached
        out = {"input_tokens": uncached, "output_tokens": _count(self.output_tokens)}
        for name, value in (
            ("cache_read_tokens", cache_read),
            ("cache_write_tokens", written),
            ("reasoning_tokens", reasoning),
        ):
            if value is not None:
                out[name] = value
        return out


def read_llm_responses(path: str | os.PathLike[str]) -> list[LlmLogResponse]:
    """Every response in an ``llm`` ``logs.db``, oldest first; an ``UnreadableSourceError`` (a
    ``SourceError``) for a file that is not SQLite, a database without llm's tables, or a broken one."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as handle:
            head = handle.read(16)
    except OSError as exc:
        raise UnreadableSourceError(f"{name}: cannot read it ({exc.strerror or exc})", name) from None
    if not is_sqlite(head):
        raise UnreadableSourceError(f"{name}: not a SQLite database (an llm logs.db starts with one)", name)
    try:
        # read-only, and immutable: no journal, no lock, no write even by SQLite itself
        connection = sqlite3.connect(f"{_file_uri(name)}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as exc:
        raise UnreadableSourceError(f"{name}: cannot open the SQLite database ({exc})", name) from None
    try:
        return _read(connection, name)
    except sqlite3.Error as exc:
        raise UnreadableSourceError(f"{name}: a broken SQLite database ({exc})", name) from None
    finally:
        connection.close()


def _read(connection: sqlite3.Connection, name: str) -> list[LlmLogResponse]:
    tables = {row[0] for row in connection.execute("select name from sqlite_master where type = 'table'")}
    if not tables & {"turns", "responses"}:
        raise UnreadableSourceError(
            f"{name}: a SQLite database without llm's tables (turns, responses): not an llm logs.db", name
        )
    found: dict[str, LlmLogResponse] = {}
    for table, conversation in (("turns", "thread_id"), ("responses", "conversation_id")):
        if table not in tables:
            continue
        columns = _columns(connection, table)
        wanted = ["id", conversation, "model", "resolved_model", "datetime_utc", "duration_ms"]
        wanted += ["input_tokens", "output_tokens", "token_details", "response_json"]
        if table == "turns":
            wanted += ["tip_message_hash", "parent_message_hash"]
            blocks_of = _turn_blocks(connection, tables)
        else:
            wanted += ["response", "reasoning"]
            blocks_of = _legacy_blocks(connection, tables, has_reasoning="reasoning" in columns)
        select = ", ".join(column if column in columns else "null" for column in wanted)
        for row in connection.execute(f"select {select} from {table}"):
            response = _response(row[:10], blocks_of(row[0], *row[10:]))
            found.setdefault(response.id, response)  # a turn wins over its legacy copy
    return sorted(found.values(), key=lambda r: (r.started_at is None, r.started_at or 0.0, r.id))


def _columns(connection: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in connection.execute(f"pragma table_info({table})")}


def _turn_blocks(connection: sqlite3.Connection, tables: set[str]) -> Any:
    """``(id, tip, parent) -> Blocks | None``: the parts of a turn's own assistant messages."""
    if not {"messages", "parts"} <= tables:
        return lambda rid, tip, parent: None
    messages: dict[str, tuple[str | None, str | None]] = {
        str(h): (None if p is None else str(p), r)
        for h, p, r in connection.execute("select hash, parent_hash, role from messages")
    }
    counts: dict[str, Blocks] = {}
    for message, kind, payload in connection.execute("select message_hash, type, payload from parts"):
        if kind == "text":
            part = Blocks(text=1)
        elif kind == "reasoning":
            part = Blocks(reasoning=1)
        elif kind == "tool_call" and not _server_executed(payload):
            part = Blocks(tool_calls=1)
        else:
            continue
        counts[str(message)] = counts.get(str(message), Blocks()) + part

    def blocks(rid: Any, tip: Any, parent: Any) -> Blocks | None:
        total, current, seen = Blocks(), tip, set()
        while current is not None and current != parent:
            if current not in messages or current in seen:
                return None  # a chain llm did not write whole: the log does not say
            seen.add(current)
            up, role = messages[current]
            if role == "assistant":
                total += counts.get(current, Blocks())
            current = up
        return total

    return blocks


def _legacy_blocks(connection: sqlite3.Connection, tables: set[str], *, has_reasoning: bool) -> Any:
    """``(id, response, reasoning) -> Blocks | None`` of a legacy ``responses`` row."""
    calls: dict[str, int] = {}
    if "tool_calls" in tables and "response_id" in _columns(connection, "tool_calls"):
        for rid, n in connection.execute("select response_id, count(*) from tool_calls group by response_id"):
            calls[str(rid)] = n

    def blocks(rid: Any, text: Any, reasoning: Any) -> Blocks | None:
        if not isinstance(text, str):
            return None
        thought = 1 if has_reasoning and isinstance(reasoning, str) and reasoning else 0
        return Blocks(text=1 if text else 0, reasoning=thought, tool_calls=calls.get(str(rid), 0))

    return blocks


def _server_executed(payload: Any) -> bool:
    """Whether a ``tool_call`` part is one the provider ran itself (llm's ``server_executed``)."""
    details = _details(payload)
    return bool(details and details.get("server_executed") is True)


def _response(row: tuple[Any, ...], blocks: Blocks | None) -> LlmLogResponse:
    rid, conversation, model, resolved, when, duration_ms, inp, out, details, raw = row
    return LlmLogResponse(
        id=str(rid),
        conversation_id=None if conversation is None else str(conversation),
        model=str(model) if model is not None else "",
        resolved_model=None if resolved is None else str(resolved),
        started_at=_epoch(when),
        duration_s=_seconds(duration_ms),
        input_tokens=inp,
        output_tokens=out,
        token_details=_details(details),
        blocks=blocks,
        response_json=_details(raw),
    )


def _count(value: Any) -> int:
    """A stored count as an int; anything but a whole number is out of range (-> invalid row)."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return _MAX_COUNT


def _first(details: dict[str, Any], *paths: tuple[str, ...]) -> int | None:
    for path in paths:
        value: Any = details
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            return _count(value)
    return None


def _details(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str) or len(text) > 1 << 20:  # a megabyte of details is not token details
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _epoch(text: Any) -> float | None:
    """llm's ``datetime_utc`` (an ISO date-time, naive = UTC) as seconds since the epoch."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _seconds(duration_ms: Any) -> float:
    ok = isinstance(duration_ms, (int, float)) and not isinstance(duration_ms, bool)
    if not ok or not 0 <= duration_ms < 1e15:
        return 0.0
    return float(duration_ms) / 1000.0


def _file_uri(name: str) -> str:
    from pathlib import Path

    return Path(name).resolve().as_uri()
