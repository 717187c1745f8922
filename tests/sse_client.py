"""A streaming turn of ``ragonite serve`` read as a browser would, and dropped as a closed tab would."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Dict, List, Optional

import httpx
import pytest

__all__ = ["Stream", "wait_until"]


class Stream:
    """A streaming turn read on a thread; ``close()`` drops the connection like a closed tab."""

    def __init__(self, client: httpx.Client, cid: str, message: str) -> None:
        self.events: List[tuple] = []
        self.status: Optional[int] = None
        self.headers: Dict[str, str] = {}
        self._context = client.stream("POST", f"/api/conversations/{cid}/messages/stream", json={"message": message})
        self.response = self._context.__enter__()
        self.status, self.headers = self.response.status_code, dict(self.response.headers)
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        event = None
        try:
            for line in self.response.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    self.events.append((event, json.loads(line[6:])))
        except (httpx.HTTPError, ValueError, RuntimeError):
            pass
        finally:
            self.done.set()

    def wait_for(self, kind: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(e == kind for e, _ in self.events):
                return True
            time.sleep(0.02)
        return False

    def close(self) -> None:
        """Drop the connection at once, like a closed tab (``response.close()`` alone would wait
        for the reading thread, which waits for the server)."""
        network = self.response.extensions.get("network_stream")
        sock = network.get_extra_info("socket") if network is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed
                pass
        assert self.done.wait(5), "the reading thread did not end"
        self.response.close()
        self._context.__exit__(None, None, None)


def wait_until(condition, timeout: float) -> float:
    """Seconds until ``condition()`` held (fails after ``timeout``)."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            pytest.fail(f"not within {timeout} s")
        time.sleep(0.02)
    return time.monotonic() - started
