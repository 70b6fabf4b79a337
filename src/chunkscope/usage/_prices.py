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
import os
import sys
import threading
import tomllib
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from decimal import Decimal
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pandas as pd

from chunkscope.protocol import TokenUsage
from chunkscope.sources import strict_loads as strict_json_loads

from ._genai_prices import GenaiPrices
from ._price import MAX_PRICE, Price, as_decimal
from ._schema import categories

__all__ = [
    "DEEPSEEK_EXAMPLE",
    "GENAI_PRICES",
    "MAX_PRICE",
    "Price",
    "PriceTable",
    "UnpricedModelWarning",
    "as_price_table",
]

GENAI_PRICES = "genai-prices"
"""The name that stands for ``PriceTable.from_genai_prices()`` wherever a ``PriceTable`` is taken."""

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the chunkscope package


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside chunkscope, for a warning raised in the caller
    of this function: the user's line (``record``, ``add_costs``, ``summary``...), however deep
    the package's own calls went between it and the warning."""
    level = 1
    frame: FrameType | None = sys._getframe(1)  # the function that warns: stacklevel 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE + os.sep):
        frame, level = frame.f_back, level + 1
    return level


class UnpricedModelWarning(UserWarning):
    """A usage row names a provider/model the ``PriceTable`` has no price for (its cost stays missing)."""


