"""Real clients through the tap (official SDKs, curl, Node): the answers they get without it, each checked.

Everything runs against the local provider on 127.0.0.1; the Node client's
``openai`` package is installed from the npm registry into a cache folder once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import anthropic
import openai
import pytest
from _tap_helpers import AUTH, KEY, normalised, stream_body

import chunkscope as cs
from chunkscope.tap import Tap, TapCall

NODE_CACHE = Path(
    os.environ.get("CHUNKSCOPE_NODE_CACHE", Path.home() / ".cache" / "chunkscope-tests" / "node")
)


def checked(tap: Tap) -> TapCall:
    """The tap's one call, finished, checked clean, with usage and timings."""
    assert len(tap.calls) == 1
    call = tap.calls[0]
    assert call.wait(5)
    assert call.result is not None and call.result.ok, call.result
    assert call.result.usage is not None and call.result.usage.output_tokens > 0
    assert call.timings.first_byte_s is not None and call.timings.total_s is not None
    assert len(tap.usage) == 1
    assert KEY not in repr(call.request_headers)
    return call


def openai_text(base_url: str) -> tuple[str, int]:
    client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    stream = client.chat.completions.create(
        model="text",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, tokens = "", 0
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
    client.close()
    return text, tokens


def test_the_openai_sdk(provider: cs.LocalProvider, tap: Tap) -> None:
    assert openai_text(f"{tap.base_url}/v1") == openai_text(provider.base_url)
    call = checked(tap)
    assert call.wire == "openai"
    assert call.result is not None and call.result.text == openai_text(provider.base_url)[0]


def test_the_openai_sdk_without_streaming(provider: cs.LocalProvider, tap: Tap) -> None:
    def answer(base_url: str) -> tuple[str | None, int]:
        client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
        reply = client.chat.completions.create(model="text", messages=[{"role": "user", "content": "hi"}])
        client.close()
        assert reply.usage is not None
        return reply.choices[0].message.content, reply.usage.completion_tokens

    through, direct = answer(f"{tap.base_url}/v1"), answer(provider.base_url)
    assert through == direct
    call = tap.calls[0]
    assert call.wait(5) and call.result is not None and call.result.usage is not None
    assert call.result.usage.output_tokens == through[1]


def test_the_anthropic_sdk(provider: cs.LocalProvider, tap: Tap) -> None:
    def answer(base_url: str) -> tuple[str, int]:
        client = anthropic.Anthropic(base_url=base_url, api_key=KEY, max_retries=0)
        with client.messages.stream(
            model="text", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        client.close()
        return text, final.usage.output_tokens

    through, direct = answer(tap.base_url), answer(provider.url)
    assert through == direct
    call = checked(tap)
    assert call.wire == "anthropic" and call.result is not None and call.result.text == through[0]


def test_the_openai_sdk_on_the_responses_wire(provider: cs.LocalProvider, tap: Tap) -> None:
    def answer(base_url: str) -> tuple[str, int]:
        client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
        text, tokens = "", 0
        for event in client.responses.create(model="text", input="hi", stream=True):
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type == "response.completed" and event.response.usage is not None:
                tokens = event.response.usage.output_tokens
        client.close()
        return text, tokens

    through, direct = answer(f"{tap.base_url}/v1"), answer(provider.base_url)
    assert through == direct
    call = checked(tap)
    assert call.wire == "responses" and call.result is not None and call.result.text == through[0]


def test_the_google_genai_sdk(provider: cs.LocalProvider, tap: Tap) -> None:
    from google import genai
    from google.genai import types

    def answer(root: str) -> tuple[str, int | None]:
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=root))
        text, tokens = "", None
        for response in client.models.generate_content_stream(model="text", contents="hi"):
            text += response.text or ""
            if response.usage_metadata is not None:
                tokens = response.usage_metadata.candidates_token_count
        client.close()
        return text, tokens

    through, direct = answer(tap.base_url), answer(provider.url)
    assert through == direct and through[0]
    call = checked(tap)
    assert call.wire == "gemini" and call.model == "text"  # the model read from the request path
    assert call.result is not None and call.result.text == through[0]
    assert not any(KEY in value for _, value in call.request_headers)  # x-goog-api-key redacted


