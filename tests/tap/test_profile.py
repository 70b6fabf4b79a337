"""The tap checks every call under the profile it was given (``Tap(profile=...)``)."""

from __future__ import annotations

import http.server
import json
from pathlib import Path

import httpx
import pytest
from _tap_helpers import AUTH, stdlib_server, stream_body

from chunkscope.tap import Tap, TapReplay

# A whole chat-completions stream that never reports usage: "usage-missing" under strict,
# a clean stream under the DeepSeek Harness profile (whose logs carry no usage either).
_NO_USAGE = (
    b"".join(
        b"data: %s\n\n" % json.dumps(payload).encode()
        for payload in (
            {"id": "c1", "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]},
            {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        )
    )
    + b"data: [DONE]\n\n"
)


class _NoUsage(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(_NO_USAGE)))
        self.end_headers()
        self.wfile.write(_NO_USAGE)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize(("profile", "rules"), [("strict", ["usage-missing"]), ("dsh", [])])
def test_each_call_is_checked_under_the_taps_profile(profile: str, rules: list[str], tmp_path: Path) -> None:
    with stdlib_server(_NoUsage) as upstream, Tap(upstream=upstream, profile=profile, record=tmp_path) as tap:
        response = httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("text"), headers=AUTH)
        assert response.status_code == 200
        call = tap.calls[0]
        assert call.wait(10) and call.result is not None
    assert call.result.text == "Hi" and call.error_code is None
    assert [v.rule for v in call.violations] == rules
    assert [v.rule for v in call.result.violations] == rules
    replayed = TapReplay(call.recording or "", profile=profile).calls[0]  # a replay checks the same way
    assert [v.rule for v in replayed.violations] == rules


def test_an_unknown_profile_is_refused_when_the_tap_is_made() -> None:
    with pytest.raises(ValueError, match="unknown profile 'lax'"):
        Tap(upstream="http://127.0.0.1:9", profile="lax")
