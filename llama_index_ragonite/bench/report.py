"""Aggregate per-question records into the paper's tables: slices, significance marks, markdown, plots.

Numbers come only from the records; the paper's numbers (``config.GROUPS``, ``PAPER_TURNS``,
``PAPER_MODEL_ROWS``, ``PAPER_OUT_OF_SCOPE``) sit in their own labelled columns. Plots: ``bench.plots``. Significance (``*``) is against the baseline configuration, on the
questions both answered: McNemar for 0/1 metrics, one-tailed paired t-test for graded ones.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple, cast

from llama_index_ragonite.bench.config import (
    DEMO_VERSION,
    GROUPS,
    PAPER_ATTRIBUTION,
    PAPER_ATTRIBUTION_DEMO,
    PAPER_MODEL_ROWS,
    PAPER_OUT_OF_SCOPE,
    PAPER_TURNS,
    README_VERSION,
    BenchConfig,
    Row,
    available,
    row_config,
)
from llama_index_ragonite.bench.metrics import gold_keys, page_key
from llama_index_ragonite.bench.significance import mark, mcnemar, paired_t_one_tailed
from llama_index_ragonite.bench.slices import RECORD_SLICES

METRICS = {  # key -> (column label, binary?)
    "p1": ("P@1", True),
    "mrr": ("MRR@10", False),
    "recall": ("Recall@10", False),
    "token_recall": ("token recall", False),
    "k_precision": ("K-precision", False),
    "out_of_scope": ("out of scope", True),
    "relevance": ("answer relevance (judge)", False),
    "context_relevance": ("context relevance (model)", False),
    "answer_reward": ("answer reward (model)", False),
}
MISS_AT_10 = "no_gold_in_top10"  # 1 - P@10 of the paper: no gold page among the top 10 (MRR@10 = 0)
Groups = Dict[str, Tuple[str, List[Row]]]


def _mean(values: Sequence[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def attribution_hits(record: dict) -> Dict[str, float]:
    """Per attribution method: 1 when the top-attributed evidence's page is gold (only when gold was retrieved)."""
    gold = gold_keys(record["gold_urls"])
    if not record.get("attribution") or not {page_key(u) for u in record["retrieved_urls"]} & gold:
        return {}
    return {f"attribution:{m}": float(page_key(url) in gold) for m, url in sorted(record["attribution"].items())}


def scores(record: dict) -> Dict[str, Optional[float]]:
    miss = {MISS_AT_10: float(record["scores"]["mrr"] == 0)} if "mrr" in record["scores"] else {}
    return {**record["scores"], **miss, **attribution_hits(record)}


def summarize(records: Sequence[dict]) -> Dict[str, Dict[str, Optional[float]]]:
    """slice -> metric -> mean (None when no record of the slice has the metric); plus ``n`` per slice."""
    keys = sorted({k for r in records for k, v in scores(r).items() if v is not None})
    out: Dict[str, Dict[str, Optional[float]]] = {}
    for name, keep in RECORD_SLICES:
        part = [r for r in records if keep(r)]
        out[name] = {"n": len(part), **{k: _mean([scores(r).get(k) for r in part]) for k in keys}}
    return out


def significance(records: Sequence[dict], baseline: Sequence[dict]) -> Dict[str, float]:
    """metric -> p-value against the baseline, over the questions both runs answered."""
    base = {r["id"]: scores(r) for r in baseline}
    pairs = [(scores(r), base[r["id"]]) for r in records if r["id"] in base]
    out = {}
    for key in sorted({k for a, _ in pairs for k in a}):
        both = [(a[key], b[key]) for a, b in pairs if a.get(key) is not None and b.get(key) is not None]
        if len(both) < 2:
            continue
        xs, ys = [float(cast(float, a)) for a, _ in both], [float(cast(float, b)) for _, b in both]
        binary = METRICS.get(key, ("", True))[1] if not key.startswith("attribution:") else True
        out[key] = mcnemar(xs, ys) if binary else paired_t_one_tailed(xs, ys)
    return out


# ----------------------------------------------------------------------------- markdown


