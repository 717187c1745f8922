"""Aggregate per-question records into the paper's tables: slices, significance marks, markdown, plots.

Numbers come only from the records; the paper's numbers (``config.GROUPS``) sit in their
own labelled columns. Significance (``*``) is against the baseline configuration, on the
questions both answered: McNemar for 0/1 metrics, one-tailed paired t-test for graded ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from llama_index_ragonite.bench.config import GROUPS, BenchConfig, Row, available
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
}


def _mean(values: Sequence[float]) -> Optional[float]:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def attribution_hits(record: dict) -> Dict[str, float]:
    """Per attribution method: 1 when the top-attributed evidence's page is gold (only when gold was retrieved)."""
    gold = gold_keys(record["gold_urls"])
    if not record.get("attribution") or not {page_key(u) for u in record["retrieved_urls"]} & gold:
        return {}
    return {f"attribution:{m}": float(page_key(url) in gold) for m, url in sorted(record["attribution"].items())}


def scores(record: dict) -> Dict[str, Optional[float]]:
    return {**record["scores"], **attribution_hits(record)}


def summarize(records: Sequence[dict]) -> Dict[str, Dict[str, Optional[float]]]:
    """slice -> metric -> mean (None when no record of the slice has the metric); plus ``n`` per slice."""
    keys = sorted({k for r in records for k, v in scores(r).items() if v is not None})
    out = {}
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
        xs, ys = [a for a, _ in both], [b for _, b in both]
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
    lines = [
        "| setting | " + " | ".join(_label(c) for c in cols) + " | paper P@1 | paper relevance |",
        "|---|" + "---:|" * (len(cols) + 2),
    ]
    for label, name, paper in rows:
        run = summary.get(name) if name else None
        if run is None:
            cells = ["not run"] + [""] * (len(cols) - 1)
        else:
            pvals = run.get("p_values", {}) if name != baseline else {}
            cells = [_fmt(run["slices"]["all"].get(c)) + mark(pvals.get(c, 1.0)) for c in cols]
        paper_cells = [_fmt(paper.paper_p1), _fmt(paper.paper_relevance)] if paper else ["—", "—"]
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


def group_rows(group: str, base: BenchConfig, summary: Dict[str, dict], reranker: bool = False):
    """(label, run name or None, paper row) for every row of a paper row group."""
    out = []
    for row in GROUPS[group][1]:
        name = base.with_setting(*row.setting).name(base) if available(row, base, reranker) else None
        missing = {"llm": " (needs an LLM: --llm)", "reranker": " (needs a reranker model)"}.get(row.needs, "")
        out.append((row.label + ("" if name else missing), name if name in summary else None, row))
    return out


def markdown(
    summary: Dict[str, dict],
    base: BenchConfig,
    header: List[str],
    baseline: str = "default",
    plots=(),
    groups: Optional[Sequence[str]] = None,
) -> str:
    """The report; ``groups``: the row groups to show (default: those with a run besides the base)."""
    lines = [*header, *_headline(summary, baseline)]
    for group in GROUPS:
        lines += _group_section(group, base, summary, baseline, groups)
    if "default" in summary:
        lines += _base_slices_section(summary["default"])
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
        "— where the paper's number is not at hand.",
        "",
        "## Headline: the base configuration",
        "",
        *metric_table([("base configuration", "default", GROUPS["context"][1][-1])], summary, baseline),
    ]


def _group_section(
    group: str, base: BenchConfig, summary: Dict[str, dict], baseline: str, groups: Optional[Sequence[str]]
) -> List[str]:
    """One paper row group's table (the context group adds P@1 and token recall by slice); [] when not shown."""
    rows = group_rows(group, base, summary)
    shown = group in groups if groups is not None else any(name not in (None, "default") for _, name, _ in rows)
    if not shown:
        return []
    lines = ["", f"## {GROUPS[group][0]}", "", *metric_table(rows, summary, baseline)]
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
        "## Table 4: turns (base configuration, by position in the conversation)",
        "",
        *_slice_rows("turn", turns, default["slices"], cols),
        "",
        "## All slices of the base configuration",
        "",
        *_slice_rows("slice", [s for s, _ in RECORD_SLICES], default["slices"], cols),
    ]


