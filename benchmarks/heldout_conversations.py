"""Conversations over a wiki nobody tuned on: the held-out set of benchmarks/heldout_wiki, played turn by turn.

Usage:
    python benchmarks/heldout_conversations.py [--base-rev REV] [--out FILE.md]

The set (15 pages of a company's travel, HR, facilities and lab wiki; 42 conversations, 183 turns
in English and German) was written by a helper that saw the pages and the quotas, never the
answering code, and committed (eb3ce83) before the first change of issue 45. Nothing may be
tuned on it: it judges changes made after it.

Each side (this checkout, and the package as it was at ``--base-rev``, extracted with ``git
archive``) runs in a subprocess of its own: it indexes the pages into a fresh store with the
embedded default, then plays every conversation through ``RagoniteChatEngine.from_store`` with
the offline default (the offline question completer and the extractive answerer), one engine per
conversation, and writes what each turn showed: the completed question, the answer, the page of
the first source, whether it was answered out of scope. Scored here, the same way for both:

- answerable accuracy: an accepted string in the answer (any of them, or all for a list), and not
  out of scope; median answer length in words;
- unanswerable and off-topic turns answered out of scope;
- topic switches: shown unchanged (the completed question equals the user's words) and answered
  from the new topic's page (the gold page first among the sources);
- P@1: the gold page first among the sources, over answerable turns.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
SET = ROOT / "benchmarks" / "heldout_wiki"  # --set heldout_wiki_b: the second held-out set


def play(
    pages: Path, conversations: List[Dict[str, Any]], work: Path, contextualizer: Optional[Dict[str, Any]] = None
) -> List[Dict[str, Any]]:
    """Index ``pages`` into ``work`` and play ``conversations``: one record per turn (imports the package
    from ``sys.path``, so it runs whichever copy the subprocess put first). ``contextualizer``: options of
    ``EvidenceContextualizer`` (default: its defaults)."""
    from llama_index_ragonite import EvidenceContextualizer, EvidenceStore, RagoniteChatEngine, load_pages
    from llama_index_ragonite.prompts import OUT_OF_SCOPE

    store = EvidenceStore(work / "store", contextualizer=EvidenceContextualizer(**(contextualizer or {})))
    store.ingest(load_pages(pages), show_progress=False)
    records = []
    for conversation in conversations:
        engine = RagoniteChatEngine.from_store(work / "store")
        for n, turn in enumerate(conversation["turns"]):
            started = time.perf_counter()
            response = engine.chat(turn["question"])
            sources = response.source_nodes
            records.append(
                {
                    "conversation": conversation["id"],
                    "turn": n,
                    "completed": response.completed_question,
                    "answer": response.response,
                    "first_page": sources[0].node.ref_doc_id if sources else None,
                    "out_of_scope": OUT_OF_SCOPE.rstrip(".").lower() in response.response.lower(),
                    "seconds": time.perf_counter() - started,
                }
            )
    return records


def _side(package_parent: Path, label: str, folder: Path = SET, contextualizer: Optional[Dict[str, Any]] = None):
    """``play`` in a subprocess whose ``sys.path`` starts with ``package_parent``."""
    with tempfile.TemporaryDirectory(prefix=f"heldout-{label}-") as tmp:
        out = Path(tmp) / "records.json"
        code = (
            "import json, sys; from pathlib import Path; "
            f"sys.path.insert(0, {str(package_parent)!r}); sys.path.insert(1, {str(ROOT / 'benchmarks')!r}); "
            "import heldout_conversations as h; "
            f"conversations = json.loads(Path({str(folder / 'conversations.json')!r}).read_text()); "
            f"records = h.play(Path({str(folder / 'pages')!r}), conversations, Path({tmp!r}), {contextualizer!r}); "
            f"Path({str(out)!r}).write_text(json.dumps(records))"
        )
        subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp)
        return json.loads(out.read_text())


def score(conversations: List[Dict[str, Any]], records: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The metrics of the module doc, overall and by language."""
    shown = {(r["conversation"], r["turn"]): r for r in records}
    rows = []
    for conversation in conversations:
        for n, turn in enumerate(conversation["turns"]):
            got = shown[(conversation["id"], n)]
            answer = got["answer"].lower()
            hits = [a.lower() in answer for a in turn["answers"]]
            answerable = turn["gold_page"] is not None
            right = (
                answerable and not got["out_of_scope"] and (all(hits) if turn["answer_mode"] == "all" else any(hits))
            )
            rows.append(
                {
                    "kind": turn["kind"],
                    "language": turn["language"],
                    "answerable": answerable,
                    "right": right,
                    "words": len(got["answer"].split()),
                    "out_of_scope": got["out_of_scope"],
                    "first": got["first_page"] == turn["gold_page"],
                    "unchanged": got["completed"].strip() == turn["question"].strip(),
                }
            )

    def summary(selected: List[Dict[str, Any]]) -> Dict[str, Any]:
        answerable = [r for r in selected if r["answerable"]]
        refuse = [r for r in selected if not r["answerable"]]
        switches = [r for r in selected if r["kind"] == "topic_switch"]
        return {
            "answerable": len(answerable),
            "accuracy": sum(r["right"] for r in answerable) / max(len(answerable), 1),
            "median_words": statistics.median(r["words"] for r in answerable) if answerable else 0,
            "refused_answerable": sum(r["out_of_scope"] for r in answerable),
            "p_at_1": sum(r["first"] for r in answerable) / max(len(answerable), 1),
            "unanswerable": len(refuse),
            "out_of_scope_rate": sum(r["out_of_scope"] for r in refuse) / max(len(refuse), 1),
            "switches": len(switches),
            "switches_unchanged": sum(r["unchanged"] for r in switches),
            "switches_right": sum(r["unchanged"] and r["first"] and r["right"] for r in switches),
        }

    kinds = sorted({r["kind"] for r in rows})
    return {
        "all": summary(rows),
        "en": summary([r for r in rows if r["language"] == "en"]),
        "de": summary([r for r in rows if r["language"] == "de"]),
        "by_kind": {k: summary([r for r in rows if r["kind"] == k]) for k in kinds},
    }


