"""Every provider failure → ``LlmError``: ONE classification table for every wire.

``error_code(status, detail=..., error_type=...)`` is the only place a code is
chosen, for an HTTP error answer (status known) and for an error event inside
a 200 stream (no status; the error object's type decides). Rules, first match
wins (status before wording, as the reference does):

=====================================================  ==========================
condition                                              code
=====================================================  ==========================
status 401 / 403                                       AUTH
status 413, or type ``request_too_large``              INVALID_REQUEST
quota wording, status 402, type ``billing``/``quota``  QUOTA
status 429, type ``rate_limit``                        RATE_LIMIT
status 400 or type ``invalid_request`` + context       CONTEXT_WINDOW_EXCEEDED
status 400, type ``invalid_request``                   INVALID_REQUEST
type ``authentication`` / ``permission``               AUTH
status 5xx, type ``overloaded``/``api_error``/…        SERVER
type ``not_found``                                     HTTP_404
any other status                                       HTTP_<status>
an in-stream error nothing above recognises            SERVER
=====================================================  ==========================

An error object in the ``google.rpc.Status`` shape (Gemini, Vertex AI: ``{"error": {"code",
"message", "status", "details"}}``) is classified by its ``status`` first (``google_rpc_error``):
``RESOURCE_EXHAUSTED`` is ``QUOTA`` or ``RATE_LIMIT`` by its ``QuotaFailure`` / ``RetryInfo``
details, and ``RetryInfo.retryDelay`` is the retry delay.

(The reference maps a bare 402 to ``HTTP_402``; here 402 Payment Required is
``QUOTA``: both are terminal, never retried.) Context wording is
``is_context_window_exceeded`` plus Anthropic's ``prompt is too long``; quota
wording is ``is_quota_exceeded`` plus ``credit balance is too low`` and
``billing (hard) limit``.

Messages are bounded and secret-free: text is redacted BEFORE it is cut, and a
cut never leaves a prefix of a secret at its edge. Every JSON parse here is
depth-safe (a deeply nested body is "not JSON", never a ``RecursionError``).
"""

from __future__ import annotations

import email.utils
import json
import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

from chunkscope.protocol import LlmError

__all__ = [
    "MAX_CAUSE_CHARS",
    "ERROR_OBJECT_CODES",
    "MAX_MESSAGE_CHARS",
    "ProviderErrorBody",
    "bounded",
    "error_code",
    "error_detail",
    "error_from_response",
    "google_rpc_error",
    "http_error_code",
    "is_context_window_exceeded",
    "is_quota_exceeded",
    "loads",
    "preview",
    "detach_credentials",
    "redact",
    "request_id",
    "retry_after_ms",
    "stream_error",
    "transport_error",
]

MAX_MESSAGE_CHARS = 2000
"""The longest provider text an ``LlmError`` message carries (the rest is on its cause)."""
MAX_CAUSE_CHARS = 65536
"""The longest provider body kept on an error's ``cause`` (``ProviderErrorBody``)."""
PREVIEW_CHARS = 120
"""How much of a malformed payload a message quotes."""

# --- wording classifiers (the reference's, with JS regex semantics) ---------------
# JS ``\b`` is ASCII-only while ``\s`` is Unicode and ``.`` excludes line terminators:
# explicit ASCII boundaries keep "éinsufficient quota" a match without re.ASCII.
_B0 = r"(?<![A-Za-z0-9_])"
_B1 = r"(?![A-Za-z0-9_])"
_DOT = r"[^\n\r\u2028\u2029]"


def _js(pattern: str) -> re.Pattern[str]:
    # ``<`` / ``>`` mark a word boundary on the left / right (ASCII word characters, as in JS).
    return re.compile(pattern.replace("<", _B0).replace(">", _B1).replace("·", _DOT), re.IGNORECASE)


