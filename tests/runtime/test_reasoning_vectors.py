"""The reference's ``reasoning`` vectors (40): efforts, defaults, ``off``, refusals before I/O.

The reference's DeepSeek adapter is configured with ``thinking`` / ``reasoningEffort``;
chunkscope's ``OpenAICompatAdapter`` takes a model table instead, so each vector's
configuration is expressed as the ``ModelInfo`` it stands for (``model_info_for``):
``thinking: disabled`` = the one effort ``off``; a configured effort = the default.
Where chunkscope decides differently, the vector is listed in ``DIFFERENT`` and pinned
by its own test below:

- ``purpose`` is caller metadata and never changes the request: the reference turns
  thinking off for ``session-title`` (and then skips validating the effort);
- an adapter whose model has no default effort sends no ``thinking`` field at all:
  the reference can send ``thinking: enabled`` with no effort (a deployment switch
  chunkscope does not model);
- refusal messages name provider, model and effort, but are worded by chunkscope.
"""

from __future__ import annotations

from typing import Any

import pytest

import chunkscope as cs
from chunkscope.adapters import GenerateOptions, ModelInfo, OpenAICompatAdapter, ReasoningInfo
from chunkscope.adapters.openai_compat import DEEPSEEK_EFFORTS
from chunkscope.protocol import LlmError

MODEL = "deepseek-v4-flash"
PROVIDER = "deepseek-official"
DIFFERENT = {
    "session_title_purpose_disables_thinking",
    "session_title_with_invalid_effort_not_validated",
    "session_title_purpose",
    "enabled_default_without_effort",
}


def model_info_for(config: dict[str, Any], *, runtime_defaults: bool) -> ModelInfo:
    """The model metadata a reference adapter configuration stands for."""
    disabled = config.get("thinking") == "disabled"
    efforts = DEEPSEEK_EFFORTS.efforts[:1] if disabled else DEEPSEEK_EFFORTS.efforts
    default = config.get("reasoningEffort")
    if default is None and disabled:
        default = "off"
    if default is None and runtime_defaults:
        default = "high"  # the reference's model metadata default (model_reasoning_info vectors)
    return ModelInfo(
        MODEL, reasoning=ReasoningInfo(efforts, default), max_tokens=256_000, context_window=1_000_000
    )


def options(request: dict[str, Any]) -> GenerateOptions:
    return GenerateOptions(
        PROVIDER,
        MODEL,
        [{"role": "user", "content": "hi"}],
        reasoning_effort=request.get("reasoningEffort"),
        purpose=request.get("purpose"),
    )


def wire_of(body: dict[str, Any]) -> dict[str, Any]:
    return {"thinking": body.get("thinking"), "reasoning_effort": body.get("reasoning_effort")}


