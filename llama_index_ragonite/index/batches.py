"""An ingest's evidences through the store in batches: embedded into one compact matrix, then written slice by slice.

Why: one page can hold tens of thousands of evidences (a 20,000-row table). Kept as Python
lists on every node, a 384-dim vector costs about 12 KB, and one Chroma ``add`` of a whole
run is refused above Chroma's batch limit (5,461 records on Chroma 1.x). Here a run's vectors
are a float32 matrix (1.5 KB an evidence; Chroma stores float32, so nothing is lost), checked
before anything is written (a model returning NaN or another dimension still leaves the store
as it was), and each slice of ``WRITE_BATCH`` nodes carries its vectors only while Chroma
takes it, then goes to the lexical index and the latent terms. Those two stay in memory until
the store persists them, so the store's all-or-nothing write and its journal are unchanged.
Freed memory goes back to the OS after embedding and after each slice (``release_freed_memory``):
on a 20,000-row page glibc otherwise keeps ~100 MB of written nodes mapped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, NamedTuple, Optional, Sequence, cast

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode
from llama_index.core.utils import get_tqdm_iterable

from llama_index_ragonite.index.chroma_access import check_vectors
from llama_index_ragonite.index.ingest_report import StepClock
from llama_index_ragonite.index.latent import LatentTermIndex, embedded_batches
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.memory import release_freed_memory

__all__ = ["WRITE_BATCH", "EmbeddedEvidences", "embed_evidences", "write_evidences"]

WRITE_BATCH = 512  # nodes per Chroma add: well under its limit, few enough to hold their vectors as lists


class _Vector(NamedTuple):
    """What ``check_vectors`` reads of a node, without putting the vector on the node."""

    node_id: str
    embedding: Any


@dataclass
class EmbeddedEvidences:
    """The nodes of one ingest, row ``i`` of ``vectors`` (and ``terms[i]``, if the model makes them) for ``nodes[i]``."""

    nodes: List[Optional[BaseNode]]  # None once written (``write_evidences``)
    vectors: np.ndarray
    terms: Optional[list]

    def __len__(self) -> int:
        return len(self.nodes)


def embed_evidences(
    embed_model: BaseEmbedding, nodes: Sequence[BaseNode], collection: Any, model_id: str, show_progress: bool
) -> EmbeddedEvidences:
    """Embed ``nodes`` batch by batch; raises ``StoreError`` (before any write) on vectors Chroma would refuse."""
    chunks: List[Any] = []
    terms: Optional[list] = None
    for start, vectors, chunk_terms in embedded_batches(embed_model, nodes, show_progress):
        batch = nodes[start : start + len(vectors)]
        if len({len(vector) for vector in vectors}) > 1:  # ragged: no matrix; check_vectors names the dimensions
            check_vectors(collection, [_Vector(n.node_id, v) for n, v in zip(batch, vectors)], model_id)
        chunks.append(np.asarray(vectors, dtype=np.float32).reshape(len(batch), -1))
        if chunk_terms is not None:
            terms = terms or []
            terms.extend(chunk_terms)
    rows = (row for chunk in chunks for row in chunk)
    check_vectors(collection, [_Vector(node.node_id, row) for node, row in zip(nodes, rows)], model_id)
    matrix = np.concatenate(chunks) if chunks else np.zeros((0, 0), np.float32)
    del chunks
    release_freed_memory()  # the encoder's temporaries
    return EmbeddedEvidences(list(nodes), matrix, terms)


def write_evidences(
    evidences: EmbeddedEvidences,
    vector_store: Any,
    lexical: LexicalIndex,
    latent: LatentTermIndex,
    clock: StepClock,
    show_progress: bool = False,
) -> None:
    """Add the evidences to Chroma, the lexical index and the latent terms, ``WRITE_BATCH`` nodes at a time.

    Consumes ``evidences``: a written node leaves its list (the lexical index keeps its own
    serialized copy), so the nodes of a huge page are gone before the indexes are persisted.
    ``clock`` sums the time under "vector store" and "lexical index", as one write of all would.
    """
    nodes = evidences.nodes
    starts = range(0, len(nodes), WRITE_BATCH)
    for start in get_tqdm_iterable(starts, show_progress and len(starts) > 1, f"Writing {len(nodes)} evidences"):
        batch = cast(List[BaseNode], nodes[start : start + WRITE_BATCH])  # not yet released
        for node, vector in zip(batch, evidences.vectors[start : start + WRITE_BATCH]):
            node.embedding = vector.tolist()
        try:
            vector_store.add(batch)
        finally:
            for node in batch:
                node.embedding = None
        clock.add("vector store")
        lexical.upsert(batch)
        if evidences.terms is not None:
            latent.upsert(batch, evidences.terms[start : start + WRITE_BATCH])
        nodes[start : start + len(batch)] = [None] * len(batch)
        del batch
        release_freed_memory()  # the written nodes' pages, else kept between the indexes' growing records
        clock.add("lexical index")
    clock.add("vector store")
    if nodes:
        lexical.search("warm up the index", 1)  # builds BM25 now, not on the first query
    clock.add("lexical index")
