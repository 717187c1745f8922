"""The one benchmark runner: every experiment in ``benchmarks/experiments/`` is a configuration of it.

    python benchmarks/run.py EXPERIMENT [--data DIR] [--store DIR] [--cache DIR] [--base-rev REV]
        [--limit N] [--out FILE.md] [--set KEY=VALUE ...]

An experiment is a module with a docstring (its first line is the report's title), ``OPTIONS``
(defaults of its own settings, changed with ``--set``; each value keeps its default's type) and
``run(bench) -> lines``: the report's body. The runner owns what every experiment shares: the
command line, the dataset and the cached ConfQuestions store, the questions, the engine of the
embedded default, the baseline package (``--base-rev``) and calls into it in a child process, and
the report's header (command, machine, commit, load, wall time) and file.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Optional, Sequence

from harness import CHECKOUT, default_data, finish_report, git_commit, package_at

EXPERIMENTS = CHECKOUT / "benchmarks" / "experiments"
RUN = CHECKOUT / "benchmarks" / "run.py"


def experiment_names(folder: Path = EXPERIMENTS) -> List[str]:
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


def typed(default: Any, text: str) -> Any:
    """``text`` read as ``default``'s type (``--set rounds=4`` gives an int, ``--set sizes=1,2`` a tuple)."""
    if isinstance(default, bool):
        if text.lower() not in ("1", "0", "true", "false", "yes", "no"):
            raise ValueError(f"not a yes/no value: {text!r}")
        return text.lower() in ("1", "true", "yes")
    if isinstance(default, (tuple, list)):
        kind = type(default[0]) if default else str
        return tuple(kind(part) for part in text.split(",") if part)
    return type(default)(text) if default is not None else text


def options(defaults: Dict[str, Any], settings: Sequence[str]) -> Dict[str, Any]:
    """The experiment's ``OPTIONS`` with each ``KEY=VALUE`` of ``--set`` applied; unknown keys are errors."""
    chosen = dict(defaults)
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep or key not in defaults:
            known = ", ".join(sorted(defaults)) or "none"
            raise SystemExit(f"--set {setting}: not KEY=VALUE with a KEY of this experiment (its options: {known})")
        try:
            chosen[key] = typed(defaults[key], value)
        except ValueError as err:
            raise SystemExit(f"--set {setting}: {err}") from None
    return chosen


