"""ConfQuestions attribution rows: each question retrieved, answered and explained by every attributor.

What ``attribution`` and ``refactor_check`` share (one event loop per run, rows of plain values).
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List

from llama_index_ragonite.bench.attribution import METHODS
from llama_index_ragonite.bench.metrics import gold_keys, mean, page_key
from llama_index_ragonite.explain.math import cosine_matrix
from llama_index_ragonite.prompts import OUT_OF_SCOPE, cited_sources

METHOD_OPTIONS = {"masks": (16, 32), "alpha": 0.0, "concurrency": 16, "temperature": 0.0}  # make_attributors' opts


def url(hit) -> str:
    return page_key(hit.node.metadata.get("url", ""))


def page_texts(store) -> Dict[str, set]:
    """Page key -> the whitespace-normalized texts of its evidences."""
    out: Dict[str, set] = {}
    for node in map(store.lexical.get_node, store.lexical.node_ids()):
        out.setdefault(page_key(node.metadata.get("url", "")), set()).add(" ".join(node.text.split()))
    return out


async def explain(q, hits, answer: str, attributors: Dict[str, Any], texts: Dict[str, set]) -> Dict[str, Any]:
    gold = gold_keys(q.gold_urls)
    gold_texts = set().union(*(texts.get(g, set()) for g in gold))
    cited = cited_sources(answer, len(hits))
    cfa = attributors["counterfactual"]  # cosine(question + answer, evidence): the alternative tie-break signal
    vectors = await cfa.evidence_embeddings(hits)
    answer_vector = await cfa.embed_model.aget_text_embedding(
        cfa.answer_text(q.completed, answer, cfa.prepend_question)
    )
    row: Dict[str, Any] = {
        "q": q,
        "out_of_scope": answer.strip() == OUT_OF_SCOPE,
        "cited_gold": any(url(hits[i - 1]) in gold for i in cited),
        "rank1_gold": url(hits[0]) in gold,
        "gold": [url(h) in gold for h in hits],
        "retrieval_score": [h.score for h in hits],
        "evidence_similarity": cosine_matrix([answer_vector], vectors)[0].tolist(),
        "methods": {},
    }
    for name, attributor in attributors.items():
        result = await attributor.aattribute(q.completed, hits, answer)
        top = result.top_evidence
        members = next((c.members for c in result.clusters if top is not None and top in c.members), [])
        shares = sorted((s for s in result.evidence_shares if s is not None), reverse=True)
        row["methods"][name] = {
            "correct": top is not None and url(hits[top]) in gold,
            "same_text": top is not None and " ".join(hits[top].node.text.split()) in gold_texts,
            "cites": top is not None and (top + 1) in cited,
            "tie": len(shares) > 1 and shares[0] - shares[1] <= 1e-9,
            "none": top is None,
            "calls": result.llm_calls,
            "seconds": result.wall_time_s,
            "r2": result.settings.get("fit", {}).get("r2"),
            "top_share": result.evidence_shares[top] if top is not None else None,
            "clusters": len(result.clusters),
            "cluster_size": len(members),
            "cluster_pages": len({url(hits[i]) for i in members}),
            "unresolved": len(result.unresolved_top) > 1,
            "contributions": [c.contribution for c in result.clusters],
            "members": [c.members for c in result.clusters],
        }
    return row


async def evaluate(questions, retriever, regenerator, attributors, texts):
    """One event loop for the whole run (a hosted LLM's async client stays bound to it)."""
    rows, skipped = [], 0
    for k, q in enumerate(questions, 1):
        hits = await retriever.aretrieve(q.completed)
        if not any(url(h) in gold_keys(q.gold_urls) for h in hits):
            skipped += 1
            continue
        answer = await regenerator.aanswer(q.completed, hits) or OUT_OF_SCOPE
        rows.append(await explain(q, hits, answer, attributors, texts))
        if k % 25 == 0:
            done = " ".join(f"{n}={mean(correct(rows, n)):.3f}" for n in attributors)
            print(f"{k}/{len(questions)} {done}", file=sys.stderr)
    return rows, skipped


def correct(rows, name: str, key: str = "correct") -> List[float]:
    return [float(r["methods"][name][key]) for r in rows]


def make_attributors(opts, llm, embed, lookup) -> Dict[str, Any]:
    """naive, counterfactual (flat and clustered) and one surrogate per ``masks`` count, sharing one LLM; the
    temperature passed explicitly because the per-run embedding cache wraps the model."""
    common = dict(llm=llm, embed_model=embed, embedding_lookup=lookup, temperature=opts["temperature"])
    bound = {"max_concurrency": opts["concurrency"]}
    attributors = {"naive": METHODS["naive"](**common)}
    attributors.update({n: METHODS[n](**bound, **common) for n in ("counterfactual", "counterfactual+clusters")})
    alpha = {"alpha": opts["alpha"]} if opts["alpha"] else {}
    for m in opts["masks"]:
        attributors[f"surrogate ({m} masks)"] = METHODS["surrogate"](n_masks=m, **bound, **alpha, **common)
    return attributors
