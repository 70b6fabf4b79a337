"""No API key in anything that leaves a failed call: pickles, reprs, failures, recordings, logs, displays.

A hostile (or careless) server echoes the key in ``x-request-id``; a refused
connection leaves httpx's request (``Authorization: Bearer …``) on the cause.
Every output a user can keep or send is searched for the key.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import pickle
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

import chunkscope as cs
from chunkscope.adapters import GenerateOptions, RecordingAdapter
from chunkscope.protocol import AnyChunk, LlmError, Message, chunk_to_dict

KEY = "sk-live-ECHOED-0123456789abcdef"
TEXT = b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
IN_STREAM_ERROR = b'data: {"error":{"message":"overloaded","type":"server_error"}}\n\n'


def echoing(status: int, body: bytes) -> Callable[[httpx.Request], httpx.Response]:
    """A server that puts the caller's key into its request id."""

    def handler(request: httpx.Request) -> httpx.Response:
        key = request.headers["authorization"].removeprefix("Bearer ")
        assert key == KEY  # the key did reach the server: the test can find it wherever it leaks
        content_type = "text/event-stream" if status == 200 else "application/json"
        headers = {"x-request-id": f"req-{key}-1", "content-type": content_type}
        return httpx.Response(status, headers=headers, content=body)

    return handler


SCENARIOS = {
    "http-500": (500, b'{"error": {"message": "boom", "type": "server_error"}}'),
    "in-stream-error": (200, TEXT + IN_STREAM_ERROR),
    "cut-before-done": (200, TEXT),
}


def options() -> GenerateOptions:
    return GenerateOptions(
        "deepseek", "deepseek-chat", [Message(role="user", content=[cs.TextBlock(text="hi")])]
    )


def assert_no_key(where: str, output: str | bytes) -> None:
    data = output.encode("utf-8", "surrogatepass") if isinstance(output, str) else output
    assert KEY.encode() not in data, f"the API key is in {where}"


async def failed_stream(adapter: cs.LlmAdapter) -> tuple[list[AnyChunk], LlmError]:
    chunks: list[AnyChunk] = []
    with pytest.raises(LlmError) as caught:
        async for chunk in adapter.stream(options()):
            chunks.append(chunk)
    return chunks, caught.value


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_a_key_echoed_in_the_request_id_reaches_no_output(scenario: str, tmp_path: Path) -> None:
    status, body = SCENARIOS[scenario]
    client = httpx.AsyncClient(transport=httpx.MockTransport(echoing(status, body)))
    adapter = cs.OpenAICompatAdapter("http://127.0.0.1:9", api_key=KEY, http_client=client)

    # the adapter's own error
    _, error = await failed_stream(adapter)
    assert error.request_id is not None and error.request_id.startswith("req-")
    for where, output in {
        "repr": repr(error),
        "str": str(error),
        "error chain": cs.error_chain(error),
        "failure dict": json.dumps(error.failure.model_dump(mode="json")),
        "pickle": pickle.dumps(error),
    }.items():
        assert_no_key(where, output)

    # the runtime's normalized chunks (the failure as a terminal finish)
    runtime = cs.LlmRuntime()
    runtime.register_adapter("deepseek", adapter)
    normalized = [chunk async for chunk in runtime.stream(options(), failures="normalize")]
    finish = normalized[-1]
    assert finish.type == "finish" and finish.reason.failure is not None
    assert finish.reason.failure.request_id is not None
    assert_no_key("normalized chunks", json.dumps([chunk_to_dict(c) for c in normalized]))

    # a recording, and what `chunkscope check` / `show` print about it
    recording = tmp_path / "call.jsonl"
    await failed_stream(RecordingAdapter(adapter, recording))
    assert_no_key("the recording", recording.read_bytes())
    for command in ("check", "show"):
        assert_no_key(f"chunkscope {command} of the recording", cli(command, recording))

    # a session log of the step, and `chunkscope check` of it
    from chunkscope.usage import DshLogWriter

    session = tmp_path / "session.jsonl"
    with DshLogWriter(session) as writer:
        writer.turn_start(1)
        writer.step(1, 1, normalized)
        writer.turn_end(1)
    assert_no_key("the session log", session.read_bytes())
    assert_no_key("chunkscope check of the session log", cli("check", session, "--format", "json"))

    # the timeline: its synced state, its static HTML and page
    from chunkscope.notebook import Timeline

    timeline = Timeline()
    timeline.send = lambda *a, **k: None  # type: ignore[method-assign]
    await timeline.consume(_replay(normalized))
    assert timeline.state()["status"] != "streaming"
    assert_no_key("the timeline state", json.dumps(timeline.state()))
    assert_no_key("the timeline widget state", json.dumps(timeline.get_state()["_state"]))
    assert_no_key("the timeline HTML", timeline.static_html())
    assert_no_key("the timeline page", timeline.to_html(tmp_path / "t.html").read_bytes())
    assert_no_key("the timeline repr", repr(timeline))
    await client.aclose()


