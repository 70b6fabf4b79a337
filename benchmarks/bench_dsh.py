"""Reading a DeepSeek Harness session log against a plain ``json.loads`` loop over its lines.

Run: ``python benchmarks/bench_dsh.py`` (a 100 MB log), or ``--quick`` (10 MB) /
``--mb N``. The log is generated at run time in a temporary directory with
``DshLogWriter``: agent steps with reasoning, text and a tool call streamed as
small deltas, the harness's write batches (so packed rows hold the deltas of
one ~200 ms batch, about 10), the assistant message, a tool result, and every
tenth step a failed attempt and its retry. It is written in both layouts
(packed rows, the harness's default, and one event per line), and the packed
one also as zstd.

Rows, measured in one process, best of ``--repeat`` runs each, round robin
(garbage collection off while timing, as ``timeit`` does); the two rows that
build every chunk model (about 1 GB of them for the packed 100 MB log) run
after the two light ones, so their memory footprint does not slow those:

* ``json.loads loop``: ``for line in open(path): json.loads(line)`` — the floor;
* ``read_dsh_session``: the reader (every line decoded and validated, attempts
  split; StreamResults built lazily);
* ``+ to_frame``: the reader plus the usage frame (which builds every result
  and drops it once recorded);
* ``+ every StreamResult``: the reader plus building and keeping every
  attempt's result (chunk models, ``dsh`` check, assembly).

Issue target: the reader within 2x of the ``json.loads`` loop. No assertion on
absolute times; on a shared machine compare the ratios.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

from chunkscope.usage import DshLogWriter, read_dsh_session

WORDS = [
    "the",
    "user",
    "wants",
    "a",
    "small",
    "fix",
    "in",
    "the",
    "parser",
    "so",
    "that",
    "long",
    "lines",
    "are",
    "refused",
    "with",
    "a",
    "clear",
    "error",
    "and",
    "the",
    "tests",
    "keep",
    "passing",
    "on",
    "every",
    "supported",
    "version",
    "of",
    "python",
    "while",
    "the",
    "benchmark",
    "stays",
    "honest",
]


def _deltas(kind: str, index: int, tokens: int, offset: int) -> list[dict[str, Any]]:
    chunk_type = "reasoning-delta" if kind == "reasoning" else "text-delta"
    return [
        {"type": chunk_type, "index": index, "text": (" " if k else "") + WORDS[(offset + k) % len(WORDS)]}
        for k in range(tokens)
    ]


def _step_chunks(n: int, *, fail: bool = False) -> list[list[dict[str, Any]]]:
    """One attempt's chunks split into the harness's write batches (about 10 deltas each)."""
    reasoning = _deltas("reasoning", 0, 180 + n % 40, n)
    text = _deltas("text", 1, 120 + n % 30, n + 7)
    args = json.dumps(
        {"command": f"pytest tests/unit/test_{n % 97}.py -q", "cwd": "/home/dev/demo", "timeout": 120}
    )
    pieces = [args[k : k + 5] for k in range(0, len(args), 5)]
    tool = [
        {"type": "tool-call-delta", "index": 2, "id": f"call_{n}", "argumentsDelta": piece}
        for piece in pieces
    ]
    batches: list[list[dict[str, Any]]] = [[{"type": "block-start", "index": 0, "blockType": "reasoning"}]]
    batches += [reasoning[k : k + 10] for k in range(0, len(reasoning), 10)]
    batches.append([{"type": "block-start", "index": 1, "blockType": "text"}])
    if fail:
        batches += [text[k : k + 10] for k in range(0, 30, 10)]
        batches.append(
            [
                {
                    "type": "finish",
                    "reason": {"kind": "error", "failure": {"message": "upstream 503", "code": "SERVER"}},
                }
            ]
        )
        return batches
    batches += [text[k : k + 10] for k in range(0, len(text), 10)]
    batches.append([{"type": "block-start", "index": 2, "blockType": "tool-call"}])
    batches += [tool[k : k + 10] for k in range(0, len(tool), 10)]
    batches.append(
        [
            {
                "type": "block-end",
                "index": 0,
                "block": {"type": "reasoning", "text": "".join(d["text"] for d in reasoning)},
            },
            {
                "type": "block-end",
                "index": 1,
                "block": {"type": "text", "text": "".join(d["text"] for d in text)},
            },
            {
                "type": "block-end",
                "index": 2,
                "block": {"type": "tool-call", "id": f"call_{n}", "name": "bash", "arguments": args},
            },
            {
                "type": "usage",
                "usage": {
                    "inputTokens": 900 + n % 500,
                    "outputTokens": 330,
                    "cacheReadTokens": 7680,
                    "reasoningTokens": 190,
                },
            },
            {"type": "finish", "reason": {"kind": "tool-calls"}},
        ]
    )
    return batches


def generate(path: str, megabytes: float, *, packed: bool) -> int:
    """Write a session log of about ``megabytes`` MB; returns the number of steps."""
    target = megabytes * 1_000_000
    tool_output = "\n".join(f"tests/unit/test_{k}.py::test_case_{k} PASSED" for k in range(40))
    steps = 0
    with DshLogWriter(path, session_id="bench", packed=packed) as log:
        turn = 0
        while os.path.getsize(path) < target:
            turn += 1
            log.turn_start(turn)
            for step in range(1, 6):
                steps += 1
                n = steps
                log.event("step/start", {"turn": turn, "step": step})
                if n == 1:
                    header = {"config": {"provider": "deepseek-official", "model": "deepseek-v4-flash"}}
                    log.event("request/header", {"header": header, "reason": "initial"})
                attempts = [_step_chunks(n, fail=True), _step_chunks(n)] if n % 10 == 0 else [_step_chunks(n)]
                for number, batches in enumerate(attempts, start=1):
                    for batch in batches:
                        log.chunks(turn, step, batch)
                    if number < len(attempts):
                        failure = {"message": "upstream 503", "code": "SERVER"}
                        log.event(
                            "llm/retry",
                            {
                                "retryId": f"r{n}",
                                "turn": turn,
                                "step": step,
                                "retry": number,
                                "delayMs": 500,
                                "failure": failure,
                            },
                        )
                        log.event(
                            "llm/retry-started",
                            {"retryId": f"r{n}", "turn": turn, "step": step, "retry": number},
                        )
                final = attempts[-1][-1]
                blocks = [chunk["block"] for chunk in final if chunk["type"] == "block-end"]
                message = {
                    "role": "assistant",
                    "content": blocks,
                    "source": {
                        "kind": "model",
                        "provider": "deepseek-official",
                        "model": "deepseek-v4-flash",
                    },
                    "id": f"m{n}",
                }
                log.event(
                    "assistant/message",
                    {"turn": turn, "step": step, "message": message, "usage": final[-2]["usage"]},
                    surfaceOp="append",
                )
                log.event(
                    "tool/call",
                    {"turn": turn, "step": step, "callId": f"call_{n}", "name": "bash", "arguments": {}},
                )
                result = {
                    "role": "tool",
                    "content": [{"type": "text", "text": tool_output}],
                    "toolCallId": f"call_{n}",
                }
                log.event("tool/result", {"turn": turn, "step": step, "message": result}, surfaceOp="append")
                log.event("step/end", {"turn": turn, "step": step})
                log.flush()
            log.turn_end(turn)
    return steps


def compress(source: str, target: str) -> None:
    import zstandard

    with open(source, "rb") as src, open(target, "wb") as dst:
        zstandard.ZstdCompressor(level=3, write_checksum=True).copy_stream(src, dst)


def json_loop(path: str) -> int:
    count = 0
    loads = json.loads
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            loads(line)
            count += 1
    return count


def json_loop_zstd(path: str) -> int:
    import zstandard

    count = 0
    loads = json.loads
    with open(path, "rb") as raw:
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        for line in io.TextIOWrapper(reader, encoding="utf-8"):
            loads(line)
            count += 1
    return count


def read_only(path: str) -> int:
    return len(read_dsh_session(path).attempts)


def read_results(path: str) -> int:
    return sum(len(attempt.result.chunks) for attempt in read_dsh_session(path).attempts)


def read_frame(path: str) -> int:
    return len(read_dsh_session(path).to_frame())


def measure(rows: dict[str, Callable[[], int]], repeat: int) -> dict[str, float]:
    best = dict.fromkeys(rows, float("inf"))
    for _ in range(repeat):
        for name, run in rows.items():
            gc.collect()
            gc.disable()
            try:
                start = time.perf_counter()
                run()
                best[name] = min(best[name], time.perf_counter() - start)
            finally:
                gc.enable()
    return best


def report(title: str, size: int, times: dict[str, float], floor: str) -> None:
    print(f"\n{title} ({size / 1e6:.1f} MB)")
    base = times[floor]
    for name, seconds in times.items():
        print(f"  {name:<34} {seconds:8.3f} s  {size / 1e6 / seconds:7.1f} MB/s  {seconds / base:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0, help="size of the generated log (MB)")
    parser.add_argument("--quick", action="store_true", help="a 10 MB log")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    megabytes = 10.0 if args.quick else args.mb
    with tempfile.TemporaryDirectory(prefix="bench-dsh-") as folder:
        packed = os.path.join(folder, "packed", "session.jsonl")
        unpacked = os.path.join(folder, "unpacked", "session.jsonl")
        zstd = os.path.join(folder, "packed", "session.jsonl.zstd")
        os.makedirs(os.path.dirname(packed))
        os.makedirs(os.path.dirname(unpacked))
        start = time.perf_counter()
        steps = generate(packed, megabytes, packed=True)
        generate(unpacked, megabytes, packed=False)
        compress(packed, zstd)
        print(
            f"generated {steps} steps per log in {time.perf_counter() - start:.1f} s "
            f"(zstd {os.path.getsize(zstd) / 1e6:.1f} MB)"
        )
        for title, path in (("packed rows (the harness default)", packed), ("one event per line", unpacked)):
            # The light rows first, round robin; the rows that build millions of chunk models after,
            # so their memory footprint cannot slow the floor or the reader.
            times = measure(
                {
                    "json.loads loop": lambda p=path: json_loop(p),
                    "read_dsh_session": lambda p=path: read_only(p),
                },
                args.repeat,
            )
            times.update(
                measure(
                    {
                        "read_dsh_session + to_frame": lambda p=path: read_frame(p),
                        "read_dsh_session + every StreamResult": lambda p=path: read_results(p),
                    },
                    args.repeat,
                )
            )
            report(title, os.path.getsize(path), times, "json.loads loop")
        times = measure(
            {
                "zstd stream + json.loads loop": lambda: json_loop_zstd(zstd),
                "read_dsh_session": lambda: read_only(zstd),
            },
            args.repeat,
        )
        report(
            "packed, zstd (size uncompressed)",
            os.path.getsize(packed),
            times,
            "zstd stream + json.loads loop",
        )


if __name__ == "__main__":
    main()
