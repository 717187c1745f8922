"""How a file's name is written in page ids and messages (a folder's pages and its attachments alike)."""

from __future__ import annotations

import os
from typing import Union

__all__ = ["display_path"]


def display_path(path: Union[str, "os.PathLike[str]"]) -> str:
    """``path`` as text any encoder accepts: bytes of the name that are not UTF-8 become ``\\xNN`` escapes.

    A file named ``b'caf\\xe9.html'`` (Latin-1 on disk) is ``caf\\xe9.html`` (a backslash, then
    ``xe9``): the page's id and every message name it so, the same on every run, never with the
    lone surrogates Python uses internally (Chroma, SQLite and JSON refuse those).
    """
    return os.fsencode(path).decode("utf-8", "backslashreplace")
