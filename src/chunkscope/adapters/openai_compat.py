"""``OpenAICompatAdapter``: DeepSeek and any OpenAI-compatible chat-completions server.

``POST {base_url}/chat/completions`` with ``stream: true`` and
``stream_options.include_usage``; the SSE ``data:`` payloads (framed by
httpx-sse) become StreamChunks (PROTOCOL.md §5):

- ``delta.reasoning_content`` → a reasoning block (an empty fragment opens
  nothing), ``delta.content`` → a text block, ``delta.tool_calls[i]`` → one
  tool-call block per wire index;
- ``finish_reason`` ``stop`` / ``tool_calls`` / ``length`` → ``stop`` /
  ``tool-calls`` / ``max-tokens``; anything else (``content_filter``, …) → an
  ``error`` finish whose code is the upper-cased reason; a ``stop`` with no
  content at all → an ``error`` finish ``EMPTY_RESPONSE``;
- usage (on the finish chunk or a trailing usage-only chunk; the latest wins)
  → disjoint counts: cache hits are subtracted from ``prompt_tokens``;
- an ``error`` object inside the stream → ``LlmError`` mapped like the same
  error before the stream; no ``[DONE]`` → ``STREAM_CLOSED``; a payload that
  is not JSON or not the wire shape → ``MALFORMED_RESPONSE``.

The output is valid under the ``strict`` profile whatever order the wire
uses: blocks never interleave. Text or reasoning that resumes after another
block opens a NEW block. Tool calls stream live one at a time: the first call
stays open while its arguments are incomplete JSON, and anything else that
arrives meanwhile (another call's fragments, text, reasoning) is buffered and
emitted, in arrival order, as consecutive blocks once the model finishes. A
call is closed early only when its arguments already parse as a JSON object
and another block begins; whitespace arriving for it later is dropped, any
other late fragment is ``MALFORMED_RESPONSE``. A call whose id arrives late
has its fragments held until it does; one that never gets an id is given
``call-<n>`` (unique in the stream); one without arguments gets ``{}``; one
without a name is ``MALFORMED_RESPONSE`` (a call nobody can execute).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import httpx
from httpx_sse import EventSource

from chunkscope.protocol._chunks import (
    AnyChunk,
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    LlmFailure,
    ReasoningBlock,
    ReasoningDelta,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
    trusted,
)
from chunkscope.protocol._errors import LlmError
from chunkscope.protocol._messages import Message

from ._base import (
    OPTIONAL_OPTIONS,
    GenerateOptions,
    LlmAdapter,
    ModelInfo,
    ReasoningEffort,
    ReasoningInfo,
)
from ._http import (
    ClientSlot,
    StreamGuard,
    classify_error_detail,
    endpoint_url,
    error_detail,
    merge_headers,
    public_url,
    redact,
    resolve_api_key,
)

__all__ = ["DEEPSEEK_EFFORTS", "DEEPSEEK_MODELS", "OpenAICompatAdapter"]

DEEPSEEK_EFFORTS = ReasoningInfo(
    (
        ReasoningEffort("off", "Off", "thinking disabled"),
        ReasoningEffort("low", "Low"),
        ReasoningEffort("high", "High"),
        ReasoningEffort("max", "Max"),
    )
)
"""DeepSeek's reasoning efforts: ``off`` sends ``thinking: disabled``, the others ``reasoning_effort``."""

DEEPSEEK_MODELS: tuple[ModelInfo, ...] = (
    ModelInfo("deepseek-chat", "DeepSeek Chat", reasoning=DEEPSEEK_EFFORTS),
    ModelInfo("deepseek-reasoner", "DeepSeek Reasoner", reasoning=DEEPSEEK_EFFORTS),
    ModelInfo("deepseek-v4*", "DeepSeek V4", reasoning=DEEPSEEK_EFFORTS),
)
"""The default model table. An id ending in ``*`` matches every model id with that prefix."""

