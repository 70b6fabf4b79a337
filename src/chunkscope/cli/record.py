"""``chunkscope record``: one real stream, through a real adapter, into a recording file.

``chunkscope record --base-url URL --model M [--wire WIRE] PROMPT -o FILE``
sends PROMPT as one user message through the adapter of the wire named
(``chunkscope.adapters.wires.WIRES``; the chat-completions wire by default),
wrapped in ``RecordingAdapter``, so FILE gets the header, every chunk with its
time, and the error line if the stream failed. ``chunkscope show FILE`` draws
it, ``chunkscope check FILE`` judges it, ``ReplayAdapter(FILE)`` plays it again.

The API key is read from the environment only — ``--api-key-env NAME``, else
the wire's key variables (``WireFacts.key_variables``) — and never written to
the file, printed, or put in an error message (a message that would hold it
has it replaced first).

Exit status: 0 the stream finished (whatever its finish kind); 1 the stream
raised (its code is on stderr and in the recording's error line); 2 bad arguments,
no key, or an output file that cannot be written.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import TYPE_CHECKING, Any

from chunkscope._wires import DEFAULT_WIRE, WIRE_FACTS

from ._args import CommandLineError, plural, positive_seconds, terse_errors
from ._output import printable

if TYPE_CHECKING:  # the adapters load when a stream is recorded, not when the command starts
    from chunkscope import GenerateOptions, LlmAdapter, StreamResult

__all__ = ["KEY_ENV", "RECORD_HELP", "add_record_parser", "run_record"]

RECORD_HELP = "record one stream from a provider (key from the environment) into a recording file"

KEY_ENV: dict[str, tuple[str, ...]] = {name: wire.key_variables for name, wire in WIRE_FACTS.items()}
"""Where each wire's key is looked for, in order, when ``--api-key-env`` is not given (the wire table)."""


def _find_key(wire: str, env_name: str | None) -> tuple[str | None, tuple[str, ...]]:
    names = (env_name,) if env_name else KEY_ENV[wire]
    for name in names:
        value = os.environ.get(name)
        if value:
            return value, names
    return None, names


def _fail(message: str, key: str | None, status: int) -> int:
    if key:  # redact before anything else touches the text
        message = message.replace(key, "<redacted>")
    print(f"chunkscope record: {printable(message)}", file=sys.stderr)
    return status


def _adapter(wire: str, base_url: str, key: str, idle_timeout: float | None) -> LlmAdapter:
    from chunkscope.adapters.wires import WIRES

    adapter: Any = WIRES[wire].adapter  # every built-in wire adapter takes these keywords
    built: LlmAdapter = adapter(base_url=base_url, api_key=key, idle_timeout=idle_timeout)
    return built


def _wire_help() -> str:
    return "; ".join(
        f"{name}: {wire.title}{' (default)' if name == DEFAULT_WIRE else ''}"
        for name, wire in WIRE_FACTS.items()
    )


def _key_help() -> str:
    default = " or ".join(WIRE_FACTS[DEFAULT_WIRE].key_variables)
    others = "; ".join(
        f"{' or '.join(wire.key_variables)} for --wire {name}"
        for name, wire in WIRE_FACTS.items()
        if name != DEFAULT_WIRE
    )
    return f"environment variable holding the key (default: {default}; {others})"


async def _record(adapter: LlmAdapter, path: str, options: GenerateOptions) -> StreamResult:
    from chunkscope import RecordingAdapter, collect

    recorder = RecordingAdapter(adapter, path)
    try:
        return await collect(recorder.stream(options))
    finally:
        await adapter.aclose()


def _check_values(base_url: str, idle_timeout: float | None, max_tokens: int | None, output: str) -> None:
    """Refuse, before any request, a value that cannot work or a recording that cannot be written."""
    if not base_url.startswith(("http://", "https://")):
        raise CommandLineError(f"--base-url must be an http(s) URL, not {base_url!r}")
    if idle_timeout is not None and not idle_timeout > 0:
        raise CommandLineError("--idle-timeout must be > 0 seconds")
    if max_tokens is not None and max_tokens < 1:
        raise CommandLineError("--max-tokens must be at least 1")
    try:
        with open(output, "w", encoding="utf-8"):
            pass
    except OSError as exc:
        raise CommandLineError(f"cannot write {output}: {exc.strerror or exc}") from None


