"""Filling the structure fields into a store built before they existed, without re-embedding.

Why: a store written before ``parsing/structure.py``'s keys has evidences whose text is right but whose
structure (headings, headers, cells, neighbours, page time) is only in the rendered context. Re-parsing
an unchanged page gives the same node ids and the same EMBED, LLM and raw text; only the metadata is new.
So those nodes replace their stored copies in place: the lexical index keeps its rows (same tokens, same
order, no rebuild) and Chroma's records get the new metadata through ``update`` (vectors and the HNSW
graph untouched). A page whose re-parse differs in any of those goes the ordinary update way instead.
The manifest records ``STRUCTURE_VERSION`` once every page carries the fields.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from llama_index.core.ingestion.pipeline import run_transformations
from llama_index.core.schema import BaseNode, Document, MetadataMode, TransformComponent
from llama_index.core.vector_stores.utils import node_to_metadata_dict

from llama_index_ragonite.parsing.structure import STRUCTURE_VERSION

__all__ = ["needs_structure", "refill_nodes", "write_refill"]

_VIEWS = (MetadataMode.EMBED, MetadataMode.LLM, MetadataMode.NONE)
_CHUNK = 1000  # records per Chroma update


def needs_structure(manifest: Dict[str, Any]) -> bool:
    """Whether a store's evidences may lack the structure fields (it has pages, written before them)."""
    return bool(manifest.get("pages")) and manifest.get("structure") != STRUCTURE_VERSION


def _same_views(new: BaseNode, old: BaseNode) -> bool:
    return all(new.get_content(metadata_mode=mode) == old.get_content(metadata_mode=mode) for mode in _VIEWS)


def refill_nodes(
    lexical: Any, documents: Sequence[Document], pipeline: Sequence[TransformComponent]
) -> Tuple[List[BaseNode], List[Document]]:
    """``(nodes, redo)``: the re-parsed nodes of ``documents`` (unchanged pages) that only gain metadata,
    and the pages whose re-parse differs from what the store holds (to be indexed again)."""
    held: Dict[str, List[str]] = {}
    for node_id, page in lexical.node_pages().items():
        held.setdefault(page, []).append(node_id)
    nodes: List[BaseNode] = []
    redo: List[Document] = []
    for doc in documents:
        parsed = run_transformations([doc], list(pipeline))
        ids = held.get(doc.id_, [])
        same = sorted(n.node_id for n in parsed) == sorted(ids) and all(
            _same_views(n, lexical.get_node(n.node_id)) for n in parsed
        )
        if same:
            nodes.extend(parsed)
        else:
            redo.append(doc)
    return nodes, redo


def write_refill(nodes: Sequence[BaseNode], lexical: Any, vector_store: Any) -> None:
    """The nodes' new metadata into the lexical index (rows kept) and Chroma (``update``: vectors kept)."""
    lexical.upsert(nodes)
    collection, flat = vector_store.client, vector_store.flat_metadata
    for start in range(0, len(nodes), _CHUNK):
        chunk = nodes[start : start + _CHUNK]
        metadatas = []
        for node in chunk:  # as ChromaVectorStore.add writes them
            metadata = node_to_metadata_dict(node, remove_text=True, flat_metadata=flat)
            metadatas.append({key: "" if value is None else value for key, value in metadata.items()})
        collection.update(ids=[node.node_id for node in chunk], metadatas=metadatas)
