"""Charts (PNG or SVG by file extension) where a picture explains better than a table.

matplotlib is optional (the ``[plots]`` extra) and imported only when a chart is drawn;
figures render on their own Agg canvas, so charts work on servers and never change the
backend of the user's session.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Sequence, Union

from llama_index_ragonite.explain.answers import short_answer


def figure(width: float, height: float):
    """A matplotlib ``Figure`` on its own Agg canvas: no pyplot, no global backend switch
    (a user's notebook keeps its backend), or a clear error naming the extra."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise ImportError("Charts need matplotlib: pip install 'llama-index-ragonite[plots]'") from err
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def chart_path(path: Union[str, Path]) -> Path:
    """``path`` as a Path, checked to end in .png or .svg (before any drawing work)."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise ValueError(f"{path}: charts are written as .png or .svg")
    return path


def save(fig, path: Union[str, Path]) -> Path:
    """Write ``fig`` as PNG or SVG (by the extension)."""
    path = chart_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=path.suffix.lower().lstrip("."), bbox_inches="tight", dpi=120)
    return path


def attribution_chart(attribution: Any, path: Union[str, Path]) -> Path:
    """Horizontal bars: one per cluster, its share, labelled with its evidences and their page titles;
    failed clusters grey, and the title says when the attribution is incomplete."""
    path = chart_path(path)
    rows = []
    for number, cluster in enumerate(attribution.clusters, start=1):
        titles = {str(attribution.nodes[m].node.metadata.get("title") or "").strip() for m in cluster.members}
        evidences = ", ".join(str(m + 1) for m in cluster.members)
        label = f"C{number}: Evidence {evidences}" + (
            f"\n{textwrap.shorten(' / '.join(sorted(titles - {''})), 48)}" if titles - {""} else ""
        )
        rows.append((label, cluster.share, cluster.failed, attribution.shared_note(cluster)))
    rows.sort(key=lambda r: (r[2], -(r[1] or 0.0)))
    fig = figure(7, 0.55 * max(len(rows), 2) + 1)
    ax = fig.add_subplot()
    labels = [r[0] for r in rows][::-1]
    values = [100 * (r[1] or 0.0) for r in rows][::-1]
    colors = ["#bbbbbb" if r[2] else "#3b6ea8" for r in rows][::-1]
    bars = ax.barh(labels, values, color=colors)
    for bar, row in zip(bars, rows[::-1]):
        text = "failed" if row[2] else f"{100 * row[1]:.1f}%" + (f" ({row[3]})" if row[3] else "")
        ax.text(bar.get_width() + 1, bar.get_y() + bar.get_height() / 2, text, va="center", fontsize=8)
    ax.set_xlim(0, 130 if any(r[3] for r in rows) else 110)
    ax.set_xlabel("share of the answer (%)")
    title = textwrap.shorten(f"{attribution.method} attribution: {attribution.question}", 80)
    if not attribution.complete:  # the first line of to_text: what failed
        title += "\n" + textwrap.shorten(attribution.incompleteness(), 100)
    ax.set_title(title, fontsize=10)
    ax.tick_params(axis="y", labelsize=8)
    return save(fig, path)


def answer_pie(shares: Sequence[Any], title: str, path: Union[str, Path]) -> Path:
    """RAGE's answer distribution as a pie: one wedge per distinct answer (``AnswerShare``), the original marked."""
    path = chart_path(path)
    fig = figure(8, 4)
    ax = fig.add_subplot()
    if shares:
        wedges, _, _ = ax.pie([s.count for s in shares], autopct="%1.0f%%", startangle=90, counterclock=False)
        labels = [f"{short_answer(s.text, 60)} ({s.count}){' — original' if s.original else ''}" for s in shares]
        ax.legend(wedges, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    else:
        ax.text(0.5, 0.5, "no answers", ha="center", va="center")
        ax.axis("off")
    ax.set_title(textwrap.shorten(title, 90), fontsize=10)
    return save(fig, path)
