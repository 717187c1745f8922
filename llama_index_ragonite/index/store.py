"""``EvidenceStore``: one folder holding the dense index (Chroma), the lexical index and a manifest.

Ingestion is idempotent per page: the manifest records a fingerprint of every page
(its text, metadata and the parsing/contextualization settings). Re-running on the
same pages skips unchanged ones, replaces the evidences of changed ones and — when
``remove_missing`` — deletes pages that disappeared. The manifest also records the
embedding model; opening a store with another model is an error, because vectors
from two models in one index are silent garbage.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, Document
from llama_index.core.utils import get_tqdm_iterable

from llama_index_ragonite.errors import StoreCorruptError, StoreError, StoreLockedError
from llama_index_ragonite.index.latent import LatentTermIndex, embed_nodes
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.persist import check_format_version, read_json, write_json
from llama_index_ragonite.models.defaults import settings_embed_model
from llama_index_ragonite.models.embeddings import default_embedding
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
from llama_index_ragonite.parsing.parser import HTMLEvidenceParser

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory lock, one writer is on the user
    fcntl = None

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
LOCK_FILE = ".ingest.lock"
LEXICAL_DIR = "lexical"
CHROMA_DIR = "chroma"
COLLECTION = "ragonite"
FORMAT_VERSION = 1


@dataclass
class IngestReport:
    added: List[str] = field(default_factory=list)
    updated: List[str] = field(default_factory=list)
    removed: List[str] = field(default_factory=list)
    unchanged: List[str] = field(default_factory=list)
    nodes_written: int = 0
    seconds: Dict[str, float] = field(default_factory=dict)  # where the time went, step by step

    def __str__(self) -> str:
        return (
            f"{len(self.added)} added, {len(self.updated)} updated, {len(self.removed)} removed, "
            f"{len(self.unchanged)} unchanged pages; {self.nodes_written} evidences written"
        )


def embedding_id(model: BaseEmbedding) -> str:
    """What identifies an embedding model's vector space: its class and model name."""
    return f"{model.class_name()}:{getattr(model, 'model_name', '')}"


def _embedding_for(recorded: Optional[str], path: Path) -> BaseEmbedding:
    """The model for a store opened without ``embed_model=``: the one it records, else Settings' or the default.

    An existing store keeps its vector space: ``Settings.embed_model`` is used only when it is
    the recorded model, so an app whose Settings name another model can still open a store built
    with the offline default. A recorded model we cannot rebuild from its id must be passed.
    """
    assigned = settings_embed_model()
    if not recorded or (assigned is not None and embedding_id(assigned) == recorded):
        return assigned or default_embedding()
    model = default_embedding()
    if recorded != embedding_id(model):
        raise StoreError(f"{path} was built with embedding model {recorded!r}: pass that model as embed_model=")
    return model


class _Clock:
    def __init__(self, laps: Dict[str, float]) -> None:
        self.laps, self.t = laps, time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self.t
        self.t = now