class Bench:
    """One run of one experiment: its settings and the shared services, each made when first asked for."""

    def __init__(self, module: ModuleType, args: argparse.Namespace, argv: Sequence[str]) -> None:
        self.module, self.name = module, module.__name__.rsplit(".", 1)[-1]
        self.data: Path = args.data or default_data(CHECKOUT)
        self.store_path: Path = args.store or CHECKOUT / "benchmarks" / ".cache" / "retrieval-ALL"
        self.cache: Path = args.cache or CHECKOUT / "benchmarks" / ".cache"
        self.base_rev: str = args.base_rev
        self.limit: Optional[int] = args.limit
        self.out: Optional[Path] = args.out
        self.opts: Dict[str, Any] = options(getattr(module, "OPTIONS", {}), args.set)
        self.argv = list(argv)
        self.started, self.load_before = time.perf_counter(), os.getloadavg()
        self._tmp: Optional[tempfile.TemporaryDirectory] = None

    # What experiments read -------------------------------------------------------------------------

    def questions(self) -> list:
        """ConfQuestions' 600 questions (the first ``--limit`` of them when given)."""
        from llama_index_ragonite.bench.confquestions import load_questions

        return load_questions(self.data)[: self.limit or None]

    @cached_property
    def store(self):
        """The cached ALL-contextualized ConfQuestions store (built the first time), settled on disk."""
        from harness.store import open_all_store

        return open_all_store(self.store_path, self.data)

    def retriever(self, **settings: Any):
        """The embedded default's hybrid retriever over ``store``: 10 lexical + 10 dense (+ latent), RRF, top 10."""
        from llama_index_ragonite.retrieval.retriever import HybridRetriever

        return HybridRetriever.from_store(self.store, **{"k_lexical": 10, "k_dense": 10, "top_n": 10, **settings})

    def engine(self, retriever: Any = None, **settings: Any):
        """A chat engine of the embedded default (extractive answerer, no follow-up suggestions)."""
        from llama_index_ragonite.chat.engine import RagoniteChatEngine
        from llama_index_ragonite.models.extractive.answerer import ExtractiveAnswerer

        settings = {"llm": ExtractiveAnswerer(), "follow_ups": 0, **settings}
        return RagoniteChatEngine(retriever or self.retriever(), **settings)

    # The baseline ----------------------------------------------------------------------------------

    @cached_property
    def base(self) -> Path:
        """A folder holding the package as it was at ``--base-rev`` (``git archive``), for ``call``."""
        self._tmp = tempfile.TemporaryDirectory(prefix="ragonite-base-")
        self.base_commit = package_at(self.base_rev, Path(self._tmp.name), CHECKOUT)
        return Path(self._tmp.name)

    def call(self, function: str, package: Optional[Path] = None, /, **kwargs: Any) -> Any:
        """This experiment's ``function(**kwargs)`` in a fresh process importing the package from ``package``
        (``bench.base`` for the baseline; None: this checkout); its JSON-able result."""
        code = package or CHECKOUT
        paths = [str(code), str(CHECKOUT / "benchmarks")]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), RAGONITE_BENCH_CHILD="1")
        request = json.dumps({"function": function, "kwargs": kwargs})  # on stdin: no limit on its size
        done = subprocess.run(
            [sys.executable, str(RUN), self.name, "--child", "-"],
            input=request, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"{self.name}.{function} at {code} failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    # The report ------------------------------------------------------------------------------------

    def header(self) -> List[str]:
        from llama_index_ragonite.bench.provenance import machine

        title = (self.module.__doc__ or self.name).strip().splitlines()[0].rstrip(".")
        load = " / ".join(f"{x:.1f}" for x in self.load_before)
        after = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        base = f"; baseline {self.base_commit} (`--base-rev {self.base_rev}`)" if "base" in self.__dict__ else ""
        return [
            f"# {title}",
            "",
            f"Command: `python benchmarks/run.py {shlex.join([self.name, *self.argv])}`",
            f"Machine: {machine()}; commit {git_commit()}{base}; load average (1/5/15 min) {load} at start, "
            f"{after} at the end; wall time {time.perf_counter() - self.started:.0f} s.",
            "",
        ]

    def finish(self, body: Sequence[str], status: int = 0) -> int:
        lines = [*self.header(), *body]
        if self._tmp:
            self._tmp.cleanup()
        return finish_report(lines, self.out, status)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python benchmarks/run.py", description=__doc__.split("\n")[0])
    ap.add_argument("experiment", choices=experiment_names(), help="a module of benchmarks/experiments/")
    ap.add_argument("--data", type=Path, help="ConfQuestions (default: $CONFQUESTIONS_DIR, else ../shared/...)")
    ap.add_argument("--store", type=Path, help="the ALL store (default: benchmarks/.cache/retrieval-ALL)")
    ap.add_argument("--cache", type=Path, help="folder of built stores (default: benchmarks/.cache)")
    ap.add_argument("--base-rev", default="HEAD", help="the baseline commit of experiments that compare")
    ap.add_argument("--limit", type=int, help="only the first N questions (development runs)")
    ap.add_argument("--out", type=Path, help="write the markdown report here too")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="an option of the experiment")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # JSON {function, kwargs} (- : on stdin): Bench.call's worker
    return ap


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    module = importlib.import_module(f"experiments.{args.experiment}")
    if args.child:
        request = json.loads(sys.stdin.read() if args.child == "-" else args.child)
        print(json.dumps(getattr(module, request["function"])(**request["kwargs"])))
        return 0
    rest = list(argv)
    rest.remove(args.experiment)
    bench = Bench(module, args, rest)
    result = module.run(bench)
    body, status = result if isinstance(result, tuple) else (result, 0)
    return bench.finish(body, status)
