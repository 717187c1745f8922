"""ConfQuestions benchmark suite, as a script: ``ragonite bench`` with this repository's defaults.

Usage:
    python benchmarks/confquestions/run.py --preset paper --out benchmarks/.cache/confquestions/runs \
        --report benchmarks/results [--llm openai:gpt-4o --judge openai:gpt-4o] [--set key=value]

Defaults: the dataset at ``../shared/datasets/confquestions`` beside the repository and the
cache (embeddings, indexes) in ``benchmarks/.cache/confquestions``. See README.md here.
"""

from __future__ import annotations

import sys
from pathlib import Path

from llama_index_ragonite.cli.bench import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness, beside this folder
from harness import git_commit  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

if __name__ == "__main__":
    sys.exit(
        main(
            prog="python benchmarks/confquestions/run.py",
            data=ROOT.parent / "shared" / "datasets" / "confquestions",
            cache=ROOT / "benchmarks" / ".cache" / "confquestions",
            revision=f"commit {git_commit(ROOT)}",
        )
    )
