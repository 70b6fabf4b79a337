"""``LlmError``, its code registry, ``failure`` and ``error_chain``."""

from __future__ import annotations

import json
import math
import multiprocessing
import pickle
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from chunkscope.protocol import ERROR_CODES, LlmError, LlmFailure, Violation, error_chain
from chunkscope.protocol._errors import (
    FINISH_REASON_FAMILY,
    code_family,
    http_status_code,
    is_retryable,
    is_unmapped,
)

SNAPSHOT = Path(__file__).with_name("error_codes.snapshot.json")


def test_every_published_code_still_exists_with_the_same_retryability() -> None:
    published: dict[str, bool] = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    missing = sorted(set(published) - set(ERROR_CODES))
    assert not missing, f"published error codes were removed: {missing}"
    changed = {
        code: ERROR_CODES[code].retryable
        for code, retryable in published.items()
        if ERROR_CODES[code].retryable != retryable
    }
    assert not changed, f"published error codes changed retryability: {changed}"


def test_the_registry_holds_the_protocol_codes() -> None:
    for code in (
        "PROVIDER_HTTP_ERROR",
        "AUTH",
        "RATE_LIMIT",
        "QUOTA",
        "CONTEXT_WINDOW_EXCEEDED",
        "INVALID_REQUEST",
        "SERVER",
        "TIMEOUT",
        "TRANSPORT",
        "ABORTED",
        "STREAM_CLOSED",
        "MALFORMED_RESPONSE",
        "EMPTY_RESPONSE",
        "MISSING_CREDENTIAL",
        "INVALID_CREDENTIAL",
        "UNSUPPORTED_OPTION",
        "UNSUPPORTED_REASONING_EFFORT",
        "NO_ADAPTER",
        "DUPLICATE_ADAPTER",
        "PROTOCOL_VIOLATION",
        "UNKNOWN",
    ):
        assert ERROR_CODES[code].code == code
        assert ERROR_CODES[code].description


@pytest.mark.parametrize(
    ("code", "retryable"),
    [
        ("RATE_LIMIT", True),
        ("SERVER", True),
        ("TIMEOUT", True),
        ("TRANSPORT", True),
        ("STREAM_CLOSED", True),
        ("EMPTY_RESPONSE", True),
        ("AUTH", False),
        ("PROTOCOL_VIOLATION", False),
        ("HTTP_404", False),
        ("NOT_A_CODE", False),
    ],
)
def test_retryability_follows_the_registry(code: str, retryable: bool) -> None:
    assert is_retryable(code) is retryable
    assert LlmError("x", code).retryable is retryable


# Codes the TypeScript reference's own runtime and adapters raise (packages/llm: pi-ai's catch-all,
# a route without the model, image input a model cannot take, unusable replay state, a Files API
# answer of the wrong shape, invalid adapter model metadata, a prepared call dispatched twice). None
# is in the reference's default retryable set (EMPTY_RESPONSE, RATE_LIMIT, SERVER, TIMEOUT, TRANSPORT).
REFERENCE_RAISED = (
    "PI_AI_ERROR",
    "UNKNOWN_MODEL",
    "UNSUPPORTED_CONTENT",
    "INVALID_REPLAY_STATE",
    "INVALID_RESPONSE",
    "INVALID_MODEL_INFO",
    "INVALID_MODEL_CONTEXT",
    "INVALID_MODEL_MAX_TOKENS",
    "INVALID_MODEL_REASONING",
    "INVALID_PREPARED_CALL",
)


@pytest.mark.parametrize("code", REFERENCE_RAISED)
def test_a_code_the_reference_raises_is_registered_not_unmapped_and_not_retried(code: str) -> None:
    assert code_family(code) == code != FINISH_REASON_FAMILY
    assert not is_unmapped(code)
    assert ERROR_CODES[code].description and not ERROR_CODES[code].retryable
    failure = LlmFailure(message="from a harness log", code=code)
    assert LlmError.from_failure(failure).retryable is False


def test_deepseeks_out_of_capacity_finish_is_the_references_code_and_retryable() -> None:
    assert not is_unmapped("INSUFFICIENT_SYSTEM_RESOURCE")
    assert is_retryable("INSUFFICIENT_SYSTEM_RESOURCE")


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (401, "AUTH"),
        (403, "AUTH"),
        (429, "RATE_LIMIT"),
        (400, "INVALID_REQUEST"),
        (413, "INVALID_REQUEST"),
        (500, "SERVER"),
        (503, "SERVER"),
        (404, "HTTP_404"),
        (409, "HTTP_409"),
    ],
)
def test_maps_http_status_to_code(status: int, code: str) -> None:
    assert http_status_code(status) == code


def test_llm_error_carries_its_facts_and_failure_form() -> None:
    root = OSError("connection reset by peer")
    error = LlmError(
        "rate limited", "RATE_LIMIT", status=429, retry_after_ms=2000, request_id="req-9", cause=root
    )
    assert (error.code, error.status, error.retry_after_ms, error.request_id) == (
        "RATE_LIMIT",
        429,
        2000,
        "req-9",
    )
    assert error.cause is root and error.__cause__ is root
    assert error.failure == LlmFailure(
        message="rate limited",
        code="RATE_LIMIT",
        status=429,
        provider_retry_after_ms=2000,
        request_id="req-9",
    )
    assert LlmError.from_failure(error.failure).failure == error.failure
    assert str(error) == "[RATE_LIMIT] rate limited"
    assert (
        repr(error)
        == "LlmError('rate limited', 'RATE_LIMIT', status=429, retry_after_ms=2000, request_id='req-9')"
    )