def test_boto3_on_bedrock(provider: cs.LocalProvider, tap: Tap) -> None:
    import boto3
    from botocore.config import Config

    def answer(root: str) -> tuple[str, int]:
        client = boto3.client(
            "bedrock-runtime",
            endpoint_url=root,
            region_name="us-east-1",
            aws_access_key_id="AKIDTAPTEST",
            aws_secret_access_key=KEY,
            config=Config(retries={"max_attempts": 1, "mode": "standard"}),
        )
        reply = client.converse_stream(
            modelId="text", messages=[{"role": "user", "content": [{"text": "hi"}]}]
        )
        text, tokens = "", 0
        for event in reply["stream"]:
            text += event.get("contentBlockDelta", {}).get("delta", {}).get("text", "")
            tokens = event.get("metadata", {}).get("usage", {}).get("outputTokens", tokens)
        client.close()
        return text, tokens

    through, direct = answer(tap.base_url), answer(provider.url)
    assert through == direct and through[0]
    call = checked(tap)  # the binary event stream, parsed beside the forwarding
    assert call.wire == "bedrock" and call.model == "text"
    assert call.result is not None and call.result.text == through[0]
    assert all("Signature=" not in value or "<redacted>" in value for _, value in call.request_headers)


def test_the_google_genai_sdk_without_streaming(provider: cs.LocalProvider, tap: Tap) -> None:
    from google import genai
    from google.genai import types

    def answer(root: str) -> tuple[str | None, int | None]:
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=root))
        reply = client.models.generate_content(model="text", contents="hi")
        client.close()
        assert reply.usage_metadata is not None
        return reply.text, reply.usage_metadata.candidates_token_count

    through, direct = answer(tap.base_url), answer(provider.url)
    assert through == direct and through[0]
    call = tap.calls[0]  # :generateContent: one JSON answer, its usage read from the body
    assert call.wait(5) and call.wire == "gemini" and call.model == "text" and not call.streaming
    assert call.result is not None and call.result.usage is not None
    assert call.result.usage.output_tokens == through[1] and call.result.finish is not None
    assert tap.usage.to_frame()["output_tokens"].tolist() == [through[1]]


def test_boto3_converse_without_streaming(provider: cs.LocalProvider, tap: Tap) -> None:
    import boto3
    from botocore.config import Config

    def answer(root: str) -> tuple[str, int]:
        client = boto3.client(
            "bedrock-runtime",
            endpoint_url=root,
            region_name="us-east-1",
            aws_access_key_id="AKIDTAPTEST",
            aws_secret_access_key=KEY,
            config=Config(retries={"max_attempts": 1, "mode": "standard"}),
        )
        reply = client.converse(modelId="text", messages=[{"role": "user", "content": [{"text": "hi"}]}])
        client.close()
        return reply["output"]["message"]["content"][0]["text"], reply["usage"]["outputTokens"]

    through, direct = answer(tap.base_url), answer(provider.url)
    assert through == direct and through[0]
    call = tap.calls[0]  # /converse: one JSON answer, its usage read from the body
    assert call.wait(5) and call.wire == "bedrock" and call.model == "text" and not call.streaming
    assert call.result is not None and call.result.usage is not None
    assert call.result.usage.output_tokens == through[1]
    assert call.result.finish is not None and call.result.finish.kind == "stop"


def curl(url: str) -> bytes:
    command = [
        "curl",
        "-sS",
        "-N",
        "--fail-with-body",
        "-X",
        "POST",
        url,
        "-H",
        "content-type: application/json",
    ]
    command += ["-H", f"authorization: {AUTH['authorization']}", "--data-binary", "@-"]
    body = {**stream_body("text"), "stream_options": {"include_usage": True}}
    done = subprocess.run(
        command, input=json.dumps(body).encode(), capture_output=True, timeout=30, check=True
    )
    return done.stdout


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl(provider: cs.LocalProvider, tap: Tap) -> None:
    through = curl(f"{tap.base_url}/v1/chat/completions")
    assert normalised(through) == normalised(curl(f"{provider.base_url}/chat/completions"))
    assert checked(tap).raw == through


_NODE_CLIENT = r"""
const OpenAI = require("openai");
const client = new OpenAI({ baseURL: process.argv[2], apiKey: process.argv[3], maxRetries: 0 });
(async () => {
  const stream = await client.chat.completions.create({
    model: "text", messages: [{ role: "user", content: "hi" }], stream: true,
    stream_options: { include_usage: true },
  });
  let text = "", tokens = 0;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
  }
  console.log(JSON.stringify({ text, tokens }));
})().catch((error) => { console.error(String(error)); process.exit(1); });
"""


