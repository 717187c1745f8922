"""What the scripts under ``benchmarks/`` share: default paths, the baseline package, the end of every report.

Repo-only tooling (it reads git and ``../shared``), so it lives here, not in the wheel. The
scripts live beside the package in a checkout, with the dataset in ``../shared`` next to the
repository (or ``$CONFQUESTIONS_DIR``); they pass their own location.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Optional, Sequence


def repository(script: str, depth: int = 1) -> Path:
    """The repository holding ``script`` (its ``__file__``), ``depth`` folders up."""
    return Path(script).resolve().parents[depth]


def default_data(repo: Path) -> Path:
    """The ConfQuestions clone: ``$CONFQUESTIONS_DIR``, else the one beside the repository
    (``../shared/datasets/confquestions``)."""
    named = os.environ.get("CONFQUESTIONS_DIR")
    return Path(named) if named else repo.parent / "shared" / "datasets" / "confquestions"


def shown(path: Path, repo: Path) -> str:
    """``path`` relative to the repository when it is inside it (reports name no home folders)."""
    try:
        return str(path.resolve().relative_to(repo))
    except ValueError:
        return str(path)


def table_cell(text: str, limit: int = 160) -> str:
    """``text`` on one line as a markdown table cell (pipes escaped), cut to ``limit`` characters."""
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def package_at(rev: str, folder: Path, repo: Path) -> str:
    """Extract the package as it was at commit ``rev`` (``git archive``) into ``folder``, the baseline a
    script imports in a subprocess; returns the commit's short hash, for the report."""
    archive = subprocess.run(["git", "archive", rev, "llama_index_ragonite"], cwd=repo, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    short = subprocess.run(["git", "rev-parse", "--short", rev], cwd=repo, check=True, capture_output=True, text=True)
    return short.stdout.strip()


def finish_report(lines: Sequence[str], out: Optional[Path], status: int = 0) -> int:
    """Print the markdown report, write it to ``out`` (``--out``) when given; returns ``status``
    (the script's exit code)."""
    report = "\n".join(lines) + "\n"
    print(report)
    if out:
        out.write_text(report, encoding="utf-8")
    return status


CHECKOUT = Path(__file__).resolve().parents[2]


def git_commit(repo: Path = CHECKOUT) -> str:
    """The short HEAD commit of the checkout, or ``unknown`` (for a report's provenance line)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=5
        )
        return done.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"