_DONE = "[DONE]"
# The decoder's scanner, which ``json.loads`` ends up calling through ``raw_decode``: the same C
# parser without the Python frames around it, ~1 µs less per event than ``json.loads``. It
# raises StopIteration where there is no JSON value at all; ``_parse_slowly`` then says why.
# (Untyped in typeshed; it is the attribute ``JSONDecoder.raw_decode`` itself calls.)
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_FINISH_KINDS = {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens"}

# Output states: which kind of block is open.
_NONE, _TEXT, _REASONING, _TOOL = 0, 1, 2, 3
_BLOCK_TYPES = {_TEXT: "text", _REASONING: "reasoning", _TOOL: "tool-call"}
# Per text-like kind: the delta model and type, the block model.
_TEXTUAL: dict[int, tuple[type[AnyChunk], str, type[TextBlock | ReasoningBlock]]] = {
    _TEXT: (TextDelta, "text-delta", TextBlock),
    _REASONING: (ReasoningDelta, "reasoning-delta", ReasoningBlock),
}


class _Secret:
    """Holds the API key so that no repr, vars() or log line shows it."""

    __slots__ = ("value",)

    def __init__(self, value: str | None) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<secret>" if self.value is not None else "None"


class OpenAICompatAdapter(LlmAdapter):
    """DeepSeek / OpenAI chat-completions streaming adapter.

    ``base_url`` is the API root that ``/chat/completions`` is appended to
    (``https://api.deepseek.com``, ``LocalProvider().base_url``). The key comes
    from ``api_key`` or, at stream time, the ``api_key_env`` environment
    variable (``DEEPSEEK_API_KEY``); a missing key is ``MISSING_CREDENTIAL``
    and one no header can carry ``INVALID_CREDENTIAL``, both raised by
    ``stream()`` before any I/O. ``http_client`` is used as given (the caller
    closes it); otherwise the adapter owns one (``aclose()`` / ``async with``).
    ``idle_timeout`` (seconds, None = wait forever) bounds the silence between
    bytes. ``models`` replaces the model table (default ``DEEPSEEK_MODELS``);
    ``headers`` are added to every request (they may replace the
    ``User-Agent``, never remove it).

    Every ``GenerateOptions`` field is honoured: ``reasoning_effort`` ``off``
    sends ``thinking: {"type": "disabled"}``, any other listed effort sends
    ``reasoning_effort`` (plus ``thinking: enabled`` for ``deepseek*`` models);
    a model's configured default effort applies when none is given;
    ``purpose`` is caller metadata (recordings, usage records) and does not
    change the request.
    """

    provider = "deepseek"
    supported_options = frozenset(OPTIONAL_OPTIONS)

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        http_client: httpx.AsyncClient | None = None,
        idle_timeout: float | None = 60.0,
        models: Sequence[ModelInfo] | None = None,
        headers: Mapping[str, str] | None = None,
        api_key_env: str | None = "DEEPSEEK_API_KEY",
    ) -> None:
        if idle_timeout is not None and not idle_timeout > 0:
            raise ValueError("idle_timeout must be > 0 seconds, or None to wait forever")
        self.base_url = base_url.rstrip("/")
        self.url = endpoint_url(self.base_url, "/chat/completions")
        self.idle_timeout = idle_timeout
        self._api_key = _Secret(api_key)
        self._api_key_env = api_key_env
        self._extra_headers = dict(headers or {})
        self._models = tuple(DEEPSEEK_MODELS if models is None else models)
        self._clients = ClientSlot(http_client, self._timeout)
        self._label = f"chat completions API at {public_url(self.base_url)}"

    def __repr__(self) -> str:
        key = "<set>" if self._api_key.value is not None else f"<from ${self._api_key_env}>"
        return (
            f"OpenAICompatAdapter(base_url={public_url(self.base_url)!r}, api_key={key}, "
            f"idle_timeout={self.idle_timeout!r})"
        )

    @property
    def http_client(self) -> httpx.AsyncClient | None:
        """The caller's client, or the one the adapter made for the running loop (None before any)."""
        return self._clients.current

    async def aclose(self) -> None:
        """Close the HTTP client the adapter made (a caller's client is left open). Idempotent."""
        await self._clients.aclose()

    # -- models --

    def models(self) -> list[ModelInfo]:
        """The exact (non-pattern) entries of the model table."""
        return [m for m in self._models if not m.id.endswith("*")]

    def model_info(self, model: str) -> ModelInfo | None:
        """The table entry for ``model``: an exact id first, else the longest matching ``prefix*``."""
        best: ModelInfo | None = None
        for info in self._models:
            if info.id == model:
                return info
            if (
                info.id.endswith("*")
                and model.startswith(info.id[:-1])
                and (best is None or len(info.id) > len(best.id))
            ):
                best = info
        return dataclasses.replace(best, id=model) if best is not None else None

    # -- the request --

    def _timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.idle_timeout)

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body ``stream()`` sends for ``options`` (for inspection and tests)."""
        body: dict[str, Any] = {
            "model": options.model,
            "messages": _wire_messages(options.system, options.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if options.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.parameters),
                    },
                }
                for t in options.tools
            ]
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.max_tokens is not None:
            body["max_tokens"] = options.max_tokens
        if options.stop:
            body["stop"] = list(options.stop)
        effort = options.reasoning_effort
        if effort is None:
            info = self.model_info(options.model)
            if info is not None and info.reasoning is not None:
                effort = info.reasoning.default
        if effort is not None:
            if effort == "off":
                body["thinking"] = {"type": "disabled"}
            else:
                if options.model.startswith("deepseek"):
                    body["thinking"] = {"type": "enabled"}
                body["reasoning_effort"] = effort
        return body

    async def stream(self, options: GenerateOptions) -> AsyncIterator[AnyChunk]:
        """Stream one chat completion as StreamChunks; raise ``LlmError`` on failure.

        Chunks produced before a failure are yielded before it is raised. A
        consumer that stops early should close the stream (``aclose()``, or
        ``contextlib.aclosing``) to release the connection at once; the abort
        signal and task cancellation release it by themselves.
        """
        options = self.prepare(options)
        key = resolve_api_key(self._api_key.value, self._api_key_env, label=self._label)
        client = self._clients.get()
        headers = merge_headers(
            client,
            {"Accept": "text/event-stream", "Cache-Control": "no-store"},
            self._extra_headers,
            {"Authorization": f"Bearer {key}"},
        )
        request = client.build_request(
            "POST", self.url, json=self.request_body(options), headers=headers, timeout=self._timeout()
        )
        guard = StreamGuard(
            signal=options.signal, idle_timeout=self.idle_timeout, label=self._label, secrets=(key,)
        )
        tr = _Translator(self._label, (key,))
        out = tr.out
        fast = tr.fast
        done = False
        scan_json = _scan_json
        signal = options.signal
        async with guard:
            response = await guard.send(client, request)
            # The response marks its own network reads for the guard (the task to cancel, the idle
            # clock), so between events there is only the abort to check: per event, that and
            # ``reader = None`` (no read is pending while the consumer holds a chunk) are all.
            async for sse in EventSource(response).aiter_sse():
                data = sse.data
                if done or not data:
                    continue  # after [DONE]: read to the end of the body so the connection can be reused
                if data == _DONE:
                    done = True
                    guard.drain()
                    continue
                try:
                    obj, end = scan_json(data, 0)
                    if end != len(data) and data[end:].strip():
                        raise ValueError("extra data after the JSON value")
                except (ValueError, RecursionError, StopIteration):
                    obj = _parse_slowly(data, self._label, key)
                chunk = fast(obj)
                if chunk is not None:
                    guard.reader = None
                    yield chunk
                    # guard.check(), inlined: this runs once per event
                    if guard.cause is not None or (signal is not None and signal.aborted):
                        guard.check()
                    continue
                failure = tr.feed(obj)
                for chunk in out:  # the chunks before a failure in this payload are delivered first
                    guard.reader = None
                    yield chunk
                    guard.check()
                out.clear()
                if failure is not None:
                    raise failure
            if not done:
                raise LlmError(f"{self._label} ended the event stream without [DONE]", "STREAM_CLOSED")
            await guard.close()
        tr.finish()
        for chunk in out:
            yield chunk


def _parse_slowly(data: str, label: str, key: str) -> Any:
    """``json.loads(data)``, which allows leading whitespace, or ``MALFORMED_RESPONSE`` saying why not."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise LlmError(
            f"{label} sent a payload that is not JSON ({why}): {redact(data[:120], (key,))!r}",
            "MALFORMED_RESPONSE",
        ) from None


