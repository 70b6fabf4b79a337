"""The local provider's scenarios: one neutral script per model name.

A scenario's script is a list of wire-neutral steps (a reasoning fragment, a
text fragment, a tool-call fragment, a finish, a fault). One encoder per wire
(``wires/<name>.py``, one for every row of the wire table) renders the same
script, so every wire says the same thing. What a correct adapter assembles from a script
(``Scenario.expected``) is derived from the script itself; ``docs/scenarios.md``
is the table a person reads, and the provider's tests pin the two together.

This module imports nothing from ``chunkscope.adapters``: the provider judges
the adapters, so it must not share their code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Union, overload

from .._wires import WIRE_FACTS, WireFacts

__all__ = [
    "DIALECTS",
    "Expected",
    "FIRST_BYTE_SECONDS",
    "WIRES",
    "FaultKind",
    "HttpFault",
    "SCENARIOS",
    "Scenario",
    "Script",
    "WireUsage",
    "get_scenario",
    "LONG_DEFAULT_TOKENS",
    "LONG_MAX_TOKENS",
]

# --- wire-neutral steps ---------------------------------------------------------


@dataclass(frozen=True)
class Reasoning:
    """One reasoning ("thinking") fragment."""

    text: str


@dataclass(frozen=True)
class Text:
    """One visible text fragment."""

    text: str


@dataclass(frozen=True)
class Tool:
    """One fragment of tool call ``slot`` (the OpenAI wire index).

    ``id``/``name`` are ``None`` when this fragment does not carry them;
    ``arguments`` is ``None`` when the fragment has no arguments key at all.
    """

    slot: int
    id: str | None
    name: str | None
    arguments: str | None


WireFinish = Literal["stop", "tool_calls", "length", "content_filter"]


@dataclass(frozen=True)
class Finish:
    """The model's stop (OpenAI ``finish_reason`` vocabulary), then usage, then the end marker."""

    reason: WireFinish


@dataclass(frozen=True)
class Malformed:
    """A ``data:`` payload that is not JSON; the stream then ends."""


@dataclass(frozen=True)
class Truncate:
    """The response ends cleanly here, without ``[DONE]`` / ``message_stop``."""


@dataclass(frozen=True)
class Drop:
    """The connection is cut here (an incomplete chunked body)."""


@dataclass(frozen=True)
class Stall:
    """No bytes for ``seconds``; the script then continues.

    ``recovers``: the pause is short enough for an adapter's idle timeout (``stall-recovers``), so
    an adapter sees the steps after it too; otherwise its timeout fires here (``fault-stall``).
    """

    seconds: float
    recovers: bool = False


@dataclass(frozen=True)
class StreamError:
    """An error object inside a 200 stream (server overloaded); the stream then ends."""


@dataclass(frozen=True)
class CutBeforeUsage:
    """The model's stop is sent, then the response ends cleanly: no usage, no end marker.

    OpenAI wire: the ``finish_reason`` chunk, then nothing. Anthropic wire: the
    stop reason and the output usage travel together in ``message_delta``, so
    the stream ends after the last ``content_block_stop``.
    """

    reason: WireFinish


Step = Union[Reasoning, Text, Tool, Finish, Malformed, Truncate, Drop, Stall, StreamError, CutBeforeUsage]
CONTENT_STEPS = (Reasoning, Text, Tool)


@dataclass(frozen=True)
class WireUsage:
    """What the wire reports: ``prompt`` INCLUDES ``cached`` (DeepSeek's convention).

    ``cached``/``reasoning`` of ``None`` are not sent at all.
    """

    prompt: int
    completion: int
    cached: int | None = None
    reasoning: int | None = None
    compaction: tuple[int, int] | None = None
    """``(input, output)`` of a compaction iteration INCLUDED in ``prompt``/``completion``
    (the Anthropic ``usage.iterations[]`` dialect reports it as its own iteration)."""


