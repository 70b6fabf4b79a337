"""The usage frame of an ``llm`` ``logs.db``: ``cs.read_llm_logs(path)`` (the pandas part).

The database reader lives in ``chunkscope.sources.llm_logs`` and needs no
pandas; this module records each logged response as one ``UsageLog`` row:
``provider`` ``"llm"`` (llm logs the model, not who served it; genai-prices
then prices by the model name), ``model`` llm's model id, ``call_id`` the
response id, ``tags`` the conversation (``{"conversation": id}``), the start
and duration llm logged, and its token counts made disjoint
(``LlmLogResponse.counts``). A count out of range (negative, 2**63 and above,
not a number) makes the row's ``usage_source`` ``invalid``, as for any usage
report.

Only what the log holds is shown: the blocks of each kind the response held
(``LlmLogResponse.blocks``), and the finish its plugin's ``response_json``
names, read by the wire reader whose shape it has (``adapters.wires``: chat
completions, also as llm's streamed ``finish_reason``, Anthropic, Responses,
Gemini, Bedrock). llm logs no finish itself: without one in the JSON the
finish is ``<NA>``; llm logs only responses that completed, so a row without
counts is ``missing``, not ``lost``.
"""

from __future__ import annotations

import os
from typing import Any

from chunkscope.adapters.wires import WIRES
from chunkscope.protocol import FinishReason, StreamResult, Timings, TokenUsage
from chunkscope.sources.llm_logs import LlmLogResponse, read_llm_responses

from ._log import UsageLog

__all__ = ["LLM_PROVIDER", "read_llm_logs", "record_llm_logs"]

LLM_PROVIDER = "llm"
"""The ``provider`` of a row read from an llm logs.db."""


def read_llm_logs(path: str | os.PathLike[str], *, prices: Any = None) -> Any:
    """The usage frame of an ``llm`` ``logs.db``: one row per logged response, oldest first.

    ``prices`` (a ``PriceTable`` or ``"genai-prices"``) fills ``cost``. A file that is not
    an llm database raises ``cs.SourceError`` (``UnreadableSourceError``).
    """
    log = UsageLog(prices=prices)
    record_llm_logs(log, read_llm_responses(path))
    return log.to_frame()


def record_llm_logs(log: UsageLog, responses: list[LlmLogResponse]) -> UsageLog:
    """Record every response of an llm logs.db into ``log`` (the CLI's ``chunkscope usage logs.db``)."""
    for response in responses:
        counts = response.counts()
        result = StreamResult(
            usage=None if counts is None else TokenUsage(**counts),
            finish=logged_finish(response.response_json),
            timings=Timings(started_at=response.started_at, total_s=response.duration_s),
        )
        tags = {"conversation": response.conversation_id} if response.conversation_id else None
        held = response.blocks
        blocks: dict[str, int | None] = (
            {"text": held.text, "reasoning": held.reasoning, "tool-call": held.tool_calls}
            if held is not None
            else dict.fromkeys(("text", "reasoning", "tool-call"))
        )
        log._record(  # the row builder's entry for logs that keep no chunks
            result,
            provider=LLM_PROVIDER,
            model=response.model,
            tags=tags,
            call_id=response.id,
            completed=True,
            blocks=blocks,
        )
    return log


def logged_finish(body: dict[str, Any] | None) -> FinishReason | None:
    """The finish a plugin's ``response_json`` names, read as its wire's reader reads it; else None."""
    if body is None:
        return None
    reason = body.get("finish_reason")
    if isinstance(reason, str):  # llm's own fold of a streamed chat completion puts it on top
        body = {"choices": [{"finish_reason": reason}]}
    for wire in WIRES.values():
        try:
            _, finish = wire.read_whole(body)
        except (TypeError, ValueError, KeyError, AttributeError):  # another wire's shape
            continue
        if finish is not None:
            return finish
    return None
