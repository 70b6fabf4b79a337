"""One reading of every stream: an adapter, the tap and a replay of the tap's recording agree.

Every wire's answer to every local-provider scenario, and the real-shaped fixtures of the
adapter tests, are captured once as raw bytes (status, headers, body; a dropped connection
kept as a drop) and served by a loopback upstream. Each is then read

a. by the wire's adapter over loopback HTTP, and over a transport that cuts the body into
   3-byte reads;
b. through the tap, with httpx as the client in front of it;
c. from the tap's recording: ``TapReplay`` and ``ReplayAdapter``, with the recorded reads as
   they came and cut into 3-byte reads, and ``recording_result`` (what usage frames read);

and every reading must give the same chunks, text, tool calls, usage, finish, error code and
violations. (``fault-stall`` is left out: its code is the reader's own idle timeout — the
adapter's or the client's — not anything in the bytes.)
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import importlib.util
import json
import socket
import socketserver
import threading
import zlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

import chunkscope as cs
from chunkscope.adapters.recording import Recording, recording_result
from chunkscope.adapters.wires import WIRES, Wire, wire_named
from chunkscope.provider import SCENARIOS
from chunkscope.tap import Tap, TapReplay

KEY = "sk-one-reading-7d1e9c4b2a"
CUT = 3  # bytes per read when a body is cut into small reads
_LEFT_OUT = {"fault-stall"}
_HOP = {"content-length", "transfer-encoding", "connection", "keep-alive", "date", "server"}


def _helpers(name: str) -> ModuleType:
    """One of the adapter tests' event builders (tests/adapters has no package to import from)."""
    path = Path(__file__).parent / "adapters" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"one_reading_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Canned:
    """One upstream answer as raw bytes: what the loopback upstream serves for its case."""

    wire: str
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    dropped: bool = False
    scenario: str = "text"


# --- the real-shaped fixtures -------------------------------------------------------------------


