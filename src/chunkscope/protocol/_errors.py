"""``LlmError`` and the error-code registry.

Adapters raise ``LlmError(message, code)`` for every transport and protocol
failure. The ``code`` is the contract — route on it, never parse the message.
Once published, a code never changes meaning and is never removed.

``ERROR_CODES`` is the registry — code, meaning, default retryability — and
the README's table is rendered from it (``tests/test_readme.py``), so there is
no second copy to drift. Two rows are families, not single codes:
``HTTP_<status>`` (``HTTP_404``, ...) and ``<FINISH_REASON>`` (a wire finish
reason the package does not map, upper-cased, as the TypeScript reference
emits it); ``code_family`` names the row any code stands under and
``is_unmapped`` tells the second family (and anything unregistered) apart.

What to catch around a stream (the runtime's and the adapters' failures hang here too)::

    Exception
     ├── LlmError                  every failure of a call or stream: route on .code (ERROR_CODES)
     │    └── AdapterDefectError   (runtime) an adapter broke its contract; code UNKNOWN
     └── ProviderErrorBody         (adapters) a provider's error answer, redacted and capped:
                                   never raised to you, found as an LlmError's .cause
"""

from __future__ import annotations

import dataclasses
import math
import pickle
import re
from dataclasses import dataclass
from typing import Any

from ._chunks import LlmFailure
from ._violations import Violation

__all__ = [
    "ErrorCode",
    "ERROR_CODES",
    "FINISH_REASON_FAMILY",
    "HTTP_STATUS_FAMILY",
    "LlmError",
    "code_family",
    "error_chain",
    "is_retryable",
    "is_unmapped",
    "http_status_code",
]

HTTP_STATUS_FAMILY = "HTTP_<status>"
"""The registry row of every ``HTTP_<n>`` code (a non-2xx status no other code names)."""

FINISH_REASON_FAMILY = "<FINISH_REASON>"
"""The registry row of every code that is a wire finish reason the package does not map (upper-cased)."""


@dataclass(frozen=True)
class ErrorCode:
    """One registered error code: what it means and whether retrying may help."""

    code: str
    description: str
    retryable: bool


def _codes(*rows: tuple[str, str, bool]) -> dict[str, ErrorCode]:
    return {code: ErrorCode(code, description, retryable) for code, description, retryable in rows}


ERROR_CODES: dict[str, ErrorCode] = _codes(
    (
        "PROVIDER_HTTP_ERROR",
        "The provider answered with a non-2xx status (the protocol example's generic code).",
        False,
    ),
    ("AUTH", "The provider rejected the credentials (HTTP 401 or 403).", False),
    ("RATE_LIMIT", "The provider is rate-limiting this client (HTTP 429); wait and retry.", True),
    ("QUOTA", "The account's balance, quota or credits are exhausted; retrying will not help.", False),
    ("CONTEXT_WINDOW_EXCEEDED", "The request does not fit the model's context window.", False),
    ("INVALID_REQUEST", "The provider rejected the request as malformed (HTTP 400 or 413).", False),
    ("SERVER", "The provider failed internally (HTTP 5xx).", True),
    (HTTP_STATUS_FAMILY, "Any other non-2xx status, e.g. HTTP_404; the status is in the code.", False),
    ("TIMEOUT", "No bytes arrived within the idle timeout.", True),
    ("TRANSPORT", "The connection failed: refused, reset, TLS or DNS.", True),
    ("ABORTED", "The caller's abort signal cancelled the call.", False),
    ("STREAM_CLOSED", "The event stream ended before its terminator ([DONE] / message_stop).", True),
    ("MALFORMED_RESPONSE", "A payload was not valid JSON or not the provider's wire shape.", False),
    ("EMPTY_RESPONSE", "A completed response carried no content at all.", True),
    ("CONTENT_FILTER", "The provider's content filter stopped the reply; retrying will not help.", False),
    ("REFUSAL", "The model declined to answer (a refusal finish); retrying will not help.", False),
    (
        "INSUFFICIENT_SYSTEM_RESOURCE",
        "The provider ran out of capacity mid-reply (DeepSeek's insufficient_system_resource finish).",
        True,
    ),
    (
        FINISH_REASON_FAMILY,
        "A finish reason this package does not map, upper-cased as the code (e.g. a reason a provider "
        "added later); reported as unmapped.",
        False,
    ),
    ("MISSING_CREDENTIAL", "No API key was given or found in the environment.", False),
    ("INVALID_CREDENTIAL", "The API key cannot be sent (e.g. characters no HTTP header can carry).", False),
    ("UNSUPPORTED_OPTION", "A GenerateOptions field is set that this adapter cannot honour.", False),
    ("UNSUPPORTED_REASONING_EFFORT", "The requested reasoning effort is not one the model lists.", False),
    ("NO_ADAPTER", "No adapter is registered for the requested provider.", False),
    ("DUPLICATE_ADAPTER", "An adapter is already registered for that provider.", False),
    ("PROTOCOL_VIOLATION", "The stream broke a StreamChunk rule; see .violations.", False),
    ("UNKNOWN", "An adapter raised something that is not an LlmError (a defect to fix).", False),
    # Raised by the TypeScript reference's own runtime and adapters; their finishes reach
    # chunkscope through its logs and must read as known codes, not as unmapped reasons.
    ("UNSUPPORTED_CONTENT", "The request holds content the model or adapter cannot take (an image).", False),
    ("UNKNOWN_MODEL", "The provider route has no such model configured; nothing was sent.", False),
    ("INVALID_RESPONSE", "A provider's side API (DeepSeek's Files API) answered in another shape.", False),
    ("INVALID_REPLAY_STATE", "An assistant message's replay state is unusable by this adapter.", False),
    ("INVALID_MODEL_INFO", "An adapter described a model with invalid identity metadata.", False),
    ("INVALID_MODEL_CONTEXT", "An adapter described a model with an invalid context window.", False),
    ("INVALID_MODEL_MAX_TOKENS", "An adapter described a model with an invalid default max tokens.", False),
    ("INVALID_MODEL_REASONING", "An adapter described a model with invalid reasoning efforts.", False),
    ("INVALID_PREPARED_CALL", "A prepared call was dispatched twice or its call config changed.", False),
    ("PI_AI_ERROR", "The pi-ai library reported a failure no other code classifies.", False),
)
"""Every code the library defines: code → ``ErrorCode``. Add codes; never rename or remove."""


