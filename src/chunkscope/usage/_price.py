"""``Price``: one model's dated price per million tokens, of each kind (float or Decimal)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cached_property

from chunkscope.protocol import TokenUsage

__all__ = ["MAX_PRICE", "Price", "as_decimal"]

MAX_PRICE = 1e9
"""The highest price per million tokens a ``Price`` takes (far above any real one, in any
currency): below it, every cost of a count a ``UsageLog`` holds (< 2**63) is a finite number."""


def _is_price(value: object) -> bool:
    """Whether ``value`` is a number from 0 to ``MAX_PRICE`` (a bool, NaN or infinity is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return False
    if isinstance(value, Decimal) and not value.is_finite():
        return False  # Decimal("NaN") refuses to compare, "Infinity" is out of range
    return 0 <= value <= MAX_PRICE  # NaN and a 400-digit int fail here too


@dataclass(frozen=True)
class Price:
    """One model's prices, per million tokens, in ``currency``, valid from ``effective`` (ISO date)."""

    provider: str  # "*" matches any provider
    model: str
    cache_miss_input: float | Decimal
    cache_hit_input: float | Decimal
    output: float | Decimal
    cache_write: float | Decimal | None = None  # None: cache writes cost what a cache-miss input token does
    currency: str = "USD"
    effective: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("provider", "model", "currency", "effective", "source"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ValueError(f"price {name} must be a string, not {type(value).__name__}")
        for name in ("cache_miss_input", "cache_hit_input", "output", "cache_write"):
            value = getattr(self, name)
            if value is None and name == "cache_write":
                continue
            if not _is_price(value):
                raise ValueError(
                    f"price {name} of {self.provider}/{self.model} must be a finite number "
                    f"from 0 to {MAX_PRICE:g} per million tokens, not {value!r}"
                )
        self.effective_at  # noqa: B018 - validates the date now, not when a row is costed

    @cached_property  # a frozen dataclass: cached in the instance's __dict__, parsed once
    def effective_at(self) -> float:
        """``effective`` as seconds since the epoch (UTC midnight of a date); ``-inf`` when undated."""
        if not self.effective:
            return -math.inf
        try:
            moment = datetime.fromisoformat(self.effective)
        except ValueError:
            raise ValueError(
                f"price effective of {self.provider}/{self.model} must be an ISO date (YYYY-MM-DD) "
                f"or date-time, not {self.effective!r}"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()

    @property
    def write(self) -> float | Decimal:
        """The cache-write price in effect."""
        return self.cache_miss_input if self.cache_write is None else self.cache_write

    @property
    def request(self) -> float | Decimal:
        """The fee per request (0 for a hand-written price; genai-prices has models that charge one)."""
        return 0.0

    def cost(self, usage: TokenUsage, cost_type: type[float] | type[Decimal] = float) -> float | Decimal:
        """The cost of one attempt's usage, as a float or (``cost_type=Decimal``) an exact Decimal."""
        counts = (
            usage.input_tokens,
            usage.cache_read_tokens or 0,
            usage.cache_write_tokens or 0,
            usage.output_tokens,
        )
        rates = (self.cache_miss_input, self.cache_hit_input, self.write, self.output)
        if cost_type is Decimal:
            exact = sum((n * as_decimal(rate) for n, rate in zip(counts, rates, strict=True)), Decimal(0))
            return exact / 1_000_000 + as_decimal(self.request)
        return sum(n * float(rate) for n, rate in zip(counts, rates, strict=True)) / 1_000_000 + float(
            self.request
        )


def as_decimal(value: float | Decimal) -> Decimal:
    """A price as a Decimal: a float by its shortest repr (0.07, not 0.0700000000000000066...)."""
    return value if isinstance(value, Decimal) else Decimal(repr(float(value)))
