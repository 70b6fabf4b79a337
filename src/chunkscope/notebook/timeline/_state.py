"""The timeline's state dict (see ``_view``) built from Python objects.

Imports only the protocol layer and the standard library, so the HTML reprs
can use it without loading ipywidgets.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from chunkscope.protocol import LlmError, StreamResult, Violation, error_chain, parse_chunk

from ._records import Record, encode_chunk, encode_raw, encode_violation
from ._view import STATE_VERSION

__all__ = [
    "error_state",
    "state_from_result",
    "violation_rows",
    "cause_chain",
    "cause_lines",
    "describe_exception",
]


def error_state(error: LlmError) -> dict[str, Any]:
    """The error badge's facts, JSON-safe (never the exception object)."""
    return {
        "code": error.code,
        "message": error.message,
        "status": error.status,
        "retryAfterMs": error.retry_after_ms,
        "requestId": error.request_id,
        "chain": error_chain(error),
        "causes": cause_lines(error),
        "retryable": error.retryable,
    }


def cause_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes, outermost first (``__cause__``, else an unsuppressed ``__context__``)."""
    chain: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return chain


def cause_lines(exc: BaseException) -> list[str]:
    """One line per cause of ``exc`` (outermost first); a line repeating the previous one is dropped."""
    lines: list[str] = []
    for cause in cause_chain(exc)[1:]:
        line = describe_exception(cause)
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def describe_exception(exc: BaseException) -> str:
    """``LlmError [CODE] message`` or ``TypeName: message``, for one link of a cause chain."""
    try:
        text = exc.message if isinstance(exc, LlmError) else str(exc)
    except Exception:  # a hostile __str__ must not break a diagnostic
        text = "<unrenderable exception>"
    if isinstance(exc, LlmError):
        return f"LlmError [{exc.code}] {text}"
    # httpx and httpcore both have a RemoteProtocolError: name the package too
    package = type(exc).__module__.split(".")[0]
    name = type(exc).__name__ if package == "builtins" else f"{package}.{type(exc).__name__}"
    return f"{name}: {text}" if text else name


def violation_rows(violations: list[Violation]) -> list[list[Any]]:
    """Violations in their wire form, ``[position, rule, severity, message]``."""
    return [encode_violation(v.position, v.rule, v.severity, v.message) for v in violations]


def state_from_result(result: StreamResult, *, title: str = "") -> dict[str, Any]:
    """The finished timeline of ``result`` (its chunks at their recorded arrival times)."""
    times = result.timings.chunk_times
    records: list[Record] = []
    for n, raw in enumerate(result.chunks):
        t_ms = round(times[n] * 1000.0, 3) if n < len(times) else 0.0
        try:
            records.append(encode_chunk(parse_chunk(raw), t_ms))
        except ValidationError:
            records.append(encode_raw(raw, t_ms))
    failed = result.error is not None or (result.finish is not None and not result.finish.ok)
    return {
        "v": STATE_VERSION,
        "run": 0,
        "title": title,
        "status": "error" if failed else "done",
        "records": records,
        "violations": violation_rows(result.violations),
        "error": error_state(result.error) if result.error is not None else None,
        "totalMs": round(result.timings.total_s * 1000.0, 3),
    }