def describe(config: BenchConfig) -> str:
    """The configuration in words, for report headers."""
    return (
        f"{config.context} context, {config.corpus} evidence types, {config.completion} completion, "
        f"{config.linearizer} tables indexed as {config.tables}, {config.ranking} ranking with {config.fusion}, "
        f"{config.llm} answers, {config.embedding} embeddings, top {config.top_k}"
    )


def _fmt(value: Optional[float]) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def _columns(summary: Dict[str, dict]) -> List[str]:
    present = {k for run in summary.values() for k, v in run["slices"]["all"].items() if v is not None}
    cols = [k for k in METRICS if k in present]
    return cols + sorted(k for k in present if k.startswith("attribution:"))


def _label(key: str) -> str:
    return METRICS[key][0] if key in METRICS else f"attribution acc. ({key.split(':', 1)[1]})"


def metric_table(
    rows: List[Tuple[str, Optional[str], Optional[Row]]], summary: Dict[str, dict], baseline: str
) -> List[str]:
    """rows: (label, run name or None when not run, paper row or None)."""
    cols = _columns(summary)
    demo = any(paper is not None and paper.demo for _, _, paper in rows)  # both versions, side by side
    lines = [
        "| setting | "
        + " | ".join(_label(c) for c in cols)
        + " | paper P@1 | paper relevance |"
        + (" demo paper P@1 | demo paper relevance |" if demo else ""),
        "|---|" + "---:|" * (len(cols) + (4 if demo else 2)),
    ]
    for label, name, paper in rows:
        run = summary.get(name) if name else None
        if run is None:
            cells = ["not run"] + [""] * (len(cols) - 1)
        else:
            pvals = run.get("p_values", {}) if name != baseline else {}
            cells = [_fmt(run["slices"]["all"].get(c)) + mark(pvals.get(c, 1.0)) for c in cols]
        paper_cells = [_fmt(paper.paper_p1), _fmt(paper.paper_relevance)] if paper else ["—", "—"]
        if demo:
            paper_cells += [_fmt(v) for v in (paper.demo if paper and paper.demo else (None, None))]
        lines.append(f"| {label} | " + " | ".join(cells + paper_cells) + " |")
    return lines


def slice_table(rows: List[Tuple[str, str]], summary: Dict[str, dict], metric: str, baseline: str) -> List[str]:
    names = [name for name, _ in RECORD_SLICES]
    first = next(iter(summary.values()))
    header = " | ".join(f"{n} ({first['slices'][n]['n']})" for n in names)
    lines = [f"| setting | {header} |", "|---|" + "---:|" * len(names)]
    for label, name in rows:
        run = summary[name]
        lines.append(f"| {label} | " + " | ".join(_fmt(run["slices"][n].get(metric)) for n in names) + " |")
    return lines


def group_rows(group: str, base: BenchConfig, summary: Dict[str, dict], table: Optional[Groups] = None):
    """(label, run name or None when not run, paper row) for every row of a paper row group.

    A model group without specs lists the paper's rows, not run (``--llm-group`` / ``--embedding-group``).
    """
    table = table or GROUPS
    rows = table[group][1] if group in table else []
    if not rows and group in PAPER_MODEL_ROWS:
        hint = f" (not run: --{group}-group SPEC,SPEC)"
        return [(label + hint, None, Row(label, (group, ""), p1, rel)) for label, p1, rel in PAPER_MODEL_ROWS[group][1]]
    recorded = (run.get("config", {}).get("reranker", "") for run in summary.values())
    reranker = next((r for r in recorded if r), "")  # the suite's reranker, as its runs recorded it
    out = []
    for row in rows:
        try:
            name = row_config(row, base, reranker).name(base) if available(row, base, reranker) else None
        except ValueError:
            name = None
        missing = {"llm": " (needs an LLM: --llm)", "reranker": " (needs a reranker: --reranker)"}.get(row.needs, "")
        out.append((row.label + ("" if name in summary else missing), name if name in summary else None, row))
    return out