class PriceTable:
    """Prices per provider and model; ``add_costs(frame)`` fills a usage frame's ``cost`` and ``currency``.

    Look-up: the exact ``(provider, model)``, else ``("*", model)``; within
    it, the price in effect at the row's start (see the module's note on dated
    prices). Load and
    save with ``PriceTable.load(path)`` / ``table.save(path)`` (``.toml`` or
    ``.json``: a list ``prices`` of the ``Price`` fields; saving TOML needs no
    library, reading it uses ``tomllib``).
    """

    def __init__(
        self,
        prices: Iterable[Price | Mapping[str, Any]] = (),
        *,
        cost_type: type[float] | type[Decimal] = float,
        genai: GenaiPrices | None = None,
    ) -> None:
        if cost_type is not float and cost_type is not Decimal:
            raise ValueError(f"cost_type must be float or decimal.Decimal, not {cost_type!r}")
        self.cost_type = cost_type
        # per (provider, model): its prices, oldest first
        self._prices: dict[tuple[str, str], list[Price]] = {}
        self._genai = genai  # the fallback for models this table has no price of
        self._warned: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        for price in prices:
            self.add(price if isinstance(price, Price) else Price(**dict(price)))

    @classmethod
    def from_genai_prices(
        cls, *, overrides: PriceTable | None = None, cost_type: type[float] | type[Decimal] = float
    ) -> PriceTable:
        """Every model genai-prices (pydantic's price data, the ``prices`` extra) knows, with its dated,
        time-of-day and tiered prices; ``overrides``' prices win model by model.

        The same as ``overrides | PriceTable.from_genai_prices()``. A row's provider is
        genai-prices' provider id (``openai``, ``anthropic``, ``google``, ``deepseek``...); an
        unknown provider falls back to the model name alone. The frame's ``price_source`` names
        the genai-prices version, provider and model that priced a row.
        """
        own = list(overrides) if overrides is not None else []
        return cls(own, cost_type=cost_type, genai=GenaiPrices())

    def __or__(self, other: PriceTable) -> PriceTable:
        """A table with this table's prices and, for the models it lacks, ``other``'s (and its
        genai-prices fallback, if either has one): ``my_prices | PriceTable.from_genai_prices()``."""
        if not isinstance(other, PriceTable):
            return NotImplemented
        merged = PriceTable(self, cost_type=self.cost_type, genai=self._genai or other._genai)
        for key, history in other._prices.items():
            if key not in self._prices:
                for price in history:
                    merged.add(price)
        return merged

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
        """The table's own prices (not genai-prices' models)."""
        return (price for history in self._prices.values() for price in history)

    def __len__(self) -> int:
        return sum(len(history) for history in self._prices.values())

    def __repr__(self) -> str:
        genai = f" over genai-prices {self._genai.version}" if self._genai is not None else ""
        return f"PriceTable({len(self)} prices{genai})"

    # Dask: a table is shipped to workers (pickled without its lock) and hashed by its prices;
    # genai-prices is re-read from the installed package on the other side.
    def __getstate__(self) -> dict[str, Any]:
        return {"prices": list(self), "cost_type": self.cost_type, "genai": self._genai is not None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        genai = None
        if state.get("genai"):
            genai = GenaiPrices()
        self.__init__(state["prices"], cost_type=state.get("cost_type", float), genai=genai)  # type: ignore[misc]

    def __dask_tokenize__(self) -> str:
        genai = self._genai.version if self._genai is not None else None
        return json.dumps([self.to_dict(), genai, self.cost_type.__name__], sort_keys=True, default=str)

    def history(self, provider: str, model: str) -> list[Price]:
        """Every price of ``provider``/``model`` (or of ``*``/``model``), oldest first; [] when none."""
        return list(self._prices.get((provider, model)) or self._prices.get(("*", model)) or ())

    def price(self, provider: str, model: str, at: float | None = None) -> Price | None:
        """The price for ``provider``/``model`` (or ``*``/``model``) in effect at ``at`` (seconds since
        the epoch; None: the newest), else None. Before the oldest price's date, the oldest."""
        history = self._prices.get((provider, model)) or self._prices.get(("*", model))
        return _in_effect(history, at) if history else None

    def _warn_unpriced(self, provider: str, model: str) -> None:
        with self._lock:
            key = (provider, model)
            first = key not in self._warned
            self._warned.add(key)
        if first:
            warnings.warn(
                f"no price for provider {provider!r} model {model!r}: its cost is left missing",
                UnpricedModelWarning,
                stacklevel=_caller_level(),
            )

    def _lookup(self, provider: str, model: str, usage: TokenUsage, at: float | None) -> Price | None:
        history = self._prices.get((provider, model)) or self._prices.get(("*", model))
        if history:
            return _in_effect(history, at)
        found = self._genai.model(provider, model) if self._genai is not None else None
        if found is not None and self._genai is not None:
            cached = (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
            total_input = usage.input_tokens + cached
            return self._genai.price_at(found, at, total_input)
        self._warn_unpriced(provider, model)
        return None

    def quote(
        self, provider: str, model: str, usage: TokenUsage | None, *, at: float | None = None
    ) -> tuple[float, str] | None:
        """``(cost, currency)`` of one attempt started at ``at`` (seconds since the epoch; None: the
        newest price), as a float (a ``UsageLog``'s running total); None without usage or without a
        price (warned once)."""
        if usage is None:
            return None
        found = self._lookup(provider, model, usage, at)
        return None if found is None else (float(found.cost(usage)), found.currency)

    def cost_of(
        self, provider: str, model: str, usage: TokenUsage | None, *, at: float | None = None
    ) -> float | Decimal | None:
        """The cost of one attempt started at ``at``, of the table's ``cost_type``; None without usage
        or without a price (warned once per model)."""
        if usage is None:
            return None
        found = self._lookup(provider, model, usage, at)
        return None if found is None else found.cost(usage, self.cost_type)

    def add_costs(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with ``cost``, ``currency``, ``price_source`` and ``price_effective`` filled in.

        ``cost`` is Float64, or object Decimals for ``cost_type=Decimal``; ``price_source``
        (category) is the price's ``source`` (for genai-prices: its version, provider and
        model) and ``price_effective`` (category) the date it applies from ("" when undated).
        Vectorised over the distinct provider/model pairs and price periods (category codes,
        no per-row Python). Rows without usage and rows of an unpriced model get ``<NA>``;
        each unpriced model is warned about once. A Dask DataFrame gets the same, partition
        by partition (lazily).
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
        inverse = inverse.reshape(-1)
        counts = [
            _zero_filled(frame[name])
            for name in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
        ]
        versions: list[Price] = []  # every price a row is costed at; index len(versions): none
        row_version = np.full(n, -1, dtype=np.int64)
        positions = np.flatnonzero(has_usage)
        starts = _Starts(frame)
        p_names = provider.cat.categories
        m_names = model.cat.categories
        for k, code in enumerate(present):
            rows = positions[inverse == k]
            name_p, name_m = str(p_names[code // width]), str(m_names[code % width])
            priced = self._pair_versions(name_p, name_m, rows, starts, counts)
            if priced is None:
                continue
            periods, version = priced
            row_version[rows] = len(versions) + version
            versions.extend(periods)
        row_version[row_version < 0] = len(versions)
        return frame.assign(
            cost=self._costs(versions, row_version, counts),
            currency=_price_column(row_version, [p.currency for p in versions]),
            price_source=_price_column(row_version, [p.source for p in versions]),
            price_effective=_price_column(row_version, [p.effective for p in versions]),
        )

    def _pair_versions(
        self,
        provider: str,
        model: str,
        rows: np.ndarray[Any, Any],
        starts: _Starts,
        counts: list[np.ndarray[Any, Any]],
    ) -> tuple[list[Price], np.ndarray[Any, Any]] | None:
        """The prices of one provider/model pair over its ``rows`` and each row's index into them;
        None (warned once) when neither the table nor genai-prices prices it."""
        history = self._prices.get((provider, model)) or self._prices.get(("*", model))
        if history:
            if len(history) == 1:
                return list(history), np.zeros(len(rows), dtype=np.int64)
            at = starts.seconds()[rows]
            moments = np.array([price.effective_at for price in history[1:]])
            version = np.searchsorted(moments, at, side="right")
            version[np.isnan(at)] = len(history) - 1  # an unknown start: the newest price
            return list(history), version
        found = self._genai.model(provider, model) if self._genai is not None else None
        if found is None or self._genai is None:
            self._warn_unpriced(provider, model)
            return None
        total_input = counts[0][rows] + counts[1][rows] + counts[2][rows]
        periods, version = self._genai.periods(found, starts.seconds()[rows], total_input)
        return list(periods), version

    def _costs(
        self, versions: list[Price], row_version: np.ndarray[Any, Any], counts: list[np.ndarray[Any, Any]]
    ) -> Any:
        """Each row's cost at its price version (index ``len(versions)``: none, ``<NA>``)."""
        unpriced = len(versions)
        known = row_version < unpriced
        if self.cost_type is Decimal:
            rates = np.empty((unpriced + 1, 5), dtype=object)
            for k, price in enumerate(versions):
                rates[k] = [
                    as_decimal(r)
                    for r in (price.cache_miss_input, price.cache_hit_input, price.write, price.output)
                ] + [as_decimal(price.request)]
            out = np.full(len(row_version), pd.NA, dtype=object)
            rows = np.flatnonzero(known)
            if len(rows):
                picked = rates[row_version[rows]]
                exact = sum(
                    (counts[i][rows].astype(np.int64).astype(object) * picked[:, i] for i in range(4)),
                    np.zeros(len(rows), dtype=object),
                )
                out[rows] = exact / 1_000_000 + picked[:, 4]
            return pd.array(out, dtype=object)
        table = np.full((unpriced + 1, 5), np.nan)
        for k, price in enumerate(versions):
            five = (price.cache_miss_input, price.cache_hit_input, price.write, price.output, price.request)
            table[k] = [float(rate) for rate in five]
        prices = table[row_version]
        cost = sum(counts[i] * prices[:, i] for i in range(4)) / 1_000_000 + prices[:, 4]
        ok = ~np.isnan(cost)
        return pd.arrays.FloatingArray(np.where(ok, cost, 0.0), ~ok)

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
            text = json.dumps(data, indent=2, ensure_ascii=False, default=float)  # a Decimal as a number
            target.write_text(text + "\n", encoding="utf-8")
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
            raise ValueError(f"{source}: a price entry has unknown or missing fields ({exc})") from None
        except ValueError as exc:  # a bad price: which file, then which price and why
            raise ValueError(f"{source}: {exc}") from None

    @classmethod
    def deepseek_example(cls) -> PriceTable:
        """The documented example table (``DEEPSEEK_EXAMPLE``): DeepSeek's published USD prices, dated."""
        return cls(DEEPSEEK_EXAMPLE)


def as_price_table(prices: PriceTable | str | None) -> PriceTable | None:
    """A ``prices=`` argument as a table: a ``PriceTable``, ``"genai-prices"``, or None."""
    if prices is None or isinstance(prices, PriceTable):
        return prices
    if prices == GENAI_PRICES:
        return PriceTable.from_genai_prices()
    raise ValueError(f'prices must be a PriceTable, "{GENAI_PRICES}" or None, not {prices!r}')


def _in_effect(history: list[Price], at: float | None) -> Price:
    """The price of ``history`` (oldest first, not empty) in effect at ``at``; None: the newest."""
    if at is None or len(history) == 1:
        return history[-1]
    moments = [known.effective_at for known in history]
    return history[max(bisect.bisect_right(moments, at) - 1, 0)]


class _Starts:
    """A frame's ``started_at`` as seconds, converted on first need only (most tables never need it)."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame
        self._seconds: np.ndarray[Any, Any] | None = None

    def seconds(self) -> np.ndarray[Any, Any]:
        if self._seconds is None:
            self._seconds = _start_seconds(self._frame["started_at"])
        return self._seconds


def _price_column(row_version: np.ndarray[Any, Any], values: list[str]) -> pd.Categorical:
    """A category column: each row's value of its price version (the last index: ``<NA>``)."""
    names = categories(sorted(set(values)))
    lookup = np.array([int(names.get_loc(v)) for v in values] + [-1], dtype=np.int32)
    return pd.Categorical.from_codes(lookup[row_version], names)


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
    return repr(float(value)) if isinstance(value, float) else str(value)  # a Decimal as written


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