def _summary(result: StreamResult, output: str) -> str:
    """The one line a finished recording gets: chunks, finish, usage, violations."""
    finish = result.finish.kind if result.finish is not None else "none"
    usage = (
        f"usage in {result.usage.input_tokens} / out {result.usage.output_tokens}"
        if result.usage is not None
        else "no usage"
    )
    errors = len(result.errors)
    return (
        f"recorded {plural(len(result.chunks), 'chunk')} to {printable(output)}: finish {finish}"
        + (f" ({result.error_code})" if result.error_code else "")
        + f", {usage}, {plural(errors, 'violation')}"
        + (f" (chunkscope check {printable(output)})" if errors else "")
    )


def run_record(
    *,
    base_url: str,
    model: str,
    prompt: str,
    output: str,
    wire: str = DEFAULT_WIRE,
    api_key_env: str | None = None,
    provider: str | None = None,
    system: str | None = None,
    max_tokens: int | None = None,
    idle_timeout: float | None = 60.0,
) -> int:
    """Record one stream into ``output``; print a one-line summary; return the exit status."""
    key, names = _find_key(wire, api_key_env)
    if key is None:
        listed = " or ".join(f"${name}" for name in names)
        return _fail(f"no API key: set {listed} (or name another variable with --api-key-env)", None, 2)
    try:
        _check_values(base_url, idle_timeout, max_tokens, output)
    except CommandLineError as exc:
        return _fail(str(exc), key, 2)
    from chunkscope import GenerateOptions

    try:
        adapter = _adapter(wire, base_url, key, idle_timeout)
    except ValueError as exc:  # a URL or option the adapter refuses
        return _fail(str(exc), key, 2)
    options = GenerateOptions(
        provider=provider or WIRE_FACTS[wire].provider,
        model=model,
        messages=[{"role": "user", "content": prompt}],
        system=system,
        max_tokens=max_tokens,
    )
    try:
        result = asyncio.run(_record(adapter, output, options))
    except KeyboardInterrupt:
        return _fail(f"interrupted; what arrived is in {output}", key, 130)
    if result.error is not None:
        return _fail(
            f"the stream failed with {result.error.code} after {plural(len(result.chunks), 'chunk')}: "
            f"{result.error.message} (recorded in {output})",
            key,
            1,
        )
    print(_summary(result, output))
    return 0


def add_record_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``chunkscope record``."""
    parser = subparsers.add_parser(
        "record",
        help=RECORD_HELP,
        description=RECORD_HELP
        + ". Exit status: 0 recorded, 1 the stream failed (its error is recorded), 2 bad arguments.",
    )
    parser.add_argument("prompt", metavar="PROMPT", help="the user message to send")
    parser.add_argument(
        "--base-url", required=True, metavar="URL", help="the API root, e.g. https://api.deepseek.com"
    )
    parser.add_argument("--model", required=True, metavar="M", help="the model name")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the recording to write")
    parser.add_argument(
        "--wire",
        choices=tuple(WIRE_FACTS),
        default=DEFAULT_WIRE,
        help=_wire_help(),
    )
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        default=None,
        help=_key_help(),
    )
    parser.add_argument("--provider", default=None, help="provider name recorded in the header")
    parser.add_argument("--system", default=None, help="a system prompt")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        metavar="N",
        help="the most output tokens the model may generate (default: the provider's limit)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=positive_seconds,
        default=60.0,
        metavar="S",
        help="seconds of silence before TIMEOUT",
    )
    terse_errors(parser)
    parser.set_defaults(
        func=lambda args: run_record(
            base_url=args.base_url,
            model=args.model,
            prompt=args.prompt,
            output=args.output,
            wire=args.wire,
            api_key_env=args.api_key_env,
            provider=args.provider,
            system=args.system,
            max_tokens=args.max_tokens,
            idle_timeout=args.idle_timeout,
        )
    )
