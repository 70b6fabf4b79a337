"""The one wire reader: a response head and its body bytes in, StreamChunks and an ending out.

Sans-IO, in the spirit of h11: ``WireReader`` never reads a socket, never sleeps, never looks at
a clock. Its drivers do: the adapter loop (I/O, cancellation and the guard around it), the tap's
parser (timing marks and masking around it), and every replay of a recording's raw reads
(``ReplayAdapter``, ``TapReplay``). They all get the same chunks, usage, finish and error code
from the same bytes, however the bytes are cut into reads, because only this module reads them:

- ``head(status, headers)``: a non-2xx status makes the body an error answer (its code from
  ``error_from_response`` at the end); a 2xx of the wire's media type is a stream; any other
  2xx is a whole JSON answer (``expect_stream=False``) or ``MALFORMED_RESPONSE`` (a driver that
  asked for a stream); a content encoding it cannot read is ``MALFORMED_RESPONSE``;
- ``feed(raw)``: the read inflated by bounded pieces (``Inflater``), framed by the wire's decoder
  (its one framing hook), translated; the chunks it completes, in order. The terminating event's
  chunks (``[DONE]``, ``message_stop``) go to ``final`` instead, so an adapter can release the
  connection before yielding them. A failure sets ``error`` and returns what came before it
  (with the translator's salvage); nothing is raised;
- ``end()``: the body ended. A last SSE event without its blank line still counts when its data
  is whole; a stream without its terminator is ``STREAM_CLOSED``; an error answer gets its code.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar, Protocol

from chunkscope.protocol import AnyChunk, Finish, FinishReason, LlmError, TokenUsage, Usage

from .._failures import bounded, error_from_response, loads
from .framing import DEFAULT_MAX_BODY_BYTES

__all__ = ["ERROR_BODY_LIMIT", "WHOLE_BODY_LIMIT", "Decoder", "Inflater", "Translator", "WireReader"]

ERROR_BODY_LIMIT = 1 << 20
"""Decoded bytes of an error answer (or a whole JSON answer's) read for its code and message."""

WHOLE_BODY_LIMIT = 32 << 20
"""Decoded bytes of a whole (non-streaming) JSON answer read for its usage and finish."""

WholeReader = Callable[[Mapping[str, Any]], list[AnyChunk]]
"""A wire's reading of a whole (non-streaming) JSON answer: the chunks its stream would have
been (blocks, usage, finish), so a whole answer is read, checked and replayed as a stream is."""

_NONE: frozenset[str] = frozenset()
_BATCH = 32  # chunks handed on together from one read: few generator steps, no read piled up whole
_INFLATE_PIECE = 1 << 20  # decompressed bytes handled per step: peak memory stays near the limits


class Translator(Protocol):
    """A wire's pure translator: events in, StreamChunks out; no I/O, no clock.

    ``feed(event)`` returns the chunks one event completes and raises ``LlmError`` for a
    failure the event reveals (the chunks it produced before the failure are then in
    ``salvage()``). ``done`` turns true when the content is complete (``[DONE]``,
    ``message_stop``): that feed returned the final chunks, ending with the finish. ``end()``
    is called at the end of the body: ``[]`` when done, else it raises ``STREAM_CLOSED``.
    A translator may name ``terminators``: SSE data texts that end its stream though they are
    not JSON (chat completions' ``[DONE]``), so a last event cut at the body's end still counts.
    """

    done: bool
    request_id: str | None

    def feed(self, event: Any) -> list[AnyChunk]: ...  # an SseEvent, or a Bedrock frame

    def end(self) -> list[AnyChunk]: ...

    def salvage(self) -> list[AnyChunk]: ...


class Decoder(Protocol):
    """A wire's framing: body bytes in, events out (``SseDecoder`` and its kin, Bedrock's frames).

    ``feed(data)`` returns the events ``data`` completes; a framing failure (an event past its
    size limit, a frame whose checksum fails) sets ``failure`` (a ``ValueError``) and ends the
    events. ``end()`` returns what the body's end completes (an unterminated last event).
    """

    failure: ValueError | None

    def feed(self, data: bytes) -> list[Any]: ...

    def end(self) -> list[Any]: ...


class Inflater:
    """Raw body bytes → decoded bytes in bounded pieces, counting toward ``limit``.

    gzip and deflate (zlib-wrapped or raw) inflate ``max_length`` bytes at a time, so a
    compression bomb never inflates whole. Past ``limit`` decoded bytes, or a body that does
    not decompress: ``ValueError`` (the reader's ``MALFORMED_RESPONSE``). Another encoding
    (br, zstd: never asked for by an adapter) is refused by name when the head arrives.
    """

    __slots__ = ("_inflater", "_started", "encoding", "limit", "total")

    SUPPORTED: ClassVar[frozenset[str]] = frozenset({"", "identity", "gzip", "x-gzip", "deflate"})
    """The encodings every driver reads (what the adapters ask for)."""

    def __init__(self, encoding: str, limit: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.encoding = encoding
        self.limit = limit
        self.total = 0
        self._started = False
        self._inflater: Any = None
        if encoding in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif encoding == "deflate":
            self._inflater = zlib.decompressobj()
        elif encoding not in self.SUPPORTED:
            raise ValueError(
                f"a body in content-encoding {encoding!r}, which chunkscope does not decode "
                "(it asks for and reads gzip and deflate)"
            )

    def _count(self, n: int) -> None:
        self.total += n
        if self.total > self.limit:
            raise ValueError(f"the response body exceeds the limit of {self.limit} bytes")

    def pieces(self, raw: bytes) -> Iterator[bytes]:
        """The decoded bytes of ``raw``, in pieces of at most about a MiB."""
        inflater = self._inflater
        if inflater is None:
            self._count(len(raw))
            yield raw
            return
        data = raw
        while data:
            try:
                out = inflater.decompress(data, _INFLATE_PIECE)
            except zlib.error as exc:
                if self.encoding == "deflate" and not self._started:
                    # Servers send raw deflate as often as zlib-wrapped deflate.
                    self._inflater = inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._started = True
                    continue
                raise ValueError(f"the {self.encoding} body cannot be decompressed: {exc}") from None
            self._started = True
            data = inflater.unconsumed_tail
            if out:
                self._count(len(out))
                yield out
            if inflater.eof:
                break


def _complete(event: Any, terminators: frozenset[str]) -> bool:
    """Whether an event cut off by the body's end is whole: an SSE event whose data is a whole
    JSON text or one of the wire's own terminators (the ``[DONE]`` of chat completions, which
    its translator names); a binary frame is whole or not decoded at all."""
    if not isinstance(event, tuple):
        return True
    data = event[1]
    if data in terminators:
        return True
    try:
        loads(data)
    except ValueError:
        return False
    return True


class _Unread:
    """The translator and decoder of a response no wire reads (only an error answer's code)."""

    done = True
    request_id: str | None = None
    failure: ValueError | None = None

    def feed(self, data: Any) -> list[Any]:
        return []

    def end(self) -> list[Any]:
        return []

    def salvage(self) -> list[AnyChunk]:
        return []


class WireReader:
    """One response of one wire read: ``head`` → ``feed`` per read → ``end`` (see the module).

    ``translator`` and ``decoder`` are fresh for this response; ``label`` starts every message
    ("<api> at <host>"), ``secrets`` never appear in one. ``read_whole`` reads a whole JSON
    answer's usage and finish (``usage``, ``finish`` after ``end``). ``mask`` rewrites each event
    before it is translated (the tap's: a credential the event quotes). ``error`` is the
    response's failure once known, ``done`` true once the terminator came, ``final`` its chunks,
    ``started`` true once an event was decoded (``on_event`` is called then: a driver's
    first-event mark).
    """

    __slots__ = (
        "_body",
        "_inflater",
        "_mask",
        "_on_event",
        "decoder",
        "done",
        "error",
        "expect_stream",
        "final",
        "finish",
        "headers",
        "kind",
        "label",
        "max_body_bytes",
        "media_type",
        "read_whole",
        "secrets",
        "started",
        "status",
        "translator",
        "usage",
    )

    def __init__(
        self,
        translator: Translator,
        decoder: Decoder,
        *,
        label: str,
        secrets: tuple[str, ...] = (),
        media_type: str = "text/event-stream",
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        expect_stream: bool = True,
        read_whole: WholeReader | None = None,
        mask: Callable[[Any], Any] | None = None,
        on_event: Callable[[], None] | None = None,
    ) -> None:
        self.translator = translator
        self.decoder = decoder
        self.label = label
        self.secrets = secrets
        self.media_type = media_type
        self.max_body_bytes = max_body_bytes
        self.expect_stream = expect_stream
        self.read_whole = read_whole
        self._mask = mask
        self._on_event = on_event
        self.kind = "none"  # "stream" | "error" | "whole" | "none" (before the head, or refused)
        self.status = 0
        self.headers: Mapping[str, str] = {}
        self.error: LlmError | None = None
        self.done = False
        self.started = False
        self.final: list[AnyChunk] = []
        self.usage: TokenUsage | None = None
        self.finish: FinishReason | None = None
        self._inflater: Inflater | None = None
        self._body = bytearray()

    @classmethod
    def unparsed(cls, label: str, secrets: tuple[str, ...] = ()) -> WireReader:
        """A reader for a response of no known wire: an error answer gets its code, nothing else."""
        unread = _Unread()
        return cls(unread, unread, label=label, secrets=secrets, media_type="(none)", expect_stream=False)

    # --- the head --------------------------------------------------------------------------

    def head(self, status: int, headers: Mapping[str, str]) -> None:
        """The response head arrived (``headers``: a case-insensitive mapping, or lowercase names)."""
        self.status, self.headers = status, headers
        encoding = headers.get("content-encoding", "").strip().lower()
        try:
            self._inflater = Inflater(encoding, self.max_body_bytes)
        except ValueError as exc:
            refused: ValueError | None = exc
        else:
            refused = None
        content_type = headers.get("content-type", "").partition(";")[0].strip().lower()
        if status >= 300:
            self.kind = "error"  # its code comes from the status even when its body cannot be read
        elif content_type != self.media_type and self.expect_stream:
            self._fail(
                f"{self.label} answered HTTP {status} with {content_type or 'no content type'}, "
                f"not an event stream ({self.media_type})"
            )
        elif refused is not None:
            self._fail(f"{self.label} sent {refused}")
        elif content_type == self.media_type:
            self.kind = "stream"
        elif self.read_whole is not None:
            self.kind = "whole"

    def _fail(self, message: str) -> None:
        status = self.status or None
        self.error = LlmError(bounded(message, self.secrets), "MALFORMED_RESPONSE", status=status)

    # --- the body --------------------------------------------------------------------------

    def feed(self, raw: bytes) -> list[AnyChunk]:
        """The chunks ``raw`` completes (the terminator's go to ``final``); a failure sets ``error``."""
        if self.kind != "stream":
            if self.kind != "none" and self.error is None:
                self._keep(raw)
            return []
        out: list[AnyChunk] = []
        for chunks in self.each(raw):
            out += chunks
        return out

    def each(self, raw: bytes) -> Iterator[list[AnyChunk]]:
        """``feed`` in batches: the chunks ``raw`` completes, handed on every ``_BATCH`` chunks and
        at the end of each decoded piece (an adapter yields them at once; a big read never piles
        up its chunks). Only for a stream's body (``kind == "stream"``)."""
        if self.done or self.error is not None:
            return  # read on only so the connection can be reused
        translator, decoder, mask = self.translator, self.decoder, self._mask
        feed = translator.feed
        inflater = self._inflater
        assert inflater is not None
        out: list[AnyChunk] = []
        try:
            if inflater._inflater is None:  # a plain body (the usual): no generator per read
                inflater._count(len(raw))
                pieces: Iterable[bytes] = (raw,)
            else:
                pieces = inflater.pieces(raw)
            for piece in pieces:
                events = decoder.feed(piece)
                if events:
                    if not self.started:
                        self._first_event()
                    if mask is not None:
                        events = [mask(event) for event in events]
                    for event in events:
                        chunks = feed(event)
                        if translator.done:
                            self.final = chunks
                            self.done = True
                            break
                        out += chunks
                        if len(out) >= _BATCH:
                            yield out
                            out = []
                    if out:
                        yield out
                        out = []
                    if self.done:
                        return
                if decoder.failure is not None:
                    raise decoder.failure
        except (LlmError, ValueError) as exc:
            self._failed(exc, out)  # what the read gave before the failure, then the salvage
            yield out

    def _first_event(self) -> None:
        self.started = True
        if self._on_event is not None:
            self._on_event()

    @property
    def full(self) -> bool:
        """An error answer's body was read as far as its code and message need."""
        return len(self._body) >= ERROR_BODY_LIMIT

    def _keep(self, raw: bytes) -> None:
        """An error or whole answer's decoded bytes, up to its limit (the rest dropped)."""
        if self._inflater is None:
            return  # an encoding it cannot read: the status alone says what happened
        body = self._body
        limit = ERROR_BODY_LIMIT if self.kind == "error" else WHOLE_BODY_LIMIT
        try:
            for piece in self._inflater.pieces(raw):
                room = limit - len(body)
                body += piece[: max(room, 0)]
                if room <= len(piece):
                    break
        except ValueError:
            pass  # the status says what happened; the detail is whatever decoded

    def _failed(self, exc: LlmError | ValueError, out: list[AnyChunk]) -> None:
        """The stream failed: ``out`` gets the translator's salvage, ``error`` the failure."""
        out += self.translator.salvage()
        if isinstance(exc, LlmError):
            self.error = exc
        else:
            self.error = LlmError(bounded(f"{self.label}: {exc}", self.secrets), "MALFORMED_RESPONSE")

    def end(self) -> list[AnyChunk]:
        """The body ended: the chunks its end completes; ``error`` says how it ended (None: well)."""
        if self.error is not None or self.done:
            return []
        if self.kind != "stream":
            return self._end_answer()
        out: list[AnyChunk] = []
        try:
            if not self._last_events(out):
                out += self.translator.end()
        except (LlmError, ValueError) as exc:
            self._failed(exc, out)
        return out

    def _last_events(self, out: list[AnyChunk]) -> bool:
        """What the decoder still holds at the body's end, translated into ``out`` (a last SSE
        event whole but for its blank line counts; a truncated one does not); True when it
        held the terminator."""
        translator = self.translator
        terminators = getattr(translator, "terminators", _NONE)
        events = self.decoder.end()
        if self._mask is not None:
            events = [self._mask(event) for event in events]
        for event in events:
            if not _complete(event, terminators):
                continue  # a truncated last event: the stream closed early (STREAM_CLOSED)
            if not self.started:
                self._first_event()
            chunks = translator.feed(event)
            if translator.done:
                self.final = chunks
                self.done = True
                return True
            out += chunks
        return False

    def compact(self) -> None:
        """Have the translator join the text pieces of its open blocks, where it keeps them (a long
        stream: one string a block, not an object per delta). Nothing else changes."""
        compact = getattr(self.translator, "compact", None)
        if compact is not None:
            compact()

    def close(self, failure: LlmError | None = None) -> tuple[list[AnyChunk], LlmError | None]:
        """The body ended, cleanly (``failure`` None) or as ``failure`` says (a drop, an abort):
        the chunks its end completes (the terminator's included) and the response's error.

        A drop keeps what the translator salvages and is the error; an abort still reads what
        arrived (an SDK closes as soon as it has the terminator: such a stream is whole).
        """
        if self.error is not None:
            return [], self.error
        if failure is not None and failure.code != "ABORTED":
            return self.salvage(), failure
        was_done = self.done
        chunks = self.end()
        if self.done and not was_done:
            chunks += self.final
        if failure is not None and not (self.kind == "stream" and self.done and self.error is None):
            return chunks, failure
        return chunks, self.error

    def _end_answer(self) -> list[AnyChunk]:
        """An error answer's code; a whole answer's chunks, usage and finish (nothing for no answer)."""
        if self.kind == "error":
            self.error = error_from_response(
                self.status,
                self.headers,
                bytes(self._body),
                label=self.label,
                secrets=self.secrets,
                truncated=len(self._body) >= ERROR_BODY_LIMIT,
            )
        elif self.kind == "whole":
            return self._whole()
        return []

    def salvage(self) -> list[AnyChunk]:
        """The translator's chunks written before a failure the driver saw (a dropped connection)."""
        return self.translator.salvage() if self.kind == "stream" else []

    def _whole(self) -> list[AnyChunk]:
        if self.read_whole is None:
            return []
        try:
            body = loads(bytes(self._body))
        except ValueError:
            self._fail(f"{self.label}: the JSON answer cannot be parsed")
            return []
        if not isinstance(body, dict):
            return []
        try:
            chunks = self.read_whole(body)
        except Exception as exc:  # an odd body: a clear code, never a raw error
            self._fail(f"{self.label}: the JSON answer is not the wire's shape: {exc}")
            return []
        for chunk in chunks:
            if isinstance(chunk, Usage):
                self.usage = chunk.usage
            elif isinstance(chunk, Finish):
                self.finish = chunk.reason
        return chunks
