"""Parse speed and evidence identity: this checkout's HTMLEvidenceParser against --base-rev's.

Written for the switch to the HTML5 tree builder (lexbor, fa9fe67): ``--base-rev fa9fe67^`` is the former
``html.parser`` builder. Each code parses every ConfQuestions page in a child process of its own
(``bench.call``), after a warm-up on 10 pages, ``rounds`` rounds alternating base and new so a busy
machine slows both alike. Reported: the median and best round of ``HTMLEvidenceParser`` (tree
building, walking, tables, linearization, node building), their ratio (target: at most twice the
baseline's time), the tree building alone (``parse_html``), and the evidence nodes whose id, text
or metadata differ between the two codes.
"""

from __future__ import annotations

import difflib
import json
import statistics
import time
from pathlib import Path
from typing import Dict, List

OPTIONS = {"rounds": 5}
TARGET_RATIO = 2.0


def parse(data: str, nodes: bool) -> dict:
    """Run in a child process: the package's parse time over every page, and its nodes when asked."""
    from llama_index_ragonite import HTMLEvidenceParser, load_pages
    from llama_index_ragonite.parsing.html_text import parse_html

    docs = load_pages(Path(data) / "documents")
    HTMLEvidenceParser().get_nodes_from_documents(docs[:10])  # warm-up: imports, regexes, first allocation
    start = time.perf_counter()
    parsed = HTMLEvidenceParser().get_nodes_from_documents(docs)
    total, start = time.perf_counter() - start, time.perf_counter()
    for doc in docs:
        parse_html(doc.text)
    found = {"total": total, "trees": time.perf_counter() - start, "count": len(parsed), "pages": len(docs),
             "bytes": sum(len(doc.text) for doc in docs)}  # fmt: skip
    if nodes:
        found["nodes"] = {n.node_id: [n.ref_doc_id, n.text, json.loads(json.dumps(n.metadata, default=str))]
                          for n in parsed}  # fmt: skip
    return found


def node_differences(old: Dict[str, list], new: Dict[str, list]) -> List[str]:
    """One line (and a short diff) per node whose text or metadata changed, plus nodes only on one side."""
    lines = [f"- only at the baseline: `{i}` ({old[i][0]})" for i in old if i not in new]
    lines += [f"- only in this checkout: `{i}` ({new[i][0]})" for i in new if i not in old]
    for node_id, (doc, text, meta) in old.items():
        if node_id not in new or new[node_id][1:] == [text, meta]:
            continue
        other = new[node_id][1]
        where = f"{doc} #{meta.get('position')} ({meta.get('evidence_type')})"
        lines.append(f"- {where}: " + ("text differs" if text != other else "metadata differs"))
        diff = difflib.unified_diff(text.splitlines(), other.splitlines(), lineterm="", n=0)
        lines += [f"      {line[:160]}" for line in list(diff)[2:8]]
    return lines


def run(bench):
    codes, rounds = {f"baseline ({bench.base_rev})": bench.base, "this checkout": None}, bench.opts["rounds"]
    runs: Dict[str, list] = {label: [] for label in codes}
    for i in range(rounds):
        for label, code in codes.items():
            runs[label].append(bench.call("parse", code, data=str(bench.data), nodes=i == 0))
    old, now = runs.values()
    first = now[0]
    lines = [
        f"{first['pages']} ConfQuestions pages, {first['bytes'] / 1e6:.2f} MB of markup, {rounds} alternating rounds.",
        "",
        "| code | HTMLEvidenceParser median (s) | best (s) | tree building alone, median (s) | nodes |",
        "| --- | --- | --- | --- | --- |",
    ]
    for label, rs in runs.items():
        totals = [r["total"] for r in rs]
        lines.append(f"| {label} | {statistics.median(totals):.3f} | {min(totals):.3f} | "
                     f"{statistics.median(r['trees'] for r in rs):.3f} | {rs[0]['count']} |")  # fmt: skip
    ratio = statistics.median(r["total"] for r in now) / statistics.median(r["total"] for r in old)
    best_ratio = min(r["total"] for r in now) / min(r["total"] for r in old)
    differences = node_differences(old[0]["nodes"], first["nodes"])
    changed = sum(1 for line in differences if line.startswith("- "))
    lines += [
        "",
        f"Ratio this checkout / baseline (whole parse): **{ratio:.2f}×** median, {best_ratio:.2f}× best "
        f"(target ≤ {TARGET_RATIO:.0f}×).",
        "",
        f"Evidence nodes that differ between the two codes: **{changed}** of {first['count']} "
        "(same ids, texts and metadata otherwise).",
        *([""] + differences if differences else []),
    ]
    return lines, 0 if ratio <= TARGET_RATIO else 1
