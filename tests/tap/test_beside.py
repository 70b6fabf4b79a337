"""Parsing runs beside forwarding: a slow or failing translator never delays or alters the client's bytes."""

from __future__ import annotations

import dataclasses
import time

import httpx
import pytest
from _tap_helpers import AUTH, normalised, stream_body

import chunkscope as cs
from chunkscope.tap import Tap, Wire, _proxy
from chunkscope.tap._wires import WIRES


class _Slow:
    """A translator that takes 0.2 s per event (a stand-in for a slow parser or display)."""

    done = False

    def feed(self, event: tuple[str, str]) -> list[object]:
        time.sleep(0.2)
        return []

    def end(self) -> list[object]:
        return []

    def salvage(self) -> list[object]:
        return []


class _Broken(_Slow):
    def feed(self, event: tuple[str, str]) -> list[object]:
        raise RuntimeError("a translator defect")


def _wire(translator: type[_Slow]) -> Wire:
    return dataclasses.replace(WIRES[0], translator=lambda label, secrets: translator())  # type: ignore[arg-type,return-value]


@pytest.mark.parametrize("translator", [_Slow, _Broken])
def test_the_client_gets_its_bytes_at_once_whatever_the_parser_does(
    provider: cs.LocalProvider, monkeypatch: pytest.MonkeyPatch, translator: type[_Slow]
) -> None:
    monkeypatch.setattr(_proxy, "detect_wire", lambda path: _wire(translator))
    direct = httpx.post(f"{provider.base_url}/chat/completions", json=stream_body("text"), headers=AUTH)
    with Tap(upstream=provider.url) as tap:
        start = time.perf_counter()
        through = httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("text"), headers=AUTH)
        took = time.perf_counter() - start
        call = tap.calls[0]
        assert call.wait(10)
    assert normalised(through.content) == normalised(direct.content)
    assert through.content.count(b"\n\n") >= 10 and took < 1.0  # 10+ events x 0.2 s were not waited for
    assert call.raw == through.content
    if translator is _Broken:
        assert call.error_code == "UNKNOWN" and "translator failed" in str(call.error)
