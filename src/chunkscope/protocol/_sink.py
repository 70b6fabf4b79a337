"""Where finished streams are reported: the ``UsageSink`` protocol.

``collect(..., log=)``, ``show(..., log=)``, the runtime and the agent loop hand
every finished attempt to a sink; ``chunkscope.usage.UsageLog`` is the sink the
package ships. The protocol layer only names the shape, so it stays free of
pandas and anything else the usage layer needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._assembly import StreamResult

__all__ = ["UsageSink"]


@runtime_checkable
class UsageSink(Protocol):
    """Anything that takes one finished attempt's ``StreamResult``.

    ``call_id`` groups the attempts of one logical call (retries share it);
    ``attempt`` counts from 1; ``final`` is False for an attempt that was
    retried. Implementations must be safe to call from several tasks and threads.
    """

    def record(
        self,
        result: StreamResult,
        *,
        provider: str,
        model: str,
        tags: Mapping[str, str] | None = None,
        call_id: str | None = None,
        attempt: int = 1,
        final: bool = True,
    ) -> object: ...