_CONTEXT_RULES = (
    re.compile(
        r"(?:^|[^a-z0-9])context[\s_-](?:length|window)[\s_-]"
        r"(?:exceed(?:ed|s)?|overflow(?:ed)?|limit[\s_-]exceeded)(?:$|[^a-z0-9])",
        re.IGNORECASE,
    ),
    _js(r"<(?:maximum|max)>(?:\s+(?:allowed|supported))?\s+context\s+(?:length|window)>"),
    _js(
        r"<(?:request|prompt|input|messages?)\s+(?:is\s+|are\s+)?too\s+(?:large|long)\s+for\s+"
        r"(?:(?:this|the)\s+)?(?:model(?:'s)?\s+)?context(?:\s+window)?>"
    ),
    _js(r"<(?:input|prompt|request)\s+(?:is\s+)?too\s+(?:long|large)\s+for\s+(?:this|the)\s+model>"),
    _js(
        r"<(?:input|prompt|request|messages?)>·{0,40}<(?:exceed(?:s|ed)?|overflows?|is\s+larger\s+than)>"
        r"·{0,40}<(?:the\s+)?(?:model(?:'s)?\s+)?context(?:\s+(?:length|window))?>"
    ),
)

_QUOTA_RULES = (
    _js(r"<insufficient[\s_-]+(?:quota|balance|credits?)>"),
    _js(r"<(?:quota|usage[\s_-]+limit)[\s_-]+(?:exceeded|exhausted|reached)>"),
    _js(r"<exceed(?:ed|s)?[\s_-]+(?:(?:your|the)[\s_-]+)?(?:current[\s_-]+)?quota>"),
    _js(r"<(?:balance|credits?)[\s_-]+(?:exhausted|depleted)>"),
    _js(r"<out[\s_-]+of[\s_-]+(?:credits?|budget)>"),
)

# Provider phrases the reference's wording rules do not cover: Anthropic's overflow and credit
# messages, OpenAI's billing limit. The table uses them beside the reference classifiers.
_WIRE_CONTEXT = re.compile(
    r"prompt is too long|input is too long for requested model|too many input tokens", re.IGNORECASE
)
_WIRE_QUOTA = re.compile(
    r"(?:balance|credits?)[\s_-]+(?:is[\s_-]+)?too[\s_-]+low|billing[\s_-]*(?:hard[\s_-]*)?limit",
    re.IGNORECASE,
)


def is_context_window_exceeded(detail: str) -> bool:
    """True for wording that says the request does not fit the model's context window.

    The reference's classifier (``isContextWindowExceededError``); pass code,
    type and message joined into one string.
    """
    return any(rule.search(detail) is not None for rule in _CONTEXT_RULES)


def is_quota_exceeded(detail: str) -> bool:
    """True for wording that says the account's quota, balance, credits or budget are exhausted
    (never a transient rate limit). The reference's classifier (``isQuotaExceededError``)."""
    return any(rule.search(detail) is not None for rule in _QUOTA_RULES)


# --- THE table ---------------------------------------------------------------------

# Error-object type (any wire's vocabulary), by substring → code. Checked after the status rules.
_TYPE_CODES: tuple[tuple[str, str], ...] = (
    ("request_too_large", "INVALID_REQUEST"),
    ("billing", "QUOTA"),
    ("insufficient_quota", "QUOTA"),
    ("rate_limit", "RATE_LIMIT"),
    ("invalid_request", "INVALID_REQUEST"),
    ("authentication", "AUTH"),
    ("permission", "AUTH"),
    ("not_found", "HTTP_404"),
    ("overloaded", "SERVER"),
    ("server_error", "SERVER"),
    ("api_error", "SERVER"),
    ("internal", "SERVER"),
    ("timeout", "SERVER"),
    # Bedrock's exception names (x-amzn-ErrorType), lower-cased
    ("throttling", "RATE_LIMIT"),
    ("quotaexceeded", "QUOTA"),
    ("serviceunavailable", "SERVER"),
)


