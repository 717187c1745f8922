"""Where and how a benchmark report was made: machine, commit, command line.

Reports quote these so that a number can be traced to the code, machine and options that gave it.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
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


def git_commit() -> str:
    """The short HEAD commit of the checkout this package runs from, or ``unknown``."""
    try:
        here = Path(__file__).resolve().parent
        return (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
            ).stdout.strip()
            or "unknown"
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def command_line(args: argparse.Namespace) -> str:
    """The command as typed, rebuilt from the parsed arguments (for the report)."""
    parts = [getattr(args, "prog", "ragonite bench")]
    for key, value in vars(args).items():
        if key in ("func", "prog", "command") or value in (None, False, []):
            continue
        flag = "--" + key.replace("_", "-")
        for item in value if isinstance(value, list) else [value]:
            parts += [flag] if item is True else [flag, str(item)]
    return " ".join(parts)
