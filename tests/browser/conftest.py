"""Browser tests: the real ``ragonite serve`` process, driven by Playwright in Debian's Chromium.

Why a real process and a real browser: the web page is plain ES modules talking to the REST
API, and what a user meets (CSP, cookies, streaming, text-only rendering) exists only there.

The browser is Debian's ``chromium`` (``apt-get install chromium``) or the binary named by
``$RAGONITE_CHROMIUM``; Playwright's own browser download is never used. Without a browser or
without the ``playwright`` package the tests are skipped, except under CI (``$CI`` set), where a
missing browser fails them, and so does any skipped browser test.

The server gets two domains: ``wiki`` (examples/sample_wiki plus a page whose evidence holds
``<script>``/``<img onerror>`` markup as text) and ``other`` (two German pages), and two LLMs:
the extractive answerer (default) and an OpenAI-compatible stub that answers HTTP 500.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from openai_stub import OpenAIStub, RecordedRequest, server_error
from processes import free_port, stop

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PAGES = HERE / "pages"
# The committed screenshots are refreshed with RAGONITE_SCREENSHOTS=docs/screenshots; an ordinary
# run still takes every screenshot (so they keep working) but into a temporary folder.
SCREENSHOTS = Path(os.environ.get("RAGONITE_SCREENSHOTS") or tempfile.mkdtemp(prefix="ragonite-screenshots-"))
BROWSER_VARIABLE = "RAGONITE_CHROMIUM"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_SECONDS = 120  # builds engines for two stores and loads the embedded models
TEST_SECONDS = 60  # the most one browser test may take
WAIT_MS = 20_000  # Playwright's default wait for one element or navigation
STUB_LLM = "openai-compatible:stub@{url}"


def under_ci() -> bool:
    return bool(os.environ.get("CI"))


def _unavailable(reason: str) -> None:
    """Skip, or fail under CI: CI must run the browser suite, never skip it."""
    if under_ci():
        pytest.fail(f"{reason} (CI is set: the browser tests must run)", pytrace=False)
    pytest.skip(reason)


def chromium_path() -> str | None:
    """``$RAGONITE_CHROMIUM``, else Debian's /usr/bin/chromium, else a chromium on PATH."""
    named = os.environ.get(BROWSER_VARIABLE)
    if named:
        return named if Path(named).is_file() else None
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Under CI a skipped browser test is a failed one (the suite must really have run)."""
    outcome = yield
    report = outcome.get_result()
    if under_ci() and report.skipped and not hasattr(report, "wasxfail") and HERE in Path(str(item.path)).parents:
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, which must run the browser tests: {report.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Bound the body of every browser test to TEST_SECONDS (its waits are bounded too; set-up is not counted)."""
    if not hasattr(signal, "SIGALRM") or HERE not in Path(str(item.path)).parents:
        yield
        return

    def expired(signum, frame):
        pytest.fail(f"browser test ran over {TEST_SECONDS} s", pytrace=False)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# -- the server ---------------------------------------------------------------------------------


class FailingLLM(OpenAIStub):
    """The OpenAI-compatible stub, answering every request with HTTP 500 (an LLM outage) unless a
    test scripted what comes next."""

    def _record(self, request: RecordedRequest):
        scripted = self.pending > 0
        behaviour = super()._record(request)
        return behaviour if scripted else server_error()


def _build_store(folder: Path, sources: list[Path]) -> Path:
    from llama_index_ragonite import EvidenceStore, load_pages

    documents = [doc for source in sources for doc in load_pages(source)]
    EvidenceStore(folder).ingest(documents, show_progress=False)
    return folder


def _wait_healthy(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"{url}/api/health", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    status = "exited with code %s" % process.returncode if process.poll() is not None else "is not healthy"
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    raise RuntimeError(f"ragonite serve {status} after {SERVER_START_SECONDS} s; its log ends:\n{tail}")


class Server:
    """What the tests know of the running app."""

    def __init__(self, url: str, stub: FailingLLM) -> None:
        self.url = url
        self.stub = stub


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``ragonite serve`` over two stores on a free loopback port (the real process)."""
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as err:
        _unavailable(f"the [web] extra is not installed ({err})")
    root = tmp_path_factory.mktemp("serve")
    wiki = _build_store(root / "wiki-store", [REPO / "examples" / "sample_wiki", PAGES / "wiki"])
    other = _build_store(root / "other-store", [PAGES / "other"])
    stub = FailingLLM().start()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable, "-m", "llama_index_ragonite.cli", "serve",
        "--store", f"wiki={wiki}", "--store", f"other={other}",
        "--llm", "extractive", "--llm", STUB_LLM.format(url=stub.base_url),
        "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    env = {**os.environ, "HOME": str(root), "OPENAI_COMPATIBLE_API_KEY": "test-key"}
    env.pop("RAGONITE_TOKEN", None)  # loopback without token: the cookie identifies the user
    log = root / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_healthy(url, process, log)
        yield Server(url, stub)
    finally:
        stop(process)
        stub.stop()


# -- the browser --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Chromium (Debian's, or $RAGONITE_CHROMIUM) under Playwright.

    Module-scoped: Playwright's sync API keeps an event loop running in the main thread while it
    is open, and every later test calling ``asyncio.run`` would fail on it."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install playwright, or the [test] extra)")
    executable = chromium_path()
    if executable is None:
        _unavailable(
            f"no Chromium: install Debian's (apt-get install chromium) or set {BROWSER_VARIABLE}=/path/to/chromium"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


class Page:
    """One browser tab on the app (a fresh context: a fresh user cookie), plus what it saw."""

    def __init__(self, page, server: Server) -> None:
        self.page = page
        self.server = server
        self.dialogs: list[str] = []
        self.page_errors: list[str] = []
        self.console_errors: list[str] = []
        page.on("dialog", self._dialog)
        page.on("pageerror", lambda error: self.page_errors.append(str(error)))
        page.on("console", lambda msg: self.console_errors.append(msg.text) if msg.type == "error" else None)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def screenshot(self, name: str) -> Path:
        """Save the page as SCREENSHOTS/NAME.png (fixed names: the README links the committed ones)."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True, animations="disabled")
        return path

    def api(self, method: str, path: str, **kwargs):
        """A call to the REST API as this tab's user (the context's cookies go with it)."""
        response = self.page.request.fetch(f"{self.server.url}{path}", method=method, **kwargs)
        return response


@pytest.fixture
def app(browser, server: Server) -> Iterator[Page]:
    """A tab showing the app, loaded and ready."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    tab = Page(page, server)
    page.goto(server.url + "/", wait_until="load")
    try:
        yield tab
    finally:
        context.close()
