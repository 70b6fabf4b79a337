"""The shared adapter vocabulary: options, prepare(), cancellation, model metadata, attribution."""

from __future__ import annotations

import asyncio
import importlib.metadata
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chunkscope.adapters._base import (
    OPTIONAL_OPTIONS,
    AbortController,
    GenerateOptions,
    LlmAdapter,
    ModelInfo,
    ReasoningEffort,
    ReasoningInfo,
    ToolSpec,
    attribution_headers,
    user_agent,
)
from chunkscope.protocol import AnyChunk, LlmError, Message, TextBlock

EFFORTS = ReasoningInfo((ReasoningEffort("off", "Off"), ReasoningEffort("high", "High")), default="high")


class TextOnly(LlmAdapter):
    """A minimal adapter honouring nothing optional but the signal; counts the I/O it would do."""

    provider = "text-only"
    supported_options = frozenset({"signal"})

    def __init__(self) -> None:
        self.io = 0

    def models(self) -> list[ModelInfo]:
        return [ModelInfo("thinker", reasoning=EFFORTS), ModelInfo("plain")]

    async def stream(self, options: GenerateOptions) -> AsyncIterator[AnyChunk]:
        self.prepare(options)
        self.io += 1
        return
        yield  # pragma: no cover


def opts(**kwargs: Any) -> GenerateOptions:
    kwargs.setdefault("model", "thinker")
    return GenerateOptions(provider="p", messages=[{"role": "user", "content": "hi"}], **kwargs)


async def drain(adapter: LlmAdapter, options: GenerateOptions) -> None:
    async for _ in adapter.stream(options):
        pass


# --- GenerateOptions ---------------------------------------------------------------


def test_messages_accept_models_and_typescript_shaped_dicts_with_string_shorthand() -> None:
    options = GenerateOptions(
        "p",
        "m",
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
            Message(role="user", content=[TextBlock(text="again")]),
        ],
    )
    assert [m.role for m in options.messages] == ["user", "assistant", "user"]
    assert options.messages[0].content == [TextBlock(text="hi")]


def test_tools_accept_toolspec_or_dicts_and_stop_accepts_one_string() -> None:
    options = opts(
        tools=[{"name": "a", "description": "d", "parameters": {"type": "object"}}, ToolSpec("b")],
        stop="END",
    )
    assert options.tools == (ToolSpec("a", "d", {"type": "object"}), ToolSpec("b"))
    assert options.stop == ("END",)
    with pytest.raises(TypeError):
        opts(tools=[{"description": "no name"}])


def test_set_options_lists_only_fields_that_are_set() -> None:
    assert opts().set_options() == []
    assert opts(tools=[], stop=[], temperature=0.0, purpose="title").set_options() == [
        "temperature",
        "purpose",
    ]
    assert opts(max_tokens=3, system="s").set_options() == ["system", "max_tokens"]  # OPTIONAL_OPTIONS order
    assert opts(**{name: "x" for name in ("system", "purpose")}).set_options() == ["system", "purpose"]
    assert all(name in OPTIONAL_OPTIONS for name in opts(stop="x", temperature=1.0).set_options())


def test_replace_returns_a_changed_copy() -> None:
    options = opts(temperature=0.5)
    changed = options.replace(model="plain", temperature=None)
    assert (changed.model, changed.temperature, options.temperature) == ("plain", None, 0.5)


def test_a_signal_must_be_an_abort_signal() -> None:
    with pytest.raises(TypeError):
        opts(signal=object())


# --- prepare() ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "field",
    [
        ("system", "s"),
        ("tools", [ToolSpec("t")]),
        ("temperature", 0.2),
        ("max_tokens", 9),
        ("stop", ["x"]),
        ("purpose", "title"),
    ],
)
async def test_a_set_field_the_adapter_does_not_honour_is_unsupported_option_before_any_io(
    field: tuple[str, Any],
) -> None:
    adapter = TextOnly()
    with pytest.raises(LlmError) as info:
        await drain(adapter, opts(**{field[0]: field[1]}))
    assert info.value.code == "UNSUPPORTED_OPTION"
    assert field[0] in str(info.value)
    assert adapter.io == 0


async def test_an_effort_the_model_does_not_list_is_unsupported_reasoning_effort_before_any_io() -> None:
    adapter = TextOnly()
    adapter.supported_options = frozenset({"signal", "reasoning_effort"})  # type: ignore[misc]
    for model, effort in (("thinker", "max"), ("plain", "high"), ("unknown", "off")):
        with pytest.raises(LlmError) as info:
            await drain(adapter, opts(model=model, reasoning_effort=effort))
        assert info.value.code == "UNSUPPORTED_REASONING_EFFORT"
    await drain(adapter, opts(model="thinker", reasoning_effort="off"))
    assert adapter.io == 1


_IMAGE = {
    "type": "image",
    "attachment": {"attachmentId": "sha256:a", "mediaType": "image/png", "bytes": 9, "width": 3, "height": 3},
}