@dataclass(frozen=True)
class Script:
    """What to send for one request: the steps and the usage the wire reports."""

    steps: Sequence[Step]
    usage: WireUsage
    dialect: str | None = None
    """How the reply's own wire says it (``DIALECTS``); None: the plain shape of every wire."""

    @property
    def reasons(self) -> bool:
        """True when the reply has reasoning (the OpenAI wire's first chunk says so)."""
        if isinstance(self.steps, _Words):
            return False
        return any(isinstance(step, Reasoning) for step in self.steps)


FaultKind = Literal["invalid-key", "insufficient-balance", "rate-limited", "server-error", "context-overflow"]
"""What a non-2xx answer says, wire-neutrally; each wire module words it in its own error body."""


@dataclass(frozen=True)
class HttpFault:
    """A non-2xx answer: status, what it says (``kind``), extra headers. Its body is the wire's:
    each module of ``provider/wires`` renders ``kind`` in its own shape and words."""

    status: int
    kind: FaultKind
    headers: Mapping[str, str] = field(default_factory=dict)


# --- what an adapter must assemble ---------------------------------------------


@dataclass(frozen=True)
class Expected:
    """What a correct adapter yields for a scenario (identical on every wire).

    ``text`` and ``reasoning`` are the concatenated text of every text and
    reasoning block delivered (for a fault: the partial output before it);
    ``tool_calls`` is ``[(name, arguments_json), ...]`` in block order;
    ``block_types`` the block kinds in the order a non-interleaving adapter
    opens them; ``usage`` the ``TokenUsage`` JSON form (camelCase, DISJOINT
    counts, absent keys omitted), ``None`` when the stream never reaches usage;
    ``finish`` the finish kind (``stop``, ``tool-calls``, ``max-tokens``,
    ``error``), ``None`` when the adapter raises instead of finishing.
    """

    text: str
    reasoning: str
    tool_calls: list[tuple[str, str]]
    block_types: list[str]
    usage: dict[str, int] | None
    finish: str | None


def _expected(script: Script, facts: WireFacts | None = None) -> Expected:
    built = _ExpectedBuilder()
    for step in _before_stall(script.steps):
        if isinstance(step, (Reasoning, Text)):
            built.fragment(step)
        elif isinstance(step, Tool):
            built.tool(step)
        elif isinstance(step, Finish):
            built.finish = _expected_finish(step.reason, built.has_content)
            built.usage = _token_usage(script.usage, facts)
            break
        elif isinstance(step, Stall):
            continue  # a pause the adapter reads through (a long one was cut off above)
        else:
            break  # a fault: the adapter raises, no finish
    return built.expected()


def _before_stall(steps: Sequence[Step]) -> Sequence[Step]:
    """The steps an adapter sees: its idle timeout fires at a stall, so later steps never reach it."""
    for cut, step in enumerate(steps):
        if isinstance(step, Stall) and not step.recovers:
            return steps[:cut]
    return steps


