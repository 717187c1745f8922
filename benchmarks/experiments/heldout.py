"""Held-out conversations: a wiki nobody tuned on.

A held-out set (``benchmarks/heldout_wiki``, or ``--set wiki=heldout_wiki_b``: pages of an invented
company's wiki and conversations over them in English and German, written by a helper that saw the pages
and the quotas, never the answering code; each folder's README says when, and what it was used for since)
judges changes made after it. Each side (the baseline package at ``--base-rev`` and this checkout) runs
in a child process of its own (``Bench.call``): it indexes the pages into a fresh store with the embedded
default and plays every conversation through ``RagoniteChatEngine.from_store`` with the offline default,
one engine per conversation. Scored here, the same way for both: answerable accuracy (an accepted string in
the answer, all of them for a list, and not out of scope), median words, unanswerable and off-topic turns
answered out of scope, topic switches shown unchanged and answered from the new page, P@1 (gold page first).
"""

from __future__ import annotations

import time
from typing import List

from harness import CHECKOUT
from harness.heldout_wikis import conversations_of, page_titles, play, score

__all__ = ["play"]  # what Bench.call runs in the child processes

OPTIONS = {
    "wiki": "heldout_wiki",
    "after_position": "",
    "half": 0,
}  # after_position: this checkout's After line ("end")
# half: 1 or 2 plays only that half of a set written in halves (heldout_wiki_c: tune on 1, run 2 once); 0: all
GOALS = {"accuracy": "≥ 0.75", "median_words": "≤ 30", "out_of_scope_rate": "≥ 0.8"}


def run(bench) -> List[str]:
    wiki = bench.opts["wiki"]
    folder = CHECKOUT / "benchmarks" / wiki
    half, titles = bench.opts["half"], page_titles(folder)
    conversations = conversations_of(folder, half)
    after = {"after_position": bench.opts["after_position"]} if bench.opts["after_position"] else {}
    started = time.perf_counter()
    base = score(
        conversations, bench.call("play", bench.base, folder=str(folder), contextualizer={}, half=half), titles
    )
    seconds = [time.perf_counter() - started]
    now = score(conversations, bench.call("play", folder=str(folder), contextualizer=after, half=half), titles)
    seconds.append(time.perf_counter() - started - seconds[0])
    b, n = base["all"], now["all"]

    def of(key: str, total: str, fmt: str = "{}") -> tuple:
        return fmt.format(b[key]) + f" of {b[total]}", fmt.format(n[key]) + f" of {n[total]}"

    rows = [
        ("answerable accuracy (an accepted string in the answer)", "accuracy", f"{b['accuracy']:.3f}", f"{n['accuracy']:.3f}"),
        ("median answer length, words", "median_words", f"{b['median_words']:g}", f"{n['median_words']:g}"),
        ("unanswerable and off-topic turns answered out of scope", "out_of_scope_rate",
         *of("out_of_scope_rate", "unanswerable", "{:.3f}")),
        ("answerable turns answered out of scope", "", *of("refused_answerable", "answerable")),
        ("topic switches shown unchanged", "all", *of("switches_unchanged", "switches")),
        ("topic switches unchanged, gold page first and answered right", "all", *of("switches_right", "switches")),
        ("P@1 (gold page first), answerable turns", "", f"{b['p_at_1']:.3f}", f"{n['p_at_1']:.3f}"),
        ("table-cell turns right", "", *of("table_cells_right", "table_cells")),
        ("... of those whose gold row was retrieved (the retrieval ceiling)", "", *of("table_ceiling_right", "table_ceiling")),
        ("conflict turns: current value and the older page named", "", *of("conflicts_named", "conflicts")),
        ("turns asked across languages: gold page first", "", *of("cross_language_first", "cross_language")),
    ]  # fmt: skip
    rows = [row for row in rows if not row[2].endswith(" of 0")]  # measures the set has no turns for
    lines = [
        f"Set: [benchmarks/{wiki}](../{wiki}/README.md) (its README says when it was written and what it was used for)"
        + (f", half {half} of it only. " if half else ". ")
        + "Offline default: the offline question completer and the extractive answerer. Each side indexed the pages "
        f"and played the conversations in a child process of its own ({seconds[0]:.0f} s and {seconds[1]:.0f} s, "
        "model loading and indexing included)"
        + (f"; this checkout's contextualizer with `after_position={bench.opts['after_position']}`." if after else "."),
        "",
        "| measure | goal (issue 45) | baseline | this checkout |",
        "|---|---|---|---|",
        *[f"| {name} | {GOALS.get(goal, goal)} | {x} | {y} |" for name, goal, x, y in rows],
        "",
        "By language (baseline → this checkout):",
        "",
        "| language | turns answerable | accuracy | out of scope (unanswerable) | switches unchanged | P@1 "
        "| table cells right, gold row retrieved |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {lang} | {y['answerable']} | {x['accuracy']:.3f} → {y['accuracy']:.3f} | "
            f"{x['out_of_scope_rate']:.3f} → {y['out_of_scope_rate']:.3f} | {x['switches_unchanged']} → "
            f"{y['switches_unchanged']} of {y['switches']} | {x['p_at_1']:.3f} → {y['p_at_1']:.3f} | "
            f"{x['table_ceiling_right']} of {x['table_ceiling']} → {y['table_ceiling_right']} of {y['table_ceiling']} |"
            for lang in ("en", "de")
            for x, y in [(base[lang], now[lang])]
        ],
        "",
        "By kind of turn (accuracy for answerable kinds, out-of-scope rate for the others):",
        "",
        "| kind | turns | baseline | this checkout |",
        "|---|---|---|---|",
    ]
    for kind, y in now["by_kind"].items():
        measure = "out_of_scope_rate" if kind in ("unanswerable", "off_topic") else "accuracy"
        turns = y["unanswerable"] if measure == "out_of_scope_rate" else y["answerable"]
        lines.append(f"| {kind} | {turns} | {base['by_kind'][kind][measure]:.3f} | {y[measure]:.3f} |")
    return lines
