"""``LlmRuntime``: the adapter registry; routing, the two failure modes, ``generate`` with retries."""

from __future__ import annotations

import threading
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, Literal

from chunkscope.adapters import GenerateOptions, LlmAdapter, ModelInfo, ReasoningInfo
from chunkscope.protocol import AnyChunk, LlmError, StreamResult, UsageSink, collect

from ._failures import AdapterDefectError, failure_finish, normalize_failure
from ._prepare import PreparedCall, prepare_call
from ._retry import RetryDecision, RetryPolicy
from ._sync import run_sync

__all__ = ["LlmRuntime", "Registration"]

FailureMode = Literal["raise", "normalize"]


class Registration:
    """The handle ``register_adapter`` returns: ``unregister()`` (or ``with``) removes its routes."""

    def __init__(self, runtime: LlmRuntime, providers: tuple[str, ...], adapter: LlmAdapter) -> None:
        self.runtime = runtime
        self.providers = providers
        self.adapter = adapter
        self._active = True

    @property
    def active(self) -> bool:
        """True until ``unregister()``."""
        return self._active

    def unregister(self) -> None:
        """Remove this registration's routes (idempotent; a route re-registered since is left alone)."""
        if self._active:
            self._active = False
            self.runtime._remove(self)

    def __enter__(self) -> Registration:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unregister()

    def __repr__(self) -> str:
        adapter = type(self.adapter).__name__
        return f"Registration(providers={list(self.providers)}, adapter={adapter}, active={self._active})"


def _check_model_info(adapter: LlmAdapter, info: object) -> None:
    if not isinstance(info, ModelInfo):
        problem = f"published model metadata that is {type(info).__name__}, not ModelInfo"
        raise AdapterDefectError(type(adapter).__name__, TypeError(problem), problem)
    if not isinstance(info.id, str) or not info.id:
        problem = "published a model with an empty id"
        raise AdapterDefectError(type(adapter).__name__, ValueError(problem), problem)
    if info.reasoning is not None and not isinstance(info.reasoning, ReasoningInfo):
        problem = f"published model {info.id!r} with reasoning that is no ReasoningInfo"
        raise AdapterDefectError(type(adapter).__name__, TypeError(problem), problem)


