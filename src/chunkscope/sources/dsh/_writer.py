"""Write session logs in the DeepSeek Harness format (fixtures, benchmarks, round trips).

``DshLogWriter`` writes what the harness's agent loop writes for a step (see
``docs/dsh-session-log.md``): ``step/start``, ``request/header`` when the route
changes, every chunk of every attempt as ``assistant/chunk`` (runs of three or
more deltas packed into one row, as ``packChunks: true`` does), ``llm/retry`` and
``llm/retry-started`` between a failed attempt and its retry, the
``assistant/message`` with the assembled blocks and usage, and ``step/end``.
With ``compress=True`` it writes ``session.jsonl.zstd`` form: one zstd frame
for the header, then one per step (an append batch).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import IO, Any

from chunkscope.protocol import BlockAssembler, ChunkLike, chunk_to_dict

__all__ = ["DshLogWriter"]

_ROW_OF_DELTA = {
    "text-delta": "text-chunks",
    "reasoning-delta": "reasoning-chunks",
    "tool-call-delta": "tool-call-chunks",
}


class DshLogWriter:
    """Writes one session log; use as a context manager (or call ``close``).

    ``timed=False`` leaves out ``seq``/``time``/``seq0``/``time0``, as the
    harness's committed logs do. Times start at ``start_ms`` and advance by
    ``gap_ms`` per event unless a step passes its own.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        session_id: str = "sess-1",
        packed: bool = True,
        compress: bool = False,
        timed: bool = True,
        start_ms: int = 1_784_973_850_000,
        gap_ms: int = 13,
        header: dict[str, Any] | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.packed = packed
        self.timed = timed
        self.gap_ms = gap_ms
        self.seq = 0
        self.time = start_ms
        self._route: tuple[str, str] | None = None
        self._batch: list[str] = []
        self._compressor: Any = None
        if compress:
            import zstandard

            self._compressor = zstandard.ZstdCompressor(write_checksum=True)
        self._handle: IO[bytes] = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        first = {
            "type": "session",
            "version": 0,
            "id": session_id,
            "createdAt": start_ms,
            "delegationDepth": 0,
        }
        first.update(header or {})
        self._batch.append(_dumps(first))
        self.flush()

    # --- low level ---

    def event(self, kind: str, data: dict[str, Any], **extra: Any) -> int:
        """Append one event (``seq`` and ``time`` filled in); returns its seq."""
        seq = self.seq
        record: dict[str, Any] = {"type": kind}
        if self.timed:
            record["seq"] = seq
            record["time"] = self.time
        record["data"] = data
        record.update(extra)
        self._batch.append(_dumps(record))
        self.seq += 1
        self.time += self.gap_ms
        return seq

    def chunks(self, turn: int, step: int, chunks: Iterable[ChunkLike]) -> list[int]:
        """Append ``chunks`` as ``assistant/chunk`` events (packing delta runs); returns their seqs."""
        dicts = [chunk_to_dict(chunk) for chunk in chunks]
        seqs: list[int] = []
        i = 0
        while i < len(dicts):
            run = _run_length(dicts, i) if self.packed else 1
            if run >= 3:
                seqs.extend(self._packed_row(turn, step, dicts[i : i + run]))
                i += run
                continue
            seqs.append(self.event("assistant/chunk", {"turn": turn, "step": step, "chunk": dicts[i]}))
            i += 1
        return seqs

    def _packed_row(self, turn: int, step: int, members: list[dict[str, Any]]) -> list[int]:
        first = members[0]
        row = _ROW_OF_DELTA[first["type"]]
        data: dict[str, Any] = {"turn": turn, "step": step, "index": first["index"]}
        if row == "tool-call-chunks":
            data["id"] = first["id"]
            if "name" in first:
                data["name"] = first["name"]
            data["dt"] = [self.gap_ms] * (len(members) - 1)
            data["args"] = [member["argumentsDelta"] for member in members]
        else:
            data["dt"] = [self.gap_ms] * (len(members) - 1)
            data["texts"] = [member["text"] for member in members]
        record: dict[str, Any] = {"type": row}
        if self.timed:
            record["seq0"] = self.seq
            record["time0"] = self.time
        record["data"] = data
        self._batch.append(_dumps(record))
        seqs = list(range(self.seq, self.seq + len(members)))
        self.seq += len(members)
        self.time += self.gap_ms * len(members)
        return seqs

    def raw(self, line: str | bytes) -> None:
        """Append a line exactly as given (for malformed-input tests)."""
        self._batch.append(line.decode("utf-8", "surrogateescape") if isinstance(line, bytes) else line)

    def flush(self) -> None:
        """Write the pending batch (one zstd frame when compressing)."""
        if not self._batch:
            return
        data = ("\n".join(self._batch) + "\n").encode("utf-8", "surrogateescape")
        self._batch.clear()
        if self._compressor is not None:
            data = self._compressor.compress(data)
        self._handle.write(data)

    def close(self) -> None:
        """Flush and close the file."""
        if not self._handle.closed:
            self.flush()
            self._handle.close()

    def __enter__(self) -> DshLogWriter:
        return self

    def __exit__(self, *exc: object | TracebackType | None) -> None:
        self.close()

    # --- high level ---

    def turn_start(self, turn: int) -> None:
        """Append ``turn/start``."""
        self.event("turn/start", {"turn": turn})

    def turn_end(self, turn: int, reason: dict[str, Any] | None = None) -> None:
        """Append ``turn/end`` (``completed`` unless ``reason``) and flush the batch."""
        self.event("turn/end", {"turn": turn, "reason": reason or {"kind": "completed"}})
        self.flush()

    def step(
        self,
        turn: int,
        step: int,
        chunks: Sequence[ChunkLike],
        *,
        failed: Sequence[Sequence[ChunkLike]] = (),
        provider: str = "deepseek-official",
        model: str = "deepseek-v4-flash",
        retry_delay_ms: float = 512.3,
        message: bool = True,
    ) -> None:
        """Append one step: each ``failed`` attempt (error finish) and its retry, then ``chunks``.

        The ``assistant/message`` is written when the last attempt finishes with
        ``stop``, ``tool-calls`` or ``max-tokens`` (and ``message``), as the harness does.
        """
        self.event("step/start", {"turn": turn, "step": step})
        if self._route != (provider, model):
            self._route = (provider, model)
            header = {"config": {"provider": provider, "model": model}}
            self.event("request/header", {"header": header, "reason": "initial"})
            self.event("request/context", {"provider": provider, "model": model})
        for number, attempt in enumerate(failed, start=1):
            self.chunks(turn, step, attempt)
            failure = _failure_of(attempt)
            retry_id = str(uuid.UUID(int=self.seq))
            self.event(
                "llm/retry",
                {
                    "retryId": retry_id,
                    "turn": turn,
                    "step": step,
                    "provider": provider,
                    "mode": "normal",
                    "policyKey": "[]",
                    "retry": number,
                    "maxRetries": 5,
                    "delayMs": retry_delay_ms,
                    "failure": failure,
                },
            )
            self.time += int(retry_delay_ms)
            self.event(
                "llm/retry-started", {"retryId": retry_id, "turn": turn, "step": step, "retry": number}
            )
        seqs = self.chunks(turn, step, chunks)
        assembler = BlockAssembler()
        for chunk in chunks:
            assembler.push(chunk)
        if message and assembler.finished and assembler.finish.ok:
            data: dict[str, Any] = {
                "turn": turn,
                "step": step,
                "message": {
                    "role": "assistant",
                    "content": [block.to_dict() for block in assembler.blocks()],
                    "source": {"kind": "model", "provider": provider, "model": model},
                    "id": str(uuid.UUID(int=self.seq + 1)),
                },
            }
            if assembler.usage is not None:
                data["usage"] = assembler.usage.to_dict()
            self.event("assistant/message", data, surfaceOp="append", sourceEventSeqs=seqs)
        self.event("step/end", {"turn": turn, "step": step})
        self.flush()


def _run_length(dicts: list[dict[str, Any]], start: int) -> int:
    """How many deltas from ``start`` the harness would pack into one row (same kind, index, id, name)."""
    first = dicts[start]
    kind = first["type"]
    if kind not in _ROW_OF_DELTA:
        return 1
    end = start + 1
    while end < len(dicts):
        other = dicts[end]
        if other["type"] != kind or other["index"] != first["index"]:
            break
        if kind == "tool-call-delta" and (
            other["id"] != first["id"] or other.get("name") != first.get("name")
        ):
            break
        end += 1
    return end - start


def _failure_of(chunks: Sequence[ChunkLike]) -> dict[str, Any]:
    for chunk in reversed(chunks):
        data = chunk_to_dict(chunk)
        if data["type"] == "finish" and "failure" in data["reason"]:
            failure: dict[str, Any] = data["reason"]["failure"]
            return failure
    return {"message": "the attempt failed", "code": "UNKNOWN"}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
