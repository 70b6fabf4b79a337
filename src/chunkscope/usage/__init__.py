"""The usage layer: attempts → pandas DataFrames, summaries, costs, plots, Parquet.

Imports pandas (and pyarrow/matplotlib where needed): install the ``usage``
extra. The protocol and adapters layers never import this package.
"""

from __future__ import annotations

from ._batch import BatchProgressWarning, batch, partial_results
from ._convert import OTEL_ATTRIBUTES, to_disjoint, to_inclusive, to_otel, to_otel_attributes
from ._dask import read_dsh_sessions, read_parquet_dask
from ._dsh import DshAttempt, DshLogError, DshProblem, DshSession, DshStep, read_dsh_session
from ._dsh_writer import DshLogWriter
from ._log import LoggedAdapter, UsageLog
from ._parquet import ParquetSink, read_parquet, read_recordings, to_parquet
from ._plots import plot_usage, tokens_per_call
from ._prices import DEEPSEEK_EXAMPLE, MAX_PRICE, Price, PriceTable, UnpricedModelWarning
from ._schema import COLUMNS, FINISH_KINDS, PHASES, USAGE_SOURCES, UsageSchemaError, coerce, empty_frame
from ._summary import SUMMARY_COLUMNS, errors_by_code, latency_percentiles, summary
from ._tags import expand_tags

__all__ = [
    "expand_tags",
    "tokens_per_call",
    "plot_usage",
    "to_otel_attributes",
    "to_otel",
    "to_inclusive",
    "to_disjoint",
    "OTEL_ATTRIBUTES",
    "batch",
    "BatchProgressWarning",
    "partial_results",
    "to_parquet",
    "read_recordings",
    "read_parquet",
    "ParquetSink",
    "COLUMNS",
    "DEEPSEEK_EXAMPLE",
    "FINISH_KINDS",
    "MAX_PRICE",
    "LoggedAdapter",
    "PHASES",
    "Price",
    "PriceTable",
    "SUMMARY_COLUMNS",
    "USAGE_SOURCES",
    "UnpricedModelWarning",
    "UsageLog",
    "UsageSchemaError",
    "coerce",
    "empty_frame",
    "errors_by_code",
    "latency_percentiles",
    "summary",
    # DeepSeek Harness session logs (issue 9, sections 7-8)
    "DshAttempt",
    "DshLogError",
    "DshLogWriter",
    "DshProblem",
    "DshSession",
    "DshStep",
    "read_dsh_session",
    "read_dsh_sessions",
    "read_parquet_dask",
]
