"""Attachments read in a child process with a memory cap and a deadline, so a parser that hangs or balloons
is killed and the run goes on with the next file.

One child serves a whole run (``IsolatedReader``: a spawned process, a pipe, one file at a time); it is
restarted after a file that killed it or ran past ``timeout_s``. The child caps its address space at
``memory_bytes`` (``RLIMIT_AS``, where the platform enforces it: Linux; elsewhere only the deadline holds).
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any, List, Optional

from llama_index_ragonite.parsing.attachments.errors import AttachmentError
from llama_index_ragonite.parsing.attachments.html_out import Part

TIMEOUT_S = 120.0  # one file's reading
MEMORY_BYTES = 2 * 1024**3  # the child's address space


def _serve(conn: Any, memory_bytes: int) -> None:
    """The child: read each path sent, answer ("ok", parts) or ("error", message)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, ValueError, OSError):  # not enforced on this platform: the deadline still holds
        pass
    from llama_index_ragonite.parsing.attachments import read_parts
    from llama_index_ragonite.parsing.attachments.guard import check

    while True:
        try:
            path = conn.recv()
        except EOFError:
            return
        try:
            check(Path(path))
            conn.send(("ok", [(p.html, p.location, p.label) for p in read_parts(Path(path))]))
        except AttachmentError as err:
            conn.send(("error", str(err)))
        except MemoryError:
            conn.send(("error", f"ran out of its memory cap ({memory_bytes:,} bytes) while reading"))
        except ImportError as err:  # under the cap a library's shared object may not even map
            conn.send(("error", f"its reader could not load under the memory cap of {memory_bytes:,} bytes ({err})"))
        except Exception as err:  # a reader's own failure on a malformed file: the file's reason, not the run's
            conn.send(("error", f"unreadable ({type(err).__name__}: {str(err)[:200]})"))


class IsolatedReader:
    """Reads attachments in one child process (module doc); ``close`` (or ``with``) ends it."""

    def __init__(self, timeout_s: float = TIMEOUT_S, memory_bytes: int = MEMORY_BYTES) -> None:
        self.timeout_s, self.memory_bytes = timeout_s, memory_bytes
        self._process: Optional[Any] = None
        self._conn: Optional[Any] = None

    def __enter__(self) -> "IsolatedReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def read(self, path: Path) -> List[Part]:
        """The parts of ``path``; ``AttachmentError`` with the reason when it is given up."""
        conn = self._start()
        conn.send(os.fspath(path))
        if not conn.poll(self.timeout_s):
            self._kill()
            raise AttachmentError(f"reading took longer than {self.timeout_s:.0f} s: stopped")
        try:
            kind, value = conn.recv()
        except (EOFError, OSError):
            self._kill()
            raise AttachmentError(
                f"its reader died (over the memory cap of {self.memory_bytes:,} bytes, or crashed)"
            ) from None
        if kind == "error":
            raise AttachmentError(value)
        return [Part(html, location, label) for html, location, label in value]

    def _start(self) -> Any:
        if self._process is None or not self._process.is_alive():
            ctx = multiprocessing.get_context("spawn")  # no fork of a parent with threads (Chroma, ONNX)
            parent, child = ctx.Pipe()
            self._process = ctx.Process(target=_serve, args=(child, self.memory_bytes), daemon=True)
            self._process.start()
            child.close()
            self._conn = parent
        return self._conn

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join(5)
        self._process = self._conn = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._process is not None:
            self._process.join(2)
            if self._process.is_alive():
                self._process.kill()
        self._process = self._conn = None