def _expected_finish(reason: WireFinish, has_content: bool) -> str:
    finish = {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens"}.get(reason, "error")
    if finish == "stop" and not has_content:
        return "error"  # EMPTY_RESPONSE
    return finish


class _ExpectedBuilder:
    """The joined text, reasoning, tool calls and block order of a script, step by step."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.blocks: list[str] = []
        self.tools: dict[int, list[str]] = {}  # slot -> [name, arguments]
        self.last_kind: str | None = None
        self.finish: str | None = None
        self.usage: dict[str, int] | None = None
        self.has_content = False

    def _block(self, kind: str) -> None:
        if kind != self.last_kind:
            self.blocks.append(kind)
        self.last_kind = kind
        self.has_content = True

    def fragment(self, step: Reasoning | Text) -> None:
        kind = "reasoning" if isinstance(step, Reasoning) else "text"
        self._block(kind)
        (self.reasoning if kind == "reasoning" else self.text).append(step.text)

    def tool(self, step: Tool) -> None:
        if step.slot not in self.tools:
            self.tools[step.slot] = ["", ""]
            self.blocks.append("tool-call")
        entry = self.tools[step.slot]
        if step.name:
            entry[0] = step.name
        entry[1] += step.arguments or ""
        self.last_kind = "tool-call"
        self.has_content = True

    def expected(self) -> Expected:
        return Expected(
            text="".join(self.text),
            reasoning="".join(self.reasoning),
            tool_calls=[(name, args or "{}") for name, args in self.tools.values()],
            block_types=self.blocks,
            usage=self.usage,
            finish=self.finish,
        )


def _token_usage(usage: WireUsage, facts: WireFacts | None = None) -> dict[str, int]:
    """The usage an adapter of the wire ``facts`` reads (None: as most wires report it)."""
    reasoning_tokens, zero_details = (facts.reasoning_tokens, facts.zero_details) if facts else (True, False)
    result = {"inputTokens": usage.prompt - (usage.cached or 0), "outputTokens": usage.completion}
    if usage.cached is not None or zero_details:
        result["cacheReadTokens"] = usage.cached or 0
    if reasoning_tokens and (usage.reasoning is not None or zero_details):
        result["reasoningTokens"] = usage.reasoning or 0
    return result


# --- scenarios -----------------------------------------------------------------

PROMPT_TOKENS = 12
"""Prompt tokens every scenario reports (uncached), except ``cache-hit``."""

LONG_DEFAULT_TOKENS = 500
"""``long`` sends this many tokens; ``long-<N>`` sends N."""

LONG_MAX_TOKENS = 1_000_000
"""The largest N ``long-<N>`` accepts (a bound, so one request cannot run forever)."""

ECHO_EMPTY = "(nothing to echo)"
"""What ``echo`` replies when the last user message has no text."""

SLOW_TOKEN_DELAY = 0.05
"""Seconds between events of ``slow-tokens``."""

STALL_SECONDS = 30.0
"""How long ``fault-stall`` stays silent."""

FIRST_BYTE_SECONDS = 1.0
"""How long ``slow-first-byte`` waits before its response headers."""

PAUSE_SECONDS = 1.0
"""How long ``stall-recovers`` pauses mid-stream: no longer than ``slow-first-byte``'s wait, so an
adapter whose idle timeout lets that one through (conformance asks it) lets this one through too."""

PAUSE_MAX_MS = 600_000
"""The longest pause ``stall-recovers-<MS>`` accepts (10 minutes): a bound, so one request ends."""

PAUSE_AFTER = 4
"""``stall-recovers`` pauses after this many of the ``text`` reply's 8 deltas."""

Wire = str
"""A wire's name: a key of the wire table (``chunkscope._wires.WIRE_FACTS``)."""
WIRES: tuple[Wire, ...] = tuple(WIRE_FACTS)

DIALECTS: dict[str, Wire] = {
    dialect: facts.name for facts in WIRE_FACTS.values() for dialect in facts.dialects
}
"""Each dialect of a real provider the scenarios speak, and the wire it belongs to (the wire
table's ``dialects``).

On the other wire a dialect scenario is the plain rendering of the same script.
"""


@dataclass(frozen=True)
class Scenario:
    """One model name the local provider answers, documented in ``docs/scenarios.md``.

    ``fault`` is true for the fault scenarios; ``expected_codes`` maps
    each wire's name (``WIRES``) to the ``LlmError`` code (raised) or failure
    code (of an ``error`` finish) an adapter must report, ``None`` for
    replies; ``expected`` is what a correct adapter assembles (for a fault:
    the partial output delivered before it). ``echo`` depends on the request:
    use ``expected_for(prompt)``; ``expected`` is its answer for an empty prompt.
    """

    name: str
    description: str
    fault: bool = False
    expected_codes: dict[str, str] | None = None
    http_fault: HttpFault | None = field(default=None, repr=False)
    delay: float = 0.0
    """Minimum pause between events (seconds), whatever the provider's ``token_delay``."""
    first_byte_delay: float = 0.0
    """Seconds the provider waits before answering at all (the response headers included)."""
    _build: Callable[[str], Script] | None = field(default=None, repr=False, compare=False)
    _after_tool: Callable[[str], Script] | None = field(default=None, repr=False, compare=False)
    """The reply when the conversation ends with a tool result (given its text); None: as ``_build``."""

    def script(self, prompt: str = "", tool_result: str | None = None) -> Script:
        """The neutral script for a request whose last user message is ``prompt``.

        ``tool_result`` is the text of the tool result the conversation ends
        with (None when it does not end with one); only ``tool-roundtrip`` uses it.
        """
        if tool_result is not None and self._after_tool is not None:
            return self._after_tool(tool_result)
        if self._build is None:
            return Script(steps=(), usage=WireUsage(prompt=PROMPT_TOKENS, completion=0))
        return self._build(prompt)

    def expected_for(self, prompt: str = "", wire: Wire | None = None) -> Expected:
        """What a correct adapter assembles when the last user message is ``prompt``.

        ``wire``: on a wire whose usage has no reasoning count (``WireFacts.reasoning_tokens``
        false: Bedrock) the expected usage has none either; on one that sends its zero counts
        (``WireFacts.zero_details``: Responses) it has them as 0; None: as most wires report it.
        """
        if self.http_fault is not None:
            return Expected(text="", reasoning="", tool_calls=[], block_types=[], usage=None, finish=None)
        return _expected(self.script(prompt), WIRE_FACTS[wire] if wire is not None else None)

    @property
    def expected(self) -> Expected:
        """``expected_for("")``: the expected result of every scenario except ``echo``."""
        return self.expected_for("")

    @property
    def dialect(self) -> str | None:
        """The provider dialect this scenario speaks on its own wire (``DIALECTS``), else None."""
        return self.script().dialect if self._build is not None else None

    @property
    def wires(self) -> tuple[Wire, ...]:
        """The wires whose conformance matrix holds this scenario.

        Every scenario is served on every wire; a dialect scenario belongs to the
        matrix of its dialect's wire only (on the others it repeats a plain reply).
        """
        dialect = self.dialect
        return WIRES if dialect is None else (DIALECTS[dialect],)


def _script(*steps: Step, usage: WireUsage | None = None, dialect: str | None = None) -> Script:
    if usage is None:
        content = sum(isinstance(s, CONTENT_STEPS) for s in steps)
        usage = WireUsage(prompt=PROMPT_TOKENS, completion=content)
    if dialect is not None and dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}")
    return Script(steps=tuple(steps), usage=usage, dialect=dialect)


