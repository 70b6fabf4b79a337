"""Optional dependencies: which extra brings each one, and the one-line error when it is missing.

A plain ``pip install chunkscope`` gives the protocol, the adapters, the runtime, the
local provider and the CLI's ``check`` / ``show`` / ``record`` / ``serve``. Everything
else needs an extra (``usage``, ``notebook``, ``dask``, ``lab``, ``otel``, ``prices``, ``bedrock``,
``testing``). A path
that imports an optional module turns the ``ModuleNotFoundError`` into a
:class:`MissingExtraError` naming the extra to install, so a user reads one line
instead of a traceback, and the CLI can exit 2 (bad set-up) instead of 1 (violations).

``OPTIONAL_MODULES`` is the one table; ``tests/test_extras.py`` checks that every
third-party import in the package is a base dependency or listed here, and that each
extra named here really declares the module's distribution in ``pyproject.toml``.

Its one error, still caught by ``except ImportError`` as any missing module is::

    ModuleNotFoundError
     └── MissingExtraError   an optional dependency is missing: .extra names what to install
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["OPTIONAL_MODULES", "MissingExtraError", "as_missing_extra", "needs_extra", "require_modules"]

# top-level import name -> (the extra that declares it, its distribution name)
OPTIONAL_MODULES: dict[str, tuple[str, str]] = {
    "numpy": ("usage", "numpy"),
    "pandas": ("usage", "pandas"),
    "pyarrow": ("usage", "pyarrow"),
    "matplotlib": ("usage", "matplotlib"),
    "zstandard": ("usage", "zstandard"),
    "anywidget": ("notebook", "anywidget"),
    "ipywidgets": ("notebook", "ipywidgets"),
    "traitlets": ("notebook", "traitlets"),
    "IPython": ("notebook", "ipython"),
    "nest_asyncio": ("notebook", "nest-asyncio"),
    "dask": ("dask", "dask"),
    "distributed": ("dask", "distributed"),
    "duckdb": ("lab", "duckdb"),
    "jupyterlab": ("lab", "jupyterlab"),
    "jupyter_core": ("lab", "jupyter-core"),
    "json5": ("lab", "json5"),
    # a namespace package shared by the api, sdk, semconv and exporter distributions; the sdk brings the api
    "opentelemetry": ("otel", "opentelemetry-sdk"),
    "genai_prices": ("prices", "genai-prices"),
    "botocore": ("bedrock", "botocore"),  # AWS SigV4 signing for the Bedrock adapter
    "hypothesis": ("testing", "hypothesis"),
    "pytest": ("test", "pytest"),
}


class MissingExtraError(ModuleNotFoundError):
    """An optional dependency is not installed; ``str()`` is one line naming the extra to install.

    A ``ModuleNotFoundError`` (so ``except ImportError`` still catches it) with ``extra``
    (e.g. ``"usage"``) and ``name`` (the missing module, e.g. ``"numpy"``).
    """

    def __init__(self, extra: str, module: str, what: str | None = None) -> None:
        self.extra = extra
        self.what = what
        needs = f"{what} needs" if what else "needs"
        super().__init__(
            f'{needs} the "{extra}" extra ({module} is not installed): pip install "chunkscope[{extra}]"',
            name=module,
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.extra, self.name, self.what))


def as_missing_extra(exc: BaseException, what: str | None = None) -> MissingExtraError | None:
    """``exc`` as a :class:`MissingExtraError` for ``what`` if it is a missing optional module, else None.

    Always a new error, to be raised ``from None``: its traceback starts where it is raised,
    without the import machinery's frames. One raised deeper (``chunkscope.usage`` checks its
    modules on import) is named again for ``what``, the name the user reached it by, so every
    gated name reads the same.
    """
    if isinstance(exc, MissingExtraError):
        return MissingExtraError(exc.extra, exc.name or "", what or exc.what)
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    found = OPTIONAL_MODULES.get(top)
    if found is None:
        return None
    return MissingExtraError(found[0], top, what)


@contextmanager
def needs_extra(what: str) -> Iterator[None]:
    """Run the body; a missing optional module in it becomes a :class:`MissingExtraError` for ``what``.

    Raised ``from None``: the import machinery's traceback and the chained
    ``ModuleNotFoundError`` would only bury the one line that says what to install.
    """
    try:
        yield
    except ModuleNotFoundError as exc:
        error = as_missing_extra(exc, what)
        if error is None:
            raise
        raise error from None


def require_modules(what: str, *modules: str) -> None:
    """Raise :class:`MissingExtraError` for ``what`` unless every optional module named is installed.

    Checked without importing them (``find_spec``), before any work starts.
    """
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError(OPTIONAL_MODULES[module][0], module, what)