def markdown(
    summary: Dict[str, dict],
    base: BenchConfig,
    header: List[str],
    baseline: str = "default",
    plots=(),
    groups: Optional[Sequence[str]] = None,
    table: Optional[Groups] = None,
) -> str:
    """The report; ``groups``: the row groups to show (default: those with a run besides the base);
    ``table``: every row group (``config.suite_groups``; default: the fixed ones)."""
    table = table or GROUPS
    lines = [*header, *_headline(summary, baseline)]
    for group in [*table, *(g for g in PAPER_MODEL_ROWS if g not in table)]:
        lines += _group_section(group, base, summary, baseline, groups, table)
    if "default" in summary:
        lines += _base_slices_section(summary["default"])
        lines += attribution_section(summary["default"])
    lines += instruction_following_section(summary)
    lines += _runs_section(summary)
    for title, file in plots:
        lines += ["", f"![{title}]({file})"]
    return "\n".join(lines) + "\n"


def _headline(summary: Dict[str, dict], baseline: str) -> List[str]:
    return [
        "",
        f"`*`: significantly different from the baseline configuration `{baseline}` (p < 0.05; McNemar's exact "
        "test for P@1 and the out-of-scope rate, one-tailed paired t-test for graded scores). "
        "Paper columns: the paper's numbers for the same row (GPT-4o, bge-m3 + bge-reranker-v2-m3); "
        "— where the paper's number is not at hand. The paper exists in two versions with different numbers: "
        f"each table's heading names the one its paper columns come from ({README_VERSION} or {DEMO_VERSION}); "
        "where both give the row, both are shown (paper / demo paper).",
        "",
        "## Headline: the base configuration",
        "",
        *metric_table([("base configuration", "default", GROUPS["context"][1][-1])], summary, baseline),
    ]


def _group_section(
    group: str,
    base: BenchConfig,
    summary: Dict[str, dict],
    baseline: str,
    groups: Optional[Sequence[str]],
    table: Groups,
) -> List[str]:
    """One paper row group's table (the context group adds P@1 and token recall by slice); [] when not shown."""
    rows = group_rows(group, base, summary, table)
    shown = group in groups if groups is not None else any(name not in (None, "default") for _, name, _ in rows)
    if not shown:
        return []
    title = table[group][0] if group in table else PAPER_MODEL_ROWS[group][0]
    lines = ["", f"## {title}", "", *metric_table(rows, summary, baseline)]
    if group == "context":
        ran = [(label, name) for label, name, _ in rows if name]
        for metric in ("p1", "token_recall"):
            lines += ["", f"{_label(metric)} by slice:", "", *slice_table(ran, summary, metric, baseline)]
    return lines


def _base_slices_section(default: dict) -> List[str]:
    """The base configuration by turn (Table 4's turns group) and by every slice."""
    cols = [c for c in _columns({"default": default}) if c in METRICS]
    turns = [f"turn {t}" for t in range(1, 6)] + ["turns 6-10"]
    return [
        "",
        f"## Table 4: turns (base configuration, by position in the conversation; paper: {DEMO_VERSION})",
        "",
        *_slice_rows("turn", turns, default["slices"], cols, PAPER_TURNS),
        "",
        "## All slices of the base configuration",
        "",
        *_slice_rows("slice", [s for s, _ in RECORD_SLICES], default["slices"], cols),
    ]


def _slice_rows(
    first: str, names: Sequence[str], slices: Dict[str, dict], cols: Sequence[str], paper=None
) -> List[str]:
    """One row per slice; ``paper``: slice -> (paper P@1, paper relevance), as two more columns."""
    extra = " paper P@1 | paper relevance |" if paper else ""

    def cells(s: str) -> str:
        ours = " | ".join(_fmt(slices[s].get(c)) for c in cols)
        return ours + (" | " + " | ".join(_fmt(v) for v in paper.get(s, (None, None))) if paper else "")

    return [
        f"| {first} | questions | " + " | ".join(_label(c) for c in cols) + " |" + extra,
        "|---|---:|" + "---:|" * (len(cols) + (2 if paper else 0)),
        *[f"| {s} | {slices[s]['n']} | {cells(s)} |" for s in names],
    ]


