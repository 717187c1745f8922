"""Returning freed heap memory to the OS: asked of glibc where it is there, a no-op elsewhere."""

import ctypes.util
import sys

import pytest

from llama_index_ragonite import memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_glibc_is_asked_to_trim(monkeypatch):
    memory._malloc_trim.cache_clear()
    calls = []
    trim = memory._malloc_trim()
    assert trim is not None  # CI runs on glibc Linux
    monkeypatch.setattr(memory, "_malloc_trim", lambda: lambda pad: calls.append(pad) or trim(pad))
    assert memory.release_freed_memory() is True and calls == [0]


def test_without_malloc_trim_it_does_nothing(monkeypatch):
    memory._malloc_trim.cache_clear()
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    try:
        assert memory.release_freed_memory() is False
    finally:
        memory._malloc_trim.cache_clear()
