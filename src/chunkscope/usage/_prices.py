"""``PriceTable``: what a million tokens of each kind cost, per provider and model.

Costs follow the disjoint counts::

    cost = (input_tokens * cache_miss_input
            + cache_read_tokens * cache_hit_input
            + cache_write_tokens * cache_write       # cache_miss_input when the table has none
            + output_tokens * output) / 1_000_000

``reasoning_tokens`` are part of ``output_tokens`` and are not charged twice.
An attempt without usage has no cost (``<NA>``); a model the table does not
know has no cost either, and the first time each such model is met one
``UnpricedModelWarning`` names it. Never a silent 0.
"""

from __future__ import annotations

import json
import math
import threading
import tomllib
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from chunkscope.protocol import TokenUsage

from ._schema import categories

__all__ = ["DEEPSEEK_EXAMPLE", "Price", "PriceTable", "UnpricedModelWarning"]


class UnpricedModelWarning(UserWarning):
    """A usage row names a provider/model the ``PriceTable`` has no price for (its cost stays missing)."""


@dataclass(frozen=True)
class Price:
    """One model's prices, per million tokens, in ``currency``, valid from ``effective`` (ISO date)."""

    provider: str  # "*" matches any provider
    model: str
    cache_miss_input: float
    cache_hit_input: float
    output: float
    cache_write: float | None = None  # None: cache writes cost what a cache-miss input token does
    currency: str = "USD"
    effective: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("cache_miss_input", "cache_hit_input", "output", "cache_write"):
            value = getattr(self, name)
            if value is None and name == "cache_write":
                continue
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value < 0:
                raise ValueError(f"price {name} of {self.provider}/{self.model} must be a finite number >= 0")

    @property
    def write(self) -> float:
        """The cache-write price in effect."""
        return self.cache_miss_input if self.cache_write is None else self.cache_write

    def cost(self, usage: TokenUsage) -> float:
        """The cost of one attempt's usage."""
        return (
            usage.input_tokens * self.cache_miss_input
            + (usage.cache_read_tokens or 0) * self.cache_hit_input
            + (usage.cache_write_tokens or 0) * self.write
            + usage.output_tokens * self.output
        ) / 1_000_000