# An error object's ``code`` field (exact) → code: the OpenAI Responses wire names its failures
# by code (the ``error`` event, ``response.failed``'s ``response.error``), and its vocabulary
# has names the wording rules would misread (``invalid_prompt`` says nothing of a request).
ERROR_OBJECT_CODES: dict[str, str] = {
    "rate_limit_exceeded": "RATE_LIMIT",
    "insufficient_quota": "QUOTA",
    "server_error": "SERVER",
    "vector_store_timeout": "SERVER",
    "context_length_exceeded": "CONTEXT_WINDOW_EXCEEDED",
    "invalid_prompt": "INVALID_REQUEST",
    "data_residency_mismatch": "INVALID_REQUEST",
    "invalid_image": "INVALID_REQUEST",
    "invalid_image_format": "INVALID_REQUEST",
    "invalid_base64_image": "INVALID_REQUEST",
    "invalid_image_url": "INVALID_REQUEST",
    "image_too_large": "INVALID_REQUEST",
    "image_too_small": "INVALID_REQUEST",
    "image_parse_error": "INVALID_REQUEST",
    "invalid_image_mode": "INVALID_REQUEST",
    "image_file_too_large": "INVALID_REQUEST",
    "unsupported_image_media_type": "INVALID_REQUEST",
    "empty_image_file": "INVALID_REQUEST",
    "failed_to_download_image": "INVALID_REQUEST",
    "image_file_not_found": "INVALID_REQUEST",
    "image_content_policy_violation": "CONTENT_FILTER",
    "bio_policy": "CONTENT_FILTER",
    "misalignment_policy_violation": "CONTENT_FILTER",
}
"""An error object's ``code`` → its registered code, before any other rule (exact match)."""


def error_code(status: int | None, *, detail: str = "", error_type: str | None = None) -> str:
    """The ``LlmError`` code for a provider failure (see the module table).

    ``status`` is the HTTP status (None for an error event inside a 200
    stream), ``detail`` the code/type/message text, ``error_type`` the error
    object's ``type`` when the wire names one.
    """
    if status in (401, 403):
        return "AUTH"
    kind = (error_type or "").lower()
    type_code = next((code for needle, code in _TYPE_CODES if needle in kind), None) if kind else None
    refused = _limit_code(status, type_code, kind, detail) or _invalid_code(status, type_code, detail)
    if refused is not None:
        return refused
    if status is None:
        return _in_stream_code(type_code, detail)
    return "SERVER" if status >= 500 else f"HTTP_{status}"


def _limit_code(status: int | None, type_code: str | None, kind: str, detail: str) -> str | None:
    """The code of a request over a limit (too large, out of quota, rate-limited), else None."""
    if status == 413 or (type_code == "INVALID_REQUEST" and "too_large" in kind):
        return "INVALID_REQUEST"
    if status == 402 or type_code == "QUOTA" or is_quota_exceeded(detail) or _WIRE_QUOTA.search(detail):
        return "QUOTA"
    if status == 429 or type_code == "RATE_LIMIT":
        return "RATE_LIMIT"
    return None


def _invalid_code(status: int | None, type_code: str | None, detail: str) -> str | None:
    """The code of a request refused as invalid: over the context window, or otherwise; else None."""
    if status == 400 or (status is None and type_code == "INVALID_REQUEST"):
        context = is_context_window_exceeded(detail) or _WIRE_CONTEXT.search(detail) is not None
        return "CONTEXT_WINDOW_EXCEEDED" if context else "INVALID_REQUEST"
    return None


def _in_stream_code(type_code: str | None, detail: str) -> str:
    """The code of an error object inside a 200 stream: its type's, else what its text says."""
    if type_code is not None:
        return type_code
    if is_context_window_exceeded(detail):
        return "CONTEXT_WINDOW_EXCEEDED"
    low = detail.lower()
    return next((code for needle, code in _TYPE_CODES if needle in low), "SERVER")


def http_error_code(status: int, detail: str = "") -> str:
    """The code for a non-2xx ``status`` whose body says ``detail`` (``error_code`` with a status)."""
    return error_code(status, detail=detail)


# --- JSON, redaction, bounds ------------------------------------------------------

_decoder = json.JSONDecoder()


