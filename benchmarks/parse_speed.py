"""Parse time and evidence identity: HTML5 tree builder (lexbor) vs the former ``html.parser`` builder.

Usage:
    python benchmarks/parse_speed.py [--data ../shared/datasets/confquestions] [--rounds 5] [--out FILE.md]
    python benchmarks/parse_speed.py --baseline   # time only the former html.parser builder

Both builders run in the same process, rounds interleaved (A, B, A, B, ...) so a
busy machine slows both alike; the report gives the median and the best round of
``HTMLEvidenceParser`` over every page (tree building, walking, tables,
linearization and node building), their ratio, the tree building alone, and how
many evidence nodes differ between the two builders (id, text or metadata).
The baseline is ``BeautifulSoup(preclean(markup), "html.parser")``, the former
``parse_html``: ``preclean`` now also writes the end tag of a self-closed element,
which ``html.parser`` built the same way already.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Tuple

from bs4 import BeautifulSoup
from harness import default_data, finish_report, repository

from llama_index_ragonite import HTMLEvidenceParser, load_pages
from llama_index_ragonite.parsing import extraction
from llama_index_ragonite.parsing.html_text import parse_html, preclean

DEFAULT_DATA = default_data(repository(__file__))
TARGET_RATIO = 2.0  # the HTML5 builder may cost at most twice the former parse time


def parse_html_former(markup: str) -> BeautifulSoup:
    """The former tree builder: Python's ``html.parser`` (nests only what it sees)."""
    return BeautifulSoup(preclean(markup), "html.parser")


BUILDERS: Dict[str, Callable[[str], BeautifulSoup]] = {"html.parser": parse_html_former, "html5": parse_html}


@contextlib.contextmanager
def tree_builder(name: str) -> Iterator[None]:
    saved = extraction.parse_html
    extraction.parse_html = BUILDERS[name]
    try:
        yield
    finally:
        extraction.parse_html = saved


def run_parser(docs: list, name: str) -> Tuple[float, list]:
    with tree_builder(name):
        start = time.perf_counter()
        nodes = HTMLEvidenceParser().get_nodes_from_documents(docs)
        return time.perf_counter() - start, nodes


def time_trees(docs: list, name: str) -> float:
    build = BUILDERS[name]
    start = time.perf_counter()
    for doc in docs:
        build(doc.text)
    return time.perf_counter() - start


def node_differences(before: list, after: list) -> List[str]:
    """One line (and a short diff) per node whose id, text or metadata changed, plus nodes only on one side."""
    old = {n.node_id: n for n in before}
    new = {n.node_id: n for n in after}
    lines = [f"- only with html.parser: `{i}` ({old[i].ref_doc_id})" for i in old if i not in new]
    lines += [f"- only with html5: `{i}` ({new[i].ref_doc_id})" for i in new if i not in old]
    for node_id, node in old.items():
        other = new.get(node_id)
        if other is None or (node.text == other.text and node.metadata == other.metadata):
            continue
        where = f"{node.ref_doc_id} #{node.metadata.get('position')} ({node.metadata.get('evidence_type')})"
        lines.append(f"- {where}: " + ("text differs" if node.text != other.text else "metadata differs"))
        diff = difflib.unified_diff(node.text.splitlines(), other.text.splitlines(), lineterm="", n=0)
        lines += [f"      {line[:160]}" for line in list(diff)[2:8]]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--rounds", type=int, default=5, help="timed passes per builder (interleaved)")
    ap.add_argument("--baseline", action="store_true", help="time only the former html.parser builder")
    ap.add_argument("--out", type=Path, default=None, help="write the markdown report here")
    args = ap.parse_args()
    docs = load_pages(args.data / "documents")
    names = ["html.parser"] if args.baseline else ["html.parser", "html5"]
    totals: Dict[str, List[float]] = {name: [] for name in names}
    trees: Dict[str, List[float]] = {name: [] for name in names}
    nodes: Dict[str, list] = {}
    for name in names:  # warm-up: imports, regex compilation, first allocation
        run_parser(docs[:10], name)
    for _ in range(args.rounds):
        for name in names:
            seconds, nodes[name] = run_parser(docs, name)
            totals[name].append(seconds)
            trees[name].append(time_trees(docs, name))
    size = sum(len(doc.text) for doc in docs)
    lines = [
        "# Parse speed: HTML5 tree builder vs html.parser",
        "",
        f"Command: `python benchmarks/parse_speed.py{' --baseline' if args.baseline else ''} --rounds {args.rounds}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}, "
        f"{sys.platform}. {len(docs)} ConfQuestions pages, {size / 1e6:.2f} MB of markup, {args.rounds} interleaved rounds.",
        "",
        "| tree builder | HTMLEvidenceParser median (s) | best (s) | tree building alone, median (s) | nodes |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in names:
        lines.append(
            f"| {name} | {statistics.median(totals[name]):.3f} | {min(totals[name]):.3f} | "
            f"{statistics.median(trees[name]):.3f} | {len(nodes[name])} |"
        )
    status = 0
    if not args.baseline:
        ratio = statistics.median(totals["html5"]) / statistics.median(totals["html.parser"])
        best_ratio = min(totals["html5"]) / min(totals["html.parser"])
        differences = node_differences(nodes["html.parser"], nodes["html5"])
        n_changed = sum(1 for line in differences if line.startswith("- "))
        status = 0 if ratio <= TARGET_RATIO else 1
        lines += [
            "",
            f"Ratio html5 / html.parser (whole parse): **{ratio:.2f}×** median, {best_ratio:.2f}× best "
            f"(target ≤ {TARGET_RATIO:.0f}×).",
            "",
            f"Evidence nodes that differ between the two builders: **{n_changed}** of {len(nodes['html5'])} "
            "(same ids, texts and metadata otherwise).",
        ]
        lines += [""] + differences if differences else []
    return finish_report(lines, args.out, status)


if __name__ == "__main__":
    sys.exit(main())
