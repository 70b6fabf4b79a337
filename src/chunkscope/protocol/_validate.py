"""Checking a whole stream: ``check`` over an iterable, ``validated`` around an async stream."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Sequence
from typing import Any

from pydantic import ValidationError

from ._checker import Checker
from ._chunks import AnyChunk, parse_chunk
from ._errors import LlmError
from ._sources import close_source, open_source
from ._violations import Violation

__all__ = ["check", "validated", "ValidatedStream"]


def check(chunks: Iterable[Any], profile: str = "strict") -> list[Violation]:
    """Every violation in ``chunks`` (models or camelCase dicts), in stream order, end of stream last."""
    checker = Checker(profile)
    found = checker.feed_all(chunks)
    found.extend(checker.close())
    return found


class ValidatedStream(AsyncIterator[AnyChunk]):
    """An async iterator over a checked stream (what ``validated`` returns).

    Yields every chunk as a typed model. ``violations`` lists everything found
    so far (complete once iteration ends); ``checker`` is the underlying
    ``Checker``.
    """

    def __init__(self, stream: AsyncIterable[Any] | Iterable[Any], profile: str, on_violation: str) -> None:
        if on_violation not in ("raise", "collect"):
            raise ValueError(f"on_violation must be 'raise' or 'collect', not {on_violation!r}")
        self.checker = Checker(profile)
        self.on_violation = on_violation
        self.violations: list[Violation] = []
        self._source = stream
        self._gen = self._run()

    def __aiter__(self) -> ValidatedStream:
        return self

    async def __anext__(self) -> AnyChunk:
        return await self._gen.__anext__()

    async def aclose(self) -> None:
        """Stop early and close the wrapped stream."""
        await self._gen.aclose()

    async def _run(self) -> AsyncGenerator[AnyChunk, None]:
        checker = self.checker
        iterator, is_async = open_source(self._source)
        try:
            while True:
                try:
                    chunk = await iterator.__anext__() if is_async else next(iterator)
                except (StopAsyncIteration, StopIteration):
                    break
                try:
                    model: AnyChunk | None = parse_chunk(chunk)
                except ValidationError:
                    model = None  # the checker reports it under ``schema``
                found = checker.feed(chunk if model is None else model)
                if found:
                    self._record(found, checker.position - 1)
                if model is not None:
                    yield model
            self._record(checker.close(), None)
        finally:
            await close_source(iterator)

    def _record(self, found: Sequence[Violation], position: int | None) -> None:
        self.violations.extend(found)
        if self.on_violation != "raise":
            return
        errors = [v for v in found if v.severity == "error"]
        if errors:
            where = "at the end of the stream" if position is None else f"at chunk {position}"
            first = errors[0]
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            raise LlmError(
                f"the stream broke rule {first.rule} {where}: {first.message}{more}",
                "PROTOCOL_VIOLATION",
                violations=errors,
            )


def validated(
    stream: AsyncIterable[Any] | Iterable[Any],
    profile: str = "strict",
    on_violation: str = "raise",
) -> ValidatedStream:
    """Wrap ``stream`` so that every chunk is checked as it passes.

    ``on_violation="raise"``: at the first chunk that breaks a rule (or at the
    end, for a missing finish), raise ``LlmError`` code ``PROTOCOL_VIOLATION``
    whose ``.violations`` are the errors found at that chunk; every chunk before
    it has been yielded, and warnings never raise. ``"collect"``: yield every
    chunk and gather the violations in the returned object's ``.violations``.
    Chunks come out as typed models (dicts are parsed); a dict that does not
    parse is a ``schema`` violation and is not passed on. An exception the
    stream raises propagates unchanged, and then no end-of-stream check runs.
    """
    return ValidatedStream(stream, profile, on_violation)
