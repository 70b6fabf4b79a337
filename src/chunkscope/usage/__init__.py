"""The usage layer: attempts → pandas DataFrames, summaries, costs, plots, Parquet.

Imports pandas (and pyarrow/matplotlib where needed): install the ``usage``
extra. The protocol and adapters layers never import this package. Session
logs are read by ``chunkscope.sources`` (re-exported here); importing this
package binds their frame projection, ``DshSession.to_frame``.

What the layer raises and warns (session logs raise ``cs.SourceError``'s ``DshLogError``)::

    ValueError
     └── UsageSchemaError        a file read as a usage frame whose columns are not one (.column)
    UserWarning
     └── UnpricedModelWarning    a priced log met a model its PriceTable has no price for
    RuntimeWarning
     └── BatchProgressWarning    batch's progress callback raised: warned once, not called again
"""

from __future__ import annotations

from chunkscope.sources.dsh import (
    DshAttempt,
    DshLogError,
    DshLogWriter,
    DshProblem,
    DshSession,
    DshStep,
    bind_frame,
    read_dsh_session,
)

from ._batch import BatchProgressWarning, batch, partial_results
from ._convert import OTEL_ATTRIBUTES, to_disjoint, to_inclusive, to_otel, to_otel_attributes
from ._dask import read_dsh_sessions, read_parquet_dask
from ._dsh_frame import session_frame
from ._log import LoggedAdapter, UsageLog
from ._parquet import ParquetSink, read_parquet, read_recordings, to_parquet
from ._plots import plot_usage, tokens_per_call
from ._prices import DEEPSEEK_EXAMPLE, MAX_PRICE, Price, PriceTable, UnpricedModelWarning
from ._schema import COLUMNS, FINISH_KINDS, PHASES, USAGE_SOURCES, UsageSchemaError, coerce, empty_frame
from ._summary import SUMMARY_COLUMNS, errors_by_code, latency_percentiles, summary
from ._tags import expand_tags

# The session-log reader (sources) needs no pandas; its usage frame is this layer's.
bind_frame(session_frame)

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
