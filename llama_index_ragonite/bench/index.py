"""The retrieval index of one benchmark configuration: evidence nodes, BM25 and exact dense search.

Built from the corpus in seconds once the embeddings are in the shared ``EmbeddingCache``,
and cached per configuration (keyed by the settings that change the index; reused only
while the nodes it was built from are unchanged). Dense search is exact (a float32 matrix
product, ties broken by node order) rather than an approximate HNSW graph, so two runs of
a configuration rank identically.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, cast

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, Document, MetadataMode, NodeWithScore, QueryBundle

from llama_index_ragonite.bench.config import CORPORA, BenchConfig
from llama_index_ragonite.bench.embed_cache import EmbeddingCache, model_key
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
from llama_index_ragonite.parsing.parser import HTMLEvidenceParser
from llama_index_ragonite.retrieval.built_in import BuiltInSides, SideSettings
from llama_index_ragonite.retrieval.retriever import HybridRetriever


def evidence_nodes(documents: Sequence[Document], config: BenchConfig) -> List[BaseNode]:
    """Parse and contextualize page by page (as ``EvidenceStore`` does), then keep the corpus's types.

    Filtering after contextualization keeps each evidence's context as in the full corpus.
    """
    parser = HTMLEvidenceParser(table_granularity=config.tables, linearizer=config.linearizer)
    contextualizer = EvidenceContextualizer.from_setting(config.context)
    nodes: List[BaseNode] = []
    for doc in documents:
        nodes.extend(contextualizer(parser.get_nodes_from_documents([doc])))
    keep = CORPORA[config.corpus]
    return [n for n in nodes if keep is None or n.metadata["evidence_type"] in keep]


class ExactDenseRetriever(BaseRetriever):
    """Cosine top-k over a float32 matrix; query vectors come from (and go to) the embedding cache."""

    def __init__(
        self,
        nodes: Sequence[BaseNode],
        matrix: np.ndarray,
        embed_model: BaseEmbedding,
        cache: EmbeddingCache,
        top_k: int = 10,
    ) -> None:
        norms = np.linalg.norm(matrix, axis=1, keepdims=True) if len(matrix) else 1.0
        self._nodes, self._matrix = list(nodes), matrix / np.maximum(norms, 1e-12)
        self._model, self._cache, self._top_k = embed_model, cache, top_k
        self._rows: Optional[Dict[str, int]] = None
        super().__init__()

    def stored_embeddings(self, node_ids: Sequence[str]) -> Dict[str, List[float]]:
        """The (normalized) vectors of these nodes, so explanations need not re-embed evidences."""
        if self._rows is None:
            self._rows = {n.node_id: i for i, n in enumerate(self._nodes)}
        return {i: self._matrix[self._rows[i]].tolist() for i in node_ids if i in self._rows}

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        if not self._nodes:
            return []
        query = self._cache.query(self._model, query_bundle.query_str)
        scores = self._matrix @ (query / max(float(np.linalg.norm(query)), 1e-12))
        order = np.argsort(-scores, kind="stable")[: self._top_k]
        return [NodeWithScore(node=self._nodes[i], score=float(scores[i])) for i in order]


class BenchIndex:
    """Nodes + BM25 + dense matrix of one configuration; ``retriever()`` gives its ``HybridRetriever``."""

    def __init__(self, nodes, matrix, lexical, embed_model, cache, config: BenchConfig) -> None:
        self.nodes, self.matrix, self.lexical = nodes, matrix, lexical
        self.embed_model, self.cache, self.config = embed_model, cache, config

    def __len__(self) -> int:
        return len(self.nodes)

    def retriever(self, reranker: Optional[BaseNodePostprocessor] = None) -> HybridRetriever:
        """The configuration's retriever; ``reranker`` is required by (and only used with) fusion
        ``rerank``/``rerank+rrf``. As ``HybridRetriever.from_store``, the page-title ranking is off
        when the evidences were contextualized without their page title (NONE, HDR, BEF, AFT)."""
        config, k = self.config, self.config.top_k
        dense = ExactDenseRetriever(self.nodes, self.matrix, self.embed_model, self.cache, top_k=k)
        sides = {"lexical": (k, 0), "dense": (0, k), "hybrid": (k, k)}[config.ranking]
        if config.fusion != "rrf" and reranker is None:
            raise ValueError(f"fusion={config.fusion} needs a reranker ({config.reranker!r} was not given)")
        title_weight = 1.0 if EvidenceContextualizer.from_setting(config.context).title else 0.0
        settings = SideSettings(k_lexical=sides[0], k_dense=sides[1], title_weight=title_weight)
        return HybridRetriever(
            BuiltInSides(dense, self.lexical, settings=settings),
            top_n=k,
            fusion=cast(Any, config.fusion),
            reranker=reranker if config.fusion != "rrf" else None,
        )

    @classmethod
    def build(
        cls,
        documents: Sequence[Document],
        config: BenchConfig,
        embed_model: BaseEmbedding,
        cache: EmbeddingCache,
        folder: Optional[Path] = None,
        progress: Optional[Callable[[int], None]] = None,
    ) -> "BenchIndex":
        """Reuse ``folder`` when it holds this configuration's index over the same nodes, else build it there."""
        nodes = evidence_nodes(documents, config)
        texts = [n.get_content(MetadataMode.EMBED) for n in nodes]
        fingerprint = _fingerprint(nodes, texts, model_key(embed_model))
        if folder is not None and _read_json(folder / "index.json").get("fingerprint") == fingerprint:
            lexical = LexicalIndex.load(folder / "lexical")
            matrix = np.load(folder / "dense.npy")
            return cls(nodes, matrix, lexical, embed_model, cache, config)
        matrix = cache.embed(embed_model, texts, progress=progress) if texts else np.zeros((0, 1), np.float32)
        lexical = LexicalIndex()
        lexical.upsert(nodes)
        if folder is not None:
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            lexical.persist(folder / "lexical")
            np.save(folder / "dense.npy", matrix)
            info = {"fingerprint": fingerprint, "config": config.index_settings(), "nodes": len(nodes)}
            (folder / "index.json").write_text(json.dumps(info, indent=1))
        return cls(nodes, matrix, lexical, embed_model, cache, config)


def index_folder_name(config: BenchConfig) -> str:
    settings = config.index_settings()
    slug = "-".join(str(v) for v in settings.values())
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in slug)[:80]
    return f"{safe}-{hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]}"


def _fingerprint(nodes: Sequence[BaseNode], texts: Sequence[str], model: str) -> str:
    digest = hashlib.sha256(model.encode())
    for node, text in zip(nodes, texts):
        for part in (node.node_id, text, node.get_content(MetadataMode.LLM)):
            digest.update(part.encode("utf-8", "replace") + b"\x00")
    return digest.hexdigest()


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
