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

import hashlib
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, cast

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.utils import get_tqdm_iterable

from llama_index_ragonite.index.chroma_access import check_vectors
from llama_index_ragonite.index.ingest_report import StepClock
from llama_index_ragonite.index.latent import LatentTermIndex, embedded_batches
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.memory import release_freed_memory
from llama_index_ragonite.models.protocols import TextTermsEmbedding

__all__ = ["WRITE_BATCH", "EmbeddedEvidences", "earlier_evidences", "embed_evidences", "text_key", "write_evidences"]

WRITE_BATCH = 512  # nodes per Chroma add: well under its limit, few enough to hold their vectors as lists


Earlier = Tuple[np.ndarray, Optional[tuple]]  # an evidence's vector and latent terms (ids, weights) or None


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
    reused: int = 0  # rows taken from ``earlier`` evidences, not embedded

    def __len__(self) -> int:
        return len(self.nodes)


def embed_evidences(
    embed_model: BaseEmbedding,
    nodes: Sequence[BaseNode],
    collection: Any,
    model_id: str,
    show_progress: bool,
    earlier: Optional[Mapping[str, Earlier]] = None,
) -> EmbeddedEvidences:
    """Embed ``nodes`` batch by batch; raises ``StoreError`` (before any write) on vectors Chroma would refuse.

    ``earlier`` (``earlier_evidences``): a node whose embedded text is there takes that vector and those
    latent terms instead of being embedded again (an edited page's untouched paragraphs, rows and lists).
    """
    keys = [text_key(node) for node in nodes] if earlier else []
    fresh = [i for i, key in enumerate(keys) if key not in (earlier or {})] if earlier else range(len(nodes))
    todo = [nodes[i] for i in fresh] if earlier else nodes
    chunks: List[Any] = []
    terms: Optional[list] = None
    for start, vectors, chunk_terms in embedded_batches(embed_model, todo, show_progress):
        batch = todo[start : start + len(vectors)]
        if len({len(vector) for vector in vectors}) > 1:  # ragged: no matrix; check_vectors names the dimensions
            check_vectors(collection, [_Vector(n.node_id, v) for n, v in zip(batch, vectors)], model_id)
        chunks.append(np.asarray(vectors, dtype=np.float32).reshape(len(batch), -1))
        if chunk_terms is not None:
            terms = terms or []
            terms.extend(chunk_terms)
    rows = (row for chunk in chunks for row in chunk)
    check_vectors(collection, [_Vector(node.node_id, row) for node, row in zip(todo, rows)], model_id)
    matrix = np.concatenate(chunks) if chunks else np.zeros((0, 0), np.float32)
    del chunks
    if earlier and len(fresh) < len(nodes):  # one row per node, in node order: earlier or freshly embedded
        matrix, terms = _with_earlier(embed_model, keys, earlier, list(fresh), matrix, terms)
    release_freed_memory()  # the encoder's temporaries
    return EmbeddedEvidences(list(nodes), matrix, terms, reused=len(nodes) - len(fresh))


def _with_earlier(embed_model, keys, earlier, fresh: List[int], matrix: np.ndarray, terms: Optional[list]):
    """Every node's row in node order: the fresh ones from ``matrix`` (and ``terms``), the others from ``earlier``."""
    row_of = {i: row for row, i in enumerate(fresh)}
    width = matrix.shape[1] if fresh else len(next(iter(earlier.values()))[0])
    full = np.empty((len(keys), width), np.float32)
    full_terms: Optional[list] = [] if isinstance(embed_model, TextTermsEmbedding) else None
    for i, key in enumerate(keys):
        row = row_of.get(i)
        full[i] = matrix[row] if row is not None else earlier[key][0]
        if full_terms is not None:
            full_terms.append(terms[row] if row is not None and terms is not None else earlier[key][1])
    return full, full_terms


def text_key(node: BaseNode) -> str:
    """What an evidence's vector depends on: its embedded text (the EMBED view), as a digest."""
    return hashlib.sha256(node.get_content(MetadataMode.EMBED).encode("utf-8", "surrogatepass")).hexdigest()


def earlier_evidences(
    lexical: LexicalIndex, latent: LatentTermIndex, collection: Any, pages: Sequence[str], terms: bool
) -> Dict[str, Earlier]:
    """Embedded text (``text_key``) -> (vector, latent terms or None) of the evidences the store holds for
    ``pages``, read before they are deleted; with ``terms``, only evidences that have latent terms."""
    wanted = set(pages)
    ids = [node_id for node_id, page in lexical.node_pages().items() if page in wanted] if wanted else []
    found: Dict[str, Earlier] = {}
    for start in range(0, len(ids), WRITE_BATCH):
        got = collection.get(ids=ids[start : start + WRITE_BATCH], include=["embeddings"])
        for node_id, vector in zip(got["ids"], got["embeddings"]):
            if node_id not in lexical or (terms and node_id not in latent):
                continue
            held = tuple(np.array(part) for part in latent.vector(node_id)) if terms else None  # copies, not views
            found[text_key(lexical.get_node(node_id))] = (np.asarray(vector, np.float32), held)
    return found


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
