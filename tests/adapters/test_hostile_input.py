"""Issue 8 §2 for the adapters: hostile input gives a clear error, bounded memory, nothing lost.

One test (or one parametrized family) per item: deep nesting, redaction before cutting, abort
reasons, redirects, size limits, the gzip bomb's memory (measured in a child process), bounded
error messages, the total deadline, and telling the guard's own timeout/abort from a caller's
cancellation under several event-loop runners without ``Task.uncancel``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from chunkscope.adapters import (
    AbortController,
    AnthropicAdapter,
    GenerateOptions,
    OpenAICompatAdapter,
)
from chunkscope.adapters._core import SseAdapter
from chunkscope.protocol import LlmError

KEY = "sk-HOSTILE-0123456789abcdefghij"
SRC = str(Path(__file__).resolve().parents[2] / "src")
SSE = {"content-type": "text/event-stream"}
DEEP = "[" * 100_000 + "]" * 100_000


def sse(*payloads: Any, done: bool = True) -> bytes:
    parts = [f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n" for p in payloads]
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def text(piece: str) -> dict[str, Any]:
    return {"choices": [{"delta": {"content": piece}}]}


Body = bytes | Callable[[], AsyncIterator[bytes]]


def client_for(
    body: Body,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    seen: list[httpx.Request] | None = None,
) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        content = body() if callable(body) else body
        return httpx.Response(status, headers={**SSE, **(headers or {})}, content=content)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def options(signal: Any = None, model: str = "deepseek-chat") -> GenerateOptions:
    return GenerateOptions("x", model, [{"role": "user", "content": "hi"}], signal=signal)


async def drain(adapter: SseAdapter, signal: Any = None) -> tuple[list[Any], LlmError]:
    out: list[Any] = []
    model = "claude-x" if isinstance(adapter, AnthropicAdapter) else "deepseek-chat"
    with pytest.raises(LlmError) as info:
        async for chunk in adapter.stream(options(signal, model)):
            out.append(chunk)
    return out, info.value


def openai(body: Body, **kwargs: Any) -> OpenAICompatAdapter:
    status = kwargs.pop("status", 200)
    headers = kwargs.pop("headers", None)
    return OpenAICompatAdapter(
        "http://api.test", KEY, http_client=client_for(body, status=status, headers=headers), **kwargs
    )


def leaked(text: str, secret: str = KEY, shortest: int = 6) -> bool:
    """True when any run of ``shortest`` or more characters of ``secret`` appears in ``text``."""
    return any(secret[i : i + shortest] in text for i in range(len(secret) - shortest + 1))


def every_text(error: BaseException) -> str:
    parts = [str(error), repr(error)]
    cause = error.__cause__
    while cause is not None:
        parts += [str(cause), repr(cause)]
        cause = cause.__cause__
    return "\n".join(parts)


# --- deep nesting --------------------------------------------------------------------------------


async def test_a_wire_event_nested_100000_deep_is_malformed_response_for_openai() -> None:
    chunks, error = await drain(openai(sse(text("ok"), DEEP)))
    assert error.code == "MALFORMED_RESPONSE"
    assert "nested too deeply" in error.message
    assert [c.type for c in chunks] == ["block-start", "text-delta"]  # the partial output stays


async def test_a_wire_event_nested_100000_deep_is_malformed_response_for_anthropic() -> None:
    body = (
        'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1}}}\n\n'
        f"event: content_block_start\ndata: {DEEP}\n\n"
    ).encode()
    adapter = AnthropicAdapter("http://api.test", KEY, http_client=client_for(body))
    _, error = await drain(adapter)
    assert error.code == "MALFORMED_RESPONSE"


@pytest.mark.parametrize(("status", "code"), [(400, "INVALID_REQUEST"), (429, "RATE_LIMIT"), (503, "SERVER")])
async def test_an_error_body_nested_100000_deep_keeps_the_status_code(status: int, code: str) -> None:
    _, error = await drain(openai(DEEP.encode(), status=status, headers={"content-type": "application/json"}))
    assert (error.code, error.status) == (code, status)
    assert len(error.message) < 2100


# --- secrets redacted before text is cut ---------------------------------------------------------


@pytest.mark.parametrize("offset", [-20, -10, -3, -1, 0, 1, 5])
async def test_a_key_straddling_the_payload_preview_cut_leaks_nothing(offset: int) -> None:
    payload = "x" * (120 + offset) + KEY + " not json"
    _, error = await drain(openai(sse(payload)))
    assert error.code == "MALFORMED_RESPONSE"
    assert not leaked(every_text(error))


@pytest.mark.parametrize("cut", [500, 2000])
@pytest.mark.parametrize("offset", [-25, -12, -4, -1, 0, 3])
async def test_a_key_straddling_the_error_message_cut_leaks_nothing(cut: int, offset: int) -> None:
    message = "m" * (cut + offset) + KEY + " and more"
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
    _, error = await drain(openai(body, status=400, headers={"content-type": "application/json"}))
    assert error.code == "INVALID_REQUEST"
    assert not leaked(every_text(error))
    assert len(error.message) <= 2001


async def test_a_key_straddling_the_error_body_read_cap_leaks_nothing_on_the_cause() -> None:
    # The body is read up to 1 MiB: a key cut there leaves only its first characters.
    body = b"e" * ((1 << 20) - 10) + KEY.encode() + b"tail"
    _, error = await drain(openai(body, status=500, headers={"content-type": "text/plain"}))
    assert error.code == "SERVER"
    assert not leaked(every_text(error))


async def test_a_key_echoed_in_an_in_stream_error_is_redacted_everywhere() -> None:
    event = {"error": {"message": "bad key " + KEY + " " + "z" * 3000, "type": "authentication_error"}}
    _, error = await drain(openai(sse(event)))
    assert error.code == "AUTH"
    assert not leaked(every_text(error))


# --- abort reasons ----------------------------------------------------------------------------------


async def test_an_abort_reason_quoting_the_key_is_redacted_before_the_stream_starts() -> None:
    controller = AbortController()
    controller.abort(f"stop {KEY}")
    _, error = await drain(openai(sse(text("x"))), controller.signal)
    assert error.code == "ABORTED"
    assert not leaked(every_text(error))


async def test_an_abort_reason_quoting_the_key_is_redacted_while_waiting_for_the_response() -> None:
    controller = AbortController()

    async def stall() -> AsyncIterator[bytes]:
        controller.abort(f"stop {KEY}")
        await asyncio.Event().wait()
        yield b""

    _, error = await drain(openai(stall), controller.signal)
    assert error.code == "ABORTED"
    assert not leaked(every_text(error))


async def test_an_abort_reason_quoting_the_key_is_redacted_while_the_consumer_holds_a_chunk() -> None:
    controller = AbortController()
    adapter = openai(sse(text("a"), text("b")))
    with pytest.raises(LlmError) as info:
        async for _ in adapter.stream(options(controller.signal)):
            controller.abort(f"stop {KEY}")
    assert info.value.code == "ABORTED"
    assert not leaked(every_text(info.value))


# --- redirects --------------------------------------------------------------------------------------


@pytest.mark.parametrize("adapter_kind", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_redirect_is_an_http_3xx_error_naming_the_location_and_carries_no_key_elsewhere(
    adapter_kind: str, status: int
) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.host == "api.test":
            return httpx.Response(status, headers={"location": "https://elsewhere.test/v1/steal?token=q"})
        return httpx.Response(200, headers=SSE, content=sse(text("hi")))

    # The caller's own client follows redirects: the adapter must not.
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler), follow_redirects=True)
    adapter: SseAdapter
    if adapter_kind == "openai":
        adapter = OpenAICompatAdapter("http://api.test", KEY, http_client=client)
    else:
        adapter = AnthropicAdapter("http://api.test", KEY, http_client=client)
    _, error = await drain(adapter)
    assert error.code == f"HTTP_{status}"
    assert error.status == status
    assert "https://elsewhere.test/v1/steal" in error.message
    assert "token=q" not in error.message
    assert [r.url.host for r in seen] == ["api.test"]


# --- size limits ------------------------------------------------------------------------------------


async def test_an_sse_event_over_the_limit_is_malformed_response_with_the_partial_output_kept() -> None:
    adapter = openai(sse(text("kept"), text("y" * 5000)), max_event_bytes=1024)
    chunks, error = await drain(adapter)
    assert error.code == "MALFORMED_RESPONSE"
    assert "limit of 1024 bytes" in error.message
    assert [c.type for c in chunks] == ["block-start", "text-delta"]


async def test_an_endless_line_over_the_event_limit_fails_before_it_ends() -> None:
    async def endless() -> AsyncIterator[bytes]:
        yield sse(text("kept"), done=False)
        yield b"data: "
        while True:  # never a line end: the limit must fire while it grows
            yield b"z" * 4096

    chunks, error = await drain(openai(endless, max_event_bytes=64 * 1024))
    assert error.code == "MALFORMED_RESPONSE"
    assert [c.type for c in chunks] == ["block-start", "text-delta"]


async def test_a_decompressed_body_over_the_limit_is_malformed_response_with_the_partial_output_kept() -> (
    None
):
    raw = sse(*[text(f"w{i} ") for i in range(2000)])
    packed = gzip.compress(raw)

    async def body() -> AsyncIterator[bytes]:
        for i in range(0, len(packed), 512):
            yield packed[i : i + 512]

    adapter = openai(body, headers={"content-encoding": "gzip"}, max_body_bytes=20_000)
    chunks, error = await drain(adapter)
    assert error.code == "MALFORMED_RESPONSE"
    assert "exceeds the limit of 20000 bytes" in error.message
    assert len(chunks) > 10 and chunks[1].text == "w0 "


async def test_a_gzip_body_within_the_limits_streams_normally() -> None:
    packed = gzip.compress(sse(text("hello "), text("world")))

    async def body() -> AsyncIterator[bytes]:
        for i in range(0, len(packed), 7):
            yield packed[i : i + 7]

    adapter = openai(body, headers={"content-encoding": "gzip"})
    out = [c async for c in adapter.stream(options())]
    assert "".join(c.text for c in out if c.type == "text-delta") == "hello world"


GZIP_BOMB = textwrap.dedent(
    """
    import asyncio, json, sys, tracemalloc, zlib
    import httpx
    from chunkscope.adapters import GenerateOptions, OpenAICompatAdapter
    from chunkscope.protocol import LlmError

    # ~260 KB of gzip that expands to one 256 MiB line, built without holding the line.
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(b"data: ")]
    block = b"a" * (1 << 20)
    for _ in range(256):
        parts.append(packer.compress(block))
    parts.append(packer.compress(b"\\n\\n") + packer.flush())
    packed = b"".join(parts)
    del parts, block

    async def body():
        for i in range(0, len(packed), 65536):
            yield packed[i : i + 65536]

    def handler(request):
        headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
        return httpx.Response(200, headers=headers, content=body())

    async def main():
        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        adapter = OpenAICompatAdapter("http://bomb.test", "sk-bomb-test-key", http_client=client)
        options = GenerateOptions("x", "deepseek-chat", [{"role": "user", "content": "hi"}])
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        try:
            async for _ in adapter.stream(options):
                pass
            code = None
        except LlmError as exc:
            code = exc.code
        peak = tracemalloc.get_traced_memory()[1] - base
        print(json.dumps({"compressed": len(packed), "peak": peak, "code": code}))

    asyncio.run(main())
    """
)


def test_a_gzip_bomb_fails_with_peak_memory_growth_under_64_mib_in_a_child_process() -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    result = subprocess.run(
        [sys.executable, "-c", GZIP_BOMB], capture_output=True, text=True, env=env, timeout=240, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["compressed"] < 400_000  # the bomb really is small on the wire
    assert report["code"] == "MALFORMED_RESPONSE"
    assert report["peak"] < 64 * 1024 * 1024, report


# --- bounded error messages ----------------------------------------------------------------------


async def test_a_5_mb_in_stream_error_event_gives_a_bounded_message_and_the_body_on_the_cause() -> None:
    huge = "q" * (5 * 1024 * 1024)
    chunks, error = await drain(
        openai(sse(text("kept"), {"error": {"message": huge, "type": "server_error"}}))
    )
    assert error.code == "SERVER"
    assert len(error.message) <= 2001
    assert error.__cause__ is not None and 60_000 < len(str(error.__cause__)) <= 65537
    assert [c.type for c in chunks] == ["block-start", "text-delta"]


async def test_a_5_mb_error_body_gives_a_bounded_message() -> None:
    body = json.dumps({"error": {"message": "r" * (5 * 1024 * 1024)}}).encode()
    _, error = await drain(openai(body, status=500, headers={"content-type": "application/json"}))
    assert error.code == "SERVER"
    assert len(error.message) <= 2001
    assert len(str(error.__cause__)) <= 65537


# --- total deadline ---------------------------------------------------------------------------------


async def test_a_server_trickling_bytes_forever_hits_the_total_deadline() -> None:
    async def trickle() -> AsyncIterator[bytes]:
        yield sse(text("kept"), done=False)
        while True:
            await asyncio.sleep(0.005)  # well inside the idle timeout, forever
            yield b": still here\n\n"

    chunks, error = await drain(openai(trickle, idle_timeout=5.0, total_timeout=0.15))
    assert error.code == "TIMEOUT"
    assert "total timeout" in error.message
    assert [c.type for c in chunks] == ["block-start", "text-delta"]


def test_total_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="total_timeout"):
        OpenAICompatAdapter("http://api.test", KEY, total_timeout=0)


# --- cancellation: the guard's own, or the caller's --------------------------------------------------


def _stalling_adapter(**kwargs: Any) -> OpenAICompatAdapter:
    async def stall() -> AsyncIterator[bytes]:
        yield sse(text("kept"), done=False)
        await asyncio.Event().wait()
        yield b""

    return openai(stall, **kwargs)


async def _outcome(kind: str) -> str:
    """``TIMEOUT`` / ``ABORTED`` from the guard, ``cancelled`` for the caller's cancellation."""
    if kind == "timeout":
        _, error = await drain(_stalling_adapter(idle_timeout=0.05))
        return error.code
    if kind == "abort":
        controller = AbortController()
        asyncio.get_running_loop().call_later(0.02, controller.abort, "enough")
        _, error = await drain(_stalling_adapter(idle_timeout=5.0), controller.signal)
        return error.code
    task = asyncio.ensure_future(drain(_stalling_adapter(idle_timeout=5.0)))
    await asyncio.sleep(0.02)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return "cancelled"
    return "not cancelled"


