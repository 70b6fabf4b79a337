"""Parsing runs beside forwarding: a slow or failing translator never alters the client's bytes, and
holds the forwarding once a call at most."""

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
    body = stream_body("slow-tokens")  # an event a read, 50 ms apart
    start = time.perf_counter()
    direct = httpx.post(f"{provider.base_url}/chat/completions", json=body, headers=AUTH)
    direct_took = time.perf_counter() - start
    with Tap(upstream=provider.url) as tap:
        start = time.perf_counter()
        through = httpx.post(f"{tap.base_url}/v1/chat/completions", json=body, headers=AUTH)
        took = time.perf_counter() - start
        call = tap.calls[0]
        assert call.wait(10)
    assert normalised(through.content) == normalised(direct.content)
    # 10+ events x 0.2 s of parsing, and only the first read's were waited for: parsed on the
    # loop's thread, they took over its budget and sent the call's next reads to the parser thread
    first_read = call.reads[0][1].count(b"\n\n")
    assert through.content.count(b"\n\n") >= first_read + 8
    assert took < direct_took + 0.2 * first_read + 0.25
    assert call.raw == through.content
    if translator is _Broken:
        assert call.error_code == "UNKNOWN" and "translator failed" in str(call.error)


def test_a_slow_parse_holds_the_other_connections_once_at_most(
    provider: cs.LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = [True]

    def translator(label: str, secrets: tuple[str, ...]) -> object:
        if slow:  # the first call's parse is slow (0.2 s an event), every other one as usual
            slow.clear()
            return _Slow()
        return WIRES[0].translator(label, secrets)

    wire = dataclasses.replace(WIRES[0], translator=translator)  # type: ignore[arg-type]
    monkeypatch.setattr(_proxy, "detect_wire", lambda path: wire)
    took: list[float] = []
    with (
        Tap(upstream=provider.url) as tap,
        httpx.stream(
            "POST", f"{tap.base_url}/v1/chat/completions", json=stream_body("slow-tokens"), headers=AUTH
        ) as slowly,
    ):
        reads = slowly.iter_raw()
        next(reads)  # its first event reached the client: the tap parses it now, for 0.2 s
        for _ in range(5):  # meanwhile, other clients' calls (10 events of 50 ms come on the slow one)
            start = time.perf_counter()
            other = httpx.post(f"{tap.base_url}/v1/chat/completions", json=stream_body("text"), headers=AUTH)
            took.append(time.perf_counter() - start)
            assert other.status_code == 200
        rest = b"".join(reads)
        assert all(call.wait(10) for call in tap.calls)
    assert rest.endswith(b"data: [DONE]\n\n")
    # One slow parse on the loop's thread (0.2 s) at most: the slow call's next reads went to the
    # parser thread, so the other calls were not kept behind each of its events.
    assert sum(took) < 0.6, took