def test_failure_drops_facts_outside_the_wire_ranges() -> None:
    error = LlmError("odd", "HTTP_999", status=999, retry_after_ms=0)
    assert error.retry_after_ms is None
    assert error.failure.status is None
    for unusable in (float("inf"), float("nan"), -5):
        limited = LlmError("odd", "RATE_LIMIT", retry_after_ms=unusable)
        assert limited.retry_after_ms is None
        assert "providerRetryAfterMs" not in limited.failure.to_dict()


def test_protocol_violation_carries_violations() -> None:
    violation = Violation("finish-last", "error", None, None, "no finish")
    error = LlmError("broken", "PROTOCOL_VIOLATION", violations=[violation])
    assert error.violations == [violation]
    assert LlmError("x", "SERVER").violations == []


def test_llm_error_survives_pickling() -> None:
    error = pickle.loads(pickle.dumps(LlmError("m", "TIMEOUT", status=504, request_id="r")))
    assert (error.message, error.code, error.status, error.request_id) == ("m", "TIMEOUT", 504, "r")


def test_error_chain_renders_the_whole_cause_chain() -> None:
    root = ConnectionResetError("reset by peer")
    middle = LlmError("transport failed", "TRANSPORT", cause=root)
    outer = LlmError("call failed after 3 attempts", "TRANSPORT", cause=middle)
    assert error_chain(outer) == "call failed after 3 attempts: transport failed: reset by peer"


def test_error_chain_skips_repeated_text_and_survives_cycles_and_groups() -> None:
    inner = ValueError("same")
    outer = RuntimeError("same")
    outer.__cause__ = inner
    assert error_chain(outer) == "same"
    a = RuntimeError("a")
    b = RuntimeError("b")
    a.__cause__ = b
    b.__cause__ = a
    assert error_chain(a) == "a: b: <circular cause>"
    group = ExceptionGroup("two failed", [ValueError("one"), KeyError("two")])
    assert error_chain(group) == "two failed (2 sub-exceptions) [one; 'two']"
    assert error_chain(RuntimeError()) == "RuntimeError"


# --- pickling: multiprocessing, Dask and concurrent.futures move errors between processes ---


def _carrying_everything() -> LlmError:
    violation = Violation("schema", "error", 3, {"type": "bogus"}, "not a chunk")
    odd = Violation("schema", "error", 4, threading.Lock(), "not a chunk either")
    return LlmError(
        "the stream broke rule schema",
        "PROTOCOL_VIOLATION",
        status=502,
        retry_after_ms=1500,
        request_id="req-7",
        cause=ConnectionError("reset by peer"),
        violations=[violation, odd],
    )


def _fields(error: LlmError) -> tuple[Any, ...]:
    return (type(error), error.message, error.code, error.status, error.retry_after_ms, error.request_id)


def test_llm_error_pickles_with_everything_it_carries() -> None:
    error = _carrying_everything()
    back = pickle.loads(pickle.dumps(error))
    assert _fields(back) == _fields(error)
    assert isinstance(back.cause, ConnectionError) and str(back.cause) == "reset by peer"
    assert back.__cause__ is back.cause
    assert back.violations[0] == error.violations[0]
    # a violation holding something unpicklable keeps everything but that object, as its repr
    odd = back.violations[1]
    assert (odd.rule, odd.position, odd.message) == ("schema", 4, "not a chunk either")
    assert odd.chunk.startswith("<unlocked _thread.lock")
    assert str(back) == str(error) and error_chain(back) == error_chain(error)


_UNPICKLABLE_CAUSE = """
import pickle, sys, threading
from chunkscope.protocol import LlmError, error_chain

class Unpicklable(Exception):
    def __init__(self):
        super().__init__("socket reset")
        self.lock = threading.Lock()

back = pickle.loads(pickle.dumps(LlmError("connection failed", "TRANSPORT", cause=Unpicklable())))
print(str(back.cause)); print(error_chain(back))
"""


def test_an_unpicklable_cause_travels_as_its_type_and_text() -> None:
    # A fresh interpreter: dask and distributed (imported by other tests) install tblib's exception
    # reducers process-wide, which pickle the raw cause chain instead (documented on LlmError).
    child = [sys.executable, "-c", _UNPICKLABLE_CAUSE]
    done = subprocess.run(child, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Unpicklable: socket reset",
        "connection failed: Unpicklable: socket reset",
    ]


def _raise_in_child(_: int) -> None:
    raise LlmError("rate limited", "RATE_LIMIT", status=429, retry_after_ms=2000, request_id="r-1")


def test_llm_error_crosses_a_process_boundary_intact() -> None:
    # what multiprocessing and concurrent.futures do with an exception raised in a worker
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool, pytest.raises(LlmError) as caught:
        pool.map(_raise_in_child, [0])
    error = caught.value
    assert (error.code, error.status, error.retry_after_ms) == ("RATE_LIMIT", 429, 2000)
    assert error.request_id == "r-1"
    assert error.retryable


def test_retry_after_ms_is_a_whole_number_of_milliseconds_rounded_up() -> None:
    assert LlmError("x", "RATE_LIMIT", retry_after_ms=2000.0).retry_after_ms == 2000
    assert type(LlmError("x", "RATE_LIMIT", retry_after_ms=2000.0).retry_after_ms) is int
    assert LlmError("x", "RATE_LIMIT", retry_after_ms=1.1).retry_after_ms == 2
    for unusable in (0, -5, math.inf, math.nan):
        assert LlmError("x", "RATE_LIMIT", retry_after_ms=unusable).retry_after_ms is None
