"""Tags: stored as one category column of compact JSON; ``expand_tags`` makes a column per key."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pandas as pd

from ._schema import categories

__all__ = ["expand_tags"]


def expand_tags(
    frame: pd.DataFrame, keys: Iterable[str] | None = None, *, prefix: str = "tag."
) -> pd.DataFrame:
    """``frame`` with one category column ``tag.<key>`` per tag key (all keys seen, or ``keys``).

    Rows without that tag read ``<NA>``. Each distinct tag set is parsed once,
    so this is cheap however many rows share it. Then, e.g.,
    ``summary(expand_tags(frame), by=["tag.experiment"])``.
    """
    tags = frame["tags"].astype("category")
    parsed = [json.loads(text) for text in tags.cat.categories]
    wanted = list(keys) if keys is not None else sorted({key for item in parsed for key in item})
    codes = tags.cat.codes.to_numpy()
    out = frame.copy()
    for key in wanted:
        out[f"{prefix}{key}"] = _tag_column([item.get(key) for item in parsed], codes)
    return out


def _tag_column(values: list[Any], codes: Any) -> pd.Categorical:
    """One tag key's column: ``values`` holds its value in each distinct tag set (None: absent),
    ``codes`` each row's tag set (-1: no tags)."""
    present = sorted({v for v in values if v is not None})
    index = {value: n for n, value in enumerate(present)}
    mapping = pd.array([index[v] if v is not None else -1 for v in values] + [-1], dtype="int32")
    per_row = mapping.to_numpy()[codes]  # code -1 (no tags) picks the trailing -1
    return pd.Categorical.from_codes(per_row, categories(present))
