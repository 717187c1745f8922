"""Where and how a benchmark report was made: the machine and the package version.

Reports quote these so that a number can be traced to the code, machine and options that gave it.
"""

from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def cpu_name() -> str:
    """The CPU model from ``/proc/cpuinfo``, else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    return f"{os.cpu_count()} cores (nproc), {cpu_name()}, Python {platform.python_version()}, {platform.system()}"


def package_version() -> str:
    """The installed package and its version (what a report's numbers were made with, outside a checkout)."""
    try:
        return f"llama-index-ragonite {version('llama-index-ragonite')}"
    except PackageNotFoundError:
        return "llama-index-ragonite (not installed)"
