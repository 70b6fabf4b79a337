"""``module:factory`` → the factory, with one clear sentence for every way that can fail."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from chunkscope.protocol.shared import type_phrase

from ._errors import ConformanceError

__all__ = ["load_factory"]


def load_factory(target: str) -> Callable[[str, str], Any]:
    """The callable ``target`` names (``package.module:name``, ``name`` may be dotted).

    Raises ``ConformanceError`` with one sentence when the text is not of that
    form, the module cannot be imported, the name is missing or not callable.
    """
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ConformanceError(f"{target!r} is not module:factory (e.g. my_adapter:make_adapter)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConformanceError(f"cannot import module {module_name!r}: {exc}") from exc
    except Exception as exc:  # the module itself failed while importing
        raise ConformanceError(
            f"importing module {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    value: Any = module
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ConformanceError(f"module {module_name!r} has no attribute {attr!r}") from None
    if not callable(value):
        raise ConformanceError(f"{target} is {type_phrase(value)}, not a callable factory(base_url, api_key)")
    return value  # type: ignore[no-any-return]
