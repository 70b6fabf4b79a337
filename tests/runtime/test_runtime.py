"""LlmRuntime: routing, checks before any I/O, and the two ways of receiving failures."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import chunkscope as cs
from chunkscope.adapters import GenerateOptions, ModelInfo, ReasoningEffort, ReasoningInfo
from chunkscope.protocol import LlmError, check, collect
from chunkscope.runtime import AdapterDefectError

from ._fakes import Call, SequenceAdapter, llm_error, text_reply

EFFORTS = ReasoningInfo((ReasoningEffort("off", "Off"), ReasoningEffort("high", "High")), default="high")
MODELS = [ModelInfo("thinker", reasoning=EFFORTS, max_tokens=4096), ModelInfo("plain")]


def opts(provider: str = "p", model: str = "thinker", **kw: object) -> GenerateOptions:
    return GenerateOptions(provider, model, [{"role": "user", "content": "hi"}], **kw)  # type: ignore[arg-type]


async def test_register_is_all_or_nothing_and_a_taken_route_raises_duplicate_adapter() -> None:
    runtime = cs.LlmRuntime()
    first = SequenceAdapter([Call(text_reply("a"))])
    runtime.register_adapter("a", first)
    with pytest.raises(LlmError) as info:
        runtime.register_adapter(["b", "a"], SequenceAdapter([Call(text_reply("b"))]))
    assert info.value.code == "DUPLICATE_ADAPTER"
    assert runtime.list_providers() == ["a"]  # "b" was not claimed either


async def test_the_registration_handle_unregisters_its_routes() -> None:
    runtime = cs.LlmRuntime()
    handle = runtime.register_adapter(["x", "y"], SequenceAdapter([Call(text_reply("a"))]))
    assert runtime.list_providers() == ["x", "y"]
    handle.unregister()
    assert runtime.list_providers() == []
    runtime.register_adapter("x", SequenceAdapter([Call(text_reply("a"))]))  # the route is free again


async def test_an_unknown_route_is_no_adapter_in_both_failure_modes() -> None:
    runtime = cs.LlmRuntime()
    with pytest.raises(LlmError) as info:
        await runtime.prepare_call(opts("nowhere"))
    assert info.value.code == "NO_ADAPTER"
    result = await collect(runtime.stream(opts("nowhere")))
    assert result.error is not None and result.error.code == "NO_ADAPTER"
    normalized = [c async for c in runtime.stream(opts("nowhere"), failures="normalize")]
    assert len(normalized) == 1 and normalized[0].reason.failure.code == "NO_ADAPTER"


async def test_list_and_resolve_models_come_from_the_adapter() -> None:
    runtime = cs.LlmRuntime()
    runtime.register_adapter("p", SequenceAdapter([], models=MODELS))
    assert [m.id for m in await runtime.list_models("p")] == ["thinker", "plain"]
    info = await runtime.resolve_model("p", "thinker")
    assert info is not None and info.reasoning is EFFORTS
    assert await runtime.resolve_model("p", "nope") is None


@pytest.mark.parametrize(
    ("model", "effort"),
    [("thinker", "max"), ("plain", "high"), ("unknown-model", "off"), ("thinker", "HIGH")],
)
async def test_an_unsupported_effort_is_refused_before_the_adapter_is_called(model: str, effort: str) -> None:
    adapter = SequenceAdapter([Call(text_reply("never"))], models=MODELS)
    runtime = cs.LlmRuntime()
    runtime.register_adapter("p", adapter)
    with pytest.raises(LlmError) as info:
        await runtime.prepare_call(opts(model=model, reasoning_effort=effort))
    assert info.value.code == "UNSUPPORTED_REASONING_EFFORT"
    assert f"model {model!r}" in info.value.message
    normalized = [
        c async for c in runtime.stream(opts(model=model, reasoning_effort=effort), failures="normalize")
    ]
    assert normalized[-1].reason.failure.code == "UNSUPPORTED_REASONING_EFFORT"
    assert adapter.calls == []  # stream() was never reached


async def test_an_unsupported_option_is_refused_before_the_adapter_is_called() -> None:
    adapter = SequenceAdapter([Call(text_reply("never"))], models=MODELS, supported=frozenset({"signal"}))
    runtime = cs.LlmRuntime()
    runtime.register_adapter("p", adapter)
    with pytest.raises(LlmError) as info:
        await runtime.prepare_call(opts(temperature=0.2, stop="x"))
    assert info.value.code == "UNSUPPORTED_OPTION"
    assert "temperature, stop" in info.value.message
    result = await collect(runtime.stream(opts(temperature=0.2)))
    assert result.error is not None and result.error.code == "UNSUPPORTED_OPTION"
    assert adapter.calls == []


async def test_the_adapter_default_effort_and_max_tokens_are_filled_and_reported() -> None:
    adapter = SequenceAdapter([Call(text_reply("ok"))], models=MODELS)
    runtime = cs.LlmRuntime()
    runtime.register_adapter("p", adapter)
    prepared = await runtime.prepare_call(opts())
    assert prepared.filled == ("reasoning_effort", "max_tokens")
    assert prepared.effective_effort == "high" and prepared.options.max_tokens == 4096
    explicit = await runtime.prepare_call(opts(reasoning_effort="off", max_tokens=10))
    assert explicit.filled == () and explicit.effective_effort == "off"
    await collect(runtime.stream(opts()))
    assert adapter.calls[0].reasoning_effort == "high"  # what the adapter was actually given


async def test_a_default_is_not_filled_into_a_field_the_adapter_does_not_honour() -> None:
    adapter = SequenceAdapter([], models=MODELS, supported=frozenset({"signal"}))
    runtime = cs.LlmRuntime()
    runtime.register_adapter("p", adapter)
    assert (await runtime.prepare_call(opts())).filled == ()


MID_STREAM = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "partial"},
]


async def test_normalized_mode_yields_partial_chunks_then_one_error_finish_that_checks_clean() -> None:
    runtime = cs.LlmRuntime()
    runtime.register_adapter("p", SequenceAdapter([Call(MID_STREAM, llm_error("SERVER", status=503))]))
    chunks = [c async for c in runtime.stream(opts(), failures="normalize")]
    assert [c.type for c in chunks] == ["block-start", "text-delta", "finish"]
    assert chunks[-1].reason.kind == "error"
    assert chunks[-1].reason.failure.code == "SERVER" and chunks[-1].reason.failure.status == 503
    assert check(chunks, profile="strict") == []


async def test_raise_mode_yields_the_partial_chunks_then_raises_the_adapters_error() -> None:
    runtime = cs.LlmRuntime()
    runtime.register_adapter("p", SequenceAdapter([Call(MID_STREAM, llm_error("TIMEOUT"))]))
    result = await collect(runtime.stream(opts()))
    assert len(result.chunks) == 2 and result.error is not None and result.error.code == "TIMEOUT"


async def test_an_abort_is_normalized_into_an_aborted_finish() -> None:
    runtime = cs.LlmRuntime()
    runtime.register_adapter("p", SequenceAdapter([Call(MID_STREAM, llm_error("ABORTED"))]))
    chunks = [c async for c in runtime.stream(opts(), failures="normalize")]
    assert chunks[-1].reason.kind == "aborted" and check(chunks) == []


async def test_a_plain_exception_from_an_adapter_is_unknown_flagged_as_a_defect_with_its_cause() -> None:
    runtime = cs.LlmRuntime()
    boom = KeyError("missing")
    runtime.register_adapter("p", SequenceAdapter([Call(MID_STREAM, boom)]))
    result = await collect(runtime.stream(opts()))
    error = result.error
    assert isinstance(error, AdapterDefectError)
    assert error.code == "UNKNOWN" and error.adapter_defect and error.cause is boom
    assert "SequenceAdapter raised KeyError" in error.message
    chunks = [c async for c in runtime.stream(opts(), failures="normalize")]
    assert chunks[-1].reason.failure.code == "UNKNOWN" and check(chunks) == []


def test_generate_sync_works_without_a_running_loop() -> None:
    runtime = cs.LlmRuntime()
    runtime.register_adapter("p", SequenceAdapter([Call(text_reply("sync answer"))]))
    result = runtime.generate_sync(provider="p", model="m", messages=[{"role": "user", "content": "hi"}])
    assert result.ok and result.text == "sync answer"


def test_generate_sync_works_inside_a_running_loop_and_patches_nothing_before() -> None:
    # In a child interpreter: nest-asyncio patches asyncio for the whole process once applied, which
    # would change how every later test in this one closes its connections.
    code = textwrap.dedent(
        """
        import asyncio
        import chunkscope as cs

        async def main():
            assert not getattr(asyncio.get_running_loop(), "_nest_patched", False)
            runtime = cs.LlmRuntime()
            runtime.register_adapter("p", cs.ScriptedAdapter([
                {"type": "block-start", "index": 0, "blockType": "text"},
                {"type": "text-delta", "index": 0, "text": "nested"},
                {"type": "block-end", "index": 0, "block": {"type": "text", "text": "nested"}},
                {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
                {"type": "finish", "reason": {"kind": "stop"}},
            ]))
            hi = [{"role": "user", "content": "hi"}]
            result = runtime.generate_sync(provider="p", model="m", messages=hi)
            print(result.text, getattr(asyncio.get_running_loop(), "_nest_patched", False))

        asyncio.run(main())
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["nested", "True"]  # answered, through nest-asyncio applied on demand


class _Sink:
    def __init__(self) -> None:
        self.rows: list[tuple[str, int, bool, str | None, str | None]] = []

    def record(
        self,
        result: object,
        *,
        provider: str,
        model: str,
        tags: object = None,
        call_id: str | None = None,
        attempt: int = 1,
        final: bool = True,
    ) -> None:
        code = getattr(result, "error_code", None)
        self.rows.append((model, attempt, final, call_id, code))


async def test_generate_retries_per_the_policy_and_logs_every_attempt() -> None:
    from ._fakes import FakeSleep

    sink = _Sink()
    sleep = FakeSleep()
    runtime = cs.LlmRuntime(log=sink)
    adapter = SequenceAdapter([Call(MID_STREAM, llm_error("SERVER")), Call(text_reply("second time"))])
    runtime.register_adapter("p", adapter)
    result = await runtime.generate(opts(model="m"), retry=cs.RetryPolicy(sleep=sleep, seed=2))
    assert result.ok and result.text == "second time" and len(sleep.waits) == 1
    assert [(a, f, code) for _, a, f, _, code in sink.rows] == [(1, False, "SERVER"), (2, True, None)]
    assert sink.rows[0][3] == sink.rows[1][3] is not None  # one call id for both attempts


async def test_generate_without_a_policy_does_not_retry() -> None:
    sink = _Sink()
    runtime = cs.LlmRuntime()
    adapter = SequenceAdapter([Call(error=llm_error("SERVER")), Call(text_reply("never"))])
    runtime.register_adapter("p", adapter)
    result = await runtime.generate(opts(model="m"), log=sink)
    assert result.error_code == "SERVER" and len(adapter.calls) == 1
    assert [(a, f) for _, a, f, _, _ in sink.rows] == [(1, True)]


async def test_metadata_that_cannot_be_right_is_reported_as_an_adapter_defect() -> None:
    runtime = cs.LlmRuntime()
    runtime.register_adapter("dup", SequenceAdapter([], models=[ModelInfo("a"), ModelInfo("a")]))
    runtime.register_adapter("empty", SequenceAdapter([], models=[ModelInfo("")]))
    for provider, words in (("dup", "lists model id 'a' twice"), ("empty", "with an empty id")):
        with pytest.raises(AdapterDefectError) as info:
            await runtime.list_models(provider)
        assert info.value.code == "UNKNOWN" and words in info.value.message
