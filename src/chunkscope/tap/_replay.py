"""``TapReplay``: recorded calls in the tap's own view, parsed again from their raw reads as live.

``TapReplay(DIR)`` (or a list of recording files) reads every recording,
oldest call first, and gives what a ``Tap`` gives: ``calls`` (each a
``TapCall``), ``usage`` (a ``UsageLog``, one row per call) and, displayed in
a notebook, the same live table whose rows open each call's timeline. A
tap's recording holds the raw reads, so the tap's own parser reads them
again: the chunks, violations, error code and timing points are the ones
the tap found live. Any other recording (``RecordingAdapter``'s) shows the
chunks it holds. ``live=True`` replays at the original timing: each call
appears when it began (relative to the first) and streams its reads as they
arrived. A file that is not a recording is a ``RecordingFileError`` naming
it, raised before anything is shown.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import threading
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import ValidationError

from chunkscope.protocol import LlmError, LlmFailure, StreamInspector, StreamResult, Timings
from chunkscope.sources.recording import Recording, RecordingFileError
from chunkscope.usage import UsageLog

from ._call import Parser, TapCall, TapTimings, now
from ._redact import ByteMask
from ._wires import Wire, wire_named

__all__ = ["TapReplay"]


class _Planned:
    """One recorded call, ready to be replayed: the call, its parser (None: chunks only), its steps."""

    def __init__(self, call: TapCall, parser: Parser | None, recording: Recording, offset: float) -> None:
        self.call = call
        self.parser = parser
        self.recording = recording
        self.offset = offset  # seconds after the first recorded call began
        recorded = recording.header.get("tap") or {}
        self.headers_s = _seconds(recorded.get("timings", {}).get("headers_s")) or 0.0
        failure = recorded.get("forward_failure")
        self.outcome = _failure(failure) if isinstance(failure, dict) else None
        times = [t for t, _ in recording.reads] + [t for t, _ in recording.entries]
        total = _seconds(recorded.get("timings", {}).get("total_s"))
        self.total_s = total if total is not None else max([*times, recording.error_t or 0.0])


class TapReplay:
    """Recorded calls shown as a ``Tap`` shows live ones: ``calls``, ``usage``, the notebook's table.

    ``source``: a folder (every ``*.jsonl`` in it) or recording files.
    ``live``: replay at the original timing in a background thread
    (``wait()`` until it ends, ``close()`` to stop it: a call cut short ends
    ABORTED); otherwise every call is parsed before the constructor returns.
    Every file is read through once first, so a bad one is reported before
    anything is shown; then each is read again at its turn, and ``calls`` keeps
    the latest ``keep_calls`` (``usage`` keeps every row), so memory stays
    bounded by what is shown, not by the folder. ``profile``: the rule profile
    each call is checked under, as ``Tap(profile=...)``.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        live: bool = False,
        usage: UsageLog | None = None,
        keep_calls: int = 1000,
        profile: str = "strict",
    ) -> None:
        if keep_calls < 1:
            raise ValueError("keep_calls must be positive")
        StreamInspector(profile)  # an unknown profile is refused here
        self.profile = profile
        if isinstance(source, (str, os.PathLike)):
            folder = Path(source)
            paths = sorted(folder.glob("*.jsonl")) if folder.is_dir() else [folder]
            self.source = str(folder)
        else:
            paths = [Path(p) for p in source]
            self.source = f"{len(paths)} files"
        self.upstream = f"recordings in {self.source}"
        self.usage = usage if usage is not None else UsageLog()
        self.keep_calls = keep_calls
        self.calls: list[TapCall] = []
        """The latest ``keep_calls`` replayed calls, oldest first (live: they appear and fill in)."""
        self._stop = threading.Event()
        self._order = _order(paths)  # every file read through once here: a bad one raises now
        self._thread: threading.Thread | None = None
        if live:
            self._thread = threading.Thread(
                target=self._replay_live, name="chunkscope-tap-replay", daemon=True
            )
            self._thread.start()
        else:
            for planned in self._planned():
                self._show(planned)
                self._run(planned, wait=False)

    def _planned(self) -> Iterator[_Planned]:
        """Each call in order, its recording read at its turn (only the calls shown stay in memory)."""
        first = next((start for start, _, _ in self._order if start is not None), 0.0)
        for number, (start, _, path) in enumerate(self._order, 1):
            recording = Recording.read(path)
            call, parser = _call(number, path, recording, self.profile)
            yield _Planned(call, parser, recording, max(0.0, (start or first) - first))

    def _show(self, planned: _Planned) -> None:
        self.calls.append(planned.call)
        if len(self.calls) > self.keep_calls:
            del self.calls[0]

    @property
    def where(self) -> str:
        """What the table's title says: where the calls come from."""
        return f"replay of {len(self._order)} recorded calls in {self.source}"

    @property
    def running(self) -> bool:
        """True while a live replay still streams."""
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every call was replayed (True) or ``timeout`` seconds passed (False)."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    def close(self) -> None:
        """Stop a live replay; a call it cut short ends ABORTED (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> TapReplay:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        failed = sum(1 for call in self.calls if call.error_code)
        return f"<TapReplay {self.source} calls={len(self.calls)} failed={failed}>"

    # --- replaying ---------------------------------------------------------------------

    def _replay_live(self) -> None:
        begun = now()
        for planned in self._planned():
            if self._stop.wait(max(0.0, begun + planned.offset - now())):
                return
            planned.call.clock_start = now()
            self._show(planned)
            if not self._run(planned, wait=True):
                return

    def _sleep_until(self, call: TapCall, t: float, wait: bool) -> bool:
        """Wait (live) until ``t`` seconds into ``call``; False when the replay was closed."""
        return not wait or not self._stop.wait(max(0.0, call.clock_start + t - now()))

    def _run(self, planned: _Planned, *, wait: bool) -> bool:
        """Replay one call to its end; False when a live replay was closed in the middle of it."""
        call, parser, recording = planned.call, planned.parser, planned.recording
        cut = LlmError("the replay was closed while the call streamed", "ABORTED")
        if parser is not None:
            if not self._sleep_until(call, planned.headers_s, wait):
                self._end(planned, parser.finish(planned.headers_s, cut))
                return False
            parser.head()
            for t, data in recording.reads:
                if not self._sleep_until(call, t, wait):
                    self._end(planned, parser.finish(t, cut))
                    return False
                call.reads.append((t, data))
                parser.read(t, data)
            self._sleep_until(call, planned.total_s, wait)
            self._end(planned, parser.finish(planned.total_s, planned.outcome))
            return True
        for t, chunk in recording.entries:  # a recording of chunks only: shown as recorded
            if not self._sleep_until(call, t, wait):
                self._end(planned, call._inspector.result(cut))
                return False
            call._chunk(t, chunk)
        error = LlmError.from_failure(recording.error) if recording.error is not None else None
        result = call._inspector.result(error)
        result.timings = Timings.of_arrivals(
            call.chunk_times, total_s=planned.total_s, started_at=call.started_at
        )
        call.timings.total_s = planned.total_s
        self._end(planned, result)
        return True

    def _end(self, planned: _Planned, result: StreamResult) -> None:
        call = planned.call
        call.result = result
        try:
            self.usage.record(
                result,
                provider=call.wire or str(planned.recording.header.get("provider") or "unknown"),
                model=call.model or "unknown",
                tags={"via": "tap-replay", "path": call.path.partition("?")[0]},
            )
        finally:
            call._ended(result)


# --- reading the recordings -------------------------------------------------------------


def _order(paths: list[Path]) -> list[tuple[float | None, str, Path]]:
    """(began, name, path) of each recording, oldest call first (then by file name); each file is
    read through once, so a bad one raises ``RecordingFileError`` before anything is shown."""
    order = [(_began(Recording.read(path)), path.name, path) for path in paths]
    order.sort(key=lambda item: (item[0] is None, item[0] or 0.0, item[1]))
    return order


def _call(number: int, path: Path, recording: Recording, profile: str) -> tuple[TapCall, Parser | None]:
    """The recording's call, before anything of its answer; its parser when it holds raw reads."""
    header = recording.header
    recorded = header.get("tap")
    recorded = recorded if isinstance(recorded, dict) else {}
    where = f"{path}: the tap's "
    wire = _wire(header.get("provider"))
    call = TapCall(
        id=number,
        method=_text(header.get("method"), "GET"),
        path=_text(header.get("path"), ""),
        wire=wire.name if wire is not None else _text(header.get("provider"), "") or None,
        model=_text(header.get("model"), "") or None,
        request_headers=_pairs(recorded.get("request_headers"), where + "'request_headers'", path),
        request_body=_body(recorded, where, path),
        started_at=_began(recording) or 0.0,
        status=header.get("status") if isinstance(header.get("status"), int) else None,
        response_headers=_pairs(recorded.get("response_headers"), where + "'response_headers'", path),
        timings=TapTimings(),
        clock_start=now(),
        recording=str(path),
        profile=profile,
        key_fingerprint=_fingerprint(recorded),
    )
    if not recorded or (not recording.reads and recording.entries):
        return call, None  # chunks only (RecordingAdapter's recording, or an older tap's)
    headers_s = _seconds(recorded.get("timings", {}).get("headers_s"))
    call.timings.headers_s = headers_s
    # No credential survives in a recording (masked when written), so there is none to mask.
    label = f"the recording {path.name}"
    return call, Parser(call, wire, label, (), ByteMask(()), expect_stream=_asked(call, wire))


