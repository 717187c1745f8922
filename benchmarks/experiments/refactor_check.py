"""Same results before and after a refactor: rankings, attributions and answers of two package copies.

A refactor that only moves code must not change what users get. Each side (the baseline package at
``--base-rev`` and this checkout) runs in a child process of its own (``Bench.call``) on the same settled
ConfQuestions store and records, per question: the hybrid retriever's ranking (node id and score) of the
600 gold-completed and 600 raw questions (sync) and of the first 60 completed ones (async); the offline
attribution (every method's contributions and top evidence) of the first ``attributions`` questions, as
``benchmarks/experiments/attribution.py`` computes them; the answers of a stock ``RetrieverQueryEngine``
with ``ExtractiveAnswerer`` as its LLM on the gold-completed questions; the chat engine's answers over the
conversations (``harness.conversations.play``: conversational P@1, answers holding the gold answer,
answerable turns refused); and both held-out wikis played as ``heldout.py`` plays them. A baseline's side
is kept under ``<cache>/refactor_check/<commit>/`` (a commit does not change), so it is computed once.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, Dict, List

from harness import CHECKOUT

OPTIONS = {
    "attributions": 100,
    "async_questions": 60,
    "parts": "rankings,attribution,stock,conversations,heldout",
    "baseline_only": False,  # compute (and keep) the baseline's side now, compare later
    "checkout_rev": "",  # measure this commit (a git archive, kept per commit) instead of the working tree
}
WIKIS = ("heldout_wiki", "heldout_wiki_b")


def measure(data: str, store: str, part: str, attributions: int, async_questions: int, limit: int = 0) -> Any:
    """One part's records with the package first on ``sys.path`` (a child process)."""
    from harness.store import open_all_store

    from llama_index_ragonite.bench.confquestions import load_questions
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    questions = load_questions(Path(data))[: limit or None]
    if part == "conversations":
        from harness.conversations import play

        return play(data, store)
    if part == "heldout":
        from harness.heldout_wikis import play as play_wiki

        return {wiki: play_wiki(str(CHECKOUT / "benchmarks" / wiki), {}) for wiki in WIKIS}
    opened = open_all_store(Path(store), Path(data))
    retriever = HybridRetriever.from_store(opened, k_lexical=10, k_dense=10, top_n=10)

    def ranked(hits) -> List[list]:
        return [[h.node.node_id, round(float(h.score), 9)] for h in hits]

    if part == "rankings":

        async def later() -> List[List[list]]:
            return [ranked(await retriever.aretrieve(q.completed)) for q in questions[:async_questions]]

        return {
            "completed": [ranked(retriever.retrieve(q.completed)) for q in questions],
            "raw": [ranked(retriever.retrieve(q.question)) for q in questions],
            "async": asyncio.run(later()),
        }
    from llama_index_ragonite.models.extractive import ExtractiveAnswerer

    if part == "stock":
        from llama_index.core.query_engine import RetrieverQueryEngine

        engine = RetrieverQueryEngine.from_args(retriever, llm=ExtractiveAnswerer())
        out = []
        for q in questions:
            response = engine.query(q.completed)
            out.append(
                {
                    "answer": str(response)[:2000],
                    "urls": [n.node.metadata.get("url", "") for n in response.source_nodes],
                }
            )
        return out
    from harness.attributing import METHOD_OPTIONS, evaluate, make_attributors, page_texts

    from llama_index_ragonite.bench.embed_cache import CachedEmbedding
    from llama_index_ragonite.explain.attribution import default_temperature
    from llama_index_ragonite.explain.regeneration import AnswerRegenerator

    opts = {**METHOD_OPTIONS, "temperature": default_temperature(opened.embed_model)}
    llm = ExtractiveAnswerer()
    attributors = make_attributors(opts, llm, CachedEmbedding(opened.embed_model), retriever.stored_embeddings)
    regenerator = AnswerRegenerator(llm, max_concurrency=opts["concurrency"])
    rows, _ = asyncio.run(evaluate(questions[:attributions], retriever, regenerator, attributors, page_texts(opened)))
    keep = ("correct", "top_share", "contributions", "members", "calls")
    return [
        {"question": f"{r['q'].conv_id}-{r['q'].lang}-{r['q'].turn}", "out_of_scope": r["out_of_scope"],
         "methods": {n: {k: m[k] for k in keep} for n, m in r["methods"].items()}}
        for r in rows
    ]  # fmt: skip


def side(bench, code, parts: List[str], cache: Path | None) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for part in parts:
        file = cache / f"{part}.json" if cache else None
        if file is not None and file.exists():
            out[part] = json.loads(file.read_text())
            continue
        args = dict(data=str(bench.data.resolve()), store=str(bench.store_path.resolve()), part=part)
        args.update(attributions=bench.opts["attributions"], async_questions=bench.opts["async_questions"])
        args["limit"] = bench.limit or 0
        print(f"{code or 'this checkout'}: {part}", file=sys.stderr)
        out[part] = bench.call("measure", code, **args)
        if file is not None:
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(json.dumps(out[part]))
    return out