def attribution_section(default: dict) -> List[str]:
    """Table 3: the base configuration's attribution accuracy per method beside the paper's."""
    everything = default["slices"]["all"]
    methods = [k.split(":", 1)[1] for k, v in everything.items() if k.startswith("attribution:") and v is not None]
    if not methods:
        return []
    return [
        "",
        "## Table 3: attribution accuracy (base configuration)",
        "",
        "Top-1 accuracy: the top-attributed evidence lies on a gold page, over the questions whose gold page was "
        f"retrieved. Paper, {README_VERSION}: 364 such questions, per method; {DEMO_VERSION}: 360 questions, "
        "counterfactual attribution with clusters, by slice (GPT-4o, bge-m3).",
        "",
        "| method | ours | paper (README, 364) |",
        "|---|---:|---:|",
        *[f"| {m} | {_fmt(everything['attribution:' + m])} | {_fmt(PAPER_ATTRIBUTION.get(m))} |" for m in methods],
        *_attribution_slices(default, methods),
    ]


def _attribution_slices(default: dict, methods: Sequence[str]) -> List[str]:
    """Counterfactual attribution with clusters by slice, beside the demo paper's per-slice accuracies."""
    method = "counterfactual+clusters" if "counterfactual+clusters" in methods else None
    if method is None:
        return []
    key = "attribution:" + method
    return [
        "",
        f"| slice | ours ({method}) | demo paper (360) |",
        "|---|---:|---:|",
        *[
            f"| {s} | {_fmt(default['slices'][s].get(key))} | {_fmt(p)} |"
            for s, p in PAPER_ATTRIBUTION_DEMO.items()
            if s in default["slices"]
        ],
    ]


def instruction_following_section(summary: Dict[str, dict]) -> List[str]:
    """The paper's check that the LLM says "not found" about as often as retrieval misses:
    out-of-scope rate against 1 - P@10 (no gold page in the top 10), per configuration."""
    rows = [(n, r["slices"]["all"]) for n, r in summary.items() if r["slices"]["all"].get(MISS_AT_10) is not None]
    if not rows:
        return []
    oos, miss = PAPER_OUT_OF_SCOPE
    return [
        "",
        "## Instruction following: out-of-scope answers against retrieval misses",
        "",
        "An answerer that follows the prompt says the out-of-scope sentence when the evidences lack the answer; "
        "1 - P@10 (no gold page among the top 10 evidences) bounds how often they certainly do. "
        f"Paper (GPT-4o, 600 questions; as ../shared/DESIGN.md cites it, without naming the version): {oos:.1%} "
        f"out of scope against 1 - P@10 = {miss:.1%}.",
        "",
        "| configuration | out of scope | 1 - P@10 | difference |",
        "|---|---:|---:|---:|",
        *[
            f"| {n} | {_pct(a.get('out_of_scope'))} | {_pct(a[MISS_AT_10])} | "
            f"{_pct((a.get('out_of_scope') or 0) - a[MISS_AT_10], signed=True)} |"
            for n, a in rows
        ],
        f"| paper (GPT-4o) | {oos:.1%} | {miss:.1%} | {oos - miss:+.1%} |",
    ]


def _pct(value: Optional[float], signed: bool = False) -> str:
    return "—" if value is None else (f"{value:+.1%}" if signed else f"{value:.1%}")


def _runs_section(summary: Dict[str, dict]) -> List[str]:
    timed = [(name, run["timing"]) for name, run in summary.items() if run.get("timing")]
    if not timed:
        return []
    return [
        "",
        "## Runs",
        "",
        "| configuration | evidences | index build or load (s) | seconds per question |",
        "|---|---:|---:|---:|",
        *[f"| {n} | {t['evidences']} | {t['index_s']:.1f} | {t['answer_s_mean']:.3f} |" for n, t in timed],
        "",
        "Seconds per question: the whole turn (completion, retrieval, answer) as recorded when each question "
        "was answered; the machine was shared with other jobs, so times are indicative only.",
    ]