def _fixtures() -> dict[str, Canned]:
    openai, anthropic = _helpers("_openai_events"), _helpers("_anthropic_events")
    responses, bedrock = _helpers("_responses_events"), _helpers("_bedrock_frames")
    sse = (("content-type", "text/event-stream"),)
    reply = openai.sse(openai.chunk(content="Hel"), openai.chunk(content="lo"), openai.chunk(finish="stop"))
    tools = openai.sse(
        openai.chunk(reasoning="Think."),
        openai.chunk(tools=[openai.tool(0, id="call_1", name="get_weather", arguments='{"city": ')]),
        openai.chunk(tools=[openai.tool(0, arguments='"Paris"}')]),
        openai.chunk(finish="tool_calls"),
        openai.chunk(usage=openai.usage(), no_choices=True),
    )
    deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw_deflate = deflate.compress(reply) + deflate.flush()
    messages = anthropic.sse_body(anthropic.text_reply("Hel", "lo"))
    frames = b"".join(bedrock.hello())
    stream = (
        responses.Events().created().message(0, "Hi", " there").terminal().events  # type: ignore[attr-defined]
    )
    error = json.dumps({"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}).encode()
    json_error = (("content-type", "application/json"),)
    return {
        "openai-tools": Canned("openai", 200, sse, tools),
        "openai-gzip": Canned("openai", 200, (*sse, ("content-encoding", "gzip")), gzip.compress(reply)),
        "openai-raw-deflate": Canned("openai", 200, (*sse, ("content-encoding", "deflate")), raw_deflate),
        # the last event cut inside its JSON, then a clean end: STREAM_CLOSED, whoever reads it
        "openai-truncated-tail": Canned("openai", 200, sse, reply[: reply.rindex(b"data: [DONE]") - 12]),
        "openai-429-gzip": Canned(
            "openai",
            429,
            (*json_error, ("content-encoding", "gzip"), ("retry-after", "3")),
            gzip.compress(error),
        ),
        "anthropic-text": Canned("anthropic", 200, sse, messages),
        "anthropic-truncated-tail": Canned("anthropic", 200, sse, messages[:-9]),
        "responses-text": Canned("responses", 200, sse, responses.sse(stream)),
        "bedrock-text": Canned(
            "bedrock", 200, (("content-type", "application/vnd.amazon.eventstream"),), frames
        ),
        "bedrock-truncated-tail": Canned(
            "bedrock", 200, (("content-type", "application/vnd.amazon.eventstream"),), frames[:-7]
        ),
        "openai-not-a-stream": Canned("openai", 200, json_error, b'{"choices": []}'),
    }


FIXTURES = _fixtures()
CASES = [
    f"{wire}:{name}"
    for name, scenario in SCENARIOS.items()
    if name not in _LEFT_OUT
    for wire in scenario.wires
] + list(FIXTURES)


# --- capturing the local provider's answers as bytes --------------------------------------------


def _options(wire: Wire, scenario: str) -> cs.GenerateOptions:
    return cs.GenerateOptions(
        provider=wire.facts.provider, model=scenario, messages=[{"role": "user", "content": "hi there"}]
    )


async def _capture(client: httpx.AsyncClient, root: str, case: str) -> tuple[str, Canned]:
    name, _, scenario = case.partition(":")
    wire = wire_named(name)
    adapter: Any = wire.adapter(base_url=wire.base_url(root), api_key=KEY)
    options = _options(wire, scenario)
    request = client.build_request(
        "POST",
        adapter.request_url(options),
        json=adapter.request_body(options),
        headers={**adapter.wire_headers(KEY), "accept": wire.media_type, "accept-encoding": "identity"},
    )
    response = await client.send(request, stream=True)
    body = bytearray()
    dropped = False
    try:
        async for part in response.aiter_raw():
            body += part
    except httpx.TransportError:
        dropped = True
    finally:
        await response.aclose()
    headers = tuple((k, v) for k, v in response.headers.items() if k not in _HOP)
    return case, Canned(name, response.status_code, headers, bytes(body), dropped, scenario)


async def _capture_all(root: str, cases: list[str]) -> dict[str, Canned]:
    async with httpx.AsyncClient(timeout=30) as client:
        return dict(await asyncio.gather(*(_capture(client, root, case) for case in cases)))


# --- the loopback upstream ------------------------------------------------------------------------


class _Serve(socketserver.BaseRequestHandler):
    server: _Upstream

    def handle(self) -> None:
        sock: socket.socket = self.request
        data = b""
        while b"\r\n\r\n" not in data:
            part = sock.recv(65536)
            if not part:
                return
            data += part
        head, _, body = data.partition(b"\r\n\r\n")
        fields = dict(
            line.decode("latin-1").lower().split(": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line
        )
        while len(body) < int(fields.get("content-length", "0")):
            body += sock.recv(65536)
        canned = self.server.cases[fields["x-case"]]
        lines = [f"HTTP/1.1 {canned.status} Canned", *(f"{k}: {v}" for k, v in canned.headers)]
        if canned.dropped:  # chunked, cut before its last chunk: the upstream drops the connection
            lines.append("transfer-encoding: chunked")
            payload = b"%x\r\n%s\r\n" % (len(canned.body), canned.body) if canned.body else b""
        else:
            lines.append(f"content-length: {len(canned.body)}")
            payload = canned.body
        lines.append("connection: close")
        sock.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + payload)
        sock.shutdown(socket.SHUT_RDWR)


class _Upstream(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, cases: dict[str, Canned]) -> None:
        super().__init__(("127.0.0.1", 0), _Serve)
        self.cases = cases


@dataclass
class World:
    cases: dict[str, Canned]
    url: str
    tap: Tap
    folder: Path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with cs.LocalProvider() as provider:
        captured = asyncio.run(_capture_all(provider.url, [c for c in CASES if c not in FIXTURES]))
    cases = {**captured, **FIXTURES}
    upstream = _Upstream(cases)
    thread = threading.Thread(target=upstream.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{upstream.server_address[1]}"
    folder = tmp_path_factory.mktemp("one-reading")
    try:
        with Tap(upstream=url, record=folder / "recordings") as tap:
            yield World(cases, url, tap, folder)
    finally:
        upstream.shutdown()
        upstream.server_close()


# --- the readings ---------------------------------------------------------------------------------


def _seen(result: cs.StreamResult) -> dict[str, Any]:
    """What a user reads of one stream: everything the readings must agree on."""
    return {
        "chunks": [c.to_dict() if hasattr(c, "to_dict") else c for c in result.chunks],
        "text": result.text,
        "tool_calls": [block.to_dict() for block in result.tool_calls],
        "usage": result.usage,
        "finish": result.finish,
        "code": result.error_code,
        "violations": [(v.rule, v.severity, v.position) for v in result.violations],
    }


class _Cut(httpx.AsyncByteStream):
    """A body in reads of ``CUT`` bytes, ending in a dropped connection when the upstream's did."""

    def __init__(self, body: bytes, dropped: bool) -> None:
        self.body, self.dropped = body, dropped

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for at in range(0, len(self.body), CUT):
            yield self.body[at : at + CUT]
        if self.dropped:
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


async def _through_adapter(wire: Wire, case: str, canned: Canned, url: str, *, cut: bool) -> cs.StreamResult:
    client = None
    if cut:
        headers = dict(canned.headers)
        client = httpx.AsyncClient(
            transport=httpx.MockTransport(
                lambda request: httpx.Response(
                    canned.status, headers=headers, stream=_Cut(canned.body, canned.dropped)
                )
            )
        )
    adapter: Any = wire.adapter(
        base_url=wire.base_url(url), api_key=KEY, headers={"x-case": case}, http_client=client
    )
    try:
        return await cs.collect(adapter.stream(_options(wire, canned.scenario)))
    finally:
        await adapter.aclose()
        if client is not None:
            await client.aclose()


def _through_tap(world: World, wire: Wire, case: str, canned: Canned) -> Any:
    adapter: Any = wire.adapter(base_url=wire.base_url(world.url), api_key=KEY)
    options = _options(wire, canned.scenario)
    target = httpx.URL(adapter.request_url(options))
    path = target.raw_path.decode("ascii")
    headers = {**adapter.wire_headers(KEY), "x-case": case, "accept": wire.media_type}
    before = len(world.tap.calls)
    with httpx.Client(timeout=30) as client:
        try:
            client.post(world.tap.base_url + path, json=adapter.request_body(options), headers=headers).read()
        except httpx.HTTPError:
            assert canned.dropped, case
    call = world.tap.calls[before]
    assert call.wait(10) and call.result is not None and call.recording is not None
    return call


def _recut(recording: str, to: Path) -> Path:
    """The recording with each raw read cut into reads of ``CUT`` bytes (same times)."""
    lines = []
    for line in Path(recording).read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if "read" not in entry:
            lines.append(line)
            continue
        data = base64.b64decode(entry["read"])
        for at in range(0, len(data), CUT):
            lines.append(
                json.dumps({"t": entry["t"], "read": base64.b64encode(data[at : at + CUT]).decode()})
            )
    to.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return to


async def _replayed(path: Path | str) -> cs.StreamResult:
    options = cs.GenerateOptions(provider="replay", model="recorded", messages=[])
    return await cs.collect(cs.ReplayAdapter(path, speed=None).stream(options))


@pytest.mark.parametrize("case", CASES)
def test_an_adapter_the_tap_and_a_replay_read_the_same_bytes_alike(world: World, case: str) -> None:
    canned = world.cases[case]
    wire = wire_named(canned.wire)
    call = _through_tap(world, wire, case, canned)
    cut_recording = _recut(call.recording, world.folder / f"cut-{call.id}.jsonl")

    async def readings() -> dict[str, cs.StreamResult]:
        return {
            "adapter, loopback": await _through_adapter(wire, case, canned, world.url, cut=False),
            f"adapter, {CUT}-byte reads": await _through_adapter(wire, case, canned, world.url, cut=True),
            "ReplayAdapter of the tap's recording": await _replayed(call.recording),
            f"ReplayAdapter, {CUT}-byte reads": await _replayed(cut_recording),
        }

    results = asyncio.run(readings())
    results["tap, httpx in front"] = call.result
    results["TapReplay of the recording"] = TapReplay(call.recording).calls[0].result
    results[f"TapReplay, {CUT}-byte reads"] = TapReplay(cut_recording).calls[0].result
    results["recording_result (usage frames)"] = recording_result(Recording.read(call.recording))
    seen = {how: _seen(result) for how, result in results.items()}
    expected = seen["adapter, loopback"]
    for how, reading in seen.items():
        assert reading == expected, f"{case}: {how} differs from the adapter's reading"
    if case.endswith("truncated-tail"):
        assert expected["code"] == "STREAM_CLOSED"
    scenario = SCENARIOS.get(canned.scenario) if case not in FIXTURES else None
    if scenario is not None:  # the reading everyone shares is the provider's own expectation
        codes = scenario.expected_codes or {}
        assert expected["code"] == codes.get(canned.wire), case
        if not scenario.fault and canned.scenario != "echo":
            assert expected["text"] == scenario.expected_for("hi there", canned.wire).text, case


def test_every_wire_and_scenario_is_read(world: World) -> None:
    wires = {canned.wire for canned in world.cases.values()}
    assert wires == set(WIRES)
    assert {case.partition(":")[2] for case in CASES if ":" in case} == set(SCENARIOS) - _LEFT_OUT
    assert any(canned.dropped for canned in world.cases.values())  # fault-drop kept its drop