def _texts(*parts: str) -> tuple[Text, ...]:
    return tuple(Text(p) for p in parts)


def _reasonings(*parts: str) -> tuple[Reasoning, ...]:
    return tuple(Reasoning(p) for p in parts)


HELLO = _texts("Hello", "!", " I", " am", " the", " chunkscope", " local", " provider.")
"""The ``text`` reply: ``Hello! I am the chunkscope local provider.`` in 8 deltas."""

_PARALLEL = (
    Tool(0, "call_1", "get_weather", ""),
    Tool(0, None, None, '{"city": '),
    Tool(0, None, None, '"Tokyo"}'),
    Tool(1, "call_2", "get_time", ""),
    Tool(1, None, None, '{"timezone": '),
    Tool(1, None, None, '"Asia/Tokyo"}'),
)


def _split_words(text: str) -> list[str]:
    # Whitespace is kept with the word after it, so the parts join back to the text.
    return re.findall(r"\s*\S+|\s+$", text)


def _echo(prompt: str) -> Script:
    parts = _split_words(prompt) if prompt.strip() else [ECHO_EMPTY]
    return _script(*_texts(*parts), Finish("stop"))


class _Words(Sequence[Step]):
    """``long-<N>``'s steps, made on demand: N text tokens, then the finish (a million cost nothing)."""

    def __init__(self, n: int) -> None:
        self._n = n

    def __len__(self) -> int:
        return self._n + 1

    @overload
    def __getitem__(self, i: int) -> Step: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Step]: ...
    def __getitem__(self, i: int | slice) -> Step | Sequence[Step]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i <= self._n:
            raise IndexError(i)
        if i == self._n:
            return Finish("stop")
        return Text(f" word{i}" if i else "word0")

    def __iter__(self) -> Iterator[Step]:
        yield Text("word0")
        for i in range(1, self._n):
            yield Text(f" word{i}")
        yield Finish("stop")


def _long(n: int) -> Callable[[str], Script]:
    script = Script(steps=_Words(n), usage=WireUsage(prompt=PROMPT_TOKENS, completion=n))
    return lambda prompt: script


