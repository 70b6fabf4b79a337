"""Shared pieces of the conformance kit's tests."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # skeleton.py, importable by name in tests and subprocesses