def cases(upstream_cases: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [c for c in upstream_cases["reasoning"] if c["kind"] == kind]


def adapter_for(info: ModelInfo) -> OpenAICompatAdapter:
    return OpenAICompatAdapter("http://127.0.0.1:9", "test-key", models=[info])


def test_there_are_40_reasoning_vectors(upstream_cases: dict[str, Any]) -> None:
    assert len(upstream_cases["reasoning"]) == 40


def test_adapter_wire_vectors(upstream_cases: dict[str, Any]) -> None:
    checked = 0
    for case in cases(upstream_cases, "adapter_wire"):
        if case["name"] in DIFFERENT:
            continue
        adapter = adapter_for(model_info_for(case["adapter_defaults"], runtime_defaults=False))
        expected = case["expected"]
        if "error" in expected:
            with pytest.raises(LlmError) as info:
                adapter.prepare(options(case["request"]))
            assert info.value.code == expected["error"]["code"], case["name"]
            assert repr(case["request"]["reasoningEffort"]) in info.value.message
        else:
            body = adapter.request_body(adapter.prepare(options(case["request"])))
            assert wire_of(body) == expected, case["name"]
        checked += 1
    assert checked == 16


async def test_runtime_end_to_end_vectors(upstream_cases: dict[str, Any]) -> None:
    checked = 0
    for case in cases(upstream_cases, "runtime_end_to_end"):
        if case["name"] in DIFFERENT:
            continue
        adapter = adapter_for(model_info_for(case["config"], runtime_defaults=True))
        runtime = cs.LlmRuntime()
        runtime.register_adapter(PROVIDER, adapter)
        expected = case["expected"]
        if "error" in expected:
            with pytest.raises(LlmError) as info:
                await runtime.prepare_call(options(case["request"]))
            assert info.value.code == expected["error"]["code"], case["name"]
            effort = case["request"]["reasoningEffort"]
            for part in (PROVIDER, MODEL, effort):
                assert repr(part) in info.value.message
        else:
            prepared = await runtime.prepare_call(options(case["request"]))
            assert prepared.effective_effort == expected["effective_effort"], case["name"]
            body = adapter.request_body(prepared.options)
            assert {**wire_of(body), "max_tokens": body.get("max_tokens")} == expected["wire"], case["name"]
        checked += 1
    assert checked == 8


def test_model_reasoning_info_vectors(upstream_cases: dict[str, Any]) -> None:
    for case in cases(upstream_cases, "model_reasoning_info"):
        info = model_info_for(case["config"], runtime_defaults=True)
        expected = case["expected"]
        assert info.reasoning is not None
        efforts = [{"id": e.id, "name": e.name} for e in info.reasoning.efforts]
        assert {"efforts": efforts, "defaultEffort": info.reasoning.default} == expected["reasoning"], case[
            "name"
        ]
        assert (info.max_tokens, info.context_window) == (
            expected["defaultMaxTokens"],
            expected["contextWindow"],
        )


def test_config_validation_vectors(upstream_cases: dict[str, Any]) -> None:
    # "only off can be configured when thinking is disabled": a default outside the listed efforts.
    for case in cases(upstream_cases, "config_validation"):
        disabled = case["config"].get("thinking") == "disabled"
        efforts = DEEPSEEK_EFFORTS.efforts[:1] if disabled else DEEPSEEK_EFFORTS.efforts
        if case["expected"]["ok"]:
            ReasoningInfo(efforts, case["config"]["reasoningEffort"])
        else:
            with pytest.raises(ValueError, match="is not one of"):
                ReasoningInfo(efforts, case["config"]["reasoningEffort"])


def test_difference_purpose_never_changes_the_request(upstream_cases: dict[str, Any]) -> None:
    adapter = adapter_for(
        model_info_for({"thinking": "enabled", "reasoningEffort": "max"}, runtime_defaults=False)
    )
    body = adapter.request_body(
        adapter.prepare(options({"purpose": "session-title", "reasoningEffort": "max"}))
    )
    assert wire_of(body) == {"thinking": {"type": "enabled"}, "reasoning_effort": "max"}


def test_difference_an_invalid_effort_is_refused_whatever_the_purpose() -> None:
    adapter = adapter_for(model_info_for({}, runtime_defaults=False))
    with pytest.raises(LlmError) as info:
        adapter.prepare(options({"purpose": "session-title", "reasoningEffort": "medium"}))
    assert info.value.code == "UNSUPPORTED_REASONING_EFFORT"


async def test_difference_session_title_keeps_the_default_effort_through_the_runtime() -> None:
    adapter = adapter_for(model_info_for({}, runtime_defaults=True))
    runtime = cs.LlmRuntime()
    runtime.register_adapter(PROVIDER, adapter)
    prepared = await runtime.prepare_call(options({"purpose": "session-title"}))
    assert prepared.effective_effort == "high"
    assert wire_of(adapter.request_body(prepared.options))["thinking"] == {"type": "enabled"}


def test_difference_no_default_effort_sends_no_thinking_field() -> None:
    adapter = adapter_for(model_info_for({"thinking": "enabled"}, runtime_defaults=False))
    assert wire_of(adapter.request_body(adapter.prepare(options({})))) == {
        "thinking": None,
        "reasoning_effort": None,
    }
