"""``ragonite serve`` refuses an address it cannot listen on at start, and says the address it did bind.

Real processes on loopback. "Before anything loads" is shown without timing: the refused runs also name an
embedding model that does not exist, whose error would win if the server got as far as loading models.
"""

from __future__ import annotations

import re
import socket
import subprocess

import httpx
import pytest
from processes import serve_command, stop
from sse_client import wait_until

from llama_index_ragonite.serve.config import ServeConfig, ServeConfigError

MISSING_MODEL = "/nonexistent/embedding-model"  # loading it would fail with "Unknown embedding spec"


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def refused(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        serve_command(*args, "--embedding", MISSING_MODEL), capture_output=True, text=True, timeout=120
    )


@pytest.mark.fault(
    "ragonite serve started with a port outside 1-65535, or a host that is no IP address or name",
    "exit 2 before anything loads, naming the option and what to give; no start line",
    area="serve",
)
@pytest.mark.parametrize(
    "option, value, says",
    [
        ("--port", "70000", "give a TCP port from 1 to 65535"),
        ("--port", "-1", "give a TCP port from 1 to 65535"),
        ("--port", "eighty", "give a TCP port from 1 to 65535"),
        ("--host", "300.1.1.1", "not an IP address or host name"),
        ("--host", "bad host", "not an IP address or host name"),
        ("--host", "http://127.0.0.1", "not an IP address or host name"),
    ],
)
def test_an_invalid_port_or_host_is_refused_at_start(wiki_stores, option, value, says):
    done = refused("--store", f"wiki={wiki_stores['wiki']}", option, value)
    assert done.returncode == 2 and says in done.stderr and f"argument {option}" in done.stderr
    assert "RAGonite on" not in done.stdout and "Traceback" not in done.stderr


@pytest.mark.fault(
    "ragonite serve started on a port another server holds, or on an address that is not this machine's",
    "exit 2 before any model loads, saying which (port in use: pick another or 0; address not here); no traceback",
    area="serve",
)
def test_an_address_that_cannot_be_bound_is_refused_before_models_load(wiki_stores, tmp_path):
    store = f"wiki={wiki_stores['wiki']}"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = refused("--store", store, "--port", port, "--conversations", str(tmp_path / "h.sqlite"))
    assert done.returncode == 2 and f"--port {port}: already in use" in done.stderr, done.stderr
    assert "Unknown embedding spec" not in done.stderr and "Traceback" not in done.stderr
    # 192.0.2.1 (TEST-NET-1) is no address of this machine; a token, since it is not loopback
    done = refused("--store", store, "--host", "192.0.2.1", "--token", "t" * 24, "--conversations", str(tmp_path / "h"))
    assert done.returncode == 2 and "--host 192.0.2.1: not an address of this machine" in done.stderr, done.stderr
    assert "Unknown embedding spec" not in done.stderr and "Traceback" not in done.stderr


def test_the_python_config_refuses_the_same(wiki_stores):
    for port in (70000, -1, True):
        with pytest.raises(ServeConfigError, match="TCP port"):
            ServeConfig.from_args([f"wiki={wiki_stores['wiki']}"], port=port)
    with pytest.raises(ServeConfigError, match="not an IP address"):
        ServeConfig.from_args([f"wiki={wiki_stores['wiki']}"], host="1.2.3")
    assert ServeConfig.from_args([f"wiki={wiki_stores['wiki']}"], host="localhost", port=0).port == 0


@pytest.mark.fault(
    "ragonite serve --port 0 (any free port)",
    "the start line names the port the socket got, and the server answers there",
    area="serve",
)
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_start_line_names_the_address_actually_bound(wiki_stores, tmp_path, host):
    args = ["--store", f"wiki={wiki_stores['wiki']}", "--conversations", str(tmp_path / "h.sqlite")]
    process = subprocess.Popen(
        serve_command(*args, "--host", host, "--port", "0", "--log-level", "warning"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = next((line for line in process.stdout if "RAGonite on" in line), "")
        found = re.search(r"RAGonite on http://([^/]+):(\d+)/", line)
        assert found and found.group(1) == host and found.group(2) != "0", line
        wait_until(lambda: answers(f"http://127.0.0.1:{found.group(2)}/api/health"), 30)  # listens just after
    finally:
        stop(process)