def _slice_rows(first: str, names: Sequence[str], slices: Dict[str, dict], cols: Sequence[str]) -> List[str]:
    return [
        f"| {first} | questions | " + " | ".join(_label(c) for c in cols) + " |",
        "|---|---:|" + "---:|" * len(cols),
        *[f"| {s} | {slices[s]['n']} | " + " | ".join(_fmt(slices[s].get(c)) for c in cols) + " |" for s in names],
    ]


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


# ----------------------------------------------------------------------------- plots


@dataclass
class _BarChart:
    """Grouped bars: one group per x label, one bar per series."""

    title: str  # above the bars
    caption: str  # in the markdown report
    file: str  # name suffix, after the report's prefix
    labels: List[str]
    series: List[Tuple[str, List[float]]]
    width: float
    figsize: Tuple[float, float]
    ylim: float
    legend: Dict[str, object]
    tick_size: Optional[int] = None


def plots(summary: Dict[str, dict], base: BenchConfig, folder: Path, prefix: str = "confquestions") -> List[tuple]:
    """PNG bar charts (needs matplotlib, the ``[plots]`` extra); returns (title, file name) pairs."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    charts = []
    if "default" in summary:
        charts.append(_slice_chart(summary["default"]["slices"]))
    rows = [(label, name, paper) for label, name, paper in group_rows("context", base, summary) if name]
    if len(rows) > 1:
        charts.append(_context_chart(rows, summary))
    return [(chart.caption, _draw(plt, chart, folder, f"{prefix}_{chart.file}")) for chart in charts]


SLICE_BARS = (("p1", "P@1"), ("token_recall", "token recall"))


def _slice_chart(run: Dict[str, dict]) -> _BarChart:
    names = [n for n, _ in RECORD_SLICES]
    return _BarChart(
        title="Base configuration by slice",
        caption="Base configuration by slice",
        file="slices.png",
        labels=[f"{n}\n({run[n]['n']})" for n in names],
        series=[(label, [run[n].get(key) or 0 for n in names]) for key, label in SLICE_BARS],
        width=0.4,
        figsize=(11, 3.6),
        ylim=1.1,
        legend={"loc": "upper right", "ncol": 2, "fontsize": 8},
        tick_size=8,
    )


def _context_chart(rows: List[tuple], summary: Dict[str, dict]) -> _BarChart:
    return _BarChart(
        title="Evidence contextualization (Table 2)",
        caption="Evidence contextualization",
        file="contextualization.png",
        labels=[label for label, _, _ in rows],
        series=[
            ("P@1 (ours)", [summary[n]["slices"]["all"]["p1"] for _, n, _ in rows]),
            ("token recall (ours)", [summary[n]["slices"]["all"].get("token_recall") or 0 for _, n, _ in rows]),
            ("P@1 (paper)", [p.paper_p1 or 0 for _, _, p in rows]),
        ],
        width=0.27,
        figsize=(7, 3.6),
        ylim=1,
        legend={"loc": "upper left", "fontsize": 8},
    )


def _draw(plt, chart: _BarChart, folder: Path, file: str) -> str:
    """Save ``chart`` as ``folder/file``; returns ``file``."""
    fig, ax = plt.subplots(figsize=chart.figsize)
    middle = (len(chart.series) - 1) / 2
    for i, (label, values) in enumerate(chart.series):
        ax.bar([x + (i - middle) * chart.width for x in range(len(chart.labels))], values, chart.width, label=label)
    ax.set_xticks(range(len(chart.labels)), chart.labels, **({"fontsize": chart.tick_size} if chart.tick_size else {}))
    ax.set_ylim(0, chart.ylim)
    ax.set_title(chart.title)
    ax.legend(**chart.legend)
    fig.tight_layout()
    fig.savefig(folder / file, dpi=110)
    plt.close(fig)
    return file
