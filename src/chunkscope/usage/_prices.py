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

A table holds a dated history per model: each ``Price`` applies from its
``effective`` date (UTC midnight of an ISO date, or an ISO date-time) until
the next one's, and a row is costed at the price in effect at its
``started_at``. The oldest price also covers rows before its date (an
undated price is the oldest), and a row whose start time is unknown gets the
newest.
"""

from __future__ import annotations

import bisect
import json
import math
import threading
import tomllib
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from chunkscope.protocol import TokenUsage
from chunkscope.sources._json import strict_loads as strict_json_loads

from ._schema import categories

__all__ = ["DEEPSEEK_EXAMPLE", "MAX_PRICE", "Price", "PriceTable", "UnpricedModelWarning"]

MAX_PRICE = 1e9
"""The highest price per million tokens a ``Price`` takes (far above any real one, in any
currency): below it, every cost of a count a ``UsageLog`` holds (< 2**63) is a finite number."""


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
        for name in ("provider", "model", "currency", "effective", "source"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ValueError(f"price {name} must be a string, not {type(value).__name__}")
        for name in ("cache_miss_input", "cache_hit_input", "output", "cache_write"):
            value = getattr(self, name)
            if value is None and name == "cache_write":
                continue
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not 0 <= value <= MAX_PRICE:  # NaN and a 400-digit int fail here too
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

    Look-up: the exact ``(provider, model)``, else ``("*", model)``; within
    it, the price in effect at the row's start (see the module's note on dated
    prices). Load and
    save with ``PriceTable.load(path)`` / ``table.save(path)`` (``.toml`` or
    ``.json``: a list ``prices`` of the ``Price`` fields; saving TOML needs no
    library, reading it uses ``tomllib``).
    """

    def __init__(self, prices: Iterable[Price | Mapping[str, Any]] = ()) -> None:
        # per (provider, model): its prices, oldest first
        self._prices: dict[tuple[str, str], list[Price]] = {}
        self._warned: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        for price in prices:
            self.add(price if isinstance(price, Price) else Price(**dict(price)))

    def add(self, price: Price) -> None:
        """Add one model's price to its history (replacing the price of the same ``effective`` date)."""
        history = self._prices.setdefault((price.provider, price.model), [])
        moments = [known.effective_at for known in history]
        at = bisect.bisect_left(moments, price.effective_at)
        if at < len(history) and moments[at] == price.effective_at:
            history[at] = price
        else:
            history.insert(at, price)

    def __iter__(self) -> Any:
        return (price for history in self._prices.values() for price in history)

    def __len__(self) -> int:
        return sum(len(history) for history in self._prices.values())

    def __repr__(self) -> str:
        return f"PriceTable({len(self)} prices)"

    # Dask: a table is shipped to workers (pickled without its lock) and hashed by its prices.
    def __getstate__(self) -> dict[str, Any]:
        return {"prices": list(self)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["prices"])  # type: ignore[misc]

    def __dask_tokenize__(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def history(self, provider: str, model: str) -> list[Price]:
        """Every price of ``provider``/``model`` (or of ``*``/``model``), oldest first; [] when none."""
        return list(self._prices.get((provider, model)) or self._prices.get(("*", model)) or ())

    def price(self, provider: str, model: str, at: float | None = None) -> Price | None:
        """The price for ``provider``/``model`` (or ``*``/``model``) in effect at ``at`` (seconds since
        the epoch; None: the newest), else None. Before the oldest price's date, the oldest."""
        history = self._prices.get((provider, model)) or self._prices.get(("*", model))
        return _in_effect(history, at) if history else None

    def _found(self, provider: str, model: str) -> list[Price]:
        found = self._prices.get((provider, model)) or self._prices.get(("*", model))
        if not found:
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
            return []
        return found

    def _lookup(self, provider: str, model: str, at: float | None) -> Price | None:
        history = self._found(provider, model)
        return _in_effect(history, at) if history else None

    def quote(
        self, provider: str, model: str, usage: TokenUsage | None, *, at: float | None = None
    ) -> tuple[float, str] | None:
        """``(cost, currency)`` of one attempt started at ``at`` (seconds since the epoch; None: the
        newest price); None without usage or without a price (warned once)."""
        if usage is None:
            return None
        found = self._lookup(provider, model, at)
        return None if found is None else (found.cost(usage), found.currency)

    def cost_of(
        self, provider: str, model: str, usage: TokenUsage | None, *, at: float | None = None
    ) -> float | None:
        """The cost of one attempt started at ``at``; None without usage or without a price (warned once
        per model)."""
        quoted = self.quote(provider, model, usage, at=at)
        return None if quoted is None else quoted[0]

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
        # one row of prices per distinct pair and price version: miss, hit, write, output; the last
        # row is NaN (unpriced, or no usage)
        versions: list[Price] = []
        first = np.full(len(present), -1, dtype=np.int64)  # each pair's first row in ``versions``
        last = np.full(len(present), -1, dtype=np.int64)  # and its last (the newest price)
        dated: list[tuple[int, list[Price]]] = []  # pairs with a price history: costed by start time
        p_names = provider.cat.categories
        m_names = model.cat.categories
        for k, code in enumerate(present):
            history = self._found(str(p_names[code // width]), str(m_names[code % width]))
            if not history:
                continue
            first[k] = len(versions)
            versions.extend(history)
            last[k] = len(versions) - 1
            if len(history) > 1:
                dated.append((k, history))
        currencies: list[str] = []
        table = np.full((len(versions) + 1, 4), np.nan)
        currency_of = np.full(len(versions) + 1, -1, dtype=np.int32)
        for k, found in enumerate(versions):
            table[k] = (found.cache_miss_input, found.cache_hit_input, found.write, found.output)
            if found.currency not in currencies:
                currencies.append(found.currency)
            currency_of[k] = currencies.index(found.currency)
        unpriced = len(versions)
        # Each row of a priced pair gets its pair's newest price, unless the pair has a history
        # (then the price in effect at the row's start, below).
        newest = np.where(first >= 0, last, unpriced)
        row_pair = np.full(n, unpriced, dtype=np.int64)
        row_pair[has_usage] = newest[inverse]
        if dated:
            started = _start_seconds(frame["started_at"])[has_usage]
            positions = np.flatnonzero(has_usage)
            for k, history in dated:
                rows = inverse == k
                moments = np.array([price.effective_at for price in history[1:]])
                at = started[rows]
                version = np.searchsorted(moments, at, side="right")
                version[np.isnan(at)] = len(history) - 1  # an unknown start: the newest price
                row_pair[positions[rows]] = first[k] + version
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
        for price in self:
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
            data = tomllib.loads(text) if source.suffix.lower() == ".toml" else strict_json_loads(text)
        except RecursionError:  # tomllib's arrays recurse; the JSON reader reports its own depth
            raise ValueError(f"{source}: not a price table (JSON nested too deeply)") from None
        except ValueError as exc:  # TOMLDecodeError and JSONDecodeError are ValueErrors
            raise ValueError(f"{source}: not a price table ({exc})") from None
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


def _in_effect(history: list[Price], at: float | None) -> Price:
    """The price of ``history`` (oldest first, not empty) in effect at ``at``; None: the newest."""
    if at is None or len(history) == 1:
        return history[-1]
    moments = [known.effective_at for known in history]
    return history[max(bisect.bisect_right(moments, at) - 1, 0)]


def _start_seconds(column: pd.Series) -> np.ndarray[Any, Any]:
    """``started_at`` as float seconds since the epoch, NaN where unknown."""
    stamps = pd.to_datetime(column, utc=True)
    seconds = (stamps - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(seconds=1)
    return np.asarray(seconds.to_numpy(dtype=np.float64, na_value=np.nan))


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