@pytest.fixture(scope="session")
def node_client() -> Path:
    """A Node script using the ``openai`` npm package, installed from the registry into a cache folder."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed")
    folder = NODE_CACHE / "openai4"
    if not (folder / "node_modules" / "openai" / "package.json").exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent", "openai@4"],
            cwd=folder,
            check=True,
            capture_output=True,
            timeout=240,
        )
    script = folder / "client.cjs"
    script.write_text(_NODE_CLIENT)
    return script


def test_a_node_client(provider: cs.LocalProvider, tap: Tap, node_client: Path) -> None:
    def answer(base_url: str) -> dict[str, object]:
        done = subprocess.run(
            ["node", str(node_client), base_url, KEY], capture_output=True, text=True, timeout=60, check=True
        )
        return dict(json.loads(done.stdout))

    through = answer(f"{tap.base_url}/v1")
    assert through == answer(provider.base_url) and through["text"]
    call = checked(tap)
    assert call.result is not None and call.result.text == through["text"]
    assert any(name.lower() == "user-agent" and "OpenAI/JS" in value for name, value in call.request_headers)


def _without_streaming(tap: Tap, provider: cs.LocalProvider) -> None:
    """One non-streaming call on each wire, each by its own SDK client, through the tap."""
    import boto3
    from botocore.config import Config
    from google import genai
    from google.genai import types

    client = openai.OpenAI(base_url=f"{tap.base_url}/v1", api_key=KEY, max_retries=0)
    client.chat.completions.create(model="text", messages=[{"role": "user", "content": "hi"}])
    client.chat.completions.create(model="tool-call", messages=[{"role": "user", "content": "hi"}])
    client.responses.create(model="text", input="hi")
    client.close()
    claude = anthropic.Anthropic(base_url=tap.base_url, api_key=KEY, max_retries=0)
    claude.messages.create(model="text", max_tokens=64, messages=[{"role": "user", "content": "hi"}])
    claude.close()
    gemini = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=tap.base_url))
    gemini.models.generate_content(model="text", contents="hi")
    gemini.close()
    bedrock = boto3.client(
        "bedrock-runtime",
        endpoint_url=tap.base_url,
        region_name="us-east-1",
        aws_access_key_id="AKIDTAPTEST",
        aws_secret_access_key=KEY,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )
    bedrock.converse(modelId="text", messages=[{"role": "user", "content": [{"text": "hi"}]}])
    bedrock.close()
    assert all(call.wait(5) for call in tap.calls)


def _seen(call: TapCall) -> tuple[object, ...]:
    assert call.result is not None
    result = call.result
    return call.wire, call.streaming, result.usage, result.finish, result.text


def test_a_non_streaming_call_reads_back_from_its_recording_as_the_tap_saw_it(
    provider: cs.LocalProvider, tap: Tap, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chunkscope.cli import main
    from chunkscope.tap import TapReplay

    _without_streaming(tap, provider)
    live = [_seen(call) for call in tap.calls]
    assert [wire for wire, *_ in live] == ["openai", "openai", "responses", "anthropic", "gemini", "bedrock"]
    assert all(not seen[1] and seen[2] is not None and seen[2].output_tokens > 0 for seen in live)
    assert all(text for *_, text in live[:1] + live[2:])  # the answer's text, as a stream carries it
    assert tap.calls[1].result is not None and tap.calls[1].result.tool_calls  # tool-call: a client call
    assert all(call.result is not None and call.result.ok and not call.violations for call in tap.calls)
    folder = tmp_path / "recordings"

    frame = cs.read_recordings(folder)
    assert frame["usage_source"].tolist() == ["reported"] * 6
    assert frame["output_tokens"].tolist() == [usage.output_tokens for _, _, usage, *_ in live]
    assert frame["input_tokens"].tolist() == [usage.input_tokens for _, _, usage, *_ in live]
    assert frame["finish"].tolist() == [finish.kind for *_, finish, _ in live]

    replay = TapReplay(folder)
    assert [_seen(call) for call in replay.calls] == live

    files = sorted(map(str, folder.glob("*.jsonl")))
    assert main(["check", *files]) == 0
    assert "6 streams checked, 0 with errors" in capsys.readouterr().out
    assert main(["usage", *files]) == 0
    printed = capsys.readouterr().out
    assert "usage missing" not in printed
    total = sum(usage.output_tokens for _, _, usage, *_ in live if usage is not None)
    assert sum(int(n) for n in frame["output_tokens"]) == total
