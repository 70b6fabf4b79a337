"""Pure translators (no HTTP): the fast path agrees with the general path, SSE framing is
independent of how the body is split into reads, and the real OpenAI-compatible and Anthropic
dialects of issue 8 §3 are read instead of lost."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from chunkscope.adapters._core import SseDecoder
from chunkscope.adapters.anthropic import AnthropicTranslator
from chunkscope.adapters.openai_compat import OpenAITranslator
from chunkscope.protocol import LlmError, check, parse_chunk

KEY = "sk-translator-key-0123"


def run(payloads: list[Any], *, fast: bool = True, **kwargs: Any) -> tuple[list[dict[str, Any]], str | None]:
    translator = OpenAITranslator("L", (KEY,), fast=fast, **kwargs)
    out: list[Any] = []
    try:
        for payload in payloads:
            text = payload if isinstance(payload, str) else json.dumps(payload)
            out += translator.feed(("message", text))
            if translator.done:
                break
        out += translator.end()
    except LlmError as exc:
        out += translator.salvage()
        return [c.model_dump(mode="json") for c in out], exc.code
    return [c.model_dump(mode="json") for c in out], None


def strict_violations(chunks: list[dict[str, Any]]) -> list[str]:
    """The strict profile's structural errors. ``finish-consistency`` (``tool_calls`` with no call)
    and ``arguments-json`` (arguments that are not JSON) judge the model's answer, which the
    translator passes on as sent; they are not translation faults."""
    found = check([parse_chunk(c) for c in chunks], "strict")
    content_rules = {"finish-consistency", "arguments-json"}
    return [v.rule for v in found if v.severity == "error" and v.rule not in content_rules]


def text_of(chunks: list[dict[str, Any]], kind: str) -> str:
    return "".join(c["text"] for c in chunks if c["type"] == f"{kind}-delta")


# --- the fast path agrees with the general path --------------------------------------------

_words = st.sampled_from(["a", "b ", "{", "}", '"k"', ":", "1", " ", "é", "", "<think>", "</think>", "\n"])
_piece = st.lists(_words, min_size=0, max_size=3).map("".join)


@st.composite
def deltas(draw: st.DrawFn) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    kind = draw(
        st.sampled_from(
            ["text", "reasoning", "reasoning_alias", "details", "parts", "tool", "mixed", "empty"]
        )
    )
    if kind in ("text", "mixed"):
        delta["content"] = draw(_piece)
    if kind in ("reasoning", "mixed"):
        delta["reasoning_content"] = draw(_piece)
    if kind == "reasoning_alias":
        delta["reasoning"] = draw(_piece)
    if kind == "details" or (kind == "mixed" and draw(st.booleans())):
        delta["reasoning_details"] = [{"type": "reasoning.text", "text": draw(_piece)}]
    if kind == "parts":
        delta["content"] = [
            {"type": "thinking", "thinking": [{"type": "text", "text": draw(_piece)}]},
            {"type": "text", "text": draw(_piece)},
        ]
    if kind in ("tool", "mixed") and draw(st.booleans()):
        call: dict[str, Any] = {"index": draw(st.integers(0, 2)), "function": {"arguments": draw(_piece)}}
        if draw(st.booleans()):
            call["id"] = f"call_{call['index']}"
        if draw(st.booleans()):
            call["function"]["name"] = "f"
        delta["tool_calls"] = [call]
    return delta


@st.composite
def streams(draw: st.DrawFn) -> list[Any]:
    payloads: list[Any] = [{"choices": [{"delta": d}]} for d in draw(st.lists(deltas(), max_size=12))]
    finish = draw(st.sampled_from([None, "stop", "tool_calls", "length"]))
    if finish is not None:
        payloads.append({"choices": [{"delta": {}, "finish_reason": finish}]})
    if draw(st.booleans()):
        payloads.append({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
    payloads.append("[DONE]")
    return payloads


@settings(max_examples=300, deadline=None)
@given(streams(), st.booleans())
def test_the_fast_path_and_the_general_path_give_identical_chunks_and_errors(
    payloads: list[Any], think: bool
) -> None:
    fast = run(payloads, fast=True, think_tags=think)
    general = run(payloads, fast=False, think_tags=think)
    assert fast == general
    chunks, code = fast
    if code is None:
        assert strict_violations(chunks) == []


# --- SSE framing is independent of read boundaries ------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(['{"a":1}', "[DONE]", "x y", "é", ""]), min_size=1, max_size=6),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.lists(st.integers(1, 40), max_size=8),
    st.booleans(),
)
def test_sse_events_do_not_depend_on_how_the_body_is_split_into_reads(
    datas: list[str], newline: str, cuts: list[int], comment: bool
) -> None:
    body = "".join((f": ping{newline}" if comment else "") + f"data: {d}{newline}{newline}" for d in datas)
    raw = body.encode()
    whole = SseDecoder()
    expected = [e for e in whole.feed(raw)] + whole.end()
    pieces, at = [], 0
    for cut in cuts:
        pieces.append(raw[at : at + cut])
        at += cut
    pieces.append(raw[at:])
    split = SseDecoder()
    got = [e for piece in pieces for e in split.feed(piece)] + split.end()
    assert got == expected == [("message", d) for d in datas]


# --- OpenAI-compatible dialects (issue 8 §3) ---------------------------------------------------


def test_mistral_typed_content_parts_become_reasoning_and_text_blocks() -> None:
    chunks, code = run(
        [
            {
                "choices": [
                    {
                        "delta": {
                            "role": "assistant",
                            "content": [
                                {"type": "thinking", "thinking": [{"type": "text", "text": "Let me "}]}
                            ],
                        }
                    }
                ]
            },
            {
                "choices": [
                    {
                        "delta": {
                            "content": [
                                {"type": "thinking", "thinking": [{"type": "text", "text": "think."}]}
                            ]
                        }
                    }
                ]
            },
            {"choices": [{"delta": {"content": [{"type": "text", "text": "The answer"}]}}]},
            {"choices": [{"delta": {"content": " is 4."}, "finish_reason": "stop"}]},
            "[DONE]",
        ]
    )
    assert code is None
    ends = [c["block"] for c in chunks if c["type"] == "block-end"]
    assert ends == [
        {"type": "reasoning", "text": "Let me think."},
        {"type": "text", "text": "The answer is 4."},
    ]
    assert strict_violations(chunks) == []


def test_openrouter_reasoning_details_become_reasoning() -> None:
    chunks, code = run(
        [
            {"choices": [{"delta": {"reasoning_details": [{"type": "reasoning.text", "text": "step 1. "}]}}]},
            {
                "choices": [
                    {
                        "delta": {
                            "reasoning_details": [
                                {"type": "reasoning.text", "text": "step 2."},
                                {"type": "reasoning.encrypted", "data": "xx"},
                            ]
                        }
                    }
                ]
            },
            {"choices": [{"delta": {"content": "done"}, "finish_reason": "stop"}]},
            "[DONE]",
        ]
    )
    assert code is None
    assert text_of(chunks, "reasoning") == "step 1. step 2."
    assert text_of(chunks, "text") == "done"


def test_reasoning_sent_both_as_reasoning_and_reasoning_details_is_counted_once() -> None:
    both = [
        {
            "choices": [
                {
                    "delta": {
                        "reasoning": "think ",
                        "reasoning_details": [{"type": "reasoning.text", "text": "think "}],
                    }
                }
            ]
        },
        {
            "choices": [
                {
                    "delta": {
                        "reasoning": "more",
                        "reasoning_details": [{"type": "reasoning.text", "text": "more"}],
                    }
                }
            ]
        },
        {"choices": [{"delta": {"reasoning_details": [{"type": "reasoning.text", "text": "more"}]}}]},
        {"choices": [{"delta": {"content": "ok"}, "finish_reason": "stop"}]},
        "[DONE]",
    ]
    for fast in (True, False):
        chunks, code = run(both, fast=fast)
        assert code is None
        assert text_of(chunks, "reasoning") == "think more"


def test_xai_usage_whose_completion_leaves_reasoning_out_counts_it_in_output() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 115,
        "completion_tokens_details": {"reasoning_tokens": 100},
    }
    chunks, _ = run(
        [{"choices": [{"delta": {"content": "x"}, "finish_reason": "stop"}], "usage": usage}, "[DONE]"]
    )
    [reported] = [c["usage"] for c in chunks if c["type"] == "usage"]
    assert (reported["output_tokens"], reported["reasoning_tokens"]) == (105, 100)


def test_usage_whose_completion_includes_reasoning_is_not_counted_twice() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 105,
        "total_tokens": 115,
        "completion_tokens_details": {"reasoning_tokens": 100},
    }
    chunks, _ = run(
        [{"choices": [{"delta": {"content": "x"}, "finish_reason": "stop"}], "usage": usage}, "[DONE]"]
    )
    [reported] = [c["usage"] for c in chunks if c["type"] == "usage"]
    assert reported["output_tokens"] == 105


def test_think_tags_split_across_deltas_become_a_reasoning_block_when_asked() -> None:
    payloads = [
        {"choices": [{"delta": {"content": "<thi"}}]},
        {"choices": [{"delta": {"content": "nk>plan "}}]},
        {"choices": [{"delta": {"content": "it</th"}}]},
        {"choices": [{"delta": {"content": "ink>\n\nAnswer <b>"}}]},
        {"choices": [{"delta": {"content": "!"}, "finish_reason": "stop"}]},
        "[DONE]",
    ]
    chunks, code = run(payloads, think_tags=True)
    assert code is None
    assert text_of(chunks, "reasoning") == "plan it"
    assert text_of(chunks, "text") == "\n\nAnswer <b>!"
    assert strict_violations(chunks) == []
    plain, _ = run(payloads)  # off by default: the tags are text
    assert text_of(plain, "text") == "<think>plan it</think>\n\nAnswer <b>!"


# --- Anthropic ------------------------------------------------------------------------------------


def test_anthropic_usage_iterations_cover_every_billed_iteration() -> None:
    translator = AnthropicTranslator()
    events = [
        (
            "message_start",
            {"type": "message_start", "message": {"usage": {"input_tokens": 50, "output_tokens": 1}}},
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {
                    "input_tokens": 50,
                    "output_tokens": 20,
                    "iterations": [
                        {
                            "type": "compaction",
                            "input_tokens": 1000,
                            "output_tokens": 300,
                            "cache_read_input_tokens": 10,
                        },
                        {"type": "message", "input_tokens": 50, "output_tokens": 20},
                    ],
                },
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    out: list[Any] = []
    for name, data in events:
        out += translator.feed((name, json.dumps(data)))
    assert translator.done and translator.end() == []
    [usage] = [c for c in out if c.type == "usage"]
    assert (usage.usage.input_tokens, usage.usage.output_tokens, usage.usage.cache_read_tokens) == (
        1050,
        320,
        10,
    )


def test_anthropic_advisor_iterations_are_another_models_tokens_not_this_calls() -> None:
    # A Sonnet call consulting an Opus advisor (the advisor tool): the wire lists the advisor's
    # turn as an advisor_message iteration between the executor's own message iterations.
    translator = AnthropicTranslator()
    executor = [
        {
            "type": "message",
            "input_tokens": 1100,
            "output_tokens": 96,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        },
        {
            "type": "message",
            "input_tokens": 1311,
            "output_tokens": 402,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        },
    ]
    advisor = {
        "type": "advisor_message",
        "model": "claude-opus-4-6",
        "input_tokens": 2543,
        "output_tokens": 1187,
        "cache_read_input_tokens": 512,
        "cache_creation_input_tokens": 0,
    }
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "model": "claude-sonnet-4-6",
                    "usage": {"input_tokens": 1100, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "advisor",
                    "input": {},
                },
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Done."}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {
                    "input_tokens": 1311,
                    "output_tokens": 402,
                    "iterations": [executor[0], advisor, executor[1]],
                },
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    out: list[Any] = []
    for name, data in events:
        out += translator.feed((name, json.dumps(data)))
    [usage] = [c.usage for c in out if c.type == "usage"]
    # billed to this call: the executor's two iterations only (2,411 in, not 4,954)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (2411, 498, 0)
    assert check(out) == []


# --- issue 26 item 6 on every wire: empty first deltas, tools the provider runs, no start event ----


def _read(translator: Any, events: list[tuple[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for name, payload in events:
        out += translator.feed((name, json.dumps(payload)))
        if translator.done:
            break
    return out


def test_responses_built_in_tools_an_empty_first_delta_and_no_created_event_read_as_the_answer() -> None:
    from chunkscope.adapters.openai_responses import ResponsesTranslator

    search = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "x"}}
    message = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}

    def text(delta: str) -> tuple[str, Any]:
        fields = {"output_index": 1, "content_index": 0, "item_id": "msg_1", "delta": delta}
        return "response.output_text.delta", {"type": "response.output_text.delta", **fields}

    usage = {"input_tokens": 9, "output_tokens": 3, "total_tokens": 12}
    events = [  # no response.created / in_progress: they carry only the response's id and status
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": search},
        ),
        (
            "response.web_search_call.completed",
            {"type": "response.web_search_call.completed", "item_id": "ws_1"},
        ),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": search},
        ),
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 1, "item": message},
        ),
        text(""),
        text("Sunny."),
        (
            "response.completed",
            {"type": "response.completed", "response": {"status": "completed", "usage": usage}},
        ),
    ]
    chunks = [c.model_dump(mode="json") for c in _read(ResponsesTranslator(), events)]
    assert check(chunks, "strict") == []
    ends = [c["block"] for c in chunks if c["type"] == "block-end"]
    assert ends == [{"type": "text", "text": "Sunny."}] and chunks[-1]["reason"]["kind"] == "stop"


def test_gemini_code_execution_parts_and_an_empty_first_text_read_as_the_answer() -> None:
    from chunkscope.adapters.gemini import GeminiTranslator

    code = {"executableCode": {"language": "PYTHON", "code": "print(2 + 2)"}}
    ran = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4\n"}}
    usage = {"promptTokenCount": 9, "candidatesTokenCount": 3, "totalTokenCount": 12}
    events = [
        ("message", {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}}]}),
        ("message", {"candidates": [{"content": {"role": "model", "parts": [code, ran]}}]}),
        ("message", {"candidates": [{"content": {"role": "model", "parts": [{"text": "It is 4."}]}}]}),
        (
            "message",
            {"candidates": [{"content": {"parts": []}, "finishReason": "STOP"}], "usageMetadata": usage},
        ),
    ]
    translator = GeminiTranslator()
    chunks = [c.model_dump(mode="json") for c in [*_read(translator, events), *translator.end()]]
    assert check(chunks, "strict") == []
    ends = [c["block"] for c in chunks if c["type"] == "block-end"]
    assert ends == [{"type": "text", "text": "It is 4."}] and chunks[-1]["reason"]["kind"] == "stop"


def test_openai_chat_an_empty_first_delta_is_no_empty_response() -> None:
    chunks, code = run(
        [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
            {"choices": [{"index": 0, "delta": {"content": "Hi"}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            "[DONE]",
        ]
    )
    assert code is None and [c["block"] for c in chunks if c["type"] == "block-end"] == [
        {"type": "text", "text": "Hi"}
    ]
    assert chunks[-1]["reason"]["kind"] == "stop"
