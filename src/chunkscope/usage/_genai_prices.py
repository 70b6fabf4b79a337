"""genai-prices (pydantic's dated price data) as flat per-period ``Price`` rows for ``PriceTable``.

genai-prices resolves a price per request: conditional prices (a start date,
or a daily time window such as DeepSeek's off-peak hours) and tiers (a higher
rate above a total-input threshold). Calling it per row would cost a million
Python calls for a million rows; instead the rows of one model are cut into
*periods* by every boundary its prices have (the start dates, the time-of-day
window edges, the tier thresholds), so that within a period the price is one
flat rate. Each period is resolved once, through genai-prices' own
``ModelPrice.calc_price`` on unit usages (so its conventions — inclusive input,
what an unpriced cache write costs, per-request fees — are its own, not
re-typed here), and the rows are costed with numpy as for any ``Price``.

The usage it is given is converted from chunkscope's disjoint counts by
``_convert.to_genai_usage``, the one place that knows genai-prices' convention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import numpy as np

from chunkscope._extras import needs_extra

from ._convert import to_genai_usage
from ._price import Price

__all__ = ["GenaiPrice", "GenaiPrices"]

_MILLION = 1_000_000
_DAY_S = 86_400.0


@dataclass(frozen=True)
class GenaiPrice(Price):
    """A flat ``Price`` resolved from genai-prices for one period, plus its per-request fee."""

    per_request: Decimal | float = 0.0

    @property
    def request(self) -> Decimal | float:
        return self.per_request


@dataclass(frozen=True)
class _Model:
    """One genai-prices model as found for a (provider, model) pair, with its period boundaries."""

    provider_id: str
    info: Any  # genai_prices.types.ModelInfo
    start_dates: np.ndarray[Any, Any]  # epoch seconds of each StartDateConstraint, sorted
    day_edges: np.ndarray[Any, Any]  # seconds of the UTC day at which a daily window opens or closes
    tier_starts: np.ndarray[Any, Any]  # total-input thresholds of its tiered prices, sorted


class GenaiPrices:
    """The genai-prices snapshot behind ``PriceTable.from_genai_prices()``: finds models, resolves periods."""

    def __init__(self) -> None:
        with needs_extra("PriceTable.from_genai_prices()"):
            import genai_prices
            from genai_prices import data_snapshot
        self.version: str = genai_prices.__version__
        self._snapshot = data_snapshot.get_snapshot()
        self._models: dict[tuple[str, str], _Model | None] = {}
        self._periods: dict[tuple[str, str, int], GenaiPrice] = {}

    def __repr__(self) -> str:
        return f"GenaiPrices({self.version})"

    def model(self, provider: str, model: str) -> _Model | None:
        """The genai-prices model for ``provider``/``model``, else None.

        ``provider`` is taken as genai-prices' provider id (``openai``, ``anthropic``,
        ``deepseek``, ``google``...); a provider it does not know (``local``, ``""``)
        falls back to matching the model name alone, as ``calc_price`` does without a provider.
        """
        key = (provider, model)
        if key not in self._models:
            self._models[key] = self._find(provider, model)
        return self._models[key]

    def _find(self, provider: str, model: str) -> _Model | None:
        found = None
        for provider_id in (provider, None) if provider else (None,):
            try:
                found = self._snapshot.find_provider_model(model, None, provider_id, None)
                break
            except LookupError:
                continue
        if found is None:
            return None
        provider_info, info = found
        return _Model(provider_info.id, info, *_boundaries(info))

    def periods(
        self, found: _Model, started: np.ndarray[Any, Any], total_input: np.ndarray[Any, Any]
    ) -> tuple[list[GenaiPrice], np.ndarray[Any, Any]]:
        """The flat prices of ``found`` over its rows, and each row's index into them.

        ``started``: each row's start (epoch seconds, NaN = unknown: priced now, as genai-prices
        prices a request without a timestamp); ``total_input``: its inclusive input count.
        """
        at = np.where(np.isnan(started), datetime.now(UTC).timestamp(), started)
        by_date = np.searchsorted(found.start_dates, at, side="right")
        by_hour = np.searchsorted(found.day_edges, np.mod(at, _DAY_S), side="right")
        by_tier = np.searchsorted(found.tier_starts, total_input, side="left")  # "> start" picks a tier
        width_h, width_t = len(found.day_edges) + 1, len(found.tier_starts) + 1
        bucket = (by_date * width_h + by_hour) * width_t + by_tier
        distinct, first, inverse = np.unique(bucket, return_index=True, return_inverse=True)
        prices = []
        for b, row in zip(distinct.tolist(), first.tolist(), strict=True):
            key = (found.provider_id, found.info.id, b)  # names, not id(): ids of dead objects recur
            cached = self._periods.get(key)
            if cached is None:
                moment = datetime.fromtimestamp(float(at[row]), UTC)
                cached = self._resolve(found, moment, float(total_input[row]))
                self._periods[key] = cached
            prices.append(cached)
        return prices, inverse.reshape(-1)

    def price_at(self, found: _Model, at: float | None, total_input: int) -> GenaiPrice:
        """The flat price of one request (``UsageLog.record``'s quote), from the same periods."""
        started = np.array([math.nan if at is None else at])
        prices, index = self.periods(found, started, np.array([float(total_input)]))
        return prices[int(index[0])]

    def _resolve(self, found: _Model, moment: datetime, total_input: float) -> GenaiPrice:
        from genai_prices import types

        info = found.info
        model_price = info.get_prices(moment)
        flat = {
            key: _tier_rate(value, total_input) if isinstance(value, types.TieredPrices) else value
            for key, value in model_price.__dict__.items()
        }
        flat_price = types.ModelPrice(**flat)

        def total(**counts: int) -> Decimal:
            usage = types.Usage(**to_genai_usage(**counts))
            return Decimal(flat_price.calc_price(usage)["total_price"])

        fee = total()
        miss = total(input_tokens=_MILLION) - fee
        hit = total(cache_read_tokens=_MILLION) - fee
        write = total(cache_write_tokens=_MILLION) - fee
        output = total(output_tokens=_MILLION) - fee
        effective, window = "", ""
        if isinstance(info.prices, list):
            chosen = next((c for c in info.prices if c.prices is model_price), None)
            constraint = None if chosen is None else chosen.constraint
            if isinstance(constraint, types.StartDateConstraint):
                effective = constraint.start_date.isoformat()
            elif isinstance(constraint, types.TimeOfDateConstraint):
                window = f" {constraint.start_time:%H:%M}-{constraint.end_time:%H:%M} UTC"
        return GenaiPrice(
            provider=found.provider_id,
            model=info.id,
            cache_miss_input=miss,
            cache_hit_input=hit,
            output=output,
            cache_write=write,
            currency="USD",  # genai-prices' prices are all in USD
            effective=effective,
            source=f"genai-prices {self.version} {found.provider_id}/{info.id}{window}",
            per_request=fee,
        )


def _boundaries(info: Any) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Where a model's price can change: its conditional prices' start dates (epoch seconds), its
    daily windows' edges (seconds of the UTC day) and its tiers' input thresholds, each sorted."""
    from genai_prices import types

    conditions = info.prices if isinstance(info.prices, list) else []
    starts: set[float] = set()
    edges: set[float] = set()
    for conditional in conditions:
        constraint = conditional.constraint
        if isinstance(constraint, types.StartDateConstraint):
            starts.add(_midnight(constraint.start_date))
        elif isinstance(constraint, types.TimeOfDateConstraint):
            edges.update(_second_of_day(t) for t in (constraint.start_time, constraint.end_time))
    tiers = _tier_starts([c.prices for c in conditions] or [info.prices])
    return (
        np.array(sorted(starts), dtype=np.float64),
        np.array(sorted(edges), dtype=np.float64),
        np.array(sorted(tiers), dtype=np.float64),
    )


def _tier_starts(model_prices: list[Any]) -> set[int]:
    """The input thresholds of every tiered price among ``model_prices``."""
    from genai_prices import types

    starts: set[int] = set()
    for model_price in model_prices:
        for value in model_price.__dict__.values():
            if isinstance(value, types.TieredPrices):
                starts.update(tier.start for tier in value.tiers)
    return starts


def _tier_rate(value: Any, total_input: float) -> Decimal:
    """The rate of a genai-prices ``TieredPrices`` for a request of ``total_input`` input tokens
    (its own rule: the highest tier whose start the total exceeds, else the base)."""
    for tier in reversed(value.tiers):
        if total_input > tier.start:
            return Decimal(tier.price)
    return Decimal(value.base)


def _midnight(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


def _second_of_day(moment: Any) -> float:
    """A time of day (naive = UTC) as seconds after UTC midnight."""
    aware = datetime.combine(date(1970, 1, 1), moment)
    if aware.tzinfo is None:
        aware = aware.replace(tzinfo=UTC)
    return float(aware.timestamp()) % _DAY_S
