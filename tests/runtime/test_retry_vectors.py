"""The reference's ``retry`` vectors (63), and each place chunkscope decides differently.

Differences (documented in ``chunkscope/runtime/_retry.py``), each with its own test below:

1. default retryable codes are the registry's, which include ``STREAM_CLOSED``;
2. retries are counted per call, not looked up in a session log (``prior_llm_retry_events``
   of another step or policy are simply not this call's retries);
3. no downstream recovery chain (``downstream_consulted`` has no counterpart).
"""

from __future__ import annotations

from typing import Any

import pytest

import chunkscope as cs
from chunkscope.protocol import LlmError, LlmFailure
from chunkscope.runtime import DEFAULT_RETRYABLE_CODES

PATH = "provider.retryPolicy"
REFERENCE_DEFAULT_CODES = ["EMPTY_RESPONSE", "RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT"]


def cases(upstream_cases: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [c for c in upstream_cases["retry"] if c["kind"] == kind]


def _config_of(resolved: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {
        "mode": resolved["mode"],
        "backoff": {k: resolved[k] for k in ("initialDelayMs", "maxDelayMs", "jitterRatio")},
    }
    if resolved["mode"] == "normal":
        config.update(maxRetries=resolved["maxRetries"], retryableCodes=resolved["retryableCodes"])
    return config


def test_there_are_63_retry_vectors(upstream_cases: dict[str, Any]) -> None:
    assert len(upstream_cases["retry"]) == 63


def test_policy_resolution_vectors(upstream_cases: dict[str, Any]) -> None:
    checked = 0
    for case in cases(upstream_cases, "policy_resolution"):
        config, expected = case["config"], case["expected"]
        expected = expected.get("resolved", expected)
        if "error" in expected:
            with pytest.raises(ValueError) as info:
                cs.RetryPolicy.from_config(config, PATH)
            assert str(info.value) == expected["error"], case["name"]
        else:
            resolved = cs.RetryPolicy.from_config(config, PATH).resolved()
            if expected.get("retryableCodes") == REFERENCE_DEFAULT_CODES and "retryableCodes" not in (
                config or {}
            ):
                # difference 1: the registry's default codes (pinned by the test below)
                expected = {**expected, "retryableCodes": list(DEFAULT_RETRYABLE_CODES)}
            assert resolved == expected, case["name"]
        checked += 1
    assert checked == 22


def test_difference_default_retryable_codes_are_the_registrys_and_include_stream_closed() -> None:
    # STREAM_CLOSED: a cut stream is transient. INSUFFICIENT_SYSTEM_RESOURCE: DeepSeek out of capacity,
    # which chunkscope retried as SERVER before it emitted the reference's own code.
    assert set(DEFAULT_RETRYABLE_CODES) == {
        *REFERENCE_DEFAULT_CODES,
        "STREAM_CLOSED",
        "INSUFFICIENT_SYSTEM_RESOURCE",
    }
    decision = cs.RetryPolicy(seed=0).decide(LlmError("SSE stream ended without [DONE]", "STREAM_CLOSED"), 0)
    assert decision is not None and decision.retry == 1


def _prior_retries(case: dict[str, Any], policy: cs.RetryPolicy) -> int:
    # This call's retries so far: the reference reads them from its session log; we count them per call.
    current = case["current"]
    mine = [
        e["retry"]
        for e in case["prior_llm_retry_events"]
        if (e["turn"], e["step"], e["provider"]) == (current["turn"], current["step"], current["provider"])
        and e["policyKey"] == policy.policy_key()
    ]
    return mine[-1] if mine else 0


def test_schedule_vectors(upstream_cases: dict[str, Any]) -> None:
    checked = 0
    for case in cases(upstream_cases, "schedule"):
        policy = cs.RetryPolicy.from_config(_config_of(case["resolved_policy"]), PATH)
        error = LlmError.from_failure(LlmFailure.model_validate(case["failure"]))
        decision = policy.decide(error, _prior_retries(case, policy), sample=case["random_sample"])
        expected = case["expected"]
        if expected["action"] == "delegate":
            assert decision is None, case["name"]
        else:
            data = expected["event_data"]
            assert decision is not None, case["name"]
            assert decision.retry == data["retry"], case["name"]
            assert decision.delay_ms == pytest.approx(data["delayMs"], abs=1e-9), case["name"]
            assert policy.policy_key() == data["policyKey"], case["name"]
            assert policy.mode == data["mode"]
            if policy.mode == "normal":
                assert policy.max_retries == data["maxRetries"]
            assert error.failure.model_dump(by_alias=True, exclude_none=True) == data["failure"], case["name"]
        checked += 1
    assert checked == 41


def test_difference_retries_of_another_step_or_policy_are_not_this_calls(
    upstream_cases: dict[str, Any],
) -> None:
    # prior_retries_in_other_step_not_counted / ..._under_other_policy_key_not_counted: in chunkscope a
    # call's count starts at 0, so the first failure of a call is always retry 1 at the initial delay.
    policy = cs.RetryPolicy()
    decision = policy.decide(LlmError("busy", "SERVER"), 0, sample=0.5)
    assert decision is not None and (decision.retry, decision.delay_ms) == (1, 500)


def test_difference_always_mode_retries_everything_but_an_abort_without_a_downstream_handler() -> None:
    policy = cs.RetryPolicy(mode="always")
    assert policy.decide(LlmError("no money", "QUOTA", status=402), 1000, sample=0.5) is not None
    assert policy.decide(LlmError("stopped", "ABORTED"), 0) is None  # an abort is never retried