EXPECTED = {"timeout": "TIMEOUT", "abort": "ABORTED", "cancel": "cancelled"}


@pytest.mark.parametrize("kind", list(EXPECTED))
async def test_under_pytest_asyncio_the_guard_tells_its_own_ending_from_a_callers_cancel(kind: str) -> None:
    assert await _outcome(kind) == EXPECTED[kind]


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_under_asyncio_run_the_guard_tells_its_own_ending_from_a_callers_cancel(kind: str) -> None:
    assert asyncio.run(_outcome(kind)) == EXPECTED[kind]


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_under_anyio_the_guard_tells_its_own_ending_from_a_callers_cancel(kind: str) -> None:
    import anyio

    assert anyio.run(_outcome, kind, backend="asyncio") == EXPECTED[kind]


class _NoUncancelTask(asyncio.tasks._PyTask):  # type: ignore[name-defined,misc]
    """A task without ``uncancel``/``cancelling`` (as on Python 3.10 and some runners)."""

    def __getattribute__(self, name: str) -> Any:
        if name in ("uncancel", "cancelling"):
            raise AttributeError(name)
        return super().__getattribute__(name)


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_on_tasks_without_uncancel_the_guard_tells_its_own_ending_from_a_callers_cancel(kind: str) -> None:
    loop = asyncio.new_event_loop()
    loop.set_task_factory(lambda loop, coro, **kw: _NoUncancelTask(coro, loop=loop, **kw))
    try:
        assert loop.run_until_complete(_outcome(kind)) == EXPECTED[kind]
    finally:
        loop.close()


