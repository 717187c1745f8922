"""``EvidenceStore``: one folder holding the dense index (Chroma), the lexical index and a manifest.

The store persists, loads, checks and repairs; ``ingestion`` turns pages into its evidences.
Ingestion is idempotent per page: the manifest records a fingerprint of every page
(its text, metadata and the pipeline's settings). Re-running on the same pages skips
unchanged ones, replaces the evidences of changed ones and — when ``remove_missing`` —
deletes pages that disappeared. The manifest also records the
embedding model (class, name and, for a local model, a fingerprint: ``model_identity``);
opening a store with another model is an error, because vectors from two models in one
index are silent garbage. Each completed write increments the
manifest's ``generation``, which readers follow (``stale``, ``reload``).
"""

from __future__ import annotations

import gc
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union, cast

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, Document, TransformComponent

from llama_index_ragonite.errors import StoreCorruptError, StoreError
from llama_index_ragonite.index.access import AccessMap, PageAccess
from llama_index_ragonite.index.check import (
    StoreCheckReport,
    check_readable,
    check_store,
    count_mismatch,
    drop_pages,
)
from llama_index_ragonite.index.chroma_access import open_collection
from llama_index_ragonite.index.disk_full import disk_full_as_store_error
from llama_index_ragonite.index.generation import GenerationWatch, reopen_vector_store
from llama_index_ragonite.index.ingest_report import IngestReport
from llama_index_ragonite.index.ingestion import MAX_REMOVAL_SHARE, ingest, page_fingerprint, transformation_name
from llama_index_ragonite.index.journal import begin_journal, finish_journal, read_journal, writer_lock
from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.model_identity import embedding_for, embedding_id, fingerprint, refusal, same_space
from llama_index_ragonite.index.node_lookup_chroma import NodeLookupChromaVectorStore
from llama_index_ragonite.index.persist import check_format_version, read_json, write_json
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
from llama_index_ragonite.parsing.parser import HTMLEvidenceParser
from llama_index_ragonite.parsing.structure import STRUCTURE_VERSION

logger = logging.getLogger(__name__)

__all__ = [
    "EvidenceStore",
    "IngestReport",
    "StoreCheckReport",
    "StoreError",
]

MANIFEST = "manifest.json"
LEXICAL_DIR = "lexical"
CHROMA_DIR = "chroma"
COLLECTION = "ragonite"
FORMAT_VERSION = 1
_DELETE_BATCH = 1000


