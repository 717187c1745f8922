"""Calibrate the attribution softmax temperature for an embedding model, offline, from a benchmark dump.

Usage:
    python benchmarks/attribution_calibration.py DUMP.jsonl [--method counterfactual+clusters]

Why offline: the counterfactual contributions (1 - cosine of the answers with and without a
cluster) do not depend on the temperature, so ``attribution_confquestions.py --dump`` records
them once and any t can be evaluated here without another LLM call.

Procedure (documented in benchmarks/results/attribution_confquestions.md):

1. Split ConfQuestions by conversation: odd conversation ids calibrate, even ids are held out.
2. On the calibration split, choose t from a log-spaced grid (0.001 .. 0.1) by the negative
   log-likelihood of the gold page: -mean log(sum of the shares of the clusters holding a gold-page
   evidence) — temperature scaling (Guo et al., 2017): a share then reads as "how likely this
   cluster is the one the answer came from". Top-1 accuracy does not depend on t (the softmax is
   monotone), so t is a calibration, not a fit to the accuracy.
3. Report on the held-out split and on all questions: accuracy with ties ordered by prompt order,
   by the retrieval score and by cosine(question + answer, evidence), mean top share, ties at the
   top (shares equal) and ties the retrieval score cannot resolve either (prompt order decides).

A row (one question) holds ``gold`` (per evidence: its page is a gold page), the two tie-break
signals per evidence (``retrieval_score``, ``evidence_similarity``) and per method
``contributions`` and ``members`` (per cluster).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from llama_index_ragonite.explain.math import softmax

GRID = [round(float(t), 4) for t in np.geomspace(0.001, 0.1, 21)]
PAPER_T = 0.05
TIE = 1e-12  # shares this close are a tie (``Attribution.tied_top``)


def split(rows: Sequence[Dict[str, Any]], which: str) -> List[Dict[str, Any]]:
    """``calibration``: odd conversation ids; ``held-out``: even ones; ``all``: every row."""
    if which == "all":
        return list(rows)
    odd = which == "calibration"
    return [r for r in rows if (int(r["conv"]) % 2 == 1) == odd]


def cluster_shares(method: Dict[str, Any], temperature: float) -> np.ndarray:
    return softmax([c if c is not None else 0.0 for c in method["contributions"]], temperature)


def outcome(row: Dict[str, Any], name: str, temperature: float, tie_break: Optional[str]) -> Dict[str, Any]:
    """Top evidence, its share and the ties of one question under ``temperature`` (shares inherited)."""
    method = row["methods"][name]
    shares = cluster_shares(method, temperature)
    n = len(row["gold"])
    evidence = [0.0] * n
    for share, members in zip(shares, method["members"]):
        for m in members:
            evidence[m] = float(share)
    signal = (row.get(tie_break) or []) if tie_break else []
    similarity = [round(signal[i], 9) if i < len(signal) and signal[i] is not None else 0.0 for i in range(n)]
    top_share = max(evidence)
    tied = [i for i in range(n) if math.isclose(evidence[i], top_share, abs_tol=TIE)]
    best = max(similarity[i] for i in tied)
    unresolved = [i for i in tied if similarity[i] == best]
    top = unresolved[0]  # prompt order inside what the signal cannot tell apart
    gold_mass = sum(float(s) for s, members in zip(shares, method["members"]) if any(row["gold"][m] for m in members))
    return {
        "correct": bool(row["gold"][top]),
        "top_share": top_share,
        "tie": len(tied) > 1,
        "unresolved": len(unresolved) > 1,
        "nll": -math.log(max(gold_mass, 1e-300)),
    }


def summary(
    rows: Sequence[Dict[str, Any]], name: str, temperature: float, tie_break: Optional[str] = None
) -> Dict[str, float]:
    """Accuracy, mean top share, tie rates and NLL of ``name`` over ``rows``."""
    outs = [outcome(r, name, temperature, tie_break) for r in rows]
    if not outs:
        return {}
    return {
        "n": len(outs),
        "accuracy": float(np.mean([o["correct"] for o in outs])),
        "top_share": float(np.mean([o["top_share"] for o in outs])),
        "ties": float(np.mean([o["tie"] for o in outs])),
        "unresolved": float(np.mean([o["unresolved"] for o in outs])),
        "nll": float(np.mean([o["nll"] for o in outs])),
    }


def calibrate(rows: Sequence[Dict[str, Any]], name: str, grid: Sequence[float] = GRID) -> float:
    """The grid temperature with the least NLL of the gold page on ``rows``."""
    return min(grid, key=lambda t: summary(rows, name, t)["nll"])


def report(
    rows: Sequence[Dict[str, Any]], name: str = "counterfactual+clusters", default: Optional[float] = None
) -> List[str]:
    """Markdown: the procedure's grid on the calibration split and before/after on every split."""
    calibration = split(rows, "calibration")
    chosen = calibrate(calibration, name)
    lines = [
        f"Calibration split: {len(calibration)} questions from odd conversation ids; held-out: "
        f"{len(split(rows, 'held-out'))} from even ids. Temperature grid (method {name}, "
        "NLL = -mean log(share of the gold-page clusters); accuracy does not depend on t):",
        "",
        "| t | NLL (calibration) | mean top share (calibration) |",
        "|---:|---:|---:|",
    ]
    for t in GRID:
        s = summary(calibration, name, t)
        mark = " **(least NLL)**" if t == chosen else ""
        lines.append(f"| {t:g}{mark} | {s['nll']:.3f} | {s['top_share']:.2f} |")
    lines += [
        "",
        f"Chosen on the calibration split: t = {chosen:g}"
        + (
            f"; the embedding model's default during this run was t = {default:g}, so the share columns above "
            f"are at t = {default:g} and the 'after' rows below recompute the shares of the same contributions "
            f"at t = {chosen:g}."
            if default is not None and not math.isclose(default, chosen)
            else " (the embedding model's default in this run)."
        ),
        "",
        "| method | split | setting | questions | accuracy, ties by prompt order | ties by retrieval score "
        "| ties by similarity | mean top share | ties at the top | ties prompt order decides |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for method in ("counterfactual", "counterfactual+clusters"):
        for part in ("calibration", "held-out", "all"):
            subset = split(rows, part)
            for label, t, tie_break in (
                (f"before: t = {PAPER_T:g}, prompt order", PAPER_T, None),
                (f"after: t = {chosen:g}, tie-break by retrieval score", chosen, "retrieval_score"),
            ):
                plain = summary(subset, method, t)
                retrieval = summary(subset, method, t, "retrieval_score")
                similarity = summary(subset, method, t, "evidence_similarity")
                lines.append(
                    f"| {method} | {part} | {label} | {plain['n']} | {plain['accuracy']:.3f} | "
                    f"{retrieval['accuracy']:.3f} | {similarity['accuracy']:.3f} | {plain['top_share']:.2f} | "
                    f"{plain['ties']:.1%} | {(retrieval if tie_break else plain)['unresolved']:.1%} |"
                )
    return lines


def load(path: Path) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> int:
    ap = argparse.ArgumentParser(prog="benchmarks/attribution_calibration.py", description=__doc__.split("\n")[0])
    ap.add_argument("dump", type=Path, help="attribution_confquestions.py --dump output")
    ap.add_argument("--method", default="counterfactual+clusters")
    args = ap.parse_args()
    print("\n".join(report(load(args.dump), args.method)))
    return 0
