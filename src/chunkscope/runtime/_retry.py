"""``RetryPolicy``: which failures are retried, and how long to wait before each retry.

The arithmetic follows the TypeScript reference (``llm/src/retry-policy.ts``
and ``llm-retry``): the local delay for retry ``n`` (from 1) is
``min(initial * 2**(n-1), max)``, times a symmetric jitter factor in
``[1 - jitter, 1 + jitter]``, capped at ``max``. A provider ``Retry-After`` that
is positive and within ``max_delay_ms`` replaces that delay verbatim; one
beyond it ends the retries in ``normal`` mode (the error is kept) and falls
back to the local delay in ``always`` mode.

Where chunkscope decides differently (each pinned by a test in
``tests/runtime/test_retry_vectors.py``):

- the default retryable codes are the registry's (``ERROR_CODES``), which
  include ``STREAM_CLOSED``: a stream cut before its terminator is transient;
- retries are counted per call in memory (one policy per call), not looked up
  in a session log by policy key, turn and step;
- there is no downstream recovery chain: ``always`` mode retries every failure
  except an abort, without consulting another handler first.
"""

from __future__ import annotations

import asyncio
import json
import math
import random as _random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from chunkscope.adapters import AbortSignal
from chunkscope.protocol import ERROR_CODES, LlmError

__all__ = ["DEFAULT_RETRYABLE_CODES", "MAX_TIMER_DELAY_MS", "RetryDecision", "RetryPolicy"]

MAX_TIMER_DELAY_MS = 2_147_483_647
"""The largest delay a policy accepts (the reference's timer bound)."""

DEFAULT_RETRYABLE_CODES: tuple[str, ...] = tuple(
    sorted(code for code, info in ERROR_CODES.items() if info.retryable)
)
"""The registry's retryable codes: what ``normal`` mode retries unless told otherwise."""

_POLICY_KEYS = frozenset({"mode", "maxRetries", "retryableCodes", "backoff"})
_BACKOFF_KEYS = frozenset({"initialDelayMs", "maxDelayMs", "jitterRatio"})


@dataclass(frozen=True)
class RetryDecision:
    """A scheduled retry: its number (from 1), the wait, and whether ``Retry-After`` set it."""

    retry: int
    delay_ms: float
    from_retry_after: bool


async def _sleep_s(seconds: float) -> None:
    await asyncio.sleep(seconds)


