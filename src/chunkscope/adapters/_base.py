"""What every adapter shares: the request, cancellation, model metadata, attribution.

An adapter turns one ``GenerateOptions`` into an async stream of StreamChunk
models. Before any I/O it calls ``LlmAdapter.prepare(options)``, which refuses
what it cannot honour:

- a set ``GenerateOptions`` field the adapter does not list in
  ``supported_options`` → ``LlmError`` ``UNSUPPORTED_OPTION`` (never silently
  dropped);
- an explicit ``reasoning_effort`` the model does not list →
  ``UNSUPPORTED_REASONING_EFFORT``;
- an image in the messages, unless the adapter sets ``accepts_images`` →
  ``UNSUPPORTED_CONTENT`` (the TypeScript reference's code; never silently dropped);
- a signal that is already aborted → ``ABORTED``.

Cancellation is both asyncio task cancellation and an explicit
``AbortSignal``, which any task or thread may fire.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.metadata
import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, TypeVar

from chunkscope.protocol import AnyChunk, LlmError, Message, parse_message

__all__ = [
    "AbortController",
    "AbortSignal",
    "GenerateOptions",
    "LlmAdapter",
    "ModelInfo",
    "OPTIONAL_OPTIONS",
    "ReasoningEffort",
    "ReasoningInfo",
    "ToolSpec",
    "attribution_headers",
    "find_model",
    "listed_models",
    "user_agent",
]

# --- attribution --------------------------------------------------------------

_PRODUCT = "chunkscope"
_FALLBACK_URL = "https://github.com/chunkscope/chunkscope"


def _package_identity() -> tuple[str, str]:
    # Package metadata is the one source of the version, so the User-Agent
    # cannot drift from what is installed.
    try:
        meta = importlib.metadata.metadata(_PRODUCT)
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown", _FALLBACK_URL
    version = meta["Version"] or "0+unknown"
    url = _FALLBACK_URL
    for entry in meta.get_all("Project-URL") or []:
        label, _, value = entry.partition(",")
        if label.strip().lower() in ("homepage", "home", "source", "repository") and value.strip():
            url = value.strip()
            break
    return version, url


_VERSION, _URL = _package_identity()


def user_agent(product: str = _PRODUCT, version: str | None = None, url: str | None = None) -> str:
    """The ``User-Agent`` value ``product/version (+url)`` (RFC 9110 product + comment)."""
    return f"{product}/{version or _VERSION} (+{url or _URL})"


def attribution_headers(
    product: str = _PRODUCT, version: str | None = None, url: str | None = None
) -> dict[str, str]:
    """The headers every provider request carries: ``{"User-Agent": "chunkscope/<version> (+<url>)"}``.

    Adapters merge them into every request. A caller may replace the value
    (a white-label product, version or url, or its own ``User-Agent`` header);
    nothing can suppress it: an empty replacement falls back to this default.
    No secret, path or per-user value ever goes in here.
    """
    return {"User-Agent": user_agent(product, version, url)}


# --- cancellation -------------------------------------------------------------


class AbortSignal:
    """A one-shot cancellation flag shared between a caller and an adapter.

    ``aborted`` and ``reason`` read the state; ``await wait()`` suspends until
    the abort (returns at once if it already happened); ``add_callback(fn)``
    runs ``fn(reason)`` at the abort. ``abort`` may come from any task or
    thread: waiters are woken on their own event loop.
    """

    __slots__ = ("_aborted", "_callbacks", "_lock", "_reason", "_waiters")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: Any = None
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[Any], object]] = []
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = []

    @property
    def aborted(self) -> bool:
        """True once the controller aborted."""
        return self._aborted

    @property
    def reason(self) -> Any:
        """What ``abort(reason)`` was given (None when no reason, or not aborted)."""
        return self._reason

    def throw_if_aborted(self) -> None:
        """Raise ``LlmError`` ``ABORTED`` if the signal has fired."""
        if self._aborted:
            raise LlmError(_abort_message(self._reason), "ABORTED")

    async def wait(self) -> Any:
        """Suspend until the signal fires; return its reason."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._aborted:
                return self._reason
            future: asyncio.Future[Any] = loop.create_future()
            entry = (loop, future)
            self._waiters.append(entry)
        try:
            return await future
        finally:
            with self._lock:
                if entry in self._waiters:
                    self._waiters.remove(entry)

    def add_callback(self, callback: Callable[[Any], object]) -> Callable[[], None]:
        """Run ``callback(reason)`` when the signal fires (at once if it already has).

        The callback runs in the thread that aborts. Returns a function that
        unregisters it.
        """
        with self._lock:
            if not self._aborted:
                self._callbacks.append(callback)

                def remove() -> None:
                    with self._lock:
                        if callback in self._callbacks:
                            self._callbacks.remove(callback)

                return remove
        callback(self._reason)
        return _noop

    def _fire(self, reason: Any) -> bool:
        with self._lock:
            if self._aborted:
                return False
            self._aborted = True
            self._reason = reason
            callbacks, self._callbacks = self._callbacks, []
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            # A closed loop raises RuntimeError: nobody is waiting there any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve, future, reason)
        for callback in callbacks:
            try:
                callback(reason)
            except Exception:  # one failing listener must not keep the others from hearing
                continue
        return True

    def __repr__(self) -> str:
        return f"AbortSignal(aborted={self._aborted}, reason={self._reason!r})"


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _noop() -> None:
    return None