def _stall_recovers(seconds: float) -> Script:
    """The ``text`` reply with one pause of ``seconds`` mid-stream (an adapter reads through it)."""
    return _script(*HELLO[:PAUSE_AFTER], Stall(seconds, recovers=True), *HELLO[PAUSE_AFTER:], Finish("stop"))


def _paused(model: str) -> Scenario | None:
    """``stall-recovers-<MS>``'s scenario (1 <= MS <= ``PAUSE_MAX_MS``), else None."""
    match = _PAUSE_MS.fullmatch(model)
    if match is None or not 1 <= int(match.group(1)) <= PAUSE_MAX_MS:
        return None
    ms = int(match.group(1))
    return Scenario(
        name=model,
        description=f"the text reply, silent for {ms} ms after its {PAUSE_AFTER}th delta, then the rest",
        _build=_fixed(_stall_recovers(ms / 1000)),
    )


def _fixed(script: Script) -> Callable[[str], Script]:
    return lambda prompt: script


def _reply(
    name: str, description: str, script: Script, delay: float = 0.0, first_byte_delay: float = 0.0
) -> Scenario:
    return Scenario(
        name=name,
        description=description,
        delay=delay,
        first_byte_delay=first_byte_delay,
        _build=_fixed(script),
    )


def _both(code: str) -> dict[str, str]:
    return dict.fromkeys(WIRES, code)


def _stream_fault(name: str, description: str, codes: dict[str, str], script: Script) -> Scenario:
    return Scenario(
        name=name, description=description, fault=True, expected_codes=codes, _build=_fixed(script)
    )


def _http_fault(name: str, description: str, code: str, fault: HttpFault) -> Scenario:
    return Scenario(
        name=name, description=description, fault=True, expected_codes=_both(code), http_fault=fault
    )


