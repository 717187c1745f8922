"""Ingestion: pages through a pipeline of LlamaIndex ``TransformComponent``s, embedded and written into a store.

Why apart from ``EvidenceStore``: the store persists, loads, checks and repairs; this is what turns
pages into its evidences. The pipeline is the store's parser, its contextualizer and any
transformations you add (``EvidenceStore(transformations=[...])``: a metadata extractor, a text
cleaner), run per page with LlamaIndex's own ``run_transformations``; then the evidences are
embedded in bounded batches and written. All of it runs inside the store's writer lock and journal,
so an interrupted run with your transformations is repaired by the next like any other.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, cast

from llama_index.core.ingestion.pipeline import run_transformations
from llama_index.core.schema import BaseNode, Document, TransformComponent
from llama_index.core.utils import get_tqdm_iterable

from llama_index_ragonite.errors import MassRemovalError
from llama_index_ragonite.index.access import AccessMap, PageAccess
from llama_index_ragonite.index.batches import earlier_evidences, embed_evidences, write_evidences
from llama_index_ragonite.index.ingest_report import IngestReport, StepClock
from llama_index_ragonite.index.journal import begin_journal, finish_journal
from llama_index_ragonite.index.model_identity import embedding_id
from llama_index_ragonite.index.structure_refill import needs_structure, refill_nodes, write_refill
from llama_index_ragonite.memory import release_freed_memory
from llama_index_ragonite.models.protocols import TextTermsEmbedding

__all__ = ["MAX_REMOVAL_SHARE", "ingest", "page_fingerprint", "transformation_name"]

MAX_REMOVAL_SHARE = 0.5  # an ingest removing more of the store's pages than this refuses unless asked


def transformation_name(transform: TransformComponent) -> str:
    """How a manifest names a transformation: LlamaIndex's ``class_name()``, else the Python class."""
    name = transform.class_name() if hasattr(transform, "class_name") else ""
    return name if name and name != "base_component" else f"{type(transform).__module__}.{type(transform).__qualname__}"


def _settings(transform: TransformComponent) -> str:
    """A transformation's settings as text (its fields), or its name where they do not serialize."""
    try:
        return json.dumps(transform.to_dict(), sort_keys=True, default=str)
    except Exception:  # a field that does not serialize (a client, a model): its class stands for it
        return transformation_name(transform)


def page_fingerprint(doc: Document, pipeline: Sequence[TransformComponent]) -> str:
    """Changes when the page or the way it is indexed changes. ``pipeline``: parser, contextualizer,
    then added transformations (which a store without any fingerprints as before)."""
    parser, contextualizer, *added = pipeline
    digest = hashlib.sha256()
    for part in (
        doc.text,
        json.dumps(doc.metadata, sort_keys=True, default=str),
        json.dumps(parser.to_dict(), sort_keys=True, default=str),
        json.dumps(cast(Any, contextualizer).fingerprint_settings(), sort_keys=True, default=str),
        *(_settings(t) for t in added),
    ):
        digest.update(part.encode("utf-8", "replace"))
        digest.update(b"\x00")
    return digest.hexdigest()


def ingest(
    store: Any,
    documents: Sequence[Document],
    remove_missing: bool = False,
    show_progress: bool = False,
    allow_removal: bool = False,
    max_removal_share: float = MAX_REMOVAL_SHARE,
    remove: Sequence[str] = (),
    access: Optional[Mapping[str, PageAccess]] = None,
    failed: Optional[Mapping[str, str]] = None,
) -> IngestReport:
    """Bring ``store`` (an ``EvidenceStore``) in line with ``documents``; ``remove_missing`` deletes pages
    not among them, ``remove`` these pages (ids not indexed are ignored), in the same write.

    ``failed``: pages whose source exists but could not be read or parsed this time (id -> why, e.g.
    ``load_pages(skipped=…)``). One indexed before keeps its previous version (``IngestReport.kept``)
    instead of counting as missing: a transient bad file must not delete good content. A new one is
    simply not there. A failed file keeps its parts too (an attachment's pages: ``file.pdf#page=3``).

    A run that would remove more than ``max_removal_share`` of the indexed pages, or all of
    them, raises ``MassRemovalError`` unless ``allow_removal``: an empty or wrong source
    folder must not wipe the store. One writer at a time: a second process ingesting into
    the same folder gets a ``StoreLockedError`` instead of interleaving writes (readers need no lock).
    """
    ids = [doc.id_ for doc in documents]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"Duplicate document ids {dupes[:5]}: each page needs its own stable id")
    if not 0 <= max_removal_share <= 1:
        raise ValueError(f"max_removal_share must be between 0 and 1; got {max_removal_share!r}")
    if set(remove) & set(ids):
        raise ValueError(f"Pages both given and to remove: {sorted(set(remove) & set(ids))[:5]}")
    with store._writer():
        indexed = set(store.manifest.get("pages", {}))
        absent = indexed - set(ids)
        kept = {
            doc_id: why
            for failed_id, why in (failed or {}).items()
            for doc_id in ([failed_id] if failed_id in absent else []) + _parts_of(failed_id, absent)
        }
        doomed = (indexed - set(ids) - set(kept) if remove_missing else set()) | (indexed & set(remove))
        if not allow_removal:
            _guard_removal(store, doomed, max_removal_share)
        report = _ingest(store, documents, doomed, show_progress, access)
        report.kept = {doc_id: why for doc_id, why in kept.items() if doc_id not in report.removed}
        return report


