"""Attachments read in a child process with a memory cap and a deadline, so a parser that hangs or balloons
is killed and the run goes on with the next file.

One child serves a whole run (``IsolatedReader``: ``python -m`` this module, length-prefixed pickles over its
stdin and stdout, one file at a time); it is restarted after a file that killed it or ran past ``timeout_s``.
A fresh interpreter rather than ``multiprocessing``: no fork of a parent with threads (Chroma, ONNX), and
no re-import of the parent's ``__main__`` (which a script read from stdin does not have). The child caps its
address space at ``memory_bytes`` (``RLIMIT_AS``, where the platform enforces it: Linux; elsewhere only the
deadline holds) and writes anything a library prints to stderr, so that stdout carries only answers.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, BinaryIO, List, Optional, Tuple

from llama_index_ragonite.parsing.attachments.errors import AttachmentError
from llama_index_ragonite.parsing.attachments.html_out import Part

TIMEOUT_S = 120.0  # one file's reading
MEMORY_BYTES = 2 * 1024**3  # the child's address space


def _send(stream: BinaryIO, value: Any) -> None:
    data = pickle.dumps(value)
    stream.write(struct.pack("!Q", len(data)) + data)
    stream.flush()


def _receive(stream: BinaryIO) -> Any:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError
    size = struct.unpack("!Q", head)[0]
    return pickle.loads(stream.read(size))  # noqa: S301 - our own child's answer


def _answer(path: str, memory_bytes: int) -> Tuple[str, Any]:
    """("ok", parts as tuples) or ("error", the reason)."""
    from llama_index_ragonite.parsing.attachments import read_parts
    from llama_index_ragonite.parsing.attachments.guard import check

    try:
        check(Path(path))
        return "ok", [(p.html, p.location, p.label) for p in read_parts(Path(path))]
    except AttachmentError as err:
        return "error", str(err)
    except MemoryError:
        return "error", f"ran out of its memory cap ({memory_bytes:,} bytes) while reading"
    except ImportError as err:  # under the cap a library's shared object may not even map
        return "error", f"its reader could not load under the memory cap of {memory_bytes:,} bytes ({err})"
    except Exception as err:  # a reader's own failure on a malformed file: the file's reason, not the run's
        return "error", f"unreadable ({type(err).__name__}: {str(err)[:200]})"


def _serve(memory_bytes: int) -> None:
    """The child (``python -m …isolation BYTES``): caps its memory, then answers each path read from stdin."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, ValueError, OSError):  # not enforced on this platform: the deadline still holds
        pass
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a library's print must not corrupt the answers
    while True:
        try:
            path = _receive(stdin)
        except EOFError:
            return
        _send(stdout, _answer(path, memory_bytes))


class IsolatedReader:
    """Reads attachments in one child process (module doc); ``close`` (or ``with``) ends it."""

    def __init__(self, timeout_s: float = TIMEOUT_S, memory_bytes: int = MEMORY_BYTES) -> None:
        self.timeout_s, self.memory_bytes = timeout_s, memory_bytes
        self._process: Optional[Any] = None
        self._waiter = ThreadPoolExecutor(1, thread_name_prefix="attachment-reader")

    def __enter__(self) -> "IsolatedReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def read(self, path: Path) -> List[Part]:
        """The parts of ``path``; ``AttachmentError`` with the reason when it is given up."""
        process = self._start()
        assert process.stdin is not None and process.stdout is not None
        try:
            _send(process.stdin, os.fspath(path))
            answer = self._waiter.submit(_receive, process.stdout)
            try:
                kind, value = answer.result(timeout=self.timeout_s)
            except FutureTimeout:
                self._kill()  # the pipe closes and the waiting thread ends with EOFError
                raise AttachmentError(f"reading took longer than {self.timeout_s:.0f} s: stopped") from None
        except (EOFError, OSError, pickle.UnpicklingError, struct.error):
            self._kill()
            raise AttachmentError(
                f"its reader died (over the memory cap of {self.memory_bytes:,} bytes, or crashed)"
            ) from None
        if kind == "error":
            raise AttachmentError(value)
        return [Part(html, location, label) for html, location, label in value]

    def _start(self) -> Any:
        if self._process is None or self._process.poll() is not None:
            command = [sys.executable, "-m", __name__, str(self.memory_bytes)]
            self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        return self._process

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait(5)
        self._process = None

    def close(self) -> None:
        self._waiter.shutdown(wait=False)
        if self._process is not None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(2)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(5)
            if self._process.stdout is not None:
                self._process.stdout.close()
        self._process = None


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