class EvidenceStore:
    """A persisted hybrid index at ``path`` (embedded Chroma) or on a Chroma server (``chroma_client``).

    Opening reads the manifest and the lexical and latent-term indexes; the embedding model
    is resolved on first use (``ragonite check`` needs none). Readers need no write access:
    a read-only store's Chroma database is read from a temporary copy.
    """

    def __init__(
        self,
        path: Union[str, Path],
        embed_model: Optional[BaseEmbedding] = None,
        parser: Optional[HTMLEvidenceParser] = None,
        contextualizer: Optional[EvidenceContextualizer] = None,
        lexical: Optional[LexicalIndex] = None,
        chroma_client: Any = None,
        collection: str = COLLECTION,
        transformations: Sequence[TransformComponent] = (),
    ) -> None:
        self.path = Path(path)
        self._watch = GenerationWatch(self.path, MANIFEST)  # stat before reading: never newer than what is read
        self.manifest = self._read_manifest()
        self._embed_model = embed_model
        self._fingerprinted: Optional[tuple] = None  # (model id, fingerprint) last found to match
        if embed_model is not None:
            self._check_model(embed_model)
        self.parser = parser or HTMLEvidenceParser()
        self.contextualizer = contextualizer or EvidenceContextualizer.from_recorded(
            self.manifest.get("contextualizer")
        )
        self.transformations = list(transformations)  # yours, after the contextualizer (``pipeline``)
        self.lexical, self.latent = self._load_indexes(lexical)
        self.access = AccessMap.load(self.path)  # who may read which page (``index/access.py``)
        self._chroma_client = chroma_client
        self._collection_name = collection
        self._vector_store = None
        self._writing = False  # inside ingest/repair: the writer checks and repairs instead of refusing

    # -- parts ------------------------------------------------------------------
    @property
    def embed_model(self) -> BaseEmbedding:
        """The store's embedding model: the one passed, else the recorded one (see ``embedding_for``)."""
        if self._embed_model is None:
            settings = (self.manifest.get("embed_fingerprint") or {}).get("settings", {})
            self._embed_model = embedding_for(self.manifest.get("embed_model"), settings, self.path)
            self._check_model(self._embed_model)
        return self._embed_model

    def _check_model(self, model: Optional[BaseEmbedding], manifest: Optional[Dict[str, Any]] = None) -> None:
        """By name, then (a local model, once per model and fingerprint) by its vectors of fixed probe texts."""
        manifest = manifest or self.manifest
        recorded, prints = manifest.get("embed_model"), manifest.get("embed_fingerprint")
        why = None if model is None or not recorded or same_space(recorded, model) else "another model"
        if why is None and model is not None and prints and self._fingerprinted != (id(model), prints["probes"][0]):
            why = refusal(prints, model)
            self._fingerprinted = None if why else (id(model), prints["probes"][0])
        if why:
            raise StoreError(
                f"{self.path} was built with embedding model {recorded!r}, not {embedding_id(cast(BaseEmbedding, model))!r} "
                f"({why}); "
                "open it with the same model or build a new store"
            )

    def _read_manifest(self) -> Dict[str, Any]:
        file = self.path / MANIFEST
        if not file.exists():
            return {}
        manifest = read_json(file, "the store manifest")
        if not isinstance(manifest, dict):
            raise StoreCorruptError(f"{file}: the store manifest is unreadable (not a JSON object); rebuild the store")
        check_format_version(manifest.get("format"), FORMAT_VERSION, file, "the store manifest")
        return manifest

    def _load_indexes(self, lexical: Optional[LexicalIndex] = None) -> Tuple[LexicalIndex, LatentTermIndex]:
        """The lexical index (unless given) and the latent terms, loaded side by side: most of a load is
        verifying checksums, which runs outside the GIL (a 1M-evidence store: 6.5 GB of files)."""
        folder = self.path / LEXICAL_DIR
        if lexical is None and not folder.exists():
            lexical = LexicalIndex()
        if lexical is not None:
            return lexical, LatentTermIndex.load(self.path)
        collecting = gc.isenabled()
        gc.disable()  # a million records made at once: the collector's passes over them would double the time
        try:
            with ThreadPoolExecutor(1) as pool:
                loading = pool.submit(LexicalIndex.load, folder)
                latent = LatentTermIndex.load(self.path)
                return loading.result(), latent
        finally:
            if collecting:
                gc.enable()

    @property
    def vector_store(self):
        """The LlamaIndex ``ChromaVectorStore`` (created on first use).

        A reader's first use checks the store: an interrupted write raises ``StoreInterruptedError``,
        evidence counts that disagree raise ``StoreInconsistentError`` (both name the fix).
        A server that cannot be reached raises ``VectorStoreUnavailableError``, then and later.
        """
        if self._vector_store is None:
            self._open_vector_store()
            if not self._writing:
                self._check_readable()
        return self._vector_store

    def _open_vector_store(self):
        if self._vector_store is None:
            if self._chroma_client is None and (self._writing or not (self.path / CHROMA_DIR).exists()):
                self._make_folder()
            collection = open_collection(
                self.path / CHROMA_DIR, self._chroma_client, self._collection_name, writable=self._writing
            )
            self._vector_store = NodeLookupChromaVectorStore(lookup=self._held_node, chroma_collection=collection)
        return self._vector_store

    def _held_node(self, node_id: str) -> Optional[BaseNode]:
        """The complete node the current lexical side holds, else None (then Chroma's copy is rebuilt)."""
        return self.lexical.get_node(node_id) if node_id in self.lexical else None

    def _check_readable(self) -> None:
        """The cheap check at open: an interrupted write or counts that disagree are errors, not silent."""
        check_readable(self.path, cast(Any, self._vector_store).client, self.lexical, self.latent)  # just opened

    def fingerprint(self, doc: Document) -> str:
        """Changes when the page or the way it is indexed changes (the parser's, contextualizer's and
        every added transformation's settings)."""
        return page_fingerprint(doc, self.pipeline)

    @property
    def pipeline(self) -> List[TransformComponent]:
        """What turns a page into evidences, in order: the parser, the contextualizer, your transformations."""
        return [self.parser, self.contextualizer, *self.transformations]

    def ingest(
        self,
        documents: Sequence[Document],
        remove_missing: bool = False,
        show_progress: bool = False,
        allow_removal: bool = False,
        max_removal_share: float = MAX_REMOVAL_SHARE,
        remove: Sequence[str] = (),
        access: Optional[Mapping[str, PageAccess]] = None,
        failed: Optional[Mapping[str, str]] = None,
    ) -> IngestReport:
        """Bring the store in line with ``documents`` (``ingestion.ingest``): ``remove_missing`` deletes
        pages not among them, ``remove`` these pages, in the same write; more than
        ``max_removal_share`` of the pages removed is a ``MassRemovalError`` unless ``allow_removal``.
        ``access``: who may read these pages (page id -> ``PageAccess``), written in the same write;
        pages it does not name keep theirs. ``failed``: pages that could not be read or parsed this time
        (id -> why): one indexed before keeps its previous version (``IngestReport.kept``), never removed."""
        return ingest(
            self, documents, remove_missing, show_progress, allow_removal, max_removal_share, remove, access, failed
        )

    # -- checking ------------------------------------------------------------------
    def check(self, repair: bool = False) -> StoreCheckReport:
        """Compare Chroma, the lexical index, the latent terms and the manifest evidence by evidence.

        ``repair=True`` (needs write access and the writer lock) drops every page with a
        difference from all of them and from the manifest; the next ingest indexes it again.
        The report is what was found before the repair.
        """
        if not repair:
            return check_store(self.path, self.manifest, self._open_vector_store().client, self.lexical, self.latent)
        with self._writer():
            report = self._full_check()
            if not report.ok:
                pages = dict(self.manifest.get("pages", {}))
                self._drop(report, pages)
                self._write(pages, keep_settings=True)  # this handle's parser may not be the store's
                finish_journal(self.path)
            return report

    def _full_check(self) -> StoreCheckReport:
        return check_store(self.path, self.manifest, self.vector_store.client, self.lexical, self.latent)

    def _drop(self, report: StoreCheckReport, pages: Dict[str, str]) -> None:
        logger.warning("%s: repairing the store\n%s", self.path, report)
        begin_journal(self.path, report.bad_pages)  # a crash during the repair is repaired next time
        drop_pages(report, pages, self.vector_store.client, self.lexical, self.latent)

    def _recover(self, pages: Dict[str, str]) -> List[str]:
        """Before a write: repair what an interrupted write (journal) or an older version left (counts)."""
        if read_journal(self.path) is None and not count_mismatch(self.vector_store.client, self.lexical, self.latent):
            return []
        report = self._full_check()
        if report.ok:
            return []
        self._drop(report, pages)
        return sorted(report.bad_pages)

    @contextmanager
    def _writer(self) -> Iterator[None]:
        """Hold the writer lock, starting from the state on disk (another process may have written).

        A write that runs out of disk space raises ``DiskFullError`` naming the store (``disk_full.py``)."""
        with disk_full_as_store_error(self.path):
            self._make_folder()
            with writer_lock(self.path):
                self._writing = True
                try:
                    on_disk = self._read_manifest()
                    if on_disk != self.manifest:  # another process wrote since we opened: start from its state
                        self.manifest, (self.lexical, self.latent) = on_disk, self._load_indexes()
                        self.access = AccessMap.load(self.path)
                    yield
                finally:
                    self._writing = False

    def _manifest_missing(self) -> bool:
        return not (self.path / MANIFEST).exists()

    def _delete_pages(self, page_ids: List[str]) -> None:
        """Remove every evidence of these pages from all indexes (Chroma in batches: one call per 1000 pages)."""
        collection = self.vector_store.client
        for start in range(0, len(page_ids), _DELETE_BATCH):
            collection.delete(where={"document_id": {"$in": page_ids[start : start + _DELETE_BATCH]}})
        if page_ids:  # one pass over the evidences for all the pages, not one per page (a sync of many pages)
            doomed = set(page_ids)
            self.lexical.delete([node_id for node_id, page in self.lexical.node_pages().items() if page in doomed])
            self.latent.delete([node_id for node_id, page in self.latent.node_pages().items() if page in doomed])

    def _make_folder(self) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(f"{self.path}: cannot create the store folder ({err.strerror})") from err
        if not os.access(self.path, os.W_OK):
            raise StoreError(
                f"{self.path}: the store folder is not writable (searching and asking need no write access)"
            )

    def _fingerprint_to_record(self) -> Optional[Dict[str, Any]]:
        """The recorded fingerprint of the store's model, else (a local model) its fingerprint now."""
        return self.manifest.get("embed_fingerprint") or fingerprint(self.embed_model)

    def _write(self, pages: Dict[str, str], keep_settings: bool = False, structured: bool = True) -> None:
        """``structured``: every page's evidences carry the structure fields (``STRUCTURE_VERSION`` recorded)."""
        self._make_folder()
        self.lexical.persist(self.path / LEXICAL_DIR)
        self.latent.persist(self.path)
        if keep_settings and self.manifest:
            self.manifest = {**self.manifest, "pages": pages, "generation": self.generation + 1}
        else:
            self.manifest = {
                "format": FORMAT_VERSION,
                "generation": self.generation + 1,  # readers reload when it grows
                "embed_model": self.manifest.get("embed_model") or embedding_id(self.embed_model),
                "parser": self.parser.to_dict(),
                "contextualizer": self.contextualizer.to_dict(),
                "pages": pages,
            }
            recorded = {  # written only when there is something to record: older stores keep their bytes
                "structure": STRUCTURE_VERSION if structured else None,
                "embed_fingerprint": self._fingerprint_to_record(),
                "transformations": [transformation_name(t) for t in self.transformations],
            }
            self.manifest.update({key: value for key, value in recorded.items() if value})
        write_json(self.path / MANIFEST, self.manifest, indent=1, sort_keys=True)

    # -- following other writers ------------------------------------------------------
    @property
    def generation(self) -> int:
        """The number of completed writes the loaded manifest records (0: none, or a store older than it)."""
        return int(self.manifest.get("generation", 0))

    def stale(self) -> bool:
        """Whether the folder may hold a write this handle has not loaded: two ``stat`` calls, nothing read."""
        return self._watch.changed()

    def reload(self) -> bool:
        """Load the newest completed generation, every part before any is replaced; True if one was.

        A write under way keeps the loaded one (warned once, False); an interrupted write raises
        ``StoreInterruptedError``, parts that disagree ``StoreInconsistentError``."""
        before = self._watch.now()
        if self._writing or self._watch.write_under_way(before, self.generation):
            return False
        manifest = self._read_manifest()
        if before.manifest is None and self.manifest:
            raise StoreError(f"{self.path}: the store is gone (no {MANIFEST}): open it again or rebuild it")
        if manifest == self.manifest:
            self._watch.seen = before
            return False
        self._check_model(self._embed_model, manifest)
        (lexical, latent), access = self._load_indexes(), AccessMap.load(self.path)
        vector_store = reopen_vector_store(
            self.path / CHROMA_DIR, self._chroma_client, self._collection_name, self._held_node
        )
        if self._watch.now() != before:  # a write began (or ended) meanwhile: try again at the next query
            return False
        check_readable(self.path, vector_store.client, lexical, latent)
        old, self._watch.seen = self.generation, before
        self.manifest, self.lexical, self.latent, self._vector_store = manifest, lexical, latent, vector_store
        self.access = access
        logger.info("%s: loaded generation %d (was %d), written by another process", self.path, self.generation, old)
        return True

    # -- reading --------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.lexical)

    def page_ids(self) -> List[str]:
        return sorted(self.manifest.get("pages", {}))
