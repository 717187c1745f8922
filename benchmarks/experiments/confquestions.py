"""ConfQuestions suite: `ragonite bench` with this repository's defaults.

The dataset is ``--data`` (the runner's default: beside the repository), the cache of embeddings and
indexes ``--cache``/confquestions, and the suite's report names the commit. Everything else is
``ragonite bench``'s own arguments, in the option ``args``:
``python benchmarks/run.py confquestions --set args="--preset paper --out RUNS --report benchmarks/results"``.
The suite writes its own report (``--report``); this experiment's body is its exit status.
"""

from __future__ import annotations

import shlex

from harness import git_commit

from llama_index_ragonite.cli.bench import main

OPTIONS = {"args": ""}


def run(bench):
    status = main(
        shlex.split(bench.opts["args"]),
        prog="ragonite bench",  # the suite's report rebuilds the command from its arguments (data, cache included)
        data=bench.data,
        cache=bench.cache / "confquestions",
        revision=f"commit {git_commit()}",
    )
    return [f"`ragonite bench {bench.opts['args']}` exited with status {status}."], status