def loads(text: str | bytes) -> Any:
    """``json.loads`` that reports nesting too deep for the parser as ``ValueError``, like any bad JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each (non-trivial) secret replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, "***")
    return text


def _strip_partial(text: str, secrets: tuple[str, ...]) -> str:
    # A text cut before it reached us may end in the first characters of a secret.
    for secret in secrets:
        for k in range(min(len(secret) - 1, len(text)), 3, -1):
            if text.endswith(secret[:k]):
                return text[:-k] + "***"
    return text


def bounded(
    text: str, secrets: Iterable[str], limit: int = MAX_MESSAGE_CHARS, *, cut_before: bool = False
) -> str:
    """``text`` redacted, THEN cut to ``limit`` characters (``…`` marks a cut).

    ``cut_before``: the text was already cut upstream (a size-capped read), so
    a secret's prefix at its very end is redacted too.
    """
    secrets = tuple(s for s in secrets if s and len(s) >= 4)
    longest = max((len(s) for s in secrets), default=0)
    if len(text) > limit + longest:
        text = text[: limit + longest]  # a secret straddling ``limit`` lies wholly inside this
        cut_before = True
    text = redact(text, secrets)
    if cut_before:
        text = _strip_partial(text, secrets)
    return text if len(text) <= limit else text[:limit] + "…"


def preview(data: str, secrets: Iterable[str]) -> str:
    """The redacted first ``PREVIEW_CHARS`` characters of a payload, quoted, for a message."""
    return repr(bounded(data, secrets, PREVIEW_CHARS))


class ProviderErrorBody(Exception):
    """The raw (redacted, capped) body of a provider's error answer; the ``cause`` of its ``LlmError``."""


def error_detail(body: bytes | str | Any) -> tuple[str | None, str, Mapping[str, Any] | None]:
    """``(message, detail, error_object)`` from an error body of any common shape.

    Understands OpenAI/DeepSeek ``{"error": {"message", "type", "code"}}``,
    Anthropic ``{"type": "error", "error": {"type", "message"}}``, a bare
    ``{"message": ...}`` or ``{"detail": ...}``, and plain text (also JSON too
    deeply nested to parse). ``detail`` joins code, type and message (the
    classifiers' input). Nothing is cut here: callers bound what they show.
    """
    parsed: Any = body
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            parsed = loads(body)
        except ValueError:
            text = body.strip()
            return (text or None), text, None
    error: Any = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, str):
        return error, error, None
    if not isinstance(error, dict):
        error = parsed if isinstance(parsed, dict) else None
    if error is None:
        return None, "", None
    return (*_object_detail(error), error)


def _object_detail(error: Mapping[str, Any]) -> tuple[str | None, str]:
    """``(message, detail)`` of an error object: its ``message`` (or ``detail``), and code, type
    and message joined."""
    message = error.get("message")
    if not isinstance(message, str):
        detail_field = error.get("detail")
        message = detail_field if isinstance(detail_field, str) else None
    parts = [str(error[k]) for k in ("code", "type") if isinstance(error.get(k), (str, int))]
    if message:
        parts.append(message)
    return message, " ".join(parts)


def _error_type(error: Mapping[str, Any] | None) -> str | None:
    if error is None:
        return None
    value = error.get("type")
    if not isinstance(value, str):
        value = error.get("code")
    return value if isinstance(value, str) else None


def retry_after_ms(headers: Mapping[str, str], *, now: float | None = None) -> int | None:
    """The provider-requested delay as an integer number of ms (``retry-after-ms`` or ``Retry-After``).

    ``Retry-After`` may be seconds (``2``, ``1.5``) or an HTTP date; ``now``
    (epoch seconds) is injectable for tests. None when absent, unparsable or
    not in the future. Fractions of a ms round up (a delay is never shortened).
    """
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value > 0:
            return math.ceil(value)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _retry_after_seconds(raw.strip(), now)
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        return None
    ms = seconds * 1000.0
    return math.ceil(ms) if math.isfinite(ms) else None