_SCENARIO_LIST: list[Scenario] = [
    _reply("text", "plain text in 8 deltas", _script(*HELLO, Finish("stop"))),
    Scenario(name="echo", description="the last user message's text, split on spaces", _build=_echo),
    _reply(
        "reasoning",
        "reasoning, then text",
        _script(
            *_reasonings("The", " user", " greets", " me.", " I", " should", " greet", " back."),
            *_texts("Hello", " there", "!"),
            Finish("stop"),
        ),
    ),
    _reply(
        "reasoning-resume",
        "reasoning, text, reasoning again, text again (four blocks)",
        _script(
            *_reasonings("First", " thought."),
            *_texts("Partial", " answer."),
            *_reasonings("Second", " thought."),
            *_texts(" Final", " answer."),
            Finish("stop"),
        ),
    ),
    _reply(
        "tool-call",
        "text, then one get_weather call in 5 fragments",
        _script(
            *_texts("Let", " me", " check."),
            Tool(0, "call_weather_1", "get_weather", '{"city": '),
            Tool(0, None, None, '"Tokyo", '),
            Tool(0, None, None, '"unit": '),
            Tool(0, None, None, '"celsius"'),
            Tool(0, None, None, "}"),
            Finish("tool_calls"),
        ),
    ),
    Scenario(
        name="tool-roundtrip",
        description="the tool-call reply; once the conversation ends with a tool result, text quoting it",
        _build=_fixed(
            _script(
                *_texts("Let", " me", " check."),
                Tool(0, "call_weather_1", "get_weather", '{"city": '),
                Tool(0, None, None, '"Tokyo"}'),
                Finish("tool_calls"),
            )
        ),
        _after_tool=lambda result: _script(*_texts("The", " tool", " said:", " " + result), Finish("stop")),
    ),
    _reply(
        "parallel-tools", "two tool calls, one after the other", _script(*_PARALLEL, Finish("tool_calls"))
    ),
    _reply(
        "interleaved-tools",
        "two tool calls whose fragments alternate on the OpenAI wire",
        _script(*(_PARALLEL[i] for i in (0, 3, 1, 4, 2, 5)), Finish("tool_calls")),
    ),
    _reply(
        "late-id",
        "one tool call whose id arrives in its second fragment",
        _script(Tool(0, None, "lookup", '{"q": '), Tool(0, "call_late", None, '"x"}'), Finish("tool_calls")),
    ),
    _reply(
        "no-id",
        "one tool call that never has an id",
        _script(Tool(0, None, "lookup", '{"q": '), Tool(0, None, None, '"x"}'), Finish("tool_calls")),
    ),
    _reply(
        "no-args",
        "one tool call with no arguments at all",
        _script(Tool(0, "call_ping", "ping", None), Finish("tool_calls")),
    ),
    Scenario(
        name="long",
        description=f"a long text reply, one token per event (default {LONG_DEFAULT_TOKENS}; long-<N>: N)",
        _build=_long(LONG_DEFAULT_TOKENS),
    ),
    _reply(
        "max-tokens",
        "text cut by the token limit",
        _script(*_texts("This", " reply", " is", " cut"), Finish("length")),
    ),
    _reply(
        "cache-hit",
        "text with a large cache hit in the usage",
        _script(
            *_texts("Cached", " hello."), Finish("stop"), usage=WireUsage(7800, 9, cached=7680, reasoning=4)
        ),
    ),
    _reply(
        "slow-tokens",
        f"the text reply with {int(SLOW_TOKEN_DELAY * 1000)} ms between events",
        _script(*HELLO, Finish("stop")),
        delay=SLOW_TOKEN_DELAY,
    ),
    Scenario(
        name="stall-recovers",
        description=(
            f"the text reply, silent for {PAUSE_SECONDS:g} s after its {PAUSE_AFTER}th delta, then the rest "
            "(stall-recovers-<MS>: MS ms)"
        ),
        _build=_fixed(_stall_recovers(PAUSE_SECONDS)),
    ),
    _reply(
        "reasoning-text-tools",
        "reasoning, then text, then two tool calls, in one reply",
        _script(
            *_reasonings("Two", " lookups", " needed."),
            *_texts("Checking", " both."),
            Tool(0, "call_w", "get_weather", '{"city": '),
            Tool(0, None, None, '"Paris"}'),
            Tool(1, "call_t", "get_time", '{"timezone": "Europe/Paris"}'),
            Finish("tool_calls"),
        ),
    ),
    _reply(
        "slow-first-byte",
        f"the text reply after {FIRST_BYTE_SECONDS:g} s without a byte (not even the headers)",
        _script(*HELLO, Finish("stop")),
        first_byte_delay=FIRST_BYTE_SECONDS,
    ),
    # --- dialects of real OpenAI-compatible servers (and one of Anthropic's) ---
    _reply(
        "dialect-content-parts",
        "reasoning and text as delta.content lists of typed parts (Mistral thinking parts)",
        _script(
            *_reasonings("Think", "ing", " in parts."),
            *_texts("Parts", " are", " text."),
            Finish("stop"),
            dialect="content-parts",
        ),
    ),
    _reply(
        "dialect-reasoning-details",
        "reasoning as delta.reasoning_details[] (later fragments also as delta.reasoning), then text",
        _script(
            *_reasonings("Details", " first,", " then", " both."),
            *_texts("Done", " thinking."),
            Finish("stop"),
            dialect="reasoning-details",
        ),
    ),
    _reply(
        "dialect-xai-usage",
        "reasoning then text; usage whose completion_tokens leaves the reasoning tokens out (xAI)",
        _script(
            *_reasonings("Counting", " apart."),
            *_texts("Tokens", " add", " up."),
            Finish("stop"),
            usage=WireUsage(PROMPT_TOKENS, 25, reasoning=20),
            dialect="xai-usage",
        ),
    ),
    _reply(
        "dialect-done-no-blank-line",
        "the text reply whose final data: [DONE] has no closing blank line",
        _script(*HELLO, Finish("stop"), dialect="done-no-blank-line"),
    ),
    _reply(
        "dialect-usage-iterations",
        "text; Anthropic usage with iterations[] (a compaction iteration, then the message)",
        _script(
            *_texts("Compacted", " hello."),
            Finish("stop"),
            usage=WireUsage(PROMPT_TOKENS + 3000, 2 + 180, compaction=(3000, 180)),
            dialect="usage-iterations",
        ),
    ),
    # --- dialects of the OpenAI Responses wire ---
    _reply(
        "dialect-several-output-items",
        "reasoning, then text said in two message output items (one text block each on the Responses wire)",
        _script(
            *_reasonings("Plan", " the", " answer."),
            *_texts("First", " item.", " Second", " item."),
            Finish("stop"),
            dialect="several-output-items",
        ),
    ),
    _reply(
        "dialect-summary-parts",
        "a reasoning summary in two summary parts (a reasoning block each on the Responses wire), then text",
        _script(
            *_reasonings("Part", " one.", " Part", " two."),
            *_texts("Summed", " up."),
            Finish("stop"),
            dialect="summary-parts",
        ),
    ),
    _reply(
        "dialect-reasoning-text",
        "reasoning as response.reasoning_text.delta (the full reasoning, not a summary), then text",
        _script(
            *_reasonings("Raw", " reasoning", " text."),
            *_texts("Answer", " given."),
            Finish("stop"),
            dialect="reasoning-text",
        ),
    ),
    # --- dialects of the Gemini wire ---
    _reply(
        "dialect-partial-args",
        "text, then one get_forecast call whose arguments stream as partialArgs JSON-path patches",
        _script(
            *_texts("Looking", " it", " up."),
            Tool(0, "call_forecast_1", "get_forecast", '{"city": "San Francisco", '),
            Tool(0, None, None, '"days": 3, "hourly": true, '),
            Tool(0, None, None, '"units": {"temp": "celsius", "wind": "km/h"}, "alerts": ["rain", null]}'),
            Finish("tool_calls"),
            dialect="partial-args",
        ),
    ),
    _reply(
        "dialect-crlf-framing",
        "the text reply with every line ended by CRLF (events end in \\r\\n\\r\\n)",
        _script(*HELLO, Finish("stop"), dialect="crlf-framing"),
    ),
    # --- faults ---
    _http_fault(
        "fault-401",
        "401 invalid API key",
        "AUTH",
        HttpFault(401, "invalid-key"),
    ),
    _http_fault("fault-402", "402 insufficient balance", "QUOTA", HttpFault(402, "insufficient-balance")),
    _http_fault(
        "fault-429",
        "429 rate limited, Retry-After: 2",
        "RATE_LIMIT",
        HttpFault(
            429,
            "rate-limited",
            headers={"retry-after": "2", "x-request-id": "req-429", "request-id": "req-429"},
        ),
    ),
    _http_fault("fault-500", "500 internal server error", "SERVER", HttpFault(500, "server-error")),
    _http_fault(
        "fault-context",
        "400 context window exceeded",
        "CONTEXT_WINDOW_EXCEEDED",
        HttpFault(400, "context-overflow"),
    ),
    _stream_fault(
        "fault-malformed",
        "2 text deltas, then a payload that is not JSON",
        _both("MALFORMED_RESPONSE"),
        _script(*HELLO[:2], Malformed()),
    ),
    _stream_fault(
        "fault-truncated",
        "3 text deltas, then the stream ends without its end marker",
        _both("STREAM_CLOSED"),
        _script(*HELLO[:3], Truncate()),
    ),
    _stream_fault(
        "fault-drop",
        "3 text deltas, then the connection is dropped",
        _both("TRANSPORT"),
        _script(*HELLO[:3], Drop()),
    ),
    _stream_fault(
        "fault-stall",
        f"2 text deltas, then silence for {int(STALL_SECONDS)} s (then the rest of the text reply)",
        _both("TIMEOUT"),
        _script(*HELLO[:2], Stall(STALL_SECONDS), *HELLO[2:], Finish("stop")),
    ),
    _stream_fault(
        "fault-in-stream-error",
        "2 text deltas, then an error object inside the 200 stream",
        _both("SERVER"),
        _script(*HELLO[:2], StreamError()),
    ),
    _stream_fault(
        "fault-cut-before-usage",
        "3 text deltas and the stop, then the stream ends before usage and the end marker",
        _both("STREAM_CLOSED"),
        _script(*HELLO[:3], CutBeforeUsage("stop")),
    ),
    _stream_fault(
        "fault-content-filter",
        "a text delta, then finish_reason content_filter (Anthropic: stop_reason refusal)",
        {name: facts.withheld_code for name, facts in WIRE_FACTS.items()},
        _script(Text("I can't help with that."), Finish("content_filter")),
    ),
    _stream_fault(
        "fault-empty",
        "a complete stream with no content at all",
        _both("EMPTY_RESPONSE"),
        _script(Finish("stop")),
    ),
]