def _began(recording: Recording) -> float | None:
    """When the recorded call began (seconds since the epoch), from the tap's field or the ISO time."""
    recorded = recording.header.get("tap")
    if isinstance(recorded, dict):
        value = _seconds(recorded.get("started_at"))
        if value is not None:
            return value
    started = recording.header.get("started")
    if isinstance(started, str):
        try:
            return datetime.fromisoformat(started).timestamp()
        except (ValueError, OverflowError):
            return None
    return None


def _fingerprint(recorded: dict[str, Any]) -> str | None:
    value = recorded.get("key_fingerprint")
    return value if isinstance(value, str) and value else None


def _wire(name: Any) -> Wire | None:
    if not isinstance(name, str):
        return None
    try:
        return wire_named(name)
    except ValueError:
        return None  # a provider's name (RecordingAdapter's), not a wire the tap parses


def _asked(call: TapCall, wire: Wire | None) -> bool:
    """Whether the recorded request asked for a stream (then it is read as its adapter reads it)."""
    return wire is not None and wire.asks_stream(call.path.partition("?")[0], _json(call.request_body))


def _json(body: bytes) -> Any:
    """A recorded request body's JSON value (None when it is none), to tell what it asked for."""
    try:
        return json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None


def _text(value: Any, default: str) -> str:
    return value if isinstance(value, str) else default


def _seconds(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 and value < 1e12:
        return float(value)
    return None


def _pairs(value: Any, what: str, path: Path) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(part, str) for part in pair)
        for pair in value
    ):
        raise RecordingFileError(f"{what} is not a list of [name, value] pairs", str(path), 1)
    return [(name, header) for name, header in value]


def _body(recorded: dict[str, Any], where: str, path: Path) -> bytes:
    text = recorded.get("request_body")
    if isinstance(text, str):
        return text.encode("utf-8", "surrogatepass")
    encoded = recorded.get("request_body_base64")
    if isinstance(encoded, str):
        try:
            return base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise RecordingFileError(where + "'request_body_base64' is not base64", str(path), 1) from None
    return b""


def _failure(value: dict[str, Any]) -> LlmError | None:
    try:
        return LlmError.from_failure(LlmFailure.model_validate(value))
    except ValidationError:
        return None