_HTTP_CODE = re.compile(r"HTTP_[1-5][0-9][0-9]")
_UPPER_CODE = re.compile(r"[A-Z][A-Z0-9_]*")


def code_family(code: str) -> str | None:
    """The registry row ``code`` stands under: itself when registered, ``HTTP_<status>`` for
    ``HTTP_404`` and its kin, ``<FINISH_REASON>`` for any other upper-case code (an unmapped
    wire finish reason, as the TypeScript reference emits it); None for anything else."""
    if code in ERROR_CODES:
        return code
    if _HTTP_CODE.fullmatch(code):
        return HTTP_STATUS_FAMILY
    if _UPPER_CODE.fullmatch(code):
        return FINISH_REASON_FAMILY
    return None


def is_unmapped(code: str) -> bool:
    """True when ``code`` is no registered code nor an ``HTTP_<status>``: a reason the package
    does not map (the timeline and ``check`` mark it so)."""
    return code_family(code) in (FINISH_REASON_FAMILY, None)


def is_retryable(code: str) -> bool:
    """Default retryability of ``code``; unknown codes (and ``HTTP_<n>``) are not retryable."""
    info = ERROR_CODES.get(code)
    return info.retryable if info is not None else False


def http_status_code(status: int) -> str:
    """The code for a non-2xx HTTP status alone (no body wording considered)."""
    if status in (401, 403):
        return "AUTH"
    if status == 429:
        return "RATE_LIMIT"
    if status in (400, 413):
        return "INVALID_REQUEST"
    if 500 <= status <= 599:
        return "SERVER"
    return f"HTTP_{status}"


