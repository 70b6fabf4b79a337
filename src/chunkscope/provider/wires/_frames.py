"""What a wire module hands the server: SSE text, binary frames, or a pause or a drop to act out."""

from __future__ import annotations

from typing import Union

from .._scenarios import Drop, Stall

__all__ = ["Frame"]

Frame = Union[str, bytes, Stall, Drop]
"""One SSE event (text to send as-is), one binary frame (Bedrock's event stream, sent as-is),
or a pause or a connection drop for the server to act out."""