class PriceTable:
    """Prices per provider and model; ``add_costs(frame)`` fills a usage frame's ``cost`` and ``currency``.

    Look-up: the exact ``(provider, model)``, else ``("*", model)``. Load and
    save with ``PriceTable.load(path)`` / ``table.save(path)`` (``.toml`` or
    ``.json``: a list ``prices`` of the ``Price`` fields; saving TOML needs no
    library, reading it uses ``tomllib``).
    """

    def __init__(self, prices: Iterable[Price | Mapping[str, Any]] = ()) -> None:
        self._prices: dict[tuple[str, str], Price] = {}
        self._warned: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        for price in prices:
            self.add(price if isinstance(price, Price) else Price(**dict(price)))

    def add(self, price: Price) -> None:
        """Add (or replace) one model's price."""
        self._prices[(price.provider, price.model)] = price

    def __iter__(self) -> Any:
        return iter(self._prices.values())

    def __len__(self) -> int:
        return len(self._prices)

    def __repr__(self) -> str:
        return f"PriceTable({len(self._prices)} prices)"

    # Dask: a table is shipped to workers (pickled without its lock) and hashed by its prices.
    def __getstate__(self) -> dict[str, Any]:
        return {"prices": list(self._prices.values())}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["prices"])  # type: ignore[misc]

    def __dask_tokenize__(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def price(self, provider: str, model: str) -> Price | None:
        """The price for ``provider``/``model`` (or for ``*``/``model``), else None."""
        return self._prices.get((provider, model)) or self._prices.get(("*", model))

    def _lookup(self, provider: str, model: str) -> Price | None:
        found = self.price(provider, model)
        if found is None:
            with self._lock:
                key = (provider, model)
                first = key not in self._warned
                self._warned.add(key)
            if first:
                warnings.warn(
                    f"no price for provider {provider!r} model {model!r}: its cost is left missing",
                    UnpricedModelWarning,
                    stacklevel=4,
                )
        return found

    def quote(self, provider: str, model: str, usage: TokenUsage | None) -> tuple[float, str] | None:
        """``(cost, currency)`` of one attempt; None without usage or without a price (warned once)."""
        if usage is None:
            return None
        found = self._lookup(provider, model)
        return None if found is None else (found.cost(usage), found.currency)

    def cost_of(self, provider: str, model: str, usage: TokenUsage | None) -> float | None:
        """The cost of one attempt; None without usage or without a price (warned once per model)."""
        if usage is None:
            return None
        found = self._lookup(provider, model)
        return None if found is None else found.cost(usage)

    def add_costs(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with ``cost`` (Float64) and ``currency`` (category) filled from this table.

        Vectorised over the distinct provider/model pairs (category codes, no
        per-row Python). Rows without usage and rows of an unpriced model get
        ``<NA>``; each unpriced model is warned about once. A Dask DataFrame
        gets the same, partition by partition (lazily).
        """
        if not isinstance(frame, pd.DataFrame) and hasattr(frame, "map_partitions"):
            meta = self.add_costs(frame._meta)
            return frame.map_partitions(self.add_costs, meta=meta)
        n = len(frame)
        provider = frame["provider"].astype("category")
        model = frame["model"].astype("category")
        p_codes = provider.cat.codes.to_numpy(dtype=np.int64)
        m_codes = model.cat.codes.to_numpy(dtype=np.int64)
        width = max(len(model.cat.categories), 1)
        pair = p_codes * width + m_codes
        has_usage = frame["input_tokens"].notna().to_numpy() & (p_codes >= 0) & (m_codes >= 0)
        present, inverse = np.unique(pair[has_usage], return_inverse=True)
        # one row of prices per distinct pair: miss, hit, write, output; NaN for unpriced
        table = np.full((len(present) + 1, 4), np.nan)
        currencies: list[str] = []
        currency_of = np.full(len(present) + 1, -1, dtype=np.int32)
        p_names = provider.cat.categories
        m_names = model.cat.categories
        for k, code in enumerate(present):
            found = self._lookup(str(p_names[code // width]), str(m_names[code % width]))
            if found is None:
                continue
            table[k] = (found.cache_miss_input, found.cache_hit_input, found.write, found.output)
            if found.currency not in currencies:
                currencies.append(found.currency)
            currency_of[k] = currencies.index(found.currency)
        row_pair = np.full(n, len(present), dtype=np.int64)  # the NaN row for rows without usage
        row_pair[has_usage] = inverse
        prices = table[row_pair]
        counts = [
            _zero_filled(frame[name])
            for name in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
        ]
        cost = sum(counts[i] * prices[:, i] for i in range(4)) / 1_000_000
        known = ~np.isnan(cost)
        return frame.assign(
            cost=pd.arrays.FloatingArray(np.where(known, cost, 0.0), ~known),
            currency=pd.Categorical.from_codes(currency_of[row_pair], categories(currencies)),
        )

    # --- files ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """``{"prices": [...]}`` as saved."""
        rows = []
        for price in self._prices.values():
            row = {k: v for k, v in asdict(price).items() if v is not None}
            rows.append(row)
        return {"prices": rows}

    def save(self, path: str | Path) -> Path:
        """Write the table as ``.toml`` or ``.json`` (by the file's suffix)."""
        target = Path(path)
        data = self.to_dict()
        if target.suffix.lower() == ".toml":
            target.write_text(_to_toml(data["prices"]), encoding="utf-8")
        else:
            target.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> PriceTable:
        """Read a table saved by ``save`` (``.toml`` or ``.json``); a bad file raises ``ValueError``."""
        source = Path(path)
        text = source.read_text(encoding="utf-8")
        try:
            data = tomllib.loads(text) if source.suffix.lower() == ".toml" else json.loads(text)
        except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{source}: not a price table ({exc})") from exc
        rows = data.get("prices") if isinstance(data, dict) else None
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ValueError(f"{source}: a price table needs a list 'prices' of tables")
        try:
            return cls(rows)
        except TypeError as exc:
            raise ValueError(f"{source}: a price entry has unknown or missing fields ({exc})") from exc

    @classmethod
    def deepseek_example(cls) -> PriceTable:
        """The documented example table (``DEEPSEEK_EXAMPLE``): DeepSeek's published USD prices, dated."""
        return cls(DEEPSEEK_EXAMPLE)


def _zero_filled(column: pd.Series) -> np.ndarray[Any, Any]:
    """A count column as float64 with missing counts as 0 (fast for the masked Int64 columns)."""
    array = column.array
    if isinstance(array, pd.arrays.IntegerArray):
        values: np.ndarray[Any, Any] = np.asarray(array._data, dtype=np.float64)
        return np.where(array._mask, 0.0, values)
    return np.asarray(column.fillna(0).to_numpy(dtype=np.float64))


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    return repr(float(value)) if isinstance(value, float) else str(value)


def _to_toml(rows: list[dict[str, Any]]) -> str:
    out = []
    for row in rows:
        out.append("[[prices]]")
        out.extend(f"{key} = {_toml_value(value)}" for key, value in row.items())
        out.append("")
    return "\n".join(out)


_DEEPSEEK_SOURCE = "https://api-docs.deepseek.com/quick_start/pricing-details-usd"

DEEPSEEK_EXAMPLE: tuple[Price, ...] = (
    Price(
        provider="*",
        model="deepseek-chat",
        cache_hit_input=0.07,
        cache_miss_input=0.27,
        output=1.10,
        currency="USD",
        effective="2025-02-08",
        source=_DEEPSEEK_SOURCE,
    ),
    Price(
        provider="*",
        model="deepseek-reasoner",
        cache_hit_input=0.14,
        cache_miss_input=0.55,
        output=2.19,
        currency="USD",
        effective="2025-02-08",
        source=_DEEPSEEK_SOURCE,
    ),
)
"""DeepSeek's published standard prices (USD per million tokens) for ``deepseek-chat``
(DeepSeek-V3) and ``deepseek-reasoner`` (DeepSeek-R1), as listed on the pricing page
above, in effect after the launch discount ended on 2025-02-08 16:00 UTC. An example,
not a live feed: DeepSeek has changed these prices since; check the page and save your
own table. DeepSeek charges no separate cache-write price (a write is a cache miss)."""