SCENARIOS: dict[str, Scenario] = {s.name: s for s in _SCENARIO_LIST}
"""Every model name the local provider answers (``long`` stands for ``long-<N>`` too)."""

_LONG_N = re.compile(r"long-([0-9]{1,7})")
_PAUSE_MS = re.compile(r"stall-recovers-([0-9]{1,6})")


def get_scenario(model: str) -> Scenario | None:
    """The scenario a request's ``model`` selects (``long-<N>`` resolved), or ``None``."""
    scenario = SCENARIOS.get(model)
    if scenario is not None:
        return scenario
    match = _LONG_N.fullmatch(model)
    if match is None:
        return _paused(model)
    n = int(match.group(1))
    if not 1 <= n <= LONG_MAX_TOKENS:
        return None
    return Scenario(
        name=model, description=f"a long text reply of {n} tokens, one per event", _build=_long(n)
    )


# --- what the wire encoders share ------------------------------------------------


@dataclass
class ToolCall:
    """One tool call of a script, its fragments joined (``arguments`` ``None``: never sent)."""

    slot: int
    id: str | None = None
    name: str | None = None
    arguments: str | None = None


@dataclass
class Collected:
    """A script's content joined, for the non-streaming bodies.

    ``fault`` is the step that ends the response early (``Malformed``,
    ``Truncate``, ``Drop``, ``StreamError``), ``stall`` the seconds of silence
    a ``Stall`` asks for; content after a ``Stall`` still counts.
    """

    reasoning: str = ""
    text: str = ""
    tools: list[ToolCall] = field(default_factory=list)
    finish: WireFinish | None = None
    fault: Step | None = None
    stall: float | None = None