NESTED = textwrap.dedent(
    """
    import asyncio, sys
    import nest_asyncio
    sys.path.insert(0, sys.argv[1])
    import test_hostile_input as t

    # Jupyter-like: a loop already runs (the kernel's); code inside it calls asyncio.run again.
    async def kernel():
        nest_asyncio.apply()
        return [asyncio.run(t._outcome(kind)) for kind in ("timeout", "abort", "cancel")]

    print(asyncio.run(kernel()))
    """
)


def test_in_a_jupyter_like_nested_loop_the_guard_tells_its_own_ending_from_a_callers_cancel() -> None:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + str(Path(__file__).parent)}
    result = subprocess.run(
        [sys.executable, "-c", NESTED, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "['TIMEOUT', 'ABORTED', 'cancelled']"


# --- the credential ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [OpenAICompatAdapter, AnthropicAdapter])
def test_the_key_is_never_in_repr_vars_or_a_pickle(cls: type[SseAdapter]) -> None:
    import pickle

    adapter = cls("http://api.test", KEY)
    assert not leaked(repr(adapter))
    assert not leaked(repr(vars(adapter)))
    assert KEY.encode() not in pickle.dumps(adapter._credential)
    copy = pickle.loads(pickle.dumps(adapter._credential))
    assert copy.env == adapter._credential.env and not copy.given


async def test_tool_call_arguments_nested_100000_deep_stream_without_a_recursion_error() -> None:
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": DEEP}}
    adapter = openai(
        sse(
            {"choices": [{"delta": {"tool_calls": [call]}}]},
            {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
        )
    )
    out = [c async for c in adapter.stream(options())]
    [end] = [c for c in out if c.type == "block-end"]
    assert end.block.arguments == DEEP


def test_replaying_tool_call_arguments_nested_100000_deep_to_anthropic_is_unsupported_option() -> None:
    from chunkscope.adapters.anthropic import build_body

    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool-call", "id": "c1", "name": "f", "arguments": DEEP}]},
    ]
    with pytest.raises(LlmError) as info:
        build_body(GenerateOptions("anthropic", "claude-x", messages))
    assert info.value.code == "UNSUPPORTED_OPTION"