@dataclass(frozen=True)
class RetryPolicy:
    """When and how a failed model call is tried again.

    ``mode="normal"``: at most ``max_retries`` retries, only for
    ``retryable_codes`` (default: the registry's retryable codes).
    ``mode="always"``: every failure except an abort, without bound, until
    success or the ``AbortSignal`` fires. Delays are exponential from
    ``initial_delay_ms`` up to ``max_delay_ms`` with symmetric ``jitter``.

    A retry only happens while no chunk of the failed attempt has reached
    the consumer, unless ``restart_after_output=True`` (then the consumer
    gets an ``OutputDiscarded`` event before the new attempt).

    ``seed`` makes the jitter reproducible; ``random`` (a function returning
    a float in [0, 1]) and ``sleep`` (an async function taking seconds)
    replace the random source and the wait, so tests never sleep for real.
    """

    mode: Literal["normal", "always"] = "normal"
    max_retries: int = 5
    retryable_codes: tuple[str, ...] = DEFAULT_RETRYABLE_CODES
    initial_delay_ms: float = 500
    max_delay_ms: float = 10_000
    jitter: float = 0.1
    restart_after_output: bool = False
    seed: int | None = None
    random: Callable[[], float] | None = field(default=None, compare=False, repr=False)
    sleep: Callable[[float], Awaitable[None]] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "retryable_codes", tuple(self.retryable_codes))
        _validate(self, "RetryPolicy")
        if self.random is None:
            object.__setattr__(self, "random", _random.Random(self.seed).random)

    # --- configuration in the reference's shape ----------------------------------

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any] | None, path: str = "retry_policy", **extra: Any
    ) -> RetryPolicy:
        """A policy from the reference's camelCase config (``None``: the defaults).

        ``{"mode", "maxRetries", "retryableCodes", "backoff": {"initialDelayMs",
        "maxDelayMs", "jitterRatio"}}``; unknown keys and invalid values raise
        ``ValueError`` naming ``path``. ``extra`` sets the Python-only fields
        (``seed``, ``random``, ``sleep``, ``restart_after_output``).
        """
        if config is None:
            return cls(**extra)
        if not isinstance(config, Mapping):
            raise ValueError(f"{path} must be an object")
        mode = config.get("mode")
        if mode not in ("normal", "always"):
            raise ValueError(f'{path}.mode must be "normal" or "always"')
        _known_keys(config, _POLICY_KEYS, path)
        backoff = config.get("backoff")
        if backoff is not None:
            if not isinstance(backoff, Mapping):
                raise ValueError(f"{path}.backoff must be an object")
            _known_keys(backoff, _BACKOFF_KEYS, f"{path}.backoff")
        backoff = backoff or {}
        values: dict[str, Any] = {
            "mode": mode,
            "initial_delay_ms": backoff.get("initialDelayMs", 500),
            "max_delay_ms": backoff.get("maxDelayMs", 10_000),
            "jitter": backoff.get("jitterRatio", 0.1),
        }
        if mode == "normal":
            # Always mode ignores normal-only fields left over from a mode switch, as the reference does.
            values["max_retries"] = config.get("maxRetries", 5)
            codes = config.get("retryableCodes", DEFAULT_RETRYABLE_CODES)
            if not isinstance(codes, (list, tuple)):
                raise ValueError(f"{path}.retryableCodes must be a list of codes")
            values["retryable_codes"] = tuple(codes)
        probe = cls.__new__(cls)
        for name, value in {**_defaults(), **values}.items():
            object.__setattr__(probe, name, value)
        _validate(probe, path)
        return cls(**values, **extra)

    def resolved(self) -> dict[str, Any]:
        """The policy in the reference's resolved camelCase shape."""
        out: dict[str, Any] = {"mode": self.mode}
        if self.mode == "normal":
            out["maxRetries"] = self.max_retries
            out["retryableCodes"] = list(self.retryable_codes)
        out.update(
            initialDelayMs=self.initial_delay_ms, maxDelayMs=self.max_delay_ms, jitterRatio=self.jitter
        )
        return out

    def policy_key(self) -> str:
        """The reference's identity of a resolved policy (compact JSON; codes sorted)."""
        if self.mode == "always":
            parts: list[Any] = [self.mode, self.initial_delay_ms, self.max_delay_ms, self.jitter]
        else:
            parts = [
                self.mode,
                self.max_retries,
                sorted(self.retryable_codes),
                self.initial_delay_ms,
                self.max_delay_ms,
                self.jitter,
            ]
        return json.dumps(parts, separators=(",", ":"))

    # --- decisions -----------------------------------------------------------------

    def local_delay_ms(self, retry: int, sample: float | None = None) -> float:
        """The backoff before retry number ``retry`` (from 1), jittered by ``sample`` in [0, 1]."""
        if sample is None:
            assert self.random is not None
            sample = self.random()
        # Compared in log space: ``2.0 ** (retry - 1)`` overflows a float from retry 1025 on, and
        # every retry past log2(max / initial) waits ``max_delay_ms`` anyway.
        if retry - 1 >= math.log2(self.max_delay_ms / self.initial_delay_ms):
            exponential = self.max_delay_ms
        else:
            exponential = min(self.initial_delay_ms * 2.0 ** max(retry - 1, 0), self.max_delay_ms)
        jitter = 1 - self.jitter + 2 * self.jitter * sample
        return min(exponential * jitter, self.max_delay_ms)

    def decide(
        self, error: LlmError, retries_so_far: int, sample: float | None = None
    ) -> RetryDecision | None:
        """Retry after ``error``? ``None`` = give up (the error stands); else the retry and its wait.

        ``retries_so_far`` counts the retries this call already made. An
        ``ABORTED`` error is never retried.
        """
        if error.code == "ABORTED":
            return None
        if self.mode == "normal" and (
            error.code not in self.retryable_codes or retries_so_far >= self.max_retries
        ):
            return None
        retry = retries_so_far + 1
        after = error.retry_after_ms
        if after is not None and math.isfinite(after) and after > 0:
            if after <= self.max_delay_ms:
                return RetryDecision(retry, after, True)
            if self.mode == "normal":
                return None
        return RetryDecision(retry, self.local_delay_ms(retry, sample), False)

    async def wait(self, delay_ms: float, signal: AbortSignal | None = None) -> bool:
        """Wait ``delay_ms``; False at once if ``signal`` fires first (or already has)."""
        if signal is not None and signal.aborted:
            return False
        sleep = self.sleep or _sleep_s
        sleeper = asyncio.ensure_future(sleep(delay_ms / 1000.0))
        if signal is None:
            await sleeper
            return True
        aborted = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait({sleeper, aborted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, aborted):
                if not task.done():
                    task.cancel()
        return not signal.aborted


def _defaults() -> dict[str, Any]:
    return {
        "mode": "normal",
        "max_retries": 5,
        "retryable_codes": DEFAULT_RETRYABLE_CODES,
        "initial_delay_ms": 500,
        "max_delay_ms": 10_000,
        "jitter": 0.1,
    }


def _positive_delay(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 < value <= MAX_TIMER_DELAY_MS
    )


def _known_keys(config: Mapping[str, Any], known: frozenset[str], path: str) -> None:
    """A ``ValueError`` naming the first key of ``config`` that is not ``known``."""
    for key in config:
        if key not in known:
            raise ValueError(f'{path}: unknown key "{key}"')


def _validate(policy: RetryPolicy, path: str) -> None:
    if policy.mode not in ("normal", "always"):
        raise ValueError(f'{path}.mode must be "normal" or "always"')
    if policy.mode == "normal":
        _validate_normal(policy, path)
    _validate_backoff(policy, f"{path}.backoff")


def _validate_normal(policy: RetryPolicy, path: str) -> None:
    """What only the ``normal`` mode reads: the retry budget and the retryable codes."""
    n = policy.max_retries
    if isinstance(n, bool) or not isinstance(n, (int, float)) or n != int(n) or not 0 <= n <= 2**53 - 1:
        raise ValueError(f"{path}.maxRetries must be a non-negative safe integer")
    codes = policy.retryable_codes
    if len(codes) == 0:
        raise ValueError(f"{path}.retryableCodes must not be empty")
    if any(not isinstance(code, str) or not code for code in codes):
        raise ValueError(f"{path}.retryableCodes must contain only non-empty strings")
    if len(set(codes)) != len(codes):
        raise ValueError(f"{path}.retryableCodes must not contain duplicates")


def _validate_backoff(policy: RetryPolicy, backoff: str) -> None:
    if not _positive_delay(policy.initial_delay_ms):
        raise ValueError(
            f"{backoff}.initialDelayMs must be a positive finite number no greater than {MAX_TIMER_DELAY_MS}"
        )
    if not _positive_delay(policy.max_delay_ms):
        raise ValueError(
            f"{backoff}.maxDelayMs must be a positive finite number no greater than {MAX_TIMER_DELAY_MS}"
        )
    if policy.initial_delay_ms > policy.max_delay_ms:
        raise ValueError(f"{backoff}.initialDelayMs must be less than or equal to maxDelayMs")
    j = policy.jitter
    if isinstance(j, bool) or not isinstance(j, (int, float)) or not math.isfinite(j) or not 0 <= j <= 1:
        raise ValueError(f"{backoff}.jitterRatio must be between 0 and 1")
