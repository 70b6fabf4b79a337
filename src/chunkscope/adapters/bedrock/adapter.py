"""``BedrockAdapter``: AWS Bedrock ConverseStream as a StreamChunk stream.

It POSTs ``{base_url}/model/{modelId}/converse-stream`` (``base_url`` is the runtime
endpoint's root, ``https://bedrock-runtime.us-east-1.amazonaws.com``, or
``LocalProvider.url``) and reads the binary ``application/vnd.amazon.eventstream`` answer
(``framing``: both CRC32s checked, bounded) through the pure ``BedrockTranslator``. The
body comes from ``request.py``; timeouts, limits, redirects, redaction and failures are the
shared core (``_core.EventStreamAdapter``).

Credentials, per stream:

- a **Bedrock API key** (``api_key``, else ``AWS_BEARER_TOKEN_BEDROCK``) is sent as
  ``Authorization: Bearer …``; nothing beyond the base install is needed;
- without one (or with ``signing="sigv4"``), the request is signed with **AWS SigV4** by
  botocore (``botocore.auth.SigV4Auth``, service ``bedrock``) from the standard credential
  chain (environment, shared config and credentials files, SSO, container and instance
  roles; ``profile`` picks a profile). botocore is the optional ``bedrock`` extra
  (``pip install "chunkscope[bedrock]"``); without it ``signing="sigv4"`` raises
  ``MissingExtraError`` naming the extra when the adapter is built, and ``auto`` without a key
  ends the stream ``MISSING_CREDENTIAL`` (a key or the extra). The region is ``region``, else the one in the
  ``base_url`` host, else the chain's configured region.

No key, secret key or session token appears in the repr, ``vars()``, a pickle, an error
message or the local provider's request log (the session token header is redacted there as
the ``Authorization`` header is).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, ClassVar, Literal

import httpx
from typing_extensions import Unpack

from chunkscope._extras import MissingExtraError, require_modules
from chunkscope.protocol import LlmError

from ..._wires import WIRE_FACTS
from .._base import OPTIONAL_OPTIONS, GenerateOptions, ModelInfo
from .._core import Credential, EventStreamAdapter, StreamOptions
from .framing import EventStreamDecoder
from .request import CLAUDE_EFFORTS, NOVA_EFFORTS, build_body, model_family
from .translate import BedrockTranslator

__all__ = ["BedrockAdapter", "Signing"]

Signing = Literal["auto", "bearer", "sigv4"]
"""How requests are authorized: ``auto`` (a Bedrock API key when one is found, else SigV4),
``bearer`` (an API key, required) or ``sigv4`` (the AWS credential chain, always)."""

_EXTRA = "bedrock"
_SIGV4 = 'BedrockAdapter(signing="sigv4")'
_HOST_REGION = re.compile(r"bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com", re.IGNORECASE)
_SIGNED_HEADERS = ("host", "content-type")  # the SigV4 signature covers these (and x-amz-date)


def _botocore() -> Any:
    """botocore's ``auth``, ``awsrequest`` and ``session`` modules, or ``MissingExtraError``."""
    try:
        import botocore.auth  # type: ignore[import-untyped]
        import botocore.awsrequest  # type: ignore[import-untyped]
        import botocore.session  # type: ignore[import-untyped]
    except ModuleNotFoundError:
        raise MissingExtraError(_EXTRA, "botocore", _SIGV4) from None
    return botocore


class _BedrockCredential(Credential):
    """A Bedrock API key, or the AWS credential chain when there is none (``signing``).

    ``resolve`` says, per stream, which one the request uses (``mode``) and returns the
    secret to redact: the API key, or the secret access key (whose signature is all that is
    sent). The chain's credentials are read through botocore at that moment, never kept.
    """

    __slots__ = ("_session", "mode", "profile", "signing")

    def __init__(
        self, value: str | None, env: str | tuple[str, ...] | None, signing: Signing, profile: str | None
    ) -> None:
        super().__init__(value, env)
        self.signing = signing
        self.profile = profile
        self.mode: Literal["bearer", "sigv4"] = "sigv4" if signing == "sigv4" else "bearer"
        self._session: Any = None

    def resolve(self, label: str) -> str:
        if self.signing != "sigv4":
            try:
                key = super().resolve(label)
            except LlmError as exc:
                if self.signing == "bearer" or exc.code != "MISSING_CREDENTIAL":
                    raise
            else:
                self.mode = "bearer"
                return key
        self.mode = "sigv4"
        try:
            frozen = self.frozen(label)
        except MissingExtraError as exc:
            if self.signing == "sigv4":  # checked when built; only a module removed since lands here
                raise
            where = f" or set {self.env}" if self.env else ""
            raise LlmError(
                f"no credentials for {label}: pass api_key=...{where} (a Bedrock API key), or install "
                f'the "{exc.extra}" extra to sign with the AWS credential chain: '
                f'pip install "chunkscope[{exc.extra}]"',
                "MISSING_CREDENTIAL",
            ) from None
        return str(frozen.secret_key)

    def peek(self) -> str | None:
        if self.signing != "sigv4":
            key = super().peek()
            if key is not None or self.signing == "bearer":
                return key
        try:
            return str(self.frozen("").secret_key)
        except (LlmError, ImportError):
            return None

    def session(self) -> Any:
        """The botocore session of the credential chain (made once)."""
        if self._session is None:
            botocore = _botocore()
            self._session = botocore.session.Session(profile=self.profile)
        return self._session

    def frozen(self, label: str) -> Any:
        """The chain's current credentials (``ReadOnlyCredentials``), else ``MISSING_CREDENTIAL``."""
        credentials = self.session().get_credentials()
        frozen = credentials.get_frozen_credentials() if credentials is not None else None
        if frozen is None or not frozen.access_key or not frozen.secret_key:
            names = (self.env,) if isinstance(self.env, str) else (self.env or ())
            where = f" or set {' or '.join(names)}" if names else ""
            raise LlmError(
                f"no credentials for {label}: pass api_key=...{where} (a Bedrock API key), or configure "
                "the AWS credential chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, a role)",
                "MISSING_CREDENTIAL",
            )
        return frozen

    def __repr__(self) -> str:
        if self.signing == "sigv4":
            return "<AWS credential chain>"
        return super().__repr__()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_BedrockCredential, (None, self.env, self.signing, self.profile))


