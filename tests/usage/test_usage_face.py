"""The usage names on the public face load lazily: `import chunkscope` never imports pandas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import chunkscope as cs

SRC = Path(__file__).resolve().parents[2] / "src"


def test_import_chunkscope_and_the_protocol_do_not_import_pandas() -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(SRC)!r})\n"
        "import chunkscope, chunkscope.protocol, chunkscope.adapters\n"
        "chunkscope.collect, chunkscope.show\n"
        "assert 'pandas' not in sys.modules, 'pandas imported'\n"
        "assert 'pyarrow' not in sys.modules, 'pyarrow imported'\n"
        "chunkscope.UsageLog\n"
        "assert 'pandas' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_usage_names_are_on_the_face() -> None:
    for name in (
        "UsageLog",
        "summary",
        "PriceTable",
        "Price",
        "batch",
        "plot_usage",
        "read_parquet",
        "to_parquet",
        "read_recordings",
        "to_inclusive",
        "to_disjoint",
        "OTEL_ATTRIBUTES",
        "otel_sink",
        "to_otel",
    ):
        assert name in cs.__all__ and getattr(cs, name) is not None, name
