"""What the scripts under ``benchmarks/`` share: default paths and the end of every report.

The scripts live beside the package in a checkout, with the dataset in ``../shared`` next to
the repository; they pass their own location, since an installed package cannot know it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence


def repository(script: str, depth: int = 1) -> Path:
    """The repository holding ``script`` (its ``__file__``), ``depth`` folders up."""
    return Path(script).resolve().parents[depth]


def default_data(repo: Path) -> Path:
    """The ConfQuestions clone beside the repository: ``../shared/datasets/confquestions``."""
    return repo.parent / "shared" / "datasets" / "confquestions"


def shown(path: Path, repo: Path) -> str:
    """``path`` relative to the repository when it is inside it (reports name no home folders)."""
    try:
        return str(path.resolve().relative_to(repo))
    except ValueError:
        return str(path)


def finish_report(lines: Sequence[str], out: Optional[Path], status: int = 0) -> int:
    """Print the markdown report, write it to ``out`` (``--out``) when given; returns ``status``
    (the script's exit code)."""
    report = "\n".join(lines) + "\n"
    print(report)
    if out:
        out.write_text(report, encoding="utf-8")
    return status
