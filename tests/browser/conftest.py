"""Browser test harness: a real JupyterLab on 127.0.0.1 driven by headless Debian Chromium.

One JupyterLab server and one Chromium per test module; every test gets a fresh
browser context and its own JupyterLab workspace. A test writes its notebook into
the server's root folder (``lab.write_notebook``), opens it (``lab.open``), runs
every cell through JupyterLab's own ``notebook:run-all-cells`` command
(``lab.run_all``) and then asserts on the page's DOM.

The server runs with the command line and application settings of ``chunkscope
lab`` (``chunkscope.cli.lab``: loopback, offline, widget state saved into notebooks)
and throwaway config, data, runtime and settings folders: user
settings turn autosave off (the notebook on disk stays as the test wrote it) and
notebook windowing off (every cell stays in the DOM). ``window.jupyterapp`` is
exposed so the test can run JupyterLab commands and read the kernel's status.

On failure the test leaves a screenshot and the page's console in
``test-artifacts/`` and prints the tail of the server's log.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
from jupyter_client import BlockingKernelClient

from chunkscope.cli.lab import _default_app_settings_dir, lab_command, write_lab_settings

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--no-first-run",
    # the machine has no network: without these Chromium keeps dialing Google's hosts
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]
SERVER_START_TIMEOUT_S = 120.0  # two shared cores: a cold JupyterLab start can be slow
PAGE_TIMEOUT_MS = 120_000
RUN_TIMEOUT_MS = 240_000

# user settings (JUPYTERLAB_SETTINGS_DIR/<package>/<plugin>.jupyterlab-settings)
USER_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LabServer:
    """A running JupyterLab: its URL, token, root folder and log file."""

    url: str
    token: str
    root: Path
    log_path: Path
    process: subprocess.Popen[bytes]

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as exc:
            return f"(no server log: {exc})"
        return "\n".join(text.splitlines()[-lines:])

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """A REST call authenticated by token header (token auth needs no XSRF cookie)."""
        headers = {"Authorization": f"token {self.token}"}
        return httpx.request(method, f"{self.url}{path}", headers=headers, timeout=30.0, **kwargs)


def _start_server(base: Path, log_dir: Path) -> LabServer:
    root = base / "root"
    settings = base / "settings"
    for folder in (root, settings, base / "config", base / "data", base / "runtime", base / "workspaces"):
        folder.mkdir(parents=True)
    for rel, values in USER_SETTINGS.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    token = uuid.uuid4().hex
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_DATA_DIR": str(base / "data"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    # the command and application settings of `chunkscope lab` itself (widget state saved)
    app_settings = write_lab_settings(base / "app-settings", base=_default_app_settings_dir())
    command = lab_command(
        root,
        port=port,
        open_browser=False,
        settings_dir=app_settings,
        extra=[
            "--allow-root",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            "--LabApp.expose_app_in_browser=True",
            "--JupyterNotebookApp.expose_app_in_browser=True",
            "--ServerApp.shutdown_no_activity_timeout=1800",  # never outlives a crashed run for long
            "--MappingKernelManager.cull_idle_timeout=0",
        ],
    )
    log_path = log_dir / "jupyterlab-server.log"
    log = log_path.open("wb")
    process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()  # the child holds its own descriptor
    server = LabServer(f"http://127.0.0.1:{port}", token, root, log_path, process)
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while True:
        if process.poll() is not None:
            raise RuntimeError(
                f"JupyterLab exited with status {process.returncode} before answering; "
                f"log tail:\n{server.log_tail()}"
            )
        try:
            if server.api("GET", "/api/status").status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            _stop_server(server)
            raise RuntimeError(
                f"JupyterLab did not answer on {server.url} within {SERVER_START_TIMEOUT_S:.0f} s; "
                f"log tail:\n{server.log_tail()}"
            )
        time.sleep(0.25)  # polling a real server's startup: real time is the point


def _stop_server(server: LabServer) -> None:
    if server.process.poll() is None:
        try:
            server.api("POST", "/api/shutdown")  # also shuts the kernels down
            server.process.wait(timeout=20)
        except (httpx.HTTPError, subprocess.TimeoutExpired):
            server.process.terminate()
            try:
                server.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.process.kill()
                server.process.wait()


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path) -> Iterator[LabServer]:
    """A JupyterLab server for the test module (throwaway folders, known token)."""
    server = _start_server(tmp_path_factory.mktemp("jupyterlab"), artifacts_dir)
    try:
        yield server
    finally:
        _stop_server(server)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Headless Debian Chromium driven by Playwright (Playwright's own browsers are not used).

    Module-scoped: Playwright's sync API keeps an asyncio loop marked running while
    it is started, so it must stop before the async tests of other modules run.
    """
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (scripts/test.sh does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Lab:
    """One test's view of JupyterLab: its page, and helpers to write, open and run notebooks."""

    server: LabServer
    page: Any
    artifacts: Path
    console: list[str] = field(default_factory=list)

    def write_notebook(self, name: str, cells: list[str]) -> Path:
        """Write a python3 notebook of code cells (a leading ``#md`` line makes a markdown cell)."""
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        for source in cells:
            if source.startswith("#md\n"):
                nb.cells.append(nbformat.v4.new_markdown_cell(source.removeprefix("#md\n")))
            else:
                nb.cells.append(nbformat.v4.new_code_cell(source))
        path = self.server.root / name
        nbformat.write(nb, path)
        return path

    def copy_notebook(self, source: Path) -> str:
        shutil.copy(source, self.server.root / source.name)
        return source.name

    def open(self, name: str, *, app: str = "lab") -> None:
        """Open notebook ``name`` in a fresh workspace and wait for its kernel to be idle."""
        if app == "lab":
            workspace = f"cs-{uuid.uuid4().hex[:12]}"
            url = f"{self.server.url}/lab/workspaces/{workspace}/tree/{name}?token={self.server.token}"
        else:  # Notebook 7
            url = f"{self.server.url}/notebooks/{name}?token={self.server.token}"
        self.page.goto(url, wait_until="domcontentloaded", timeout=PAGE_TIMEOUT_MS)
        self.page.wait_for_function(
            """(name) => {
                const app = window.jupyterapp;
                const w = app && app.shell && app.shell.currentWidget;
                if (!w || !w.context || w.context.path !== name || !w.context.isReady) return false;
                const session = w.sessionContext && w.sessionContext.session;
                const kernel = session && session.kernel;
                return !!kernel && kernel.status === 'idle' && kernel.connectionStatus === 'connected';
            }""",
            arg=name,
            timeout=PAGE_TIMEOUT_MS,
            polling=100,
        )

    def run_all(self, *, timeout_ms: int = RUN_TIMEOUT_MS, allow_errors: bool = False) -> None:
        """Run every cell with JupyterLab's own command; wait until the kernel answered them all.

        Completion is read from the kernel's messages (one ``execute_reply`` per
        non-empty code cell, then an idle kernel), not from the command's promise:
        JupyterLab sometimes leaves a cell marked running when the kernel's reply
        overtakes its ``busy`` status, although the kernel ran it. Fails with the
        tracebacks of the cells that raised (unless ``allow_errors``).
        """
        self.page.evaluate(
            """() => {
                const w = window.jupyterapp.shell.currentWidget;
                const kernel = w.sessionContext.session.kernel;
                const cells = Array.from(w.content.model.cells);
                const run = {expected: 0, replies: 0, errors: [], done: false, commandError: null};
                run.expected = cells.filter(
                    c => c.type === 'code' && c.sharedModel.getSource().trim() !== '').length;
                window.__cs_run = run;
                kernel.anyMessage.connect((_, args) => {
                    const m = args.msg;
                    if (args.direction !== 'recv' || m.channel !== 'shell') return;
                    if (m.header.msg_type !== 'execute_reply') return;
                    run.replies += 1;
                    if (m.content.status === 'error') {
                        run.errors.push((m.content.traceback || [m.content.ename + ': ' + m.content.evalue])
                                        .join('\\n'));
                    }
                });
                window.jupyterapp.commands.execute('notebook:run-all-cells').then(
                    () => { run.done = true; },
                    (err) => { run.done = true; run.commandError = String(err); });
            }"""
        )
        try:
            self.page.wait_for_function(
                """() => {
                    const run = window.__cs_run;
                    if (!run.done && run.replies < run.expected) return false;
                    const w = window.jupyterapp.shell.currentWidget;
                    const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
                    return !!kernel && kernel.status === 'idle';
                }""",
                timeout=timeout_ms,
                polling=100,
            )
        except Exception as exc:
            run = self.page.evaluate("() => window.__cs_run")
            raise AssertionError(
                f"the notebook did not finish within {timeout_ms / 1000:.0f} s: "
                f"{run['replies']} of {run['expected']} cells answered; errors so far: {run['errors']}"
            ) from exc
        run = self.page.evaluate("() => window.__cs_run")
        errors = [_ANSI.sub("", text) for text in run["errors"]]
        if errors and not allow_errors:
            raise AssertionError("a notebook cell raised:\n\n" + "\n\n".join(errors))
        if run["commandError"]:
            raise AssertionError(f"notebook:run-all-cells failed: {run['commandError']}")

    def save(self) -> None:
        """Save the open notebook with JupyterLab's ``docmanager:save``; wait until it is on disk."""
        self.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        self.page.wait_for_function(
            """() => {
                const w = window.jupyterapp.shell.currentWidget;
                return !!w && !!w.context && !w.context.model.dirty;
            }""",
            timeout=PAGE_TIMEOUT_MS,
            polling=100,
        )

    def read_saved(self, name: str) -> dict[str, Any]:
        """The notebook file ``name`` as the contents REST API serves it, asked by this browser.

        Authenticated by the page's own session cookie, with its ``_xsrf`` cookie
        echoed as ``X-XSRFToken`` (how JupyterLab's frontend calls the API).
        """
        cookies = {c["name"]: c["value"] for c in self.page.context.cookies(self.server.url)}
        headers = {"X-XSRFToken": cookies["_xsrf"]} if "_xsrf" in cookies else {}
        response = self.page.context.request.get(
            f"{self.server.url}/api/contents/{name}", params={"content": "1"}, headers=headers
        )
        assert response.ok, f"GET /api/contents/{name}: {response.status} {response.text()}"
        content: dict[str, Any] = response.json()["content"]
        return content

    def stop_kernels(self) -> None:
        """Shut down every kernel session of the server (reopened notebooks start fresh kernels)."""
        for session in self.server.api("GET", "/api/sessions").json():
            self.server.api("DELETE", f"/api/sessions/{session['id']}")

    def reopen(self, name: str) -> None:
        """Open saved notebook ``name`` again from disk, in a fresh page, on a new idle kernel.

        Every kernel is shut down first, so nothing but the notebook's saved widget
        state can draw a widget. The new kernel is started (and idle) before the
        page opens, as when a user reopens a notebook whose kernel is running:
        when the page itself starts a cold kernel, jupyterlab_widgets 3.0.17 can
        show "Error displaying widget: model not found" for good, whatever the
        widget (ipywidgets issue #4026, PR #4040). Its kernel-only restore marks
        the manager restored while the output's 2 s ``get_model`` wait runs, and
        the saved models are registered only one kernel round trip later (a
        cold kernel's first ``comm_info`` replies can take a second on a busy
        machine); the output never tries again.
        """
        self.stop_kernels()
        self.page.goto("about:blank")
        body = {"path": name, "name": name, "type": "notebook", "kernel": {"name": "python3"}}
        response = self.server.api("POST", "/api/sessions", json=body)
        assert response.status_code == 201, f"POST /api/sessions: {response.status_code} {response.text}"
        kernel_id = response.json()["kernel"]["id"]
        # the server's own runtime folder (see _start_server) holds the kernel's connection file
        connection_file = self.server.root.parent / "runtime" / f"kernel-{kernel_id}.json"
        client = BlockingKernelClient(connection_file=str(connection_file))
        client.load_connection_file()
        client.start_channels(hb=False)  # no heartbeat: wait_for_ready would call a silent one dead
        try:
            client.wait_for_ready(timeout=SERVER_START_TIMEOUT_S)  # kernel_info answered: the kernel is idle
        finally:
            client.stop_channels()
        self.open(name)

    def screenshot(self, name: str, target: Any = None) -> Path:
        """Save a screenshot of the page, or of ``target`` (a selector or a locator), as an artifact."""
        path = self.artifacts / name
        if target is None:
            self.page.screenshot(path=str(path), full_page=True)
        else:
            locator = self.page.locator(target).first if isinstance(target, str) else target
            locator.screenshot(path=str(path))
        return path


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report  # the page fixture reads it at teardown
    return report


_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.fixture
def lab(
    request: pytest.FixtureRequest, lab_server: LabServer, chromium: Any, artifacts_dir: Path
) -> Iterator[Lab]:
    """A fresh browser context and page on the session's JupyterLab."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    page = context.new_page()
    lab = Lab(lab_server, page, artifacts_dir)
    page.on("console", lambda msg: lab.console.append(f"[{msg.type}] {msg.text}"))
    page.on("pageerror", lambda exc: lab.console.append(f"[pageerror] {exc}"))
    try:
        yield lab
    finally:
        report = request.node.stash.get(_REPORTS, {}).get("call")
        if report is not None and report.failed:
            stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
            try:
                lab.screenshot(f"{stem}-failure.png")
            except Exception as exc:  # a crashed page must not hide the test's own failure
                print(f"(no failure screenshot: {exc})")
            (artifacts_dir / f"{stem}-console.log").write_text("\n".join(lab.console))
            print(f"--- browser console ({len(lab.console)} lines, last 40) ---")
            print("\n".join(lab.console[-40:]))
            print("--- JupyterLab server log (tail) ---")
            print(lab_server.log_tail())
        # stop this test's kernels so the next test starts from a quiet server
        try:
            for session in lab_server.api("GET", "/api/sessions").json():
                lab_server.api("DELETE", f"/api/sessions/{session['id']}")
        except httpx.HTTPError:
            pass
        context.close()