def tools_one_call_at_a_time(steps: Sequence[Step]) -> Iterator[Step]:
    """``steps`` with each run of tool fragments grouped by call, in first-seen order: what a
    wire whose blocks cannot interleave (Anthropic, Responses, Bedrock) sends for them."""
    run: list[Tool] = []
    for step in [*steps, None]:
        if isinstance(step, Tool):
            run.append(step)
            continue
        if run:
            first_seen: dict[int, int] = {}
            for position, fragment in enumerate(run):
                first_seen.setdefault(fragment.slot, position)
            yield from sorted(run, key=lambda t: first_seen[t.slot])
            run = []
        if step is not None:
            yield step


def collect_steps(steps: Sequence[Step]) -> Collected:
    """Join a script's fragments (stopping at its finish or at a fault that ends it)."""
    out = Collected()
    reasoning: list[str] = []
    text: list[str] = []
    by_slot: dict[int, ToolCall] = {}
    for step in steps:
        if isinstance(step, Reasoning):
            reasoning.append(step.text)
        elif isinstance(step, Text):
            text.append(step.text)
        elif isinstance(step, Tool):
            _add_tool_fragment(out, by_slot, step)
        elif isinstance(step, Stall):
            out.stall = step.seconds
        elif isinstance(step, Finish):
            out.finish = step.reason
            break
        else:
            out.fault = step
            break
    out.reasoning = "".join(reasoning)
    out.text = "".join(text)
    return out


def _add_tool_fragment(out: Collected, by_slot: dict[int, ToolCall], step: Tool) -> None:
    """Join a tool fragment into its call (a new call at a new slot): first id and name win."""
    call = by_slot.get(step.slot)
    if call is None:
        call = by_slot[step.slot] = ToolCall(step.slot)
        out.tools.append(call)
    call.id = call.id or step.id
    call.name = call.name or step.name
    if step.arguments is not None:
        call.arguments = (call.arguments or "") + step.arguments