def _retry_after_seconds(raw: str, now: float | None) -> float | None:
    """``Retry-After`` as seconds from now: a number, or an HTTP date (None when neither)."""
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now if now is not None else datetime.now(UTC).timestamp()
    return when.timestamp() - current


_REQUEST_ID_HEADERS = (
    "x-request-id",
    "request-id",
    "x-deepseek-request-id",
    "anthropic-request-id",
    "x-amzn-requestid",  # AWS (Bedrock)
)


MAX_REQUEST_ID_CHARS = 200
"""The longest request id kept (a header may be any length)."""


def request_id(headers: Mapping[str, str], secrets: Iterable[str] = ()) -> str | None:
    """The provider's request id (``x-request-id``, ``request-id``, …), if any, redacted and bounded.

    The id is read here, once, and copied into failures, chunks, recordings and
    displays: a server that echoes the key in it must not get the key there.
    """
    for name in _REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value is not None:
            # present but empty: no id (never another header's)
            return bounded(value, secrets, MAX_REQUEST_ID_CHARS) if value else None
    return None


def error_from_response(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    label: str,
    secrets: Iterable[str] = (),
    truncated: bool = False,
) -> LlmError:
    """The ``LlmError`` for a non-2xx answer: code, status, retry delay, request id, a bounded message.

    ``truncated``: ``body`` is the first part of a longer body (a capped read).
    """
    secrets = tuple(secrets)
    message, detail, error = error_detail(body)
    error_type = _error_type(error) or _amzn_error_type(headers)
    if error_type and error_type not in detail:
        detail = f"{error_type} {detail}"
    google = google_rpc_error(error, detail)
    if google is not None:
        code, delay = google
    else:
        code, delay = error_code(status, detail=detail, error_type=error_type), None
    reason = httpx.codes.get_reason_phrase(status)
    text = f"{label} answered HTTP {status}" + (f" {reason}" if reason else "")
    if message:
        text += f": {message}"
    raw = body.decode("utf-8", "replace") or f"HTTP {status}"
    return LlmError(
        bounded(text, secrets, cut_before=truncated),
        code,
        status=status,
        retry_after_ms=delay if delay is not None else retry_after_ms(headers),
        request_id=request_id(headers, secrets),
        cause=ProviderErrorBody(bounded(raw, secrets, MAX_CAUSE_CHARS, cut_before=truncated)),
    )


def _amzn_error_type(headers: Mapping[str, str]) -> str | None:
    """The error AWS names in ``x-amzn-ErrorType`` (``ThrottlingException:http://…``), lower-cased."""
    value = headers.get("x-amzn-errortype")
    name = value.partition(":")[0].strip().lower() if value else ""
    return name or None


def _status_inside(error: Mapping[str, Any] | None) -> int | None:
    """The HTTP status an error object names in ``status``, ``code`` or ``status_code`` (else None)."""
    if error is None:
        return None
    for key in ("status", "code", "status_code"):
        value = error.get(key)
        if type(value) is int and 300 <= value <= 599:  # a 2xx inside an error says nothing
            return value
    return None


def stream_error(
    error: Any,
    *,
    label: str,
    secrets: Iterable[str] = (),
    request_id: str | None = None,
) -> LlmError:
    """The ``LlmError`` for an error object delivered inside a 200 stream (any wire's shape).

    A numeric ``status``/``code``/``status_code`` in the object counts as the
    HTTP status; else its type and wording decide (``error_code``).
    """
    secrets = tuple(secrets)
    message, detail, obj = error_detail({"error": error})
    status = _status_inside(obj)
    error_type = _error_type(obj)
    google = google_rpc_error(obj, detail)
    code = google[0] if google is not None else error_code(status, detail=detail, error_type=error_type)
    what = message or detail or "no message"
    if error_type and message:
        what += f" ({error_type})"
    text = f"{label} reported an error inside the stream: {what}"
    cause = ProviderErrorBody(bounded(detail, secrets, MAX_CAUSE_CHARS)) if detail else None
    return LlmError(
        bounded(text, secrets),
        code,
        status=status if status is not None and status >= 300 else None,
        retry_after_ms=google[1] if google is not None else None,
        request_id=request_id,
        cause=cause,
    )