def frozen(bench, parts: List[str]) -> Dict[str, Any]:
    """The side of commit ``checkout_rev`` (while the working tree moves on), kept per commit like the baseline's."""
    import tempfile

    from harness import package_at

    with tempfile.TemporaryDirectory(prefix="ragonite-checkout-") as folder:
        commit = package_at(bench.opts["checkout_rev"], Path(folder), CHECKOUT)
        bench.checkout_commit = commit
        return side(bench, Path(folder), parts, bench.cache / "refactor_check" / f"{commit}-{bench.limit or 'all'}")


def without_sources(records: List[dict]) -> List[dict]:
    """Records as every side has them (a baseline kept before play recorded its sources has none)."""
    return [{k: v for k, v in r.items() if k != "sources"} for r in records]


def same(a: list, b: list) -> int:
    return sum(x == y for x, y in zip(a, b))


def answer_figures(turns: List[dict], questions) -> Dict[str, Any]:
    from llama_index_ragonite.bench.answer_metrics import answer_text, token_recall
    from llama_index_ragonite.bench.metrics import gold_keys, mean, precision_at_1
    from llama_index_ragonite.prompts import OUT_OF_SCOPE

    refused = [OUT_OF_SCOPE.rstrip(".") in t["answer"] for t in turns]
    texts = [answer_text(t["answer"], "Extractive answer: ") for t in turns]
    held = [not r and token_recall(x, [q.answer]) >= 0.5 for r, x, q in zip(refused, texts, questions)]
    p1 = mean([precision_at_1(t["urls"], gold_keys(q.gold_urls)) for t, q in zip(turns, questions)])
    return {"holding the gold answer (of 600)": sum(held), "answerable turns refused (of 600)": sum(refused),
            "P@1": f"{p1:.3f}"}  # fmt: skip


def run(bench) -> List[str]:
    from harness.heldout_wikis import score

    parts = [p for p in bench.opts["parts"].split(",") if p]
    base = side(
        bench, bench.base, parts, bench.cache / "refactor_check" / f"{bench.base_commit}-{bench.limit or 'all'}"
    )
    if bench.opts["baseline_only"]:
        return [f"Baseline {bench.base_commit} kept: " + ", ".join(f"{p} ({len(base[p])} records)" for p in parts)]
    now = side(bench, None, parts, None) if not bench.opts["checkout_rev"] else frozen(bench, parts)
    questions = bench.questions()
    measured = getattr(bench, "checkout_commit", "")
    lines = [f"The checkout's side: commit {measured} (`--set checkout_rev`)." if measured else "", ""]
    lines += ["| check | equal | of |", "|---|---:|---:|"]
    if "rankings" in parts:
        for key in ("completed", "raw", "async"):
            ids = [[[h[0], r] for r, h in enumerate(x)] for x in base["rankings"][key]]
            mine = [[[h[0], r] for r, h in enumerate(x)] for x in now["rankings"][key]]
            lines.append(f"| rankings, {key} questions: node ids and ranks | {same(ids, mine)} | {len(ids)} |")
            lines.append(
                f"| ... and scores (9 decimals) | {same(base['rankings'][key], now['rankings'][key])} | {len(ids)} |"
            )
    if "attribution" in parts:
        a, b = base["attribution"], now["attribution"]
        lines.append(
            f"| attribution, first {bench.opts['attributions']} questions: every method's result | {same(a, b)} | {len(a)} |"
        )
    for part in ("stock", "conversations"):
        if part in parts:
            x, y = (
                base[part] if part == "stock" else base[part]["turns"],
                now[part] if part == "stock" else now[part]["turns"],
            )
            lines.append(
                f"| {part}: answers identical | {same([t['answer'] for t in x], [t['answer'] for t in y])} | {len(x)} |"
            )
    lines.append("")
    for part, label in (("conversations", "chat engine, ConfQuestions conversations"),
                        ("stock", "stock RetrieverQueryEngine + ExtractiveAnswerer, gold-completed questions")):  # fmt: skip
        if part in parts:
            old = answer_figures(base[part]["turns"] if part == "conversations" else base[part], questions)
            new = answer_figures(now[part]["turns"] if part == "conversations" else now[part], questions)
            lines += [f"**{label}**", "", "| measure | baseline | this checkout |", "|---|---:|---:|"]
            lines += [f"| {k} | {old[k]} | {new[k]} |" for k in old] + [""]
    if "heldout" in parts:
        for wiki in WIKIS:
            conversations = json.loads((CHECKOUT / "benchmarks" / wiki / "conversations.json").read_text())
            old, new = (
                score(conversations, without_sources(base["heldout"][wiki]))["all"],
                score(conversations, without_sources(now["heldout"][wiki]))["all"],
            )
            lines += [f"**{wiki}**", "", "| measure | baseline | this checkout |", "|---|---:|---:|"]
            lines += [f"| {k} | {old[k]:.3f} | {new[k]:.3f} |" if isinstance(old[k], float) else f"| {k} | {old[k]} | {new[k]} |"
                      for k in old] + [""]  # fmt: skip
            before, after = base["heldout"][wiki], now["heldout"][wiki]
            lines.append(
                f"answers identical: {same([r['answer'] for r in before], [r['answer'] for r in after])} of {len(before)}"
            )
            lines.append("")
    return lines
