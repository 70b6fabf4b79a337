"""The usage layer: attempts → pandas DataFrames, summaries, costs, plots, Parquet.

Imports pandas (and pyarrow/matplotlib where needed): install the ``usage``
extra. The protocol and adapters layers never import this package. Session
logs are read by ``chunkscope.sources`` (its names re-exported here); this layer's
``read_dsh_session`` gives its sessions their frame (``DshSession.to_frame``).

What the layer raises and warns (session logs raise ``cs.SourceError``'s ``DshLogError``)::

    ValueError
     └── UsageSchemaError        a file read as a usage frame whose columns are not one (.column)
    UserWarning
     └── UnpricedModelWarning    a priced log met a model its PriceTable has no price for

``batch`` moved to the runtime layer (``chunkscope.runtime.batch``, still ``cs.batch``); its old
path here warns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chunkscope._extras import require_modules

# A face imported directly (``from chunkscope.usage import summary``) names its extra in one line too.
require_modules("chunkscope.usage", "numpy", "pandas", "pyarrow")

from chunkscope.sources.dsh import (
    DshAttempt,
    DshLogError,
    DshLogWriter,
    DshProblem,
    DshSession,
    DshStep,
)

from ._cache_report import (
    CACHE_GRANULARITY,
    CACHE_REPORT_COLUMNS,
    ESTIMATE_RELATIVE_ERROR,
    VERDICTS,
    cache_report,
)
from ._cadence import CADENCE_COLUMNS, STALL_COLUMNS, Cadence, cadence
from ._convert import (
    OTEL_ATTRIBUTES,
    inclusive_input,
    to_disjoint,
    to_inclusive,
    to_otel_attributes,
    to_otel_columns,
)
from ._dask import read_parquet_dask
from ._dsh_frame import read_dsh_session, read_dsh_sessions, session_frame
from ._llm_frame import read_llm_logs, record_llm_logs
from ._log import LoggedAdapter, UsageLog
from ._parquet import ParquetSink, read_parquet, to_parquet
from ._plots import plot_usage, tokens_per_call
from ._prices import DEEPSEEK_EXAMPLE, MAX_PRICE, Price, PriceTable, UnpricedModelWarning
from ._recordings import parse_started, read_recordings
from ._schema import (
    COLUMNS,
    FINISH_KINDS,
    GAP_COLUMNS,
    PHASES,
    USAGE_SOURCES,
    UsageSchemaError,
    coerce,
    empty_frame,
)
from ._summary import SUMMARY_COLUMNS, errors_by_code, latency_percentiles, summary
from ._tags import expand_tags

if TYPE_CHECKING:
    from ._otel import OtelSink, otel_sink, to_otel

__all__ = [
    # stream cadence (issue 27): gaps between chunks, stalls, a suggested idle timeout
    "cadence",
    "Cadence",
    "CADENCE_COLUMNS",
    "STALL_COLUMNS",
    "GAP_COLUMNS",
    "expand_tags",
    "tokens_per_call",
    "plot_usage",
    "to_otel_attributes",
    "to_otel_columns",
    "inclusive_input",
    # OpenTelemetry GenAI spans (issue 18): the "otel" extra, loaded on first use
    "otel_sink",
    "to_otel",
    "OtelSink",
    "to_inclusive",
    "to_disjoint",
    "OTEL_ATTRIBUTES",
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
    "session_frame",
    "read_parquet_dask",
    # the llm CLI's logs.db (issue 18)
    "read_llm_logs",
    "record_llm_logs",
    # a recording header's start time, as the command line's usage frames read it
    "parse_started",
    # prompt-cache forensics (issue 27)
    "cache_report",
    "CACHE_REPORT_COLUMNS",
    "CACHE_GRANULARITY",
    "ESTIMATE_RELATIVE_ERROR",
    "VERDICTS",
]

_OTEL_NAMES = frozenset({"otel_sink", "to_otel", "OtelSink"})
_MOVED_TO_RUNTIME = frozenset({"batch", "BatchProgressWarning", "partial_results"})


def __getattr__(name: str) -> Any:
    if name in _MOVED_TO_RUNTIME:
        import warnings

        warnings.warn(
            f"chunkscope.usage.{name} is deprecated: use chunkscope.runtime.{name} "
            f"(from chunkscope.runtime import {name})",
            DeprecationWarning,
            stacklevel=2,
        )
        import chunkscope.runtime as runtime

        return getattr(runtime, name)
    # The OpenTelemetry names load on first use: the rest of the usage layer works without the extra.
    if name not in _OTEL_NAMES:
        raise AttributeError(f"module 'chunkscope.usage' has no attribute {name!r}")
    from chunkscope._extras import needs_extra

    with needs_extra(f"chunkscope.usage.{name}"):
        from . import _otel
    value = getattr(_otel, name)
    globals()[name] = value
    return value