@pytest.mark.parametrize(
    "content",
    [
        [{"type": "text", "text": "what is this?"}, _IMAGE],
        [{"type": "tool-result", "toolCallId": "call-1", "content": [_IMAGE]}],  # a screenshot tool
    ],
    ids=["user image", "image in a tool result"],
)
async def test_an_image_a_text_only_adapter_cannot_send_is_unsupported_content_before_any_io(
    content: list[dict[str, Any]],
) -> None:
    # the TypeScript reference's code for image input a model cannot take; never silently dropped
    adapter = TextOnly()
    with pytest.raises(LlmError) as info:
        await drain(adapter, GenerateOptions("p", "thinker", [{"role": "user", "content": content}]))
    assert info.value.code == "UNSUPPORTED_CONTENT" and not info.value.retryable
    assert adapter.io == 0


async def test_every_wire_adapter_refuses_an_image_before_any_io() -> None:
    from chunkscope.adapters.wires import WIRES

    message = {"role": "user", "content": [_IMAGE]}
    for name, row in WIRES.items():
        adapter: Any = row.adapter  # every built-in adapter takes these arguments (the wire table says so)
        base_url = row.base_url("http://127.0.0.1:9")  # nothing listens there: no I/O may happen
        built = adapter(base_url=base_url, api_key="sk-local")
        with pytest.raises(LlmError) as info:
            await drain(built, GenerateOptions(name, "m", [message]))
        assert info.value.code == "UNSUPPORTED_CONTENT", name


async def test_an_already_aborted_signal_is_aborted_before_any_io() -> None:
    adapter = TextOnly()
    controller = AbortController()
    controller.abort("no")
    with pytest.raises(LlmError) as info:
        await drain(adapter, opts(signal=controller.signal))
    assert info.value.code == "ABORTED"
    assert adapter.io == 0


# --- model metadata ----------------------------------------------------------------


def test_reasoning_info_keeps_effort_order_and_validates_its_default() -> None:
    assert EFFORTS.ids == ("off", "high")
    assert "off" in EFFORTS and "max" not in EFFORTS
    with pytest.raises(ValueError):
        ReasoningInfo((ReasoningEffort("low", "Low"),), default="high")
    with pytest.raises(ValueError):
        ReasoningInfo(())


def test_model_info_without_reasoning_has_no_reasoning_capability() -> None:
    adapter = TextOnly()
    plain = adapter.model_info("plain")
    assert plain is not None and plain.reasoning is None and plain.display_name == "plain"
    assert adapter.model_info("nope") is None


# --- cancellation ------------------------------------------------------------------


async def test_abort_from_another_thread_wakes_a_waiter_promptly() -> None:
    controller = AbortController()
    threading.Timer(0.02, controller.abort, args=("stop",)).start()
    start = time.perf_counter()
    reason = await asyncio.wait_for(controller.signal.wait(), 2)
    assert reason == "stop"
    assert time.perf_counter() - start < 0.5
    assert controller.signal.aborted and controller.signal.reason == "stop"


async def test_wait_returns_at_once_after_the_abort_and_abort_is_one_shot() -> None:
    controller = AbortController()
    controller.abort("first")
    controller.abort("second")
    assert await controller.signal.wait() == "first"


def test_callbacks_run_once_at_the_abort_and_can_be_removed() -> None:
    controller = AbortController()
    calls: list[Any] = []
    controller.signal.add_callback(calls.append)
    remove = controller.signal.add_callback(lambda r: calls.append(("removed", r)))
    remove()
    controller.signal.add_callback(lambda r: 1 / 0)  # a failing listener does not stop the others
    controller.signal.add_callback(lambda r: calls.append(("after", r)))
    controller.abort("why")
    controller.abort("again")
    assert calls == ["why", ("after", "why")]
    late: list[Any] = []
    controller.signal.add_callback(late.append)  # registered after the abort: runs at once
    assert late == ["why"]


async def test_waiters_on_two_loops_in_two_threads_are_all_woken() -> None:
    controller = AbortController()
    results: list[Any] = []
    waiting = threading.Event()

    def other_loop() -> None:
        async def wait() -> Any:
            waiter = asyncio.ensure_future(controller.signal.wait())
            await asyncio.sleep(0)  # let it register before the abort can come
            waiting.set()
            return await asyncio.wait_for(waiter, 2)

        results.append(asyncio.run(wait()))

    thread = threading.Thread(target=other_loop)
    thread.start()
    assert await asyncio.to_thread(waiting.wait, 2)
    assert not controller.signal.aborted
    controller.abort(7)
    assert await asyncio.wait_for(controller.signal.wait(), 2) == 7
    thread.join(2)
    assert results == [7]


# --- attribution -------------------------------------------------------------------


def test_attribution_is_chunkscope_version_from_metadata_and_project_url() -> None:
    version = importlib.metadata.version("chunkscope")
    value = attribution_headers()["User-Agent"]
    assert value == f"chunkscope/{version} (+https://github.com/chunkscope/chunkscope)"
    assert user_agent("acme", "2.0", "https://acme.test") == "acme/2.0 (+https://acme.test)"
