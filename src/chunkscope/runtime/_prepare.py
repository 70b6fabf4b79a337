"""Checks before any I/O: options the adapter cannot honour, efforts the model does not list, defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chunkscope.adapters import GenerateOptions, LlmAdapter, ModelInfo, ReasoningInfo
from chunkscope.protocol import LlmError

__all__ = ["PreparedCall", "prepare_call"]


@dataclass(frozen=True)
class PreparedCall:
    """A call checked before any I/O: the options to send, the model's metadata, what was filled.

    ``filled`` names the ``GenerateOptions`` fields the runtime set from the
    adapter's defaults (``reasoning_effort``, ``max_tokens``), in that order.
    """

    options: GenerateOptions
    adapter: LlmAdapter
    model: ModelInfo | None
    filled: tuple[str, ...]

    @property
    def effective_effort(self) -> str | None:
        """The reasoning effort the call runs with (explicit or filled), or None."""
        return self.options.reasoning_effort


def prepare_call(adapter: LlmAdapter, options: GenerateOptions) -> PreparedCall:
    """Check ``options`` against ``adapter`` and its model metadata; no I/O happens here.

    Raises ``UNSUPPORTED_OPTION`` for a set field outside the adapter's
    ``supported_options``; ``UNSUPPORTED_REASONING_EFFORT`` for an explicit
    effort the model does not list (or any effort on a model without reasoning
    metadata); ``ABORTED`` if the signal already fired. Fills the model's
    default effort and ``max_tokens`` when unset and honoured by the adapter,
    and names them in ``PreparedCall.filled``.
    """
    _check_supported(adapter, options)
    info = _model_info(adapter, options.model)
    reasoning = info.reasoning if info is not None else None
    _check_effort(options, reasoning)
    changes = _defaults(options, info, adapter.supported_options)
    if options.signal is not None:
        options.signal.throw_if_aborted()
    prepared = options.replace(**changes) if changes else options
    return PreparedCall(prepared, adapter, info, tuple(changes))


def _check_supported(adapter: LlmAdapter, options: GenerateOptions) -> None:
    unsupported = [n for n in options.set_options() if n not in adapter.supported_options]
    if unsupported:
        raise LlmError(
            f"provider {options.provider!r} ({type(adapter).__name__}) cannot honour GenerateOptions "
            f"field(s) {', '.join(unsupported)}; leave them unset",
            "UNSUPPORTED_OPTION",
        )


def _model_info(adapter: LlmAdapter, model: str) -> ModelInfo | None:
    info = adapter.model_info(model)
    if info is not None and not isinstance(info, ModelInfo):
        raise TypeError(f"{type(adapter).__name__}.model_info returned {type(info).__name__}, not ModelInfo")
    return info


def _check_effort(options: GenerateOptions, reasoning: ReasoningInfo | None) -> None:
    effort = options.reasoning_effort
    if effort is not None and (reasoning is None or effort not in reasoning.ids):
        listed = f"; it lists {list(reasoning.ids)}" if reasoning is not None else " (no reasoning metadata)"
        raise LlmError(
            f"provider {options.provider!r} model {options.model!r} does not support reasoning effort "
            f"{effort!r}{listed}",
            "UNSUPPORTED_REASONING_EFFORT",
        )


def _defaults(options: GenerateOptions, info: ModelInfo | None, supported: frozenset[str]) -> dict[str, Any]:
    """The model's default effort and ``max_tokens``, where unset and honoured by the adapter."""
    changes: dict[str, Any] = {}
    reasoning = info.reasoning if info is not None else None
    default_effort = reasoning.default if reasoning is not None else None
    if options.reasoning_effort is None and default_effort is not None and "reasoning_effort" in supported:
        changes["reasoning_effort"] = default_effort
    max_tokens = info.max_tokens if info is not None else None
    if options.max_tokens is None and max_tokens is not None and "max_tokens" in supported:
        changes["max_tokens"] = max_tokens
    return changes