def report(
    args, chosen: Path, base_commit: str, base: Dict[str, Any], now: Dict[str, Any], seconds: Dict[str, float]
) -> List[str]:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "llama_index_ragonite"], cwd=ROOT, capture_output=True)
    revision = head.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")
    command = "python benchmarks/heldout_conversations.py" + (f" --base-rev {args.base_rev}" if args.base_rev else "")
    command += f" --set {args.set}" if args.set != "heldout_wiki" else ""
    command += f" --after-position {args.after_position}" if args.after_position else ""
    lines = [
        "# Held-out conversations: a wiki nobody tuned on",
        "",
        f"Command: `{command}{' --out ' + str(args.out) if args.out else ''}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}. "
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. This checkout: {revision}; baseline: "
        f"{base_commit} (`git archive`). Each side indexed the pages and played the conversations in a "
        f"subprocess of its own ({seconds['base']:.0f} s and {seconds['now']:.0f} s, model loading and indexing included).",
        "",
        f"Set: [benchmarks/{chosen.name}]({chosen.name}/README.md) (its README says when it was written and what it "
        "was used for). Offline default: the offline question completer and the extractive answerer.",
        "",
        "| measure | goal (issue 45) | baseline | this checkout |",
        "|---|---|---|---|",
    ]
    b, n = base["all"], now["all"]
    rows = [
        (
            "answerable accuracy (an accepted string in the answer)",
            "≥ 0.75",
            f"{b['accuracy']:.3f}",
            f"{n['accuracy']:.3f}",
        ),
        ("median answer length, words", "≤ 30", f"{b['median_words']:g}", f"{n['median_words']:g}"),
        (
            "unanswerable and off-topic turns answered out of scope",
            "≥ 0.8",
            f"{b['out_of_scope_rate']:.3f} of {b['unanswerable']}",
            f"{n['out_of_scope_rate']:.3f} of {n['unanswerable']}",
        ),
        (
            "answerable turns answered out of scope",
            "",
            f"{b['refused_answerable']} of {b['answerable']}",
            f"{n['refused_answerable']} of {n['answerable']}",
        ),
        (
            "topic switches shown unchanged",
            "all",
            f"{b['switches_unchanged']} of {b['switches']}",
            f"{n['switches_unchanged']} of {n['switches']}",
        ),
        (
            "topic switches unchanged, gold page first and answered right",
            "all",
            f"{b['switches_right']} of {b['switches']}",
            f"{n['switches_right']} of {n['switches']}",
        ),
        ("P@1 (gold page first), answerable turns", "", f"{b['p_at_1']:.3f}", f"{n['p_at_1']:.3f}"),
    ]
    lines += [f"| {a} | {g} | {x} | {y} |" for a, g, x, y in rows]
    lines += [
        "",
        "By language (baseline → this checkout):",
        "",
        "| language | turns answerable | accuracy | out of scope (unanswerable) | switches unchanged | P@1 |",
        "|---|---|---|---|---|---|",
    ]
    for lang in ("en", "de"):
        x, y = base[lang], now[lang]
        lines.append(
            f"| {lang} | {y['answerable']} | {x['accuracy']:.3f} → {y['accuracy']:.3f} | "
            f"{x['out_of_scope_rate']:.3f} → {y['out_of_scope_rate']:.3f} | {x['switches_unchanged']} → "
            f"{y['switches_unchanged']} of {y['switches']} | {x['p_at_1']:.3f} → {y['p_at_1']:.3f} |"
        )
    lines += [
        "",
        "By kind of turn (accuracy for answerable kinds, out-of-scope rate for the others):",
        "",
        "| kind | turns | baseline | this checkout |",
        "|---|---|---|---|",
    ]
    for kind, y in now["by_kind"].items():
        x = base["by_kind"][kind]
        measure = "out_of_scope_rate" if kind in ("unanswerable", "off_topic") else "accuracy"
        turns = y["unanswerable"] if measure == "out_of_scope_rate" else y["answerable"]
        lines.append(f"| {kind} | {turns} | {x[measure]:.3f} | {y[measure]:.3f} |")
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-rev", default="HEAD", help="the baseline commit (default HEAD)")
    ap.add_argument("--out", type=Path, help="write the markdown report here")
    ap.add_argument(
        "--after-position", choices=("header", "end"), help="this checkout's contextualizer places the After line so"
    )
    ap.add_argument("--set", default="heldout_wiki", help="the set's folder under benchmarks/ (default heldout_wiki)")
    args = ap.parse_args(argv)
    chosen = ROOT / "benchmarks" / args.set
    sys.path.insert(0, str(ROOT))
    from harness import finish_report, package_at

    conversations = json.loads((chosen / "conversations.json").read_text())
    with tempfile.TemporaryDirectory(prefix="heldout-base-") as base_dir:
        base_commit = package_at(args.base_rev, Path(base_dir), ROOT)
        started = time.perf_counter()
        base_records = _side(Path(base_dir), "base", chosen)
        seconds = {"base": time.perf_counter() - started}
    started = time.perf_counter()
    now_records = _side(ROOT, "now", chosen, {"after_position": args.after_position} if args.after_position else None)
    seconds["now"] = time.perf_counter() - started
    lines = report(
        args, chosen, base_commit, score(conversations, base_records), score(conversations, now_records), seconds
    )
    return finish_report(lines, args.out.resolve() if args.out else None)


if __name__ == "__main__":
    sys.exit(main())
