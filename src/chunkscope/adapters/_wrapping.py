"""The base of adapters that wrap another adapter and change only its stream."""

from __future__ import annotations

from ._base import GenerateOptions, LlmAdapter, ModelInfo

__all__ = ["WrappingAdapter"]


class WrappingAdapter(LlmAdapter):
    """An adapter around ``inner`` that looks like ``inner`` in everything but ``stream``.

    ``provider`` and ``supported_options`` are copied from ``inner`` when the
    wrapper is made; ``models``, ``model_info``, ``prepare`` and ``aclose``
    call ``inner``'s. Subclasses implement ``stream``, normally by passing
    ``self.inner.stream(options)`` through (``inner`` calls its own
    ``prepare``), and may override ``__repr__``.
    """

    def __init__(self, inner: LlmAdapter) -> None:
        self.inner = inner
        self.provider = inner.provider  # type: ignore[misc]  # mirrors the wrapped adapter
        self.supported_options = inner.supported_options  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"

    def models(self) -> list[ModelInfo]:
        return self.inner.models()

    def model_info(self, model: str) -> ModelInfo | None:
        return self.inner.model_info(model)

    def prepare(self, options: GenerateOptions) -> GenerateOptions:
        return self.inner.prepare(options)

    def redact(self, text: str) -> str:
        return self.inner.redact(text)

    async def aclose(self) -> None:
        await self.inner.aclose()
