"""The report's PNG charts (matplotlib, the ``[plots]`` extra): ours beside the paper's numbers.

- the base configuration by slice (P@1, token recall);
- Table 2: contextualization (P@1 and token recall, the paper's P@1);
- Table 3: attribution accuracy per method (base configuration) beside the paper's;
- Table 4: one panel per row group run (P@1 ours and the paper's), turns included.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from llama_index_ragonite.bench.config import PAPER_ATTRIBUTION, PAPER_TURNS, BenchConfig
from llama_index_ragonite.bench.report import Groups, group_rows
from llama_index_ragonite.bench.slices import RECORD_SLICES

TABLE4_GROUPS = ("corpus", "completion", "linearizer", "indexing", "ranking", "fusion", "llm", "embedding")


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


def plots(
    summary: Dict[str, dict],
    base: BenchConfig,
    folder: Path,
    prefix: str = "confquestions",
    table: Optional[Groups] = None,
) -> List[tuple]:
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
    rows = [(label, name, paper) for label, name, paper in group_rows("context", base, summary, table) if name]
    if len(rows) > 1:
        charts.append(_context_chart(rows, summary))
    attribution = _attribution_chart(summary.get("default"))
    if attribution is not None:
        charts.append(attribution)
    out = [(chart.caption, _draw(plt, chart, folder, f"{prefix}_{chart.file}")) for chart in charts]
    panels = _table4_panels(summary, base, table)
    if panels:
        out.append(("Table 4: P@1 by row group", _draw_panels(plt, panels, folder, f"{prefix}_table4.png")))
    return out


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


def _attribution_chart(default: Optional[dict]) -> Optional[_BarChart]:
    """Table 3: the base configuration's attribution accuracy per method, the paper's beside it."""
    if default is None:
        return None
    ours = {k.split(":", 1)[1]: v for k, v in default["slices"]["all"].items() if k.startswith("attribution:")}
    methods = [m for m in ours if ours[m] is not None]
    if not methods:
        return None
    return _BarChart(
        title="Attribution accuracy (Table 3)",
        caption="Attribution accuracy (top-attributed evidence on a gold page)",
        file="attribution.png",
        labels=methods,
        series=[
            ("ours", [ours[m] for m in methods]),
            ("paper", [PAPER_ATTRIBUTION.get(m, 0) for m in methods]),
        ],
        width=0.38,
        figsize=(6, 3.4),
        ylim=1.05,
        legend={"loc": "lower right", "fontsize": 8},
    )


def _table4_panels(summary: Dict[str, dict], base: BenchConfig, table) -> List[Tuple[str, List[str], list, list]]:
    """(title, labels, our P@1 or None, the paper's P@1 or None) per Table 4 group with a run besides the base."""
    panels = []
    if "default" in summary:
        slices = summary["default"]["slices"]
        turns = list(PAPER_TURNS)
        panels.append(("turns", turns, [slices[t].get("p1") for t in turns], [PAPER_TURNS[t][0] for t in turns]))
    for group in TABLE4_GROUPS:
        rows = group_rows(group, base, summary, table)
        if not any(name not in (None, "default") for _, name, _ in rows):
            continue
        labels = [row.label for _, _, row in rows]
        ours = [summary[name]["slices"]["all"]["p1"] if name else None for _, name, _ in rows]
        panels.append((group, labels, ours, [row.paper_p1 for _, _, row in rows]))
    return panels if len(panels) > 1 or (panels and panels[0][0] != "turns") else []


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


def _draw_panels(plt, panels, folder: Path, file: str) -> str:
    """Table 4 as small multiples: one panel per group, P@1 ours and the paper's per row (no bar: not run)."""
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    width = 0.4
    for ax, (title, labels, ours, paper) in zip(axes.flat, panels):
        xs = range(len(labels))
        ax.bar([x - width / 2 for x in xs], [v or 0 for v in ours], width, label="P@1 (ours)")
        ax.bar([x + width / 2 for x in xs], [v or 0 for v in paper], width, label="P@1 (paper)")
        ax.set_xticks(list(xs), [_short(label) for label in labels], fontsize=7, rotation=20, ha="right")
        ax.set_ylim(0, 1.05)
        ax.set_title(title, fontsize=10)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="upper right", fontsize=8, ncol=2)
    fig.suptitle("Table 4: P@1 by row group (ours beside the paper's)", x=0.02, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(folder / file, dpi=110)
    plt.close(fig)
    return file


def _short(label: str, width: int = 22) -> str:
    label = label.split(" (")[0] if len(label) > width else label
    return label if len(label) <= width else label[: width - 1] + "…"