def detach_credentials(exc: BaseException, secrets: Iterable[str] = ()) -> None:
    """Cut the sent request (its ``Authorization`` header) off ``exc`` and its chain, in place.

    httpx attaches the request to its exceptions; an ``LlmError`` keeps the
    exception as its cause and context, and anything that pickles it (a
    multiprocessing queue, Dask, tblib's reducers, which pickle the raw chain)
    would carry the key. The exception keeps its type, text (redacted) and
    traceback; only ``.request`` is gone (httpx raises ``RuntimeError`` on reading it).
    """
    secrets = tuple(secrets)
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending and len(seen) < 64:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        _detach_one(current, secrets)
        pending += (current.__cause__, current.__context__)


def _detach_one(exc: BaseException, secrets: tuple[str, ...]) -> None:
    """One exception of a chain without its request, its string arguments redacted."""
    if isinstance(exc, httpx.HTTPError):
        exc._request = None
    if secrets and any(isinstance(arg, str) for arg in exc.args):
        exc.args = tuple(redact(a, secrets) if isinstance(a, str) else a for a in exc.args)


def transport_error(exc: BaseException, *, label: str, secrets: Iterable[str] = ()) -> LlmError:
    """The ``LlmError`` for an httpx (or socket) failure: TIMEOUT, TRANSPORT or MALFORMED_RESPONSE.

    ``exc`` becomes the cause, with the request that carried the key cut off (``detach_credentials``).
    """
    secrets = tuple(secrets)
    detach_credentials(exc, secrets)
    if isinstance(exc, httpx.TimeoutException):
        code, what = "TIMEOUT", "timed out"
    elif isinstance(exc, httpx.DecodingError):
        code, what = "MALFORMED_RESPONSE", "sent a body that cannot be decoded"
    elif isinstance(exc, httpx.RemoteProtocolError):
        code, what = "TRANSPORT", "broke the connection mid-response"
    elif isinstance(exc, httpx.ConnectError):
        code, what = "TRANSPORT", "could not be reached"
    else:
        code, what = "TRANSPORT", "failed"
    detail = str(exc) or type(exc).__name__
    return LlmError(bounded(f"{label} {what}: {detail}", secrets), code, cause=exc)


# --- the google.rpc.Status error model (Gemini, Vertex AI) ---------------------------

_GOOGLE_STATUS_CODES: dict[str, str] = {
    "INVALID_ARGUMENT": "INVALID_REQUEST",
    "FAILED_PRECONDITION": "INVALID_REQUEST",  # e.g. billing not enabled, region not supported
    "OUT_OF_RANGE": "INVALID_REQUEST",
    "UNAUTHENTICATED": "AUTH",
    "PERMISSION_DENIED": "AUTH",
    "RESOURCE_EXHAUSTED": "RATE_LIMIT",  # or QUOTA, by its details (``_exhausted_code``)
    "UNAVAILABLE": "SERVER",
    "INTERNAL": "SERVER",
    "UNKNOWN": "SERVER",
    "DATA_LOSS": "SERVER",
    "DEADLINE_EXCEEDED": "SERVER",  # the server's own deadline: retryable, not our idle TIMEOUT
}
"""A ``google.rpc.Code`` name → its registered code (other names fall back to the one table)."""

_RPC_TYPE = "type.googleapis.com/google.rpc."
# Gemini's overflow wording: "The input token count (N) exceeds the maximum number of tokens allowed (M)."
_GOOGLE_CONTEXT = re.compile(r"input token count.{0,40}exceeds the maximum number of tokens", re.IGNORECASE)
_PER_DAY = re.compile(r"per[\s_-]*day|daily", re.IGNORECASE)
_DURATION = re.compile(r"([0-9]{1,9}(?:\.[0-9]{1,9})?)s")