class LlmError(Exception):
    """A transport or protocol failure with a stable machine-routable ``code``.

    ``status`` is the HTTP status, ``retry_after_ms`` the provider-requested
    delay as a whole number of milliseconds (a fraction rounds up, so a retry
    never comes early; a delay that is not positive and finite is dropped),
    ``request_id`` the provider's request id; ``cause`` chains the underlying
    exception (also set as ``__cause__``). ``violations`` is set for
    ``PROTOCOL_VIOLATION``.

    An ``LlmError`` pickles with everything it carries (for multiprocessing,
    Dask, ``concurrent.futures``): message, code, status, retry_after_ms,
    request_id, violations, and the cause when the cause itself pickles — a
    cause that does not is replaced by an ``Exception`` holding its type and
    text, so ``error_chain`` still reads the same. So is a cause that still
    holds an HTTP exchange (a ``request``/``response`` attribute, as httpx
    and requests exceptions have): its request's headers carry the API key.
    (Where tblib's exception reducers are installed — ``distributed`` does so
    on import — tblib pickles the raw cause chain itself, so there the cause
    must pickle, and must hold no credential: the library's adapters cut the
    request off the httpx exceptions they keep, see ``detach_credentials``.)
    """

    def __init__(
        self,
        message: str,
        code: str,
        *,
        status: int | None = None,
        retry_after_ms: float | None = None,
        request_id: str | None = None,
        cause: BaseException | None = None,
        violations: list[Violation] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        # A delay that is not a positive, finite number of milliseconds is no usable advice.
        self.retry_after_ms: int | None = None
        if retry_after_ms is not None and 0 < retry_after_ms < math.inf:
            self.retry_after_ms = math.ceil(retry_after_ms)
        self.request_id = request_id
        self.violations: list[Violation] = list(violations) if violations else []
        if cause is not None:
            self.__cause__ = cause

    @property
    def cause(self) -> BaseException | None:
        """The underlying exception, if any."""
        return self.__cause__

    @property
    def retryable(self) -> bool:
        """The registry's default retryability for this code."""
        return is_retryable(self.code)

    @property
    def failure(self) -> LlmFailure:
        """The serializable form, as carried by an ``error`` / ``aborted`` finish."""
        status = self.status if self.status is not None and 100 <= self.status <= 599 else None
        return LlmFailure(
            message=self.message,
            code=self.code,
            status=status,
            provider_retry_after_ms=self.retry_after_ms,
            request_id=self.request_id,
        )

    @classmethod
    def from_failure(cls, failure: LlmFailure) -> LlmError:
        """Rebuild an error from its serializable form."""
        return cls(
            failure.message,
            failure.code,
            status=failure.status,
            retry_after_ms=failure.provider_retry_after_ms,
            request_id=failure.request_id,
        )

    def __repr__(self) -> str:
        extra = "".join(
            f", {name}={value!r}"
            for name, value in (
                ("status", self.status),
                ("retry_after_ms", self.retry_after_ms),
                ("request_id", self.request_id),
            )
            if value is not None
        )
        return f"LlmError({self.message!r}, {self.code!r}{extra})"

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {
            "status": self.status,
            "retry_after_ms": self.retry_after_ms,
            "request_id": self.request_id,
            "cause": _picklable_cause(self.__cause__),
            "violations": [_picklable_violation(v) for v in self.violations],
        }
        # Anything else in the instance dict (a subclass's attributes, __notes__) travels as state.
        state = {k: v for k, v in self.__dict__.items() if k not in _REBUILT}
        return (_rebuild, (type(self), self.message, self.code, fields), state or None)


_REBUILT = frozenset({"message", "code", "status", "retry_after_ms", "request_id", "violations"})


def _rebuild(cls: type[LlmError], message: str, code: str, fields: dict[str, Any]) -> LlmError:
    # LlmError itself or a subclass whose __init__ takes the same arguments; the
    # instance dict (set from the third item of __reduce__) restores the rest.
    error = cls.__new__(cls)
    LlmError.__init__(error, message, code, **fields)
    return error


# Where HTTP client exceptions keep the exchange (httpx and requests: request/response; aiohttp:
# request_info) - with the request's headers, the API key among them.
_EXCHANGE_ATTRIBUTES = ("request", "_request", "response", "request_info")


def _carries_exchange(cause: BaseException) -> bool:
    for name in _EXCHANGE_ATTRIBUTES:
        try:
            value = getattr(cause, name, None)
        except Exception:  # httpx raises RuntimeError for a request it does not hold
            continue
        if value is not None and not isinstance(value, (str, bytes, int, float)):
            return True
    return False


def _picklable_cause(cause: BaseException | None) -> BaseException | None:
    if cause is None:
        return None
    if _carries_exchange(cause):  # the request's headers hold the credential: words only
        return Exception(f"{type(cause).__name__}: {cause}")
    try:
        pickle.loads(pickle.dumps(cause))
    except Exception:  # an unpicklable cause (a lock, a socket, a local class) keeps its words only
        return Exception(f"{type(cause).__name__}: {cause}")
    return cause


def _picklable_violation(violation: Violation) -> Violation:
    try:
        pickle.dumps(violation.chunk)
    except Exception:  # a schema violation keeps whatever it was given; keep its repr then
        return dataclasses.replace(violation, chunk=repr(violation.chunk))
    return violation


def error_chain(exc: BaseException) -> str:
    """Render ``exc`` with its whole cause chain: ``outer: cause: root``.

    A cause whose text repeats its wrapper's verbatim is skipped; exception
    groups list their members in brackets; cycles render as ``<circular cause>``.
    For display only — route on ``LlmError.code``, never on this text.
    """
    path: set[int] = set()

    def render(current: BaseException) -> str:
        if id(current) in path:
            return "<circular cause>"
        path.add(id(current))
        try:
            text = current.message if isinstance(current, LlmError) else str(current)
            message = text or type(current).__name__
            members = ""
            if isinstance(current, BaseExceptionGroup) and current.exceptions:
                members = " [" + "; ".join(render(e) for e in current.exceptions) + "]"
            nxt = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
            cause_text = render(nxt) if nxt is not None else ""
            cause = f": {cause_text}" if cause_text and cause_text != message else ""
            return f"{message}{members}{cause}"
        except Exception:  # a hostile __str__ must not break a diagnostic
            return "<unrenderable exception>"
        finally:
            path.discard(id(current))

    return render(exc)
