"""Give the C heap's freed memory back to the operating system, where the C library allows it.

Why: loading the embedded model (dequantizing weights, building its onnxruntime graphs) and
parsing a large page free hundreds of MB in many pieces; glibc keeps that memory mapped in the
process, so a resident set stays ~110 MB above what it uses after loading alone. ``malloc_trim``
returns it. Elsewhere (macOS, Windows, musl) this is a no-op: only the peak is higher.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

__all__ = ["release_freed_memory"]


@functools.lru_cache(maxsize=None)
def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # no glibc, or a C library without malloc_trim
        return None


def release_freed_memory() -> bool:
    """Return freed heap pages to the OS; True when the C library could be asked."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