def google_rpc_error(error: Mapping[str, Any] | None, detail: str = "") -> tuple[str, int | None] | None:
    """``(code, retry_after_ms)`` of an error object in the ``google.rpc.Status`` shape, else None.

    Args:
        error: the object under ``error`` (``{"code", "message", "status", "details"}``).
        detail: code, type and message joined (the wording classifiers' input).

    Returns:
        None unless ``status`` is a ``google.rpc.Code`` name this table knows. Otherwise the
        code: ``INVALID_ARGUMENT`` is ``CONTEXT_WINDOW_EXCEEDED`` by its wording, ``AUTH`` for an
        ``ErrorInfo`` reason ``API_KEY_*`` (Gemini answers a bad key with 400); ``RESOURCE_EXHAUSTED``
        is ``QUOTA`` for a per-day ``QuotaFailure`` or quota wording without ``RetryInfo``, else
        ``RATE_LIMIT``. The delay is ``RetryInfo.retryDelay`` (``"2s"``, ``"1.5s"``) in ms.
    """
    if error is None:
        return None
    status = error.get("status")
    code = _GOOGLE_STATUS_CODES.get(status) if isinstance(status, str) else None
    if code is None:
        return None
    raw = error.get("details")
    details = [d for d in raw if isinstance(d, dict)] if isinstance(raw, list) else []
    delay = _retry_delay(details)
    if status == "RESOURCE_EXHAUSTED":
        code = _exhausted_code(details, detail, delay)
    elif code == "INVALID_REQUEST":
        code = _invalid_argument_code(details, detail)
    return code, delay


def _invalid_argument_code(details: list[dict[str, Any]], detail: str) -> str:
    """``AUTH`` for a bad key (an ``ErrorInfo`` reason ``API_KEY_*``), ``CONTEXT_WINDOW_EXCEEDED``
    by its wording, else ``INVALID_REQUEST``."""
    reasons = [str(d.get("reason", "")) for d in details if _rpc_kind(d) == "ErrorInfo"]
    if any(reason.startswith("API_KEY_") for reason in reasons):
        return "AUTH"
    if is_context_window_exceeded(detail) or _GOOGLE_CONTEXT.search(detail):
        return "CONTEXT_WINDOW_EXCEEDED"
    return "INVALID_REQUEST"


def _rpc_kind(detail: Mapping[str, Any]) -> str:
    kind = detail.get("@type")
    return kind[len(_RPC_TYPE) :] if isinstance(kind, str) and kind.startswith(_RPC_TYPE) else ""


def _exhausted_code(details: list[dict[str, Any]], detail: str, delay: int | None) -> str:
    """``QUOTA`` when retrying soon cannot help (a per-day quota, or quota wording and no retry
    delay), else ``RATE_LIMIT`` (per-minute quotas, Vertex's shared capacity)."""
    if any(_per_day(entry) for entry in details):
        return "QUOTA"
    if delay is None and (is_quota_exceeded(detail) or _WIRE_QUOTA.search(detail)):
        return "QUOTA"
    return "RATE_LIMIT"


def _per_day(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` is a ``QuotaFailure`` naming a per-day quota."""
    violations = entry.get("violations")
    if _rpc_kind(entry) != "QuotaFailure" or not isinstance(violations, list):
        return False
    return any(
        isinstance(violation, dict)
        and any(
            isinstance(violation.get(k), str) and _PER_DAY.search(violation[k])
            for k in ("quotaId", "quotaMetric", "description")
        )
        for violation in violations
    )


def _retry_delay(details: list[dict[str, Any]]) -> int | None:
    """``RetryInfo.retryDelay`` (a protobuf Duration as JSON: ``"2s"``, ``"0.5s"``) in ms, rounded up."""
    for entry in details:
        if _rpc_kind(entry) != "RetryInfo":
            continue
        raw = entry.get("retryDelay")
        match = _DURATION.fullmatch(raw.strip()) if isinstance(raw, str) else None
        if match is not None:
            ms = math.ceil(float(match.group(1)) * 1000)
            return ms if ms > 0 else None
    return None