class EvidenceStore:
    """A persisted hybrid index at ``path`` (embedded Chroma) or on a Chroma server (``chroma_client``)."""

    def __init__(
        self,
        path: Union[str, Path],
        embed_model: Optional[BaseEmbedding] = None,
        parser: Optional[HTMLEvidenceParser] = None,
        contextualizer: Optional[EvidenceContextualizer] = None,
        lexical: Optional[LexicalIndex] = None,
        chroma_client: Any = None,
        collection: str = COLLECTION,
    ) -> None:
        self.path = Path(path)
        self.manifest = self._read_manifest()
        recorded = self.manifest.get("embed_model")
        self.embed_model = embed_model or _embedding_for(recorded, self.path)
        self.parser = parser or HTMLEvidenceParser()
        self.contextualizer = contextualizer or EvidenceContextualizer()
        if recorded and recorded != embedding_id(self.embed_model):
            raise StoreError(
                f"{self.path} was built with embedding model {recorded!r}, not {embedding_id(self.embed_model)!r}; "
                "open it with the same model or build a new store"
            )
        self.lexical = lexical or self._load_lexical()
        self.latent = LatentTermIndex.load(self.path)
        self._chroma_client = chroma_client
        self._collection_name = collection
        self._vector_store = None

    # -- parts ------------------------------------------------------------------
    def _read_manifest(self) -> Dict[str, Any]:
        file = self.path / MANIFEST
        if not file.exists():
            return {}
        manifest = read_json(file, "the store manifest")
        if not isinstance(manifest, dict):
            raise StoreCorruptError(f"{file}: the store manifest is unreadable (not a JSON object); rebuild the store")
        check_format_version(manifest.get("format"), FORMAT_VERSION, file, "the store manifest")
        return manifest

    def _load_lexical(self) -> LexicalIndex:
        folder = self.path / LEXICAL_DIR
        return LexicalIndex.load(folder) if folder.exists() else LexicalIndex()

    @property
    def vector_store(self):
        """The LlamaIndex ``ChromaVectorStore`` (created on first use)."""
        if self._vector_store is None:
            import chromadb
            from llama_index.vector_stores.chroma import ChromaVectorStore

            client = self._chroma_client
            if client is None:
                self._make_folder()
                try:
                    client = chromadb.PersistentClient(path=str(self.path / CHROMA_DIR))
                except Exception as err:  # chromadb raises its own types for locked/corrupt files
                    raise StoreError(f"{self.path / CHROMA_DIR}: cannot open the Chroma database ({err})") from err
            collection = client.get_or_create_collection(
                self._collection_name,
                # search_ef 100 (Chroma's default is 10): near-exact top-10, dense P@1 +0.01 on ConfQuestions
                metadata={"hnsw:space": "cosine", "hnsw:search_ef": 100},
                embedding_function=None,
            )
            self._vector_store = ChromaVectorStore(chroma_collection=collection)
        return self._vector_store

    def fingerprint(self, doc: Document) -> str:
        """Changes when the page or the way it is indexed changes."""
        digest = hashlib.sha256()
        for part in (
            doc.text,
            json.dumps(doc.metadata, sort_keys=True, default=str),
            json.dumps(self.parser.to_dict(), sort_keys=True, default=str),
            json.dumps(self.contextualizer.to_dict(), sort_keys=True, default=str),
        ):
            digest.update(part.encode("utf-8", "replace"))
            digest.update(b"\x00")
        return digest.hexdigest()

    # -- ingestion ----------------------------------------------------------------
    def ingest(
        self, documents: Sequence[Document], remove_missing: bool = False, show_progress: bool = False
    ) -> IngestReport:
        """Bring the store in line with ``documents``; ``remove_missing`` deletes pages not among them.

        One writer at a time: a second process ingesting into the same folder gets a
        ``StoreError`` instead of interleaving writes (readers need no lock).
        """
        ids = [doc.id_ for doc in documents]
        if len(set(ids)) != len(ids):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"Duplicate document ids {dupes[:5]}: each page needs its own stable id")
        with self._writer_lock():
            on_disk = self._read_manifest()
            if on_disk != self.manifest:  # another process wrote since we opened: start from its state
                self.manifest, self.lexical = on_disk, self._load_lexical()
                self.latent = LatentTermIndex.load(self.path)
            return self._ingest(documents, ids, remove_missing, show_progress)

    @contextmanager
    def _writer_lock(self) -> Iterator[None]:
        self._make_folder()
        with open(self.path / LOCK_FILE, "a") as handle:
            if fcntl is not None:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    raise StoreLockedError(
                        f"{self.path} is being updated by another process; run again when it has finished"
                    ) from None
            yield  # the lock goes with the file handle

    def _ingest(self, documents, ids, remove_missing, show_progress) -> IngestReport:
        pages: Dict[str, str] = dict(self.manifest.get("pages", {}))
        report = IngestReport()
        changed: List[Document] = []
        new_fingerprints: Dict[str, str] = {}
        for doc in documents:
            fp = self.fingerprint(doc)
            if pages.get(doc.id_) == fp:
                report.unchanged.append(doc.id_)
                continue
            (report.updated if doc.id_ in pages else report.added).append(doc.id_)
            changed.append(doc)
            new_fingerprints[doc.id_] = fp
        if remove_missing:
            report.removed = sorted(set(pages) - set(ids))

        clock = _Clock(report.seconds)
        nodes: List[BaseNode] = []
        for doc in get_tqdm_iterable(changed, show_progress, "Parsing pages"):
            nodes.extend(self.contextualizer(self.parser.get_nodes_from_documents([doc])))
        clock.lap("parse + contextualize")
        terms = self._embed(nodes, show_progress)
        clock.lap("embed")

        # Remove old evidences first, then write; the manifest is written last, so an
        # interrupted run re-processes the affected pages next time instead of losing them.
        for doc_id in report.updated + report.removed:
            self.vector_store.delete(ref_doc_id=doc_id)
            self.lexical.delete_ref_doc(doc_id)
            self.latent.delete_ref_doc(doc_id)
            pages.pop(doc_id, None)
        if nodes:
            self.vector_store.add(nodes)
        clock.lap("vector store")
        if nodes:
            self.lexical.upsert(nodes)
            self.lexical.search("warm up the index", 1)  # builds BM25 now, not on the first query
            if terms is not None:
                self.latent.upsert(nodes, terms)
        clock.lap("lexical index")
        report.nodes_written = len(nodes)
        pages.update(new_fingerprints)
        if changed or report.removed or not (self.path / MANIFEST).exists():
            self._write(pages)
        clock.lap("persist")
        return report

    def _embed(self, nodes: List[BaseNode], show_progress: bool) -> Optional[list]:
        """Set each node's embedding; returns latent terms too when the model makes them (else None)."""
        return embed_nodes(self.embed_model, nodes, show_progress)

    def _make_folder(self) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(f"{self.path}: cannot create the store folder ({err.strerror})") from err
        if not os.access(self.path, os.W_OK):
            raise StoreError(f"{self.path}: the store folder is not writable")

    def _write(self, pages: Dict[str, str]) -> None:
        self._make_folder()
        self.lexical.persist(self.path / LEXICAL_DIR)
        self.latent.persist(self.path)
        self.manifest = {
            "format": FORMAT_VERSION,
            "embed_model": embedding_id(self.embed_model),
            "parser": self.parser.to_dict(),
            "contextualizer": self.contextualizer.to_dict(),
            "pages": pages,
        }
        write_json(self.path / MANIFEST, self.manifest, indent=1, sort_keys=True)

    # -- reading --------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.lexical)

    def page_ids(self) -> List[str]:
        return sorted(self.manifest.get("pages", {}))