class LlmRuntime:
    """Routes calls to registered adapters and checks them before any network I/O.

    ``register_adapter(providers, adapter)`` claims routes (a provider name, or
    several) all-or-nothing; ``stream(options)`` routes on ``options.provider``;
    ``generate`` collects a call (with optional retries) and records every
    attempt into ``log``.
    """

    def __init__(self, *, log: UsageSink | None = None) -> None:
        self.log = log
        """Where ``generate`` records every attempt (a ``UsageSink``, e.g. ``UsageLog``), or None."""
        self._routes: dict[str, Registration] = {}
        self._lock = threading.Lock()

    # --- the registry ----------------------------------------------------------

    def register_adapter(self, providers: str | Iterable[str], adapter: LlmAdapter) -> Registration:
        """Route ``providers`` to ``adapter``; returns the handle that unregisters them.

        All or nothing: if any route is taken (or named twice), nothing is
        registered and ``LlmError`` ``DUPLICATE_ADAPTER`` is raised.
        """
        names = _provider_names(providers)
        if not isinstance(adapter, LlmAdapter):
            raise TypeError(f"adapter must be an LlmAdapter, not {type(adapter).__name__}")
        with self._lock:
            taken = sorted({n for n in names if n in self._routes or names.count(n) > 1})
            if taken:
                raise LlmError(
                    f"provider route(s) {', '.join(repr(n) for n in taken)} already have an adapter; "
                    "unregister the old one first",
                    "DUPLICATE_ADAPTER",
                )
            registration = Registration(self, names, adapter)
            for name in names:
                self._routes[name] = registration
        return registration

    def _remove(self, registration: Registration) -> None:
        with self._lock:
            for name in registration.providers:
                if self._routes.get(name) is registration:
                    del self._routes[name]

    def list_providers(self) -> list[str]:
        """The registered provider routes, in registration order."""
        with self._lock:
            return list(self._routes)

    def adapter_for(self, provider: str) -> LlmAdapter:
        """The adapter routed to ``provider``; ``LlmError`` ``NO_ADAPTER`` if none is."""
        with self._lock:
            registration = self._routes.get(provider)
        if registration is None:
            known = ", ".join(repr(n) for n in self.list_providers()) or "none"
            raise LlmError(
                f"no adapter is registered for provider {provider!r} (registered: {known})", "NO_ADAPTER"
            )
        return registration.adapter

    async def list_models(self, provider: str) -> list[ModelInfo]:
        """The models the provider's adapter advertises (may be empty), checked.

        Metadata that cannot be right (an entry that is no ``ModelInfo``, an
        empty or repeated id) is an adapter defect: ``AdapterDefectError``
        (code ``UNKNOWN``) naming the adapter.
        """
        adapter = self.adapter_for(provider)
        models = list(adapter.models())
        seen: set[str] = set()
        for info in models:
            _check_model_info(adapter, info)
            if info.id in seen:
                problem = f"lists model id {info.id!r} twice"
                raise AdapterDefectError(type(adapter).__name__, ValueError(problem), problem)
            seen.add(info.id)
        return models

    async def resolve_model(self, provider: str, model: str) -> ModelInfo | None:
        """The adapter's metadata for ``model`` (None when it knows nothing about it), checked."""
        adapter = self.adapter_for(provider)
        info = adapter.model_info(model)
        if info is not None:
            _check_model_info(adapter, info)
        return info

    # --- checks before I/O -------------------------------------------------------

    async def prepare_call(self, options: GenerateOptions) -> PreparedCall:
        """Check ``options`` against the route's adapter and model, before any I/O.

        Raises ``NO_ADAPTER``; ``UNSUPPORTED_OPTION`` for a set field the
        adapter does not honour; ``UNSUPPORTED_REASONING_EFFORT`` for an
        explicit effort the model does not list (or any effort on a model
        without reasoning metadata); ``ABORTED`` if the signal already fired.
        Fills the model's default reasoning effort and ``max_tokens`` when
        unset and the adapter honours the field, and reports them in ``filled``
        (see ``chunkscope.runtime.prepare_call``).
        """
        return prepare_call(self.adapter_for(options.provider), options)

    # --- streaming ------------------------------------------------------------------

    def stream(self, options: GenerateOptions, *, failures: FailureMode = "raise") -> AsyncIterator[AnyChunk]:
        """Stream ``options`` through its route's adapter, after ``prepare_call``.

        ``failures="raise"`` (default): chunks as produced, then the failure is
        raised as ``LlmError`` (an adapter's plain exception as
        ``AdapterDefectError``, code ``UNKNOWN``, with the original as cause).
        ``failures="normalize"``: never raises an ``LlmError``; a failure
        (including a refusal by ``prepare_call``) becomes one terminal
        ``finish`` of kind ``error`` (``aborted`` for an abort) carrying it,
        after the chunks already produced; open blocks stay open, as the
        protocol's rules allow at such a finish.
        """
        if failures not in ("raise", "normalize"):
            raise ValueError('failures must be "raise" or "normalize"')
        return self._stream(options, failures)

    async def _stream(self, options: GenerateOptions, failures: FailureMode) -> AsyncIterator[AnyChunk]:
        adapter: LlmAdapter | None = None
        finished = False
        try:
            prepared = await self.prepare_call(options)
            adapter = prepared.adapter
            source = adapter.stream(prepared.options)
            try:
                async for chunk in source:
                    if getattr(chunk, "type", None) == "finish":
                        finished = True
                    yield chunk
            finally:
                aclose = getattr(source, "aclose", None)
                if aclose is not None:
                    await aclose()
        except Exception as exc:
            error = normalize_failure(exc, adapter)
            if failures == "raise" or finished:
                if error is exc:
                    raise
                raise error from exc
            signal = options.signal
            yield failure_finish(error, aborted=signal is not None and signal.aborted)

    async def generate(
        self,
        options: GenerateOptions,
        *,
        profile: str = "strict",
        retry: RetryPolicy | None = None,
        log: UsageSink | None = None,
    ) -> StreamResult:
        """Collect one call into a ``StreamResult`` (a failure lands in ``result.error``).

        With ``retry``, a failed attempt is tried again as the policy says
        (nothing reached the caller yet, so any attempt may be restarted);
        the result is the last attempt's. ``log`` (else the runtime's own)
        records every attempt: one ``call_id``, ``attempt`` from 1, ``final``
        False for the attempts that were retried.
        """
        sink = log if log is not None else self.log
        call_id = uuid.uuid4().hex[:12]
        attempt = 0
        while True:
            attempt += 1
            result = await collect(self.stream(options), profile=profile)
            signal = options.signal
            decision = _retry_decision(retry, result, attempt, aborted=signal is not None and signal.aborted)
            if sink is not None:
                sink.record(
                    result,
                    provider=options.provider,
                    model=options.model,
                    call_id=call_id,
                    attempt=attempt,
                    final=decision is None,
                )
            if decision is None or retry is None or not await retry.wait(decision.delay_ms, signal):
                return result

    def generate_sync(
        self,
        options: GenerateOptions | None = None,
        /,
        *,
        profile: str = "strict",
        retry: RetryPolicy | None = None,
        log: UsageSink | None = None,
        **fields: Any,
    ) -> StreamResult:
        """``generate`` for code without asyncio; also works inside a running Jupyter loop.

        Takes a ``GenerateOptions`` or its fields as keywords
        (``provider=..., model=..., messages=...``).
        """
        if options is None:
            options = GenerateOptions(**fields)
        elif fields:
            options = options.replace(**fields)
        return run_sync(self.generate(options, profile=profile, retry=retry, log=log))

    def __repr__(self) -> str:
        routes: Mapping[str, Registration] = dict(self._routes)
        inner = ", ".join(f"{name}={type(r.adapter).__name__}" for name, r in routes.items())
        return f"LlmRuntime({inner})"


def _retry_decision(
    retry: RetryPolicy | None, result: StreamResult, attempt: int, *, aborted: bool
) -> RetryDecision | None:
    """Whether (and after what wait) ``retry`` tries a failed attempt again; None: the result stands."""
    if retry is None or aborted:
        return None
    failure = result.error
    if failure is None and result.finish is not None and result.finish.failure is not None:
        failure = LlmError.from_failure(result.finish.failure)
    return None if failure is None else retry.decide(failure, attempt - 1)


def _provider_names(providers: str | Iterable[str]) -> tuple[str, ...]:
    """``providers`` as a tuple of route names, or a ``ValueError`` when one is empty or not a str."""
    names = (providers,) if isinstance(providers, str) else tuple(providers)
    if not names or any(not isinstance(n, str) or not n for n in names):
        raise ValueError("providers must be one or more non-empty provider names")
    return names
