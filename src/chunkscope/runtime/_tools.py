"""``@tool``: a Python callable offered to the model, with a JSON schema from its signature.

The parameters' JSON schema comes from the type hints through pydantic; the
description from the docstring's first paragraph, and each parameter's from
an ``Args:`` / ``Parameters:`` section (``name: text`` or ``name (type): text``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import json
import math
import re
import threading
import typing
from collections.abc import Callable, Mapping
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from chunkscope.adapters import ToolSpec

__all__ = ["DEFAULT_TOOL_TIMEOUT_S", "Tool", "ToolArgumentsError", "tool"]

DEFAULT_TOOL_TIMEOUT_S = 60.0
"""How long the agent loop lets one tool call run, unless the tool or the loop says otherwise."""

_MAX_ARGUMENTS_CHARS = 1_000_000
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$", re.IGNORECASE)
_OTHER_SECTION = re.compile(r"^\s*(Returns?|Raises|Yields|Examples?|Notes?)\s*:\s*$", re.IGNORECASE)
_PARAM = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class ToolArgumentsError(ValueError):
    """The model's arguments are not a JSON object or do not fit the tool's schema."""


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    i = 0
    while i < len(lines) and lines[i].strip() and not _SECTION.match(lines[i]):
        summary.append(lines[i].strip())
        i += 1
    return " ".join(summary), _param_docs(lines[i:])


def _param_docs(lines: list[str]) -> dict[str, str]:
    """Each parameter's text from the ``Args:`` section(s) of a docstring's body lines."""
    params: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines:
        if _SECTION.match(line):
            in_args, current = True, None
            continue
        if _OTHER_SECTION.match(line):
            in_args, current = False, None
            continue
        if not in_args or not line.strip():
            continue
        match = _PARAM.match(line)
        indent = len(line) - len(line.lstrip())
        if match and (current is None or indent <= 4):
            current = match.group(1).lstrip("*")
            params[current] = match.group(2).strip()
        elif current is not None:
            params[current] = (params[current] + " " + line.strip()).strip()
    return params


def _decode_arguments(text: str) -> Any:
    """The model's JSON arguments decoded (blank text: no arguments), or ``ToolArgumentsError``."""
    if len(text) > _MAX_ARGUMENTS_CHARS:
        raise ToolArgumentsError(f"the arguments are longer than {_MAX_ARGUMENTS_CHARS} characters")
    try:
        return json.loads(text.strip() or "{}")
    except (ValueError, RecursionError) as exc:
        raise ToolArgumentsError(f"the arguments are not valid JSON: {exc}") from None


def _schema_problems(exc: ValidationError) -> str:
    """Each schema error as ``field.path: message``, joined by ``; ``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}" for err in exc.errors()
    )


class Tool:
    """A callable the agent loop offers to the model (made by ``@tool``).

    ``name``, ``description`` and ``parameters`` (a JSON-schema object) are
    what the model sees (``spec``); calling the ``Tool`` calls the function.
    ``await invoke(arguments_json)`` validates the model's raw JSON arguments
    against the schema and runs the function (a sync one in a daemon thread).
    ``timeout`` (seconds) bounds one call in the agent loop; None: the loop's
    ``tool_timeout`` (default ``DEFAULT_TOOL_TIMEOUT_S``, 60 s).
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError("@tool needs a function")
        self.timeout = check_timeout(timeout, "timeout")
        self.fn = fn
        self.name = name or fn.__name__
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", self.name):
            raise ValueError(f"tool name {self.name!r} must be 1-64 letters, digits, '_' or '-'")
        summary, param_docs = _parse_docstring(inspect.getdoc(fn))
        self.description = description if description is not None else summary
        self.is_async = inspect.iscoroutinefunction(fn)
        self.model = _arguments_model(fn, self.name, param_docs)
        schema = self.model.model_json_schema()
        schema.pop("title", None)
        self.parameters: dict[str, Any] = schema
        functools.update_wrapper(self, fn)

    @property
    def spec(self) -> ToolSpec:
        """What the model is offered."""
        return ToolSpec(self.name, self.description, self.parameters)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def validate(self, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments for the function, from the model's JSON text (or a dict).

        Raises ``ToolArgumentsError`` saying what is wrong, in words the model can act on.
        """
        value = _decode_arguments(arguments) if isinstance(arguments, str) else dict(arguments)
        if not isinstance(value, dict):
            raise ToolArgumentsError(f"the arguments must be a JSON object, not {type(value).__name__}")
        try:
            parsed = self.model.model_validate(value)
        except ValidationError as exc:
            raise ToolArgumentsError(
                f"the arguments do not fit the schema of {self.name}: {_schema_problems(exc)}"
            ) from None
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}

    async def invoke(self, arguments: str | Mapping[str, Any]) -> Any:
        """Validate ``arguments`` and run the tool; a sync tool runs in a daemon thread.

        Cancelling an async tool stops it; a sync tool's thread cannot be
        interrupted: on an abort or a timeout the loop stops waiting for it and
        moves on. The thread is the tool's own daemon thread, not the event
        loop's default executor, so ``asyncio.run`` (and ``run_sync``) does not
        wait for a stuck tool at shutdown, nor does the interpreter at exit.
        """
        kwargs = self.validate(arguments)
        if self.is_async:
            return await self.fn(**kwargs)
        return await _in_daemon_thread(self.fn, kwargs, self.name)

    def __repr__(self) -> str:
        return f"Tool({self.name!r}, parameters={list(self.parameters.get('properties', {}))})"


def check_timeout(value: float | None, name: str) -> float | None:
    """``value`` if None or a positive, finite number of seconds; else ``ValueError`` naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive, finite number of seconds or None, not {value!r}")
    return float(value)


async def _in_daemon_thread(fn: Callable[..., Any], kwargs: dict[str, Any], name: str) -> Any:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, exc: BaseException | None) -> None:
        if future.done():  # the loop stopped waiting (abort, timeout)
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(value)

    def work() -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            value = context.run(fn, **kwargs)
        except BaseException as exc:  # handed to the awaiting task, which decides
            error = exc
        with contextlib.suppress(RuntimeError):  # the event loop is gone: nobody waits any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name=f"chunkscope-tool-{name}", daemon=True).start()
    return await future


def _arguments_model(fn: Callable[..., Any], name: str, docs: Mapping[str, str]) -> type[BaseModel]:
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # an unresolvable annotation is the author's to fix, said plainly
        raise TypeError(f"tool {name!r}: cannot resolve its type hints ({exc})") from exc
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {name!r}: *args/**kwargs cannot be described to a model")
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(
                f"tool {name!r}: positional-only parameter {param.name!r} cannot be passed by name"
            )
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        description = docs.get(param.name)
        fields[param.name] = (annotation, Field(default, description=description))
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)
    return create_model(f"{name}_arguments", __config__=config, **fields)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, timeout: float | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a Python function (sync or async) a tool: ``@cs.tool`` or ``@cs.tool(name=..., timeout=5)``."""
    if fn is not None:
        return Tool(fn)

    def wrap(inner: Callable[..., Any]) -> Tool:
        return Tool(inner, name=name, description=description, timeout=timeout)

    return wrap
