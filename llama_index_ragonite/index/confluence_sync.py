"""``ConfluenceSync``: keep a store in step with a Confluence space (or page tree, or CQL query), cheaply.

Why: re-reading a whole space every hour costs a body download per page. A sync lists the scope
without bodies (version, space and ancestors of each page: a few requests per thousand pages),
compares that with what the previous sync recorded, and fetches bodies only for pages that are
new, changed (a new version) or moved (other ancestors or space: the breadcrumb changed). Pages
that left the scope (deleted, moved to another space or out of the page tree) are removed in the
same store write, through the store's removal guard: a listing that suddenly comes back empty
(a lost permission looks like that) cannot wipe the store unless ``allow_removal``.

The state (``confluence_sync.json`` in the store folder: per scope, page -> version, space,
ancestors) is written atomically and only after the store's write committed. A crash between
the two costs a refetch on the next run (the store's fingerprints then find the pages
unchanged); a server error while fetching bodies keeps what was fetched (indexed, recorded) and
removes nothing, so the next run fetches the rest. A page the store lost (``ragonite check
--repair``) is fetched again. Several scopes can share a store; a page leaves the store only when
no scope lists it.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from tqdm.auto import tqdm

from llama_index_ragonite.errors import ConfluenceError, StoreCorruptError
from llama_index_ragonite.index.confluence_access import PermissionReader
from llama_index_ragonite.index.confluence_attachments import AttachmentOptions, AttachmentSync, AttachmentSyncResult
from llama_index_ragonite.index.confluence_comments import CommentOptions, CommentSync
from llama_index_ragonite.index.disk_full import disk_full_as_store_error
from llama_index_ragonite.index.ingest_report import IngestReport, StepClock
from llama_index_ragonite.index.persist import check_format_version, read_json, write_json
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.parsing.confluence.client import ConfluenceClient
from llama_index_ragonite.parsing.confluence.permissions import Readers
from llama_index_ragonite.parsing.confluence.reader import ConfluenceStorageReader, PageVersion

logger = logging.getLogger(__name__)

__all__ = ["SYNC_STATE", "ConfluenceSync", "SyncReport", "sync_confluence"]

SYNC_STATE = "confluence_sync.json"
FORMAT_VERSION = 1
STATE_NOT_RECORDED = (
    "the store's write completed but the sync state was not recorded: the next sync fetches those pages again"
    " and finds them unchanged"
)


@dataclass
class SyncReport:
    listed: int = 0
    fetched: List[str] = field(default_factory=list)  # document ids whose bodies were downloaded
    removed: List[str] = field(default_factory=list)
    ingest: IngestReport = field(default_factory=IngestReport)
    requests: Dict[str, int] = field(default_factory=dict)  # by kind: list, body, page
    retries: int = 0
    seconds: Dict[str, float] = field(default_factory=dict)
    complete: bool = True  # False: a server error stopped the fetching; the next run catches up
    unreadable: Dict[str, str] = field(default_factory=dict)  # document id -> why nobody may read it now, and the fix
    named_spaces: Dict[str, str] = field(default_factory=dict)  # space -> why its named viewers (space_readers) apply
    ignored_space_readers: List[str] = field(default_factory=list)  # named spaces Confluence answered for itself
    attachments_fetched: List[str] = field(default_factory=list)  # attachment ids downloaded
    attachments_skipped: Dict[str, str] = field(default_factory=dict)  # not indexed (media type, size cap): why
    attachments_failed: Dict[str, str] = field(default_factory=dict)  # not listed, downloaded or read: why (kept)
    comments_indexed: List[str] = field(default_factory=list)  # comment ids new or changed (``comments`` option)
    comments_failed: Dict[str, str] = field(default_factory=dict)  # pages whose comments were not listed: why (kept)

    def __str__(self) -> str:
        asked = ", ".join(f"{n} {kind}" for kind, n in sorted(self.requests.items())) or "none"
        return (
            f"{self.listed} pages listed, {len(self.fetched)} fetched, {len(self.removed)} removed "
            f"({self.ingest}); requests: {asked}"
            + (f", {self.retries} retried" if self.retries else "")
            + (f"; {len(self.unreadable)} readable by nobody (permissions unreadable)" if self.unreadable else "")
            + (f"; attachments: {len(self.attachments_fetched)} fetched" if self.attachments_fetched else "")
            + (f", {len(self.attachments_skipped)} skipped" if self.attachments_skipped else "")
            + (f", {len(self.attachments_failed)} failed (kept)" if self.attachments_failed else "")
            + (f"; comments: {len(self.comments_indexed)} indexed" if self.comments_indexed else "")
            + (f", {len(self.comments_failed)} pages failed (kept)" if self.comments_failed else "")
        )


class ConfluenceSync:
    """Sync ``reader``'s scope into ``store``; ``run()`` any number of times."""

    def __init__(
        self,
        store: EvidenceStore,
        reader: ConfluenceStorageReader,
        fetch_batch: int = 25,
        space_readers: Optional[Mapping[str, Readers]] = None,
        attachments: Optional[AttachmentOptions] = None,
        comments: Optional[CommentOptions] = None,
    ) -> None:
        """``space_readers``: a space's viewers, used only for a space whose permissions the account cannot
        read whole (where Confluence answers, its answer wins: ``SyncReport.ignored_space_readers``).
        ``attachments``: which attachments of the pages are synced (``confluence_attachments``); ``comments``:
        whether their comments are (``confluence_comments``; off by default)."""
        self.store, self.reader, self.fetch_batch = store, reader, fetch_batch
        self.attachments = attachments or AttachmentOptions()
        self.comments = comments or CommentOptions()
        self.space_readers = dict(space_readers or {})
        self.scope_key = json.dumps(reader.scope(), sort_keys=True)

    @property
    def state_file(self) -> Path:
        return self.store.path / SYNC_STATE

    def read_state(self) -> Dict[str, Any]:
        if not self.state_file.exists():
            return {"format": FORMAT_VERSION, "scopes": {}}
        state = read_json(self.state_file, "the Confluence sync state")
        if not isinstance(state, dict) or not isinstance(state.get("scopes"), dict):
            raise StoreCorruptError(f"{self.state_file}: unreadable sync state; delete it to sync every page again")
        check_format_version(state.get("format"), FORMAT_VERSION, self.state_file, "the Confluence sync state")
        return state

    def run(self, show_progress: bool = False, allow_removal: bool = False, remove_missing: bool = True) -> SyncReport:
        """List, fetch what changed, ingest and remove in one store write, then record the state."""
        client = self.reader.client
        client.start_run()  # the client's max_requests and run_deadline count per sync
        requests_before, retries_before = Counter(client.requests), client.retries
        report = SyncReport()
        clock = StepClock(report.seconds)
        listed = self.reader.list_pages()  # raises before anything changed
        report.listed = len(listed)
        permissions = PermissionReader(client, self.space_readers)
        access, report.unreadable = permissions.page_access(listed)
        report.named_spaces, report.ignored_space_readers = permissions.named_used, permissions.named_ignored
        clock.lap("list")
        state = self.read_state()
        mine: Dict[str, Any] = dict(state["scopes"].get(self.scope_key, {}).get("pages", {}))
        others = {
            doc_id for key, scope in state["scopes"].items() if key != self.scope_key for doc_id in scope["pages"]
        }
        indexed = set(self.store.page_ids())
        stale = [d for d, page in listed.items() if mine.get(d) != page.state() or d not in indexed]
        gone = [d for d in mine if d not in listed] if remove_missing else []

        docs, error = self._fetch([listed[d] for d in stale], show_progress)
        clock.lap("fetch")
        report.complete = error is None
        doomed = [d for d in gone if d not in others] if error is None else []
        files = None
        if self.attachments.enabled and error is None:  # after a server error the run stops: attachments wait
            held = {
                d for key, scope in state["scopes"].items() if key != self.scope_key for d in _attachment_docs(scope)
            }
            previous = state["scopes"].get(self.scope_key, {}).get("attachments", {})
            files = AttachmentSync(client, self.attachments).run(
                listed, previous, access, indexed, held, keep_unlisted_pages=not remove_missing
            )
            report.attachments_fetched, report.attachments_skipped = files.fetched, files.skipped
            report.attachments_failed = files.failed
            clock.lap("attachments")
        elif error is None and (earlier := state["scopes"].get(self.scope_key, {}).get("attachments")):
            # switched off: the attachments synced before go (kept, their access entries would no longer follow
            # their page's permissions: a page restricted since would leave them readable under the old ones)
            files = AttachmentSyncResult(remove=_attachment_docs({"attachments": earlier}))
        talk, earlier_comments = None, state["scopes"].get(self.scope_key, {}).get("comments", {})
        if (self.comments.enabled or earlier_comments) and error is None:
            held = {d for key, scope in state["scopes"].items() if key != self.scope_key for d in _comment_docs(scope)}
            talk = CommentSync(client, self.comments).run(
                listed, earlier_comments, access, indexed, held, keep_unlisted_pages=not remove_missing
            )
            report.comments_indexed, report.comments_failed = talk.indexed, talk.failed
            clock.lap("comments")
        report.ingest = self.store.ingest(
            [*docs, *(files.documents if files else []), *(talk.documents if talk else [])],
            show_progress=show_progress,
            allow_removal=allow_removal,
            remove=[*doomed, *(files.remove if files else []), *(talk.remove if talk else [])],
            access={**access, **(files.access if files else {}), **(talk.access if talk else {})},
        )
        clock.lap("ingest")
        report.fetched = [doc.id_ for doc in docs]
        report.removed = report.ingest.removed
        for doc in docs:
            mine[doc.id_] = _recorded(doc.metadata)
        if error is None:
            for doc_id in gone:
                mine.pop(doc_id, None)
        scope_state = {"scope": self.reader.scope(), "pages": mine, "synced_at": time.time()}
        attachments = files.state if files else state["scopes"].get(self.scope_key, {}).get("attachments")
        comments = talk.state if talk else earlier_comments
        state["scopes"][self.scope_key] = {
            **scope_state,
            **({"attachments": attachments} if attachments else {}),
            **({"comments": comments} if comments else {}),
        }
        with disk_full_as_store_error(self.store.path, STATE_NOT_RECORDED):
            write_json(self.state_file, state, indent=1, sort_keys=True)  # after the store committed
        clock.lap("state")
        report.requests = dict(Counter(client.requests) - requests_before)
        report.retries = client.retries - retries_before
        if error is not None:
            logger.warning(
                "%s: the sync stopped after %d of %d changed pages (%s); they are indexed, the next run fetches the rest",
                self.store.path,
                len(docs),
                len(stale),
                error,
            )
            raise error
        return report

    def _fetch(self, pages: Sequence[PageVersion], show_progress: bool):
        """Bodies of ``pages`` in batches; on a server error, what was fetched before it and the error."""
        docs, error = [], None
        with tqdm(total=len(pages), desc="Fetching Confluence pages", unit="page", disable=not show_progress) as bar:
            for start in range(0, len(pages), self.fetch_batch):
                batch = pages[start : start + self.fetch_batch]
                try:
                    docs.extend(self.reader.fetch([p.page_id for p in batch]))
                except ConfluenceError as err:
                    error = err
                    break
                bar.update(len(batch))
        return docs, error


