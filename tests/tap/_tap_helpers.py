"""Helpers of the tap tests: the key every client sends, request bodies, id normalisation."""

from __future__ import annotations

import contextlib
import http.server
import re
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

KEY = "sk-tap-test-4f9c2e7a1b"
"""The API key every client sends; no output of the tap may contain it."""

AUTH = {"authorization": f"Bearer {KEY}"}
ANTHROPIC_AUTH = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}

_IDS = re.compile(rb'("id":"|"id": ")(chatcmpl|msg)[-_A-Za-z0-9]+|"created":\s?\d+')


def normalised(body: bytes) -> bytes:
    """A response body with the per-response ids and timestamps the provider numbers replaced."""
    return _IDS.sub(b"<id>", body)


def stream_body(model: str, prompt: str = "hi", *, stream: bool = True) -> dict[str, object]:
    """A chat-completions request body for ``model`` (a scenario name)."""
    return {"model": model, "stream": stream, "messages": [{"role": "user", "content": prompt}]}


def anthropic_body(model: str, prompt: str = "hi", *, stream: bool = True) -> dict[str, object]:
    """A Messages request body for ``model``."""
    return {
        "model": model,
        "max_tokens": 64,
        "stream": stream,
        "messages": [{"role": "user", "content": prompt}],
    }


class _Redirect(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(307)
        self.send_header("Location", "http://127.0.0.1:9/elsewhere")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def stdlib_server(
    handler: type[http.server.BaseHTTPRequestHandler] = _Redirect, *, tls: Path | None = None
) -> Iterator[str]:
    """A stdlib HTTP(S) server on 127.0.0.1 (``tls``: a folder for a fresh self-signed cert); its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    scheme = "http"
    if tls is not None:
        cert, key = tls / "cert.pem", tls / "key.pem"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                str(key),
                "-out",
                str(cert),
                "-days",
                "1",
                "-subj",
                "/CN=127.0.0.1",
            ],
            check=True,
            capture_output=True,
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