class BedrockAdapter(EventStreamAdapter):
    """Streams AWS Bedrock ConverseStream (``POST {base_url}/model/{modelId}/converse-stream``).

    ``api_key`` (else ``AWS_BEARER_TOKEN_BEDROCK``, read per stream) is a Bedrock API key,
    sent as a bearer token; without one, or with ``signing="sigv4"``, requests are signed
    with SigV4 from the AWS credential chain (the ``bedrock`` extra: botocore; ``profile``,
    ``region``). ``http_client``, ``idle_timeout``, ``total_timeout``, ``headers``,
    ``max_event_bytes`` (the largest frame) and ``max_body_bytes`` are the shared core's.
    ``models`` publishes ``ModelInfo``s; without it, Claude models with extended thinking
    get ``CLAUDE_EFFORTS`` and Nova 2 ``NOVA_EFFORTS`` (``request.model_family``). Every
    ``GenerateOptions`` field is honoured; content the wire cannot carry is
    ``UNSUPPORTED_OPTION``.
    """

    wire = WIRE_FACTS["bedrock"]  # provider name, key variables, media type, request path
    supported_options: ClassVar[frozenset[str]] = frozenset(OPTIONAL_OPTIONS)
    api_name = "Bedrock API"
    framing = EventStreamDecoder  # the core's decoder() builds it; the tap reads it from here too

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        signing: Signing = "auto",
        region: str | None = None,
        profile: str | None = None,
        models: Iterable[ModelInfo] | None = None,
        **options: Unpack[StreamOptions],
    ) -> None:
        if signing not in ("auto", "bearer", "sigv4"):
            raise ValueError(f"signing must be 'auto', 'bearer' or 'sigv4', not {signing!r}")
        if signing == "sigv4":  # a set-up error belongs here, not in the first stream's finish
            require_modules(_SIGV4, "botocore")
        super().__init__(base_url, api_key, **options)
        env = options.get("api_key_env") or self.default_api_key_env
        self._credential = _BedrockCredential(api_key, env, signing, profile)
        self.signing: Signing = signing
        match = _HOST_REGION.search(httpx.URL(self.base_url).host or "")
        self.region = region or (match.group(1).lower() if match else None)
        self._models = tuple(models) if models is not None else None

    # --- models ---------------------------------------------------------------

    def models(self) -> list[ModelInfo]:
        """The ``models`` given at construction (empty when none were)."""
        return list(self._models or ())

    def model_info(self, model: str) -> ModelInfo | None:
        """The given ``ModelInfo`` of ``model``; without a list, the efforts of its family."""
        if self._models is not None:
            return super().model_info(model)
        family = model_family(model)
        if family == "claude":
            return ModelInfo(id=model, reasoning=CLAUDE_EFFORTS)
        if family == "nova":
            return ModelInfo(id=model, reasoning=NOVA_EFFORTS)
        return None

    # --- the wire -------------------------------------------------------------

    def request_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body ``stream()`` sends for ``options`` (the model is in the URL)."""
        return build_body(options)

    def wire_headers(self, key: str) -> dict[str, str]:
        """``Authorization: Bearer`` for an API key; nothing for SigV4 (``authorize`` signs)."""
        if self._bearer():
            return {"Authorization": f"Bearer {key}"}
        return {}

    def authorize(self, request: httpx.Request, key: str) -> httpx.Request:
        """The request signed with SigV4 (service ``bedrock``) when no API key is used."""
        if self._bearer():
            return request
        credential = self._credential
        assert isinstance(credential, _BedrockCredential)
        region = self.region or credential.session().get_config_variable("region")
        if not region:
            raise LlmError(
                f"{self._label}: SigV4 signing needs a region: pass region=... or set AWS_REGION",
                "MISSING_CREDENTIAL",
            )
        botocore = _botocore()
        aws = botocore.awsrequest.AWSRequest(
            method=request.method,
            url=str(request.url),
            headers={name: request.headers[name] for name in _SIGNED_HEADERS if name in request.headers},
            data=request.content,
        )
        botocore.auth.SigV4Auth(credential.frozen(self._label), "bedrock", region).add_auth(aws)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            value = aws.headers.get(name)
            if value is not None:
                request.headers[name] = value
        return request

    def _bearer(self) -> bool:
        credential = self._credential
        return not isinstance(credential, _BedrockCredential) or credential.mode == "bearer"

    def translator(self, secrets: tuple[str, ...]) -> BedrockTranslator:
        """A fresh translator for one response."""
        return BedrockTranslator(self._label, secrets)