# --- request serialization ----------------------------------------------------


def _text_of(blocks: Sequence[Any]) -> str:
    return "".join(b.text for b in blocks if b.type == "text")


def _wire_messages(system: str | None, messages: Sequence[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if system:
        wire.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "system":
            wire.append({"role": "system", "content": _text_of(message.content)})
        elif message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": _text_of(message.content)}
            reasoning = "".join(b.text for b in message.content if b.type == "reasoning")
            if reasoning:
                entry["reasoning_content"] = reasoning
            calls = [
                {"id": b.id, "type": "function", "function": {"name": b.name, "arguments": b.arguments}}
                for b in message.content
                if b.type == "tool-call"
            ]
            if calls:
                entry["tool_calls"] = calls
            wire.append(entry)
        else:
            # Tool results go first: the wire wants each ``tool`` message right after the
            # assistant message that made the call, before any further user text.
            results = [b for b in message.content if b.type == "tool-result"]
            for result in results:
                wire.append(
                    {
                        "role": "tool",
                        "tool_call_id": result.tool_call_id,
                        "content": _text_of(result.content) or "(no output)",
                    }
                )
            text = _text_of(message.content)
            if text or not results:
                wire.append({"role": "user", "content": text})
    return wire


# --- wire → chunks ------------------------------------------------------------


class _Call:
    """One wire tool call (by wire index) on its way to becoming a block."""

    __slots__ = ("block", "closed", "held", "id", "name", "name_sent", "parts", "queued", "wire_index")

    def __init__(self, wire_index: int) -> None:
        self.wire_index = wire_index
        self.id: str | None = None
        self.name: str | None = None
        self.parts: list[str] = []  # every argument fragment, in order
        self.held = 0  # how many of ``parts`` have been emitted (the rest wait for the id or the turn)
        self.block: int | None = None  # output block index once opened
        self.closed = False
        self.queued = False
        self.name_sent = False


def _malformed(label: str, what: str) -> LlmError:
    return LlmError(
        f"{label} sent a chunk that is not the chat-completions shape: {what}", "MALFORMED_RESPONSE"
    )


class _Translator:
    """Turns parsed ``chat.completion.chunk`` payloads into strict, non-interleaved chunks.

    ``feed(obj)`` and ``finish()`` append to ``out``; the caller yields and clears it.
    """

    def __init__(self, label: str, secrets: tuple[str, ...]) -> None:
        self.label = label
        self.secrets = secrets
        self.out: list[AnyChunk] = []
        self.next_index = 0
        self.open = _NONE
        self.open_index = -1
        self.parts: list[str] = []  # the open text/reasoning block's deltas
        self.live: _Call | None = None  # the open tool call
        self.calls: dict[int, _Call] = {}
        self.queue: list[tuple[int, str] | _Call] = []  # buffered pieces, in arrival order
        self.ids: set[str] = set()
        self.pending_finish: FinishReason | None = None
        self.usage: TokenUsage | None = None

    # -- one payload --

    def fast(self, obj: Any) -> AnyChunk | None:
        """The chunk for the common event — one choice whose delta continues the open
        block (text, reasoning, or the live tool call's arguments) — or None: then
        ``feed`` handles the event in full (None is always safe: ``feed`` is the reference)."""
        try:
            [choice] = obj["choices"]  # exactly one choice, else ValueError: the full path
            # ``"error" in obj``, not ``.get``: cheaper, and a null error merely takes the full path.
            if "error" in obj or obj.get("usage") is not None or self.queue:
                return None
            if choice.get("finish_reason") is not None:
                return None
            delta = choice["delta"]
            text = delta.get("content")
            if text:
                # Text continuing the open text block, and nothing else in the delta.
                if (
                    self.open != _TEXT
                    or type(text) is not str
                    or delta.get("reasoning_content")
                    or delta.get("reasoning")
                    or delta.get("tool_calls")
                ):
                    return None
                self.parts.append(text)
                return trusted(TextDelta, {"type": "text-delta", "index": self.open_index, "text": text})
            thought = delta.get("reasoning_content")
            if thought is None:
                thought = delta.get("reasoning")
            calls = delta.get("tool_calls")
            if calls:
                if thought or len(calls) != 1:
                    return None
                return self._fast_tool(calls[0])
        except (KeyError, TypeError, AttributeError, IndexError, ValueError):
            return None  # not the common shape: ``feed`` says precisely what is wrong
        if thought and self.open == _REASONING and type(thought) is str:
            self.parts.append(thought)
            return trusted(
                ReasoningDelta, {"type": "reasoning-delta", "index": self.open_index, "text": thought}
            )
        return None

    def _fast_tool(self, call: Any) -> AnyChunk | None:
        live = self.live
        # Only a plain argument fragment for the live call, all earlier fragments sent.
        if live is None or not live.name_sent or live.held != len(live.parts):
            return None
        if call.get("index") != live.wire_index or call.get("id") not in (None, live.id):
            return None
        function = call.get("function")
        if function.get("name") is not None:
            return None
        fragment = function.get("arguments")
        if type(fragment) is not str or not fragment:
            return None
        live.parts.append(fragment)
        live.held += 1
        return trusted(
            ToolCallDelta,
            {"type": "tool-call-delta", "index": live.block, "id": live.id, "name": None,
             "arguments_delta": fragment},
        )

    def feed(self, obj: Any) -> LlmError | None:
        """Translate one payload into ``out``; return the failure it reveals (the chunks before it stay)."""
        try:
            self._feed(obj)
        except LlmError as exc:
            return exc
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
            error = _malformed(self.label, f"{type(exc).__name__}: {exc}")
            error.__cause__ = exc
            return error
        return None

    def _feed(self, obj: Any) -> None:
        if type(obj) is not dict:
            raise _malformed(self.label, f"a JSON {type(obj).__name__}, not an object")
        error = obj.get("error")
        if error:
            self._raise_error(error)
        for choice in obj.get("choices") or ():
            self._choice(choice)
        usage = obj.get("usage")
        if usage:
            self.usage = _usage(usage)

    def _choice(self, choice: Any) -> None:
        delta = choice.get("delta")
        if delta:
            reasoning = delta.get("reasoning_content")
            if reasoning is None:
                reasoning = delta.get("reasoning")
            if reasoning:
                self._piece(_REASONING, _expect_str(reasoning, "delta.reasoning_content"))
            content = delta.get("content")
            if content:
                self._piece(_TEXT, _expect_str(content, "delta.content"))
            for position, call in enumerate(delta.get("tool_calls") or ()):
                self._tool(position, call)
        reason = choice.get("finish_reason")
        if reason:
            self.pending_finish = _finish_reason(_expect_str(reason, "finish_reason"))
            self._flush()

    def _raise_error(self, error: Any) -> None:
        message, detail, err_obj = error_detail({"error": error})
        code = classify_error_detail(err_obj, detail)
        text = f"{self.label} reported an error inside the stream: {message or detail or 'no message'}"
        raise LlmError(redact(text, self.secrets), code)

    # -- text and reasoning --

    def _piece(self, kind: int, text: str) -> None:
        if self.open != kind or self.queue:
            if self.queue or (self.live is not None and not self._live_complete()):
                self.queue.append((kind, text))
                return
            self._close()  # (closing a text block empties ``parts``)
            self._open(kind)
        self.parts.append(text)
        delta_type, type_name, _ = _TEXTUAL[kind]
        self.out.append(trusted(delta_type, {"type": type_name, "index": self.open_index, "text": text}))

    def _open(self, kind: int) -> int:
        """Open the next block, of ``kind``; return its index."""
        index = self.next_index
        self.next_index += 1
        self.open = kind
        self.open_index = index
        self.out.append(
            trusted(BlockStart, {"type": "block-start", "index": index, "block_type": _BLOCK_TYPES[kind]})
        )
        return index

    # -- tool calls --

    def _tool(self, position: int, call: Any) -> None:
        wire_index = call.get("index", position)
        if type(wire_index) is not int:
            raise _malformed(self.label, f"tool_calls[{position}].index is not an integer")
        record = self.calls.get(wire_index)
        if record is None:
            record = self.calls[wire_index] = _Call(wire_index)
        call_id = call.get("id")
        if call_id is not None:
            call_id = _expect_str(call_id, "tool_calls[].id")
        function = call.get("function") or {}
        name = function.get("name")
        if name is not None:
            name = _expect_str(name, "tool_calls[].function.name")
        fragment = function.get("arguments")
        if fragment is not None:
            fragment = _expect_str(fragment, "tool_calls[].function.arguments")

        if record.closed:
            if fragment and fragment.strip():
                raise _malformed(
                    self.label,
                    f"tool call {wire_index} received more arguments after its JSON was complete and "
                    "another block had begun",
                )
            return
        if call_id and record.id is None:
            record.id = call_id
            self.ids.add(call_id)
        if name and not record.name:
            record.name = name
        if fragment:
            record.parts.append(fragment)

        if record is self.live:
            self._emit_live(record)
            return
        if record.queued:
            return
        # A new call: it goes live if nothing blocks it, else it waits its turn.
        if self.queue or (self.live is not None and not self._live_complete()):
            record.queued = True
            self.queue.append(record)
            return
        self._close()
        self._open_tool(record)

    def _open_tool(self, record: _Call) -> None:
        record.block = self._open(_TOOL)
        self.live = record
        self._emit_live(record)

    def _emit_live(self, record: _Call) -> None:
        # Fragments wait until the call has an id (a late id arrives with a later fragment).
        if record.id is None:
            return
        parts = record.parts
        while record.held < len(parts):
            self._delta(record, parts[record.held])
            record.held += 1

    def _delta(self, record: _Call, fragment: str) -> None:
        name: str | None = None
        if not record.name_sent and record.name:
            name = record.name
            record.name_sent = True
        self.out.append(
            trusted(
                ToolCallDelta,
                {"type": "tool-call-delta", "index": record.block, "id": record.id,
                 "name": name, "arguments_delta": fragment},
            )
        )

    def _live_complete(self) -> bool:
        """True when the live call can end now: it has an id and its arguments are a JSON object."""
        live = self.live
        if live is None or live.id is None or not live.name:
            return False
        try:
            return isinstance(json.loads("".join(live.parts)), dict)
        except (ValueError, RecursionError):
            return False

    def _close_tool(self, record: _Call) -> None:
        if not record.name:
            raise _malformed(self.label, f"tool call {record.wire_index} has no function name")
        if record.id is None:
            # Closed only once the wire finished (an id-less call never completes early), so every
            # wire id is known by now: the made-up one cannot collide with a later one.
            made_up = f"call-{record.block}"
            while made_up in self.ids:
                made_up += "_"
            record.id = made_up
            self.ids.add(made_up)
        if not "".join(record.parts).strip():
            record.parts.append("{}")  # a call without arguments: empty text is not JSON
        self._emit_live(record)
        if not record.name_sent:
            self._delta(record, "")  # the name came on a fragment without arguments
        record.closed = True
        self.out.append(
            trusted(
                BlockEnd,
                {"type": "block-end", "index": record.block,
                 "block": trusted(ToolCallBlock, {"type": "tool-call", "id": record.id,
                                                  "name": record.name, "arguments": "".join(record.parts)})},
            )
        )

    # -- closing --

    def _close(self) -> None:
        """Close the open block, if any."""
        kind = self.open
        if kind == _NONE:
            return
        if kind == _TOOL:
            live = self.live
            assert live is not None
            self.live = None
            self.open = _NONE
            self._close_tool(live)
            return
        block = trusted(_TEXTUAL[kind][2], {"type": _BLOCK_TYPES[kind], "text": "".join(self.parts)})
        self.out.append(trusted(BlockEnd, {"type": "block-end", "index": self.open_index, "block": block}))
        self.open = _NONE
        self.parts = []

    def _flush(self) -> None:
        """Close the open block and emit everything buffered, in arrival order."""
        self._close()
        queue, self.queue = self.queue, []
        for item in queue:
            if isinstance(item, _Call):
                self._close()
                self._open_tool(item)
                item.queued = False
            else:
                kind, text = item
                if self.open != kind:
                    self._close()
                    self._open(kind)
                self._piece(kind, text)
        self._close()

    def finish(self) -> None:
        """The wire said ``[DONE]``: close everything, then usage, then the finish chunk."""
        self._flush()
        if self.usage is not None:
            self.out.append(trusted(Usage, {"type": "usage", "usage": self.usage}))
        reason = self.pending_finish or _STOP
        if reason.kind == "stop" and self.next_index == 0:
            reason = _EMPTY  # no block at all: an empty response, not a success
        self.out.append(trusted(Finish, {"type": "finish", "reason": reason, "replay_state": None}))


_STOP = FinishReason(kind="stop")
_EMPTY = FinishReason(
    kind="error",
    failure=LlmFailure(message="the model completed without any content", code="EMPTY_RESPONSE"),
)


def _expect_str(value: Any, where: str) -> str:
    if type(value) is not str:
        raise TypeError(f"{where} is a {type(value).__name__}, not a string")
    return value


def _finish_reason(reason: str) -> FinishReason:
    kind = _FINISH_KINDS.get(reason)
    if kind is not None:
        return FinishReason(kind=kind)  # type: ignore[arg-type]
    return FinishReason(
        kind="error",
        failure=LlmFailure(message=f"the model stopped: {reason}", code=reason.upper()),
    )


def _count(usage: Mapping[str, Any], key: str) -> int | None:
    value = usage.get(key)
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise TypeError(f"usage.{key} is not a non-negative integer")
    return value


def _usage(usage: Any) -> TokenUsage:
    """Disjoint counts from wire usage: the cache hits that ``prompt_tokens`` includes are taken out."""
    if type(usage) is not dict:
        raise TypeError("usage is not an object")
    prompt = _count(usage, "prompt_tokens") or 0
    completion = _count(usage, "completion_tokens") or 0
    details = usage.get("prompt_tokens_details")
    cached = _count(details, "cached_tokens") if type(details) is dict else None
    if cached is None:
        cached = _count(usage, "prompt_cache_hit_tokens")
    out_details = usage.get("completion_tokens_details")
    reasoning = _count(out_details, "reasoning_tokens") if type(out_details) is dict else None
    uncached = prompt - (cached or 0)
    return TokenUsage(
        # A prompt count smaller than its cache hits cannot include them: it is the uncached input.
        input_tokens=uncached if uncached >= 0 else prompt,
        output_tokens=completion,
        cache_read_tokens=cached,
        reasoning_tokens=reasoning,
    )