def _abort_message(reason: Any) -> str:
    return "the request was aborted by the caller" + (f" ({reason})" if reason is not None else "")


class AbortController:
    """Owns an ``AbortSignal``; ``abort(reason)`` fires it (once; later calls do nothing)."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: Any = None) -> None:
        """Fire the signal: running streams end with ``LlmError`` ``ABORTED``. Thread-safe."""
        self.signal._fire(reason)

    def __repr__(self) -> str:
        return f"AbortController(signal={self.signal!r})"


# --- model metadata -----------------------------------------------------------


@dataclass(frozen=True)
class ReasoningEffort:
    """One selectable reasoning effort: an opaque ``id`` the adapter accepts, a display ``name``."""

    id: str
    name: str
    description: str | None = None


@dataclass(frozen=True)
class ReasoningInfo:
    """A model's reasoning capability: its efforts in display order, and an optional default.

    A model without reasoning has no ``ReasoningInfo`` at all (``ModelInfo.reasoning``
    is None). ``default``, when set, is one of the listed ids.
    """

    efforts: tuple[ReasoningEffort, ...]
    default: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "efforts", tuple(self.efforts))
        if not self.efforts:
            raise ValueError("ReasoningInfo needs at least one effort; a model without reasoning has none")
        if self.default is not None and self.default not in self.ids:
            raise ValueError(f"default effort {self.default!r} is not one of {list(self.ids)}")

    @property
    def ids(self) -> tuple[str, ...]:
        """The effort ids, in order."""
        return tuple(effort.id for effort in self.efforts)

    def __contains__(self, effort: object) -> bool:
        return effort in self.ids


@dataclass(frozen=True)
class ModelInfo:
    """What an adapter knows about one model. ``reasoning`` None = no reasoning capability."""

    id: str
    name: str | None = None
    description: str | None = None
    context_window: int | None = None
    max_tokens: int | None = None
    reasoning: ReasoningInfo | None = None

    @property
    def display_name(self) -> str:
        """``name`` if set, else the id."""
        return self.name or self.id


def listed_models(table: Sequence[ModelInfo]) -> list[ModelInfo]:
    """The exact entries of a model table (a ``prefix*`` pattern names no one model)."""
    return [m for m in table if not m.id.endswith("*")]


def find_model(table: Sequence[ModelInfo], model: str) -> ModelInfo | None:
    """``model``'s entry in ``table``: an exact id first, else the longest matching ``prefix*``
    pattern, returned with ``model`` as its id; None when nothing matches."""
    best: ModelInfo | None = None
    for info in table:
        if info.id == model:
            return info
        if (
            info.id.endswith("*")
            and model.startswith(info.id[:-1])
            and (best is None or len(info.id) > len(best.id))
        ):
            best = info
    return dataclasses.replace(best, id=model) if best is not None else None


# --- the request --------------------------------------------------------------


_DEFAULT_PARAMETERS: Mapping[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, description, JSON-schema ``parameters`` (an object schema)."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: dict(_DEFAULT_PARAMETERS))

    @classmethod
    def parse(cls, obj: ToolSpec | Mapping[str, Any]) -> ToolSpec:
        """A ``ToolSpec`` from itself or a dict ``{"name", "description", "parameters"}``."""
        if isinstance(obj, ToolSpec):
            return obj
        if not isinstance(obj, Mapping) or not isinstance(obj.get("name"), str) or not obj["name"]:
            raise TypeError(f"a tool needs a non-empty string 'name': {obj!r}")
        parameters = obj.get("parameters", obj.get("input_schema", obj.get("inputSchema")))
        if parameters is None:
            parameters = dict(_DEFAULT_PARAMETERS)
        if not isinstance(parameters, Mapping):
            raise TypeError(f"tool {obj['name']!r}: 'parameters' must be a JSON-schema object")
        description = obj.get("description") or ""
        if not isinstance(description, str):
            raise TypeError(f"tool {obj['name']!r}: 'description' must be a string")
        return cls(obj["name"], description, parameters)


OPTIONAL_OPTIONS: tuple[str, ...] = (
    "system",
    "tools",
    "temperature",
    "max_tokens",
    "stop",
    "reasoning_effort",
    "signal",
    "purpose",
)
"""The ``GenerateOptions`` fields an adapter may or may not honour (the rest are always needed)."""


@dataclass(frozen=True, init=False)
class GenerateOptions:
    """One model request, fully assembled.

    ``messages`` accepts ``Message`` models or TypeScript-shaped dicts
    (``{"role": "user", "content": "hi"}`` — a string content is one text
    block); ``tools`` accepts ``ToolSpec`` or dicts; ``stop`` accepts one
    string or several. Both are stored as tuples of models. An optional field
    is *set* when it is not None and not an empty sequence.
    """

    provider: str
    model: str
    messages: tuple[Message, ...]
    system: str | None
    tools: tuple[ToolSpec, ...] | None
    temperature: float | None
    max_tokens: int | None
    stop: tuple[str, ...] | None
    reasoning_effort: str | None
    signal: AbortSignal | None
    purpose: str | None

    def __init__(
        self,
        provider: str,
        model: str,
        messages: Iterable[Message | Mapping[str, Any]],
        system: str | None = None,
        tools: Iterable[ToolSpec | Mapping[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: str | Iterable[str] | None = None,
        reasoning_effort: str | None = None,
        signal: AbortSignal | None = None,
        purpose: str | None = None,
    ) -> None:
        if isinstance(messages, (str, bytes)):
            raise TypeError("messages must be a sequence of messages, not a string")
        put = object.__setattr__
        put(self, "provider", provider)
        put(self, "model", model)
        put(self, "messages", tuple(parse_message(m) for m in messages))
        put(self, "system", system)
        put(self, "tools", None if tools is None else tuple(ToolSpec.parse(t) for t in tools))
        put(self, "temperature", temperature)
        put(self, "max_tokens", max_tokens)
        put(self, "stop", None if stop is None else ((stop,) if isinstance(stop, str) else tuple(stop)))
        put(self, "reasoning_effort", reasoning_effort)
        if signal is not None and not isinstance(signal, AbortSignal):
            kind = type(signal).__name__
            raise TypeError(f"signal must be an AbortSignal (AbortController().signal), not {kind}")
        put(self, "signal", signal)
        put(self, "purpose", purpose)

    def set_options(self) -> list[str]:
        """The names of the optional fields that are set, in ``OPTIONAL_OPTIONS`` order."""
        out: list[str] = []
        for name in OPTIONAL_OPTIONS:
            value = getattr(self, name)
            if value is None or (isinstance(value, tuple) and not value):
                continue
            out.append(name)
        return out

    def replace(self, **changes: Any) -> GenerateOptions:
        """A copy with ``changes`` applied (same parsing as the constructor)."""
        fields = {name: getattr(self, name) for name in ("provider", "model", "messages", *OPTIONAL_OPTIONS)}
        fields.update(changes)
        return GenerateOptions(**fields)


# --- the adapter --------------------------------------------------------------

_A = TypeVar("_A", bound="LlmAdapter")


class LlmAdapter(ABC):
    """Turns a ``GenerateOptions`` into an async stream of StreamChunk models.

    Subclasses set ``provider`` (the wire family's name) and
    ``supported_options`` (the optional ``GenerateOptions`` fields they
    honour), implement ``stream`` as an async generator that calls
    ``self.prepare(options)`` before any I/O, and may override ``models`` /
    ``model_info`` to publish model metadata. A stream either ends with a
    ``finish`` chunk or raises ``LlmError`` (never another exception), after
    yielding whatever chunks it produced first.
    """

    provider: ClassVar[str] = "adapter"
    supported_options: ClassVar[frozenset[str]] = frozenset({"signal", "purpose"})
    accepts_images: ClassVar[bool] = False
    """Whether the adapter can send image blocks; the wires' adapters send text only."""

    def models(self) -> list[ModelInfo]:
        """The models this adapter advertises (may be empty: discovery is advisory)."""
        return []

    def model_info(self, model: str) -> ModelInfo | None:
        """Metadata for ``model``, or None when the adapter knows nothing about it."""
        for info in self.models():
            if info.id == model:
                return info
        return None

    def prepare(self, options: GenerateOptions) -> GenerateOptions:
        """Refuse, before any I/O, what this adapter cannot do; return the options to send.

        Raises ``LlmError`` ``UNSUPPORTED_OPTION`` for a set field outside
        ``supported_options``, ``UNSUPPORTED_CONTENT`` for an image the adapter cannot send,
        ``UNSUPPORTED_REASONING_EFFORT`` for an explicit effort the model does not list,
        ``ABORTED`` if the signal already fired.
        """
        unsupported = [name for name in options.set_options() if name not in self.supported_options]
        if unsupported:
            names = ", ".join(unsupported)
            raise LlmError(
                f"{type(self).__name__} cannot honour GenerateOptions field(s) {names}; "
                "leave them unset or use an adapter that supports them",
                "UNSUPPORTED_OPTION",
            )
        if not self.accepts_images and any(_holds_image(m.content) for m in options.messages):
            raise LlmError(
                f"{type(self).__name__} cannot send image content to model {options.model!r}; "
                "leave images out of the messages or use an adapter that accepts them",
                "UNSUPPORTED_CONTENT",
            )
        if options.reasoning_effort is not None:
            self._check_effort(options.model, options.reasoning_effort)
        if options.signal is not None:
            options.signal.throw_if_aborted()
        return options

    def _check_effort(self, model: str, effort: str) -> None:
        """``UNSUPPORTED_REASONING_EFFORT`` unless ``model`` lists ``effort``."""
        info = self.model_info(model)
        reasoning = info.reasoning if info is not None else None
        if reasoning is None:
            raise LlmError(
                f"model {model!r} has no reasoning efforts, so reasoning_effort={effort!r} "
                "cannot be honoured; leave it unset",
                "UNSUPPORTED_REASONING_EFFORT",
            )
        if effort not in reasoning.ids:
            raise LlmError(
                f"model {model!r} does not list reasoning effort {effort!r}; "
                f"choose one of {list(reasoning.ids)}",
                "UNSUPPORTED_REASONING_EFFORT",
            )

    @abstractmethod
    def stream(self, options: GenerateOptions) -> AsyncIterator[AnyChunk]:
        """Stream one response as chunk models; raise ``LlmError`` on failure."""

    def redact(self, text: str) -> str:
        """``text`` with the adapter's credentials replaced by ``***`` (for messages it did not write).

        The agent loop passes an abort reason through this before quoting it;
        an adapter without credentials returns ``text`` unchanged.
        """
        return text

    async def aclose(self) -> None:
        """Release what the adapter owns (e.g. its HTTP client). Idempotent."""
        return None

    async def __aenter__(self: _A) -> _A:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _holds_image(blocks: Iterable[Any]) -> bool:
    """True when ``blocks`` hold an image block, tool results' content included."""
    return any(
        block.type == "image" or (block.type == "tool-result" and _holds_image(block.content))
        for block in blocks
    )
