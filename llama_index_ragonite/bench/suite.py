"""The ConfQuestions benchmark suite: run configurations over the questions, summarize, compare, write the report.

``ragonite bench`` (``llama_index_ragonite.cli.bench``) is its command line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.llm import LLM

from llama_index_ragonite.bench import plots, report
from llama_index_ragonite.bench.config import DEFAULT_CACHE, PRESETS, BenchConfig, base_config, expand, suite_groups
from llama_index_ragonite.bench.confquestions import Question, load_corpus, load_questions
from llama_index_ragonite.bench.embed_cache import EmbeddingCache
from llama_index_ragonite.bench.index import evidence_nodes
from llama_index_ragonite.bench.runner import AttributionHook, ScoreHook
from llama_index_ragonite.bench.session import Reranker, Scoring, Session, reranker_label
from llama_index_ragonite.bench.unitxt_export import nodes_by_id, write_unitxt

SUMMARY = "summary.json"


def run_benchmark(
    data: Path,
    out: Path,
    presets: Sequence[str] = ("default",),
    base: Optional[BenchConfig] = None,
    cache: Optional[Path] = None,
    llm: Optional[LLM] = None,
    judge_llm: Optional[LLM] = None,
    embed_model: Optional[BaseEmbedding] = None,
    attribute: Optional[AttributionHook] = None,
    attributions: Sequence[str] = (),
    baseline: str = "default",
    limit: Optional[int] = None,
    show_progress: bool = True,
    only: Optional[Sequence[str]] = None,
    reranker: Reranker = None,
    llm_group: Sequence[str] = (),
    embedding_group: Sequence[str] = (),
    llms: Optional[Mapping[str, LLM]] = None,
    embed_models: Optional[Mapping[str, BaseEmbedding]] = None,
    score: Optional[ScoreHook] = None,
    export_unitxt: Optional[Path] = None,
) -> Dict[str, dict]:
    """Run (or resume) every configuration the presets need; returns and writes ``summary.json``.

    ``llm``/``embed_model`` stand for the models ``base`` names (e.g. a test's fake LLM);
    ``llms``/``embed_models`` map more specs to instances (the model groups' rows), the others
    load by spec. ``reranker``: ``"bge"``, a cross-encoder folder or any ``BaseNodePostprocessor``;
    with one, the re-ranking rows run (``fusion`` rerank and rerank+rrf).
    ``llm_group``/``embedding_group``: specs of Table 4's LLM and embedding rows (presets ``llm``,
    ``embedding``, ``table4``, ``paper``). ``limit``: only the first ``limit`` conversations, in
    both languages. ``only``: only these configurations of the presets (by name; the base always
    runs). ``attributions``: attribution methods (``bench.attribution.METHODS``) run on every answer
    of the configurations answered in this call, with the run's LLM, embedding model and index
    vectors. ``score``: model-based scores per answer (``bench.model_metrics.ModelMetrics``), new
    answers only. ``export_unitxt``: write every run's records there in Unitxt's RAG fields.
    """
    base = base or base_config()
    groups = suite_groups(llm_group, embedding_group)
    configs = selected_configs(presets, base, only, reranker_label(reranker), groups)
    documents = load_corpus(data)
    questions = first_conversations(load_questions(data), limit)
    cache = Path(cache or DEFAULT_CACHE)
    llms = {**({base.llm: llm} if llm is not None else {}), **(llms or {})}
    embeds = {**({base.embedding: embed_model} if embed_model is not None else {}), **(embed_models or {})}
    embeddings = EmbeddingCache(cache / "embeddings.sqlite")
    scoring = Scoring(judge_llm, attribute, attributions, score)
    session = Session(out, documents, questions, cache, embeddings, llms, embeds, reranker, scoring, show_progress)
    records: Dict[str, List[dict]] = {}
    timings: Dict[str, dict] = {}
    for config in configs:
        name = config.name(base)
        records[name], timings[name] = session.run(config, name)
    session.embeddings.close()
    summary = summarize_runs(configs, base, records, timings, baseline)
    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY).write_text(json.dumps(summary, indent=1, sort_keys=True))
    if export_unitxt is not None:
        runs = ((c.name(base), records[c.name(base)], nodes_by_id(evidence_nodes(documents, c))) for c in configs)
        write_unitxt(runs, Path(export_unitxt))
    return summary


def selected_configs(
    presets: Sequence[str],
    base: BenchConfig,
    only: Optional[Sequence[str]],
    reranker: str = "",
    groups: Optional[dict] = None,
) -> List[BenchConfig]:
    """The configurations the presets need, base first; with ``only``, just those named (and the base)."""
    configs = expand(list(presets), base, reranker, groups)
    if not only:
        return configs
    unknown = set(only) - {c.name(base) for c in configs}
    if unknown:
        raise ValueError(f"--only {sorted(unknown)}: not among {[c.name(base) for c in configs]}")
    return [c for c in configs if c == base or c.name(base) in only]


def first_conversations(questions: List[Question], limit: Optional[int]) -> List[Question]:
    """The questions of the first ``limit`` conversations (both languages); all when ``limit`` is None."""
    if limit is None:
        return questions
    keep = list(dict.fromkeys(q.conv_id for q in questions))[:limit]
    return [q for q in questions if q.conv_id in keep]


def summarize_runs(
    configs: Sequence[BenchConfig],
    base: BenchConfig,
    records: Dict[str, List[dict]],
    timings: Dict[str, dict],
    baseline: str,
) -> Dict[str, dict]:
    """Per configuration: its settings, metrics by slice, p-values against ``baseline`` and timing."""
    if baseline not in records:
        raise ValueError(f"Baseline {baseline!r} is not among the runs {sorted(records)}")
    by_name = {c.name(base): c for c in configs}
    return {
        name: {
            "config": by_name[name].to_dict(),
            "slices": report.summarize(recs),
            "p_values": report.significance(recs, records[baseline]) if name != baseline else {},
            "timing": timings[name],
        }
        for name, recs in records.items()
    }


def compare(summary: Dict[str, dict], other: Path) -> List[str]:
    """Differences between this run's metrics (slices and p-values) and another run's; [] when identical.

    Every configuration of this run must be in the other one (which may hold more).
    """
    theirs = json.loads((other / SUMMARY).read_text())
    diffs = []
    for name in sorted(summary):
        if name not in theirs:
            diffs.append(f"{name}: not in {other}")
            continue
        for part in ("slices", "p_values"):
            if summary[name][part] != theirs[name][part]:
                diffs.append(f"{name}: {part} differ")
    return diffs


def determinism_line(other: Path, summary: Dict[str, dict], diffs: List[str]) -> str:
    return f"Determinism: compared with the run in `{other}`: " + (
        f"every metric and p-value of the {len(summary)} configurations is identical."
        if not diffs
        else "DIFFERENCES: " + "; ".join(diffs)
    )


def report_files(
    folder: Path,
    name: str,
    base: BenchConfig,
    summary: Dict[str, dict],
    header: List[str],
    baseline: str = "default",
    presets: Sequence[str] = ("default",),
    llm_group: Sequence[str] = (),
    embedding_group: Sequence[str] = (),
) -> Tuple[Path, str]:
    """The markdown report and its plots written into ``folder``: (the report's path, its text)."""
    folder.mkdir(parents=True, exist_ok=True)
    table = suite_groups(list(llm_group), list(embedding_group))
    images = plots.plots(summary, base, folder, name, table)
    groups = [group for preset in presets for group in PRESETS[preset]]
    text = report.markdown(summary, base, header, baseline, images, groups, table)
    path = folder / f"{name}.md"
    path.write_text(text)
    return path, text