def _attachment_docs(scope: Mapping[str, Any]) -> List[str]:
    return [d for entry in scope.get("attachments", {}).values() for d in entry.get("documents", ())]


def _comment_docs(scope: Mapping[str, Any]) -> List[str]:
    return [d for entry in scope.get("comments", {}).values() for d in entry.get("documents", ())]


def _recorded(metadata: Dict[str, Any]) -> Dict[str, Any]:
    """What the state records for a fetched page: what a listing shows (see ``PageVersion.state``)."""
    ancestors = [a for a in str(metadata.get("ancestor_ids") or "").split(",") if a]
    return {"version": int(metadata.get("version") or 0), "space": metadata.get("space", ""), "ancestors": ancestors}


def sync_confluence(
    store: Union[str, Path, EvidenceStore],
    url: Optional[str] = None,
    space_key: Optional[str] = None,
    page_ids: Sequence[str] = (),
    cql: Optional[str] = None,
    include_children: bool = False,
    show_progress: bool = False,
    allow_removal: bool = False,
    remove_missing: bool = True,
    limits: Optional[Dict[str, Any]] = None,
    space_readers: Optional[Mapping[str, Readers]] = None,
    attachments: Optional[AttachmentOptions] = None,
    comments: Optional[CommentOptions] = None,
    **store_kwargs: Any,
) -> SyncReport:
    """One sync, as ``ragonite index confluence`` runs it (credentials from the environment).

    ``limits``: ``ConfluenceClient`` limits (``request_deadline``, ``run_deadline``, ``max_requests``…)."""
    if not isinstance(store, EvidenceStore):
        store = EvidenceStore(store, **store_kwargs)
    client = ConfluenceClient(url, **(limits or {}))
    try:
        reader = ConfluenceStorageReader(
            client=client, space_key=space_key, page_ids=list(page_ids), cql=cql, include_children=include_children
        )
        sync = ConfluenceSync(store, reader, space_readers=space_readers, attachments=attachments, comments=comments)
        return sync.run(show_progress, allow_removal, remove_missing)
    finally:
        client.close()