def _parts_of(file_id: str, ids: set) -> List[str]:
    """The ids of a file's parts among ``ids`` (an attachment's pages: ``file.pdf#page=3``)."""
    return [i for i in ids if i.startswith(f"{file_id}#")] if ids else []


def _guard_removal(store: Any, doomed: set, share: float) -> None:
    indexed = len(store.manifest.get("pages", {}))
    if doomed and (len(doomed) == indexed or len(doomed) > share * indexed):
        examples = ", ".join(sorted(doomed)[:3]) + (", …" if len(doomed) > 3 else "")
        raise MassRemovalError(
            f"{store.path}: this run would remove {len(doomed)} of the {indexed} indexed pages ({examples}), "
            f"more than {share:.0%}: is the source the right folder, and mounted? Nothing was changed. "
            "To remove them, pass allow_removal=True (`ragonite index --prune`)"
        )


def _ingest(
    store: Any, documents: Sequence[Document], doomed: set, show_progress: bool, access: Optional[Mapping[str, Any]]
) -> IngestReport:
    pages: Dict[str, str] = dict(store.manifest.get("pages", {}))
    report = IngestReport()
    clock = StepClock(report.seconds)
    report.repaired = store._recover(pages)
    if report.repaired:
        clock.lap("repair")
    changed: List[Document] = []
    new_fingerprints: Dict[str, str] = {}
    pipeline = store.pipeline
    for doc in documents:
        fp = page_fingerprint(doc, pipeline)
        if pages.get(doc.id_) == fp:
            report.unchanged.append(doc.id_)
            continue
        (report.updated if doc.id_ in pages else report.added).append(doc.id_)
        changed.append(doc)
        new_fingerprints[doc.id_] = fp
    report.removed = sorted(doomed & set(pages))  # the manifest on disk: a repair may have dropped some
    old_store = needs_structure(store.manifest)
    refilled: List[BaseNode] = []
    if old_store:  # unchanged pages of a store written before the structure fields: fill them, embed nothing
        same = set(report.unchanged)
        refilled, redo = refill_nodes(store.lexical, [doc for doc in documents if doc.id_ in same], pipeline)
        for doc in redo:  # its re-parse differs from what is held: index it again
            report.unchanged.remove(doc.id_)
            report.updated.append(doc.id_)
            changed.append(doc)
            new_fingerprints[doc.id_] = page_fingerprint(doc, pipeline)
        report.refilled = len(refilled)
        clock.lap("structure fields")

    nodes: List[BaseNode] = []
    for doc in get_tqdm_iterable(changed, show_progress, "Parsing pages"):  # one page at a time: bounded memory
        nodes.extend(run_transformations([doc], pipeline))
    release_freed_memory()  # a large page's parse trees, before embedding needs memory
    clock.lap("parse + contextualize")
    model = store.embed_model
    collection = store._open_vector_store().client
    # An updated page's evidences whose embedded text did not change keep their vectors and latent terms
    earlier = earlier_evidences(
        store.lexical, store.latent, collection, report.updated, isinstance(model, TextTermsEmbedding)
    )
    evidences = embed_evidences(model, nodes, collection, embedding_id(model), show_progress, earlier)
    report.reused = evidences.reused
    del nodes, earlier  # the evidences hold them now, and release each batch once written
    clock.lap("embed")

    # The journal names every page about to change before the first write and goes away
    # after the manifest: an interrupted run is repaired by the next one. Each page's old
    # evidences go first, whatever the manifest says (Chroma's add ignores existing ids).
    touched = list(new_fingerprints) + report.removed
    if touched or report.repaired:
        begin_journal(store.path, touched + report.repaired)
    store._delete_pages(touched)
    for doc_id in report.removed:
        pages.pop(doc_id, None)
    write_evidences(evidences, store.vector_store, store.lexical, store.latent, clock, show_progress)
    report.nodes_written = len(evidences)
    del evidences  # its vector matrix, before persisting builds the files
    if refilled:
        write_refill(refilled, store.lexical, store.vector_store)
    pages.update(new_fingerprints)
    readers_changed = _record_access(store, access, pages)
    given = {doc.id_ for doc in documents}
    structured = not old_store or set(pages) <= given  # every page parsed by this code now
    if touched or report.repaired or readers_changed or store._manifest_missing() or (old_store and structured):
        store._write(pages, structured=structured)
        finish_journal(store.path)
    clock.lap("persist")
    return report


def _record_access(store: Any, access: Optional[Mapping[str, Any]], pages: Mapping[str, str]) -> bool:
    """Write who may read which page (before the manifest, which publishes it); True when it changed.

    A permission change bumps no page version: the store writes a new generation for it alone,
    with nothing re-embedded."""
    known = store.access
    updated = AccessMap({**known.pages, **(access or {})})
    updated.keep_only(set(pages))
    if updated.pages == known.pages:
        return False
    updated.version = known.version + 1
    updated.save(store.path)
    store.access = updated
    return True
