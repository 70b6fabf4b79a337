"""The timeline picture's rules, pinned by the shared vectors the browser reproduces too.

Each ``tests/fixtures/timeline/*.json`` holds a timeline state (records, violations, the
end), an optional ``upto`` (a replay frame) and the picture it must give: segments, badges,
violations shown and the head's facts. ``_view.derive`` must give it here;
``timeline.js``'s ``derive`` must give the same in Chromium
(``tests/browser/test_timeline_vectors_browser.py``), so the two derivations cannot drift.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chunkscope.notebook.timeline._records import coalesce
from chunkscope.notebook.timeline._view import TimelineView, derive

VECTORS = Path(__file__).resolve().parents[1] / "fixtures" / "timeline"


def load_vectors() -> dict[str, dict[str, Any]]:
    """Every vector by name (its file's stem)."""
    paths = sorted(VECTORS.glob("*.json"))
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in paths}


def picture(view: TimelineView) -> dict[str, Any]:
    """A frame as the vectors write it (the shape ``timeline.js``'s ``derive`` returns)."""
    error = view.error
    return {
        "title": view.title,
        "status": view.status,
        "chunks": view.chunk_count,
        "deltas": view.deltas,
        "segments": [
            {
                "index": seg.index,
                "kind": seg.kind,
                "first": seg.first,
                "last": seg.last,
                "deltas": seg.deltas,
                "started": seg.started,
                "closed": seg.closed,
                "text": seg.text,
                "name": seg.name,
                "callId": seg.call_id,
                "chunks": seg.chunk_numbers,
            }
            for seg in view.segments
        ],
        "violations": view.violations,
        "usage": view.usage,
        "finish": view.finish,
        "error": None
        if error is None
        else {
            "code": error.code,
            "message": error.message,
            "status": error.status,
            "retryAfterMs": error.retry_after_ms,
            "requestId": error.request_id,
            "causes": list(error.causes),
            "retryable": error.retryable,
            "source": error.source,
        },
        "totalMs": view.total_ms,
        "firstMs": view.first_ms,
        "maxGapMs": view.max_gap_ms,
        "maxGapAt": view.max_gap_at,
    }


VECTOR_CASES = load_vectors()


@pytest.mark.parametrize("name", sorted(VECTOR_CASES))
def test_the_python_derivation_gives_each_vectors_picture(name: str) -> None:
    vector = VECTOR_CASES[name]
    assert picture(derive(vector["state"], vector.get("upto"))) == vector["picture"]


@pytest.mark.parametrize("name", sorted(VECTOR_CASES))
def test_the_coalesced_form_batches_carry_gives_each_vectors_picture_too(name: str) -> None:
    vector = VECTOR_CASES[name]
    state = {**vector["state"], "records": coalesce(vector["state"]["records"])}
    assert picture(derive(state, vector.get("upto"))) == vector["picture"]


def test_the_vectors_cover_every_kind_of_lane_badge_violation_and_error() -> None:
    pictures = [v["picture"] for v in VECTOR_CASES.values()]
    segments = [seg for p in pictures for seg in p["segments"]]
    assert {seg["kind"] for seg in segments} >= {"text", "reasoning", "tool-call"}
    assert any(not seg["started"] for seg in segments), "an implicitly opened segment"
    assert any(not seg["closed"] for seg in segments), "a segment never closed"
    assert any(seg["deltas"] == 0 and seg["text"] for seg in segments), "a segment filled from its block-end"
    sources = {p["error"]["source"] for p in pictures if p["error"] is not None}
    assert sources == {"raised", "finish"}
    finishes = {p["finish"]["kind"] for p in pictures if p["finish"]}
    assert finishes >= {"stop", "tool-calls", "max-tokens", "error", "aborted"}
    shown = [v for p in pictures for v in p["violations"]]
    assert any(v[0] is None for v in shown) and any(v[0] is not None for v in shown)
    assert any(p["usage"] for p in pictures) and any(p["status"] == "streaming" for p in pictures)
    coalesced = [v for v in VECTOR_CASES.values() if coalesce(v["state"]["records"]) != v["state"]["records"]]
    assert any(v.get("upto") is not None for v in coalesced), "a replay frame inside a coalesced run"