async def _replay(chunks: list[AnyChunk]) -> Any:
    for chunk in chunks:
        yield chunk


def cli(*args: str | Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "chunkscope.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**_env(), "COLUMNS": "200"},
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout + done.stderr


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


# --- a refused connection: httpx's exception holds the request and its Authorization header ---


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def refused() -> LlmError:
    adapter = cs.OpenAICompatAdapter(f"http://127.0.0.1:{closed_port()}", api_key=KEY)
    try:
        _, error = await failed_stream(adapter)
    finally:
        await adapter.aclose()
    return error


async def test_a_transport_error_pickles_without_the_key_and_keeps_its_cause_type() -> None:
    error = await refused()
    assert error.code == "TRANSPORT" and isinstance(error.cause, httpx.ConnectError)
    data = pickle.dumps(error)
    assert_no_key("the pickled TRANSPORT error", data)
    back = pickle.loads(data)
    assert back.code == "TRANSPORT" and cs.error_chain(back) == cs.error_chain(error)
    assert_no_key("the error's repr", repr(error) + str(error) + cs.error_chain(error))


class _CarriesRequest(Exception):
    def __init__(self, message: str = "connection reset") -> None:
        super().__init__(message)
        # a picklable stand-in for another client's request object (httpx's own pickles only in part)
        self.request = SimpleNamespace(method="POST", headers={"Authorization": f"Bearer {KEY}"})


_CAUSE_CHILD = """
import pickle
from chunkscope import LlmError
from tests.test_secrets import KEY, _CarriesRequest
error = LlmError("the provider could not be reached", "TRANSPORT", cause=_CarriesRequest())
data = pickle.dumps(error)
print(KEY.encode() in data, str(pickle.loads(data).cause))
"""


def test_a_cause_holding_an_http_request_pickles_as_its_type_and_text_only() -> None:
    # Any adapter's cause, not only the library's: an exception keeping the request it failed on.
    # In a fresh interpreter: where another test imported distributed, tblib's reducers pickle every
    # exception's raw cause process-wide (the limit documented on LlmError).
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", _CAUSE_CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False _CarriesRequest: connection reset"


_TBLIB_CHILD = """
import asyncio, pickle, sys
from tblib import pickling_support
import chunkscope as cs
from tests.test_secrets import KEY, refused
pickling_support.install()  # as distributed does on import: the raw cause and context chains are pickled
error = asyncio.run(refused())
data = pickle.dumps(error)
back = pickle.loads(data)
print(KEY.encode() in data, back.code, type(back.__cause__).__name__)
"""


def test_with_tblibs_reducers_installed_the_pickle_holds_no_key_either() -> None:
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", _TBLIB_CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "TRANSPORT", "ConnectError"]


# --- the agent loop's result: pickled, and through a multiprocessing queue ---


async def test_an_agent_result_of_a_failed_run_carries_no_key_in_a_pickle_or_a_queue() -> None:
    adapter = cs.OpenAICompatAdapter(f"http://127.0.0.1:{closed_port()}", api_key=KEY)
    loop = cs.AgentLoop(adapter, retry=cs.RetryPolicy(max_retries=0))
    result = await loop.run("hi", model="deepseek-chat")
    await adapter.aclose()
    assert result.outcome == "error" and result.error is not None and result.error.code == "TRANSPORT"
    assert_no_key("the pickled AgentResult", pickle.dumps(result))
    assert_no_key("the AgentResult repr", repr(result))
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    queue.put(result)
    back = await asyncio.to_thread(queue.get, True, 60)
    assert back.outcome == "error" and back.error.code == "TRANSPORT"
    assert_no_key("the AgentResult after a queue", pickle.dumps(back))
    queue.close()


TOOL_CALL = (
    b'data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    b'"type":"function","function":{"name":"stop_here","arguments":"{}"}}]}}]}\n\n'
    b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
    b"data: [DONE]\n\n"
)


async def test_an_abort_reason_quoting_the_key_is_redacted_in_the_agent_result() -> None:
    controller = cs.AbortController()

    @cs.tool
    def stop_here() -> str:
        """Abort the run, with a careless reason."""
        controller.abort(f"user pressed stop; key was {KEY}")
        return "stopped"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=TOOL_CALL)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    adapter = cs.OpenAICompatAdapter("http://127.0.0.1:9", api_key=KEY, http_client=client)
    loop = cs.AgentLoop(RecordingAdapter(adapter, "/dev/null"), [stop_here])
    result = await loop.run("hi", model="deepseek-chat", signal=controller.signal)
    await client.aclose()
    assert result.outcome == "aborted" and result.error is not None and result.error.code == "ABORTED"
    assert "user pressed stop; key was ***" in result.error.message
    for where, output in {
        "the abort error": repr(result.error) + str(result.error) + cs.error_chain(result.error),
        "the pickled AgentResult": pickle.dumps(result),
    }.items():
        assert_no_key(where, output)
