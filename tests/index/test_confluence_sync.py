"""Incremental Confluence sync into a real store, against the stub Confluence server."""

from __future__ import annotations

import json

import pytest
from confluence_stub import ConfluenceStub, StubPage, confquestions_pages, sample_wiki_pages
from fakes import REPO, HashingEmbedding

from llama_index_ragonite import EvidenceStore, HybridRetriever, RagoniteChatEngine
from llama_index_ragonite.errors import ConfluenceError, MassRemovalError
from llama_index_ragonite.index.confluence_sync import SYNC_STATE, ConfluenceSync
from llama_index_ragonite.parsing.confluence import ConfluenceClient, ConfluenceStorageReader

OTA, ONBOARDING = "confluence-1003", "confluence-1002"


@pytest.fixture
def stub():
    with ConfluenceStub(user="me@example.com", token="tok", max_limit=4) as server:
        server.add_pages(sample_wiki_pages(REPO / "examples" / "sample_wiki"))
        yield server


def syncer(stub, store, **fields):
    client = ConfluenceClient(stub.url, user="me@example.com", api_token="tok", sleep=lambda s: None)
    return ConfluenceSync(store, ConfluenceStorageReader(client=client, **{"space_key": "AUR", **fields}))


def evidences(store):
    """node id -> (page, hash) of every stored evidence."""
    return {nid: (page, store.lexical.get_node(nid).hash) for nid, page in store.lexical.node_pages().items()}


def test_end_to_end_sync_changes_exactly_the_edited_and_deleted_pages(stub, confquestions_documents, tmp_path):
    stub.add_pages(confquestions_pages(confquestions_documents, 3, space="AUR"))
    store = EvidenceStore(tmp_path / "store")  # the embedded default
    first = syncer(stub, store).run()
    assert len(first.fetched) == 8 == len(first.ingest.added) and first.requests["body"] == 2
    chat = RagoniteChatEngine(HybridRetriever.from_store(tmp_path / "store"))
    answer = chat.chat("Who owns the OTA server?")
    assert "Bob" in answer.response and answer.source_nodes[0].node.ref_doc_id == OTA
    before = evidences(store)

    ota = stub.pages["1003"]
    stub.edit("1003", body=ota.body.replace("Bob owns the service", "Carol owns the service"))
    stub.delete("1002")
    stub.requests.clear()
    second = syncer(stub, store).run()
    assert second.fetched == [OTA] and second.removed == [ONBOARDING] and second.ingest.updated == [OTA]
    after = evidences(store)
    untouched = {n: v for n, v in before.items() if v[0] not in (OTA, ONBOARDING)}
    assert {n: v for n, v in after.items() if v[0] != OTA} == untouched  # same node ids, same hashes
    assert not any(page == ONBOARDING for page, _ in after.values())
    ota_nodes = [store.lexical.get_node(n) for n, v in after.items() if v[0] == OTA]
    assert {n.node_id for n in ota_nodes} == {n for n, v in before.items() if v[0] == OTA}  # same evidences, new text
    assert any("Carol owns" in n.get_content() for n in ota_nodes)
    assert not any("Bob owns" in n.get_content() for n in ota_nodes)
    assert store.check().ok
    state = json.loads((tmp_path / "store" / SYNC_STATE).read_text())
    [scope] = state["scopes"].values()
    assert scope["pages"][OTA]["version"] == 2 and ONBOARDING not in scope["pages"]

    stub.requests.clear()
    generation = EvidenceStore(tmp_path / "store").generation
    third = syncer(stub, store).run()
    # two listing pages (max_limit=4) and the space's viewers, which every sync reads (issue 48); one
    # attachment listing per page in scope, and no download (issue 61)
    assert third.fetched == [] and "body" not in stub.requests and third.requests == {"list": 3, "attachments": 7}
    assert EvidenceStore(tmp_path / "store").generation == generation  # nothing written
    answer = RagoniteChatEngine(HybridRetriever.from_store(tmp_path / "store")).chat("Who owns the OTA server?")
    assert "Carol" in answer.response


def test_moves_refetch_or_remove_and_new_pages_arrive(stub, tmp_path):
    store = EvidenceStore(tmp_path, embed_model=HashingEmbedding())
    syncer(stub, store).run()
    stub.add_pages([StubPage("1010", "Build farm", "<p>The build farm has 12 runners.</p>", "AUR", parent="1003")])
    stub.move("1004", parent="1003")  # same version, new ancestors: the breadcrumb changed
    stub.move("1005", space="ELSE")  # left the space
    report = syncer(stub, store).run(allow_removal=True)
    assert sorted(report.fetched) == ["confluence-1004", "confluence-1010"]
    assert report.removed == ["confluence-1005"]
    node = next(n for n, (p, _) in evidences(store).items() if p == "confluence-1004")
    assert store.lexical.get_node(node).metadata["breadcrumb"] == "Aurora home > OTA update server"


@pytest.mark.fault(
    "Confluence fails (500) while a sync fetches page bodies",
    "fetched pages indexed, nothing removed; the next run catches up",
)
def test_a_failed_sync_leaves_store_and_state_consistent_and_the_next_run_catches_up(stub, tmp_path):
    stub.add_pages([StubPage(str(3000 + i), f"Note {i}", f"<p>Note number {i}.</p>", "AUR") for i in range(30)])
    store = EvidenceStore(tmp_path, embed_model=HashingEmbedding())
    stub.failing_bodies_after = 7  # the first batch (25 pages, 7 responses of 4) succeeds, then 500 for good
    with pytest.raises(ConfluenceError, match="HTTP 500"):
        ConfluenceSync(store, syncer(stub, store).reader, fetch_batch=25).run()
    indexed = set(store.page_ids())
    assert len(indexed) == 25 and store.check().ok
    state = json.loads((tmp_path / SYNC_STATE).read_text())
    assert set(next(iter(state["scopes"].values()))["pages"]) == indexed
    stub.failing_bodies_after = None
    stub.requests.clear()
    report = syncer(stub, store).run()
    assert len(report.fetched) == 10 and stub.requests["body"] == 3 and len(store.page_ids()) == 35
    assert len(evidences(store)) == len(set(evidences(store))) and store.check().ok  # no duplicates


@pytest.mark.fault(
    "a Confluence listing comes back empty (lost permission, wrong space)", "MassRemovalError, store unchanged"
)
def test_an_emptied_space_is_refused_by_the_removal_guard(stub, tmp_path):
    store = EvidenceStore(tmp_path, embed_model=HashingEmbedding())
    syncer(stub, store).run()
    for page_id in ["1002", "1003", "1004", "1005"]:
        stub.delete(page_id)
    with pytest.raises(MassRemovalError):
        syncer(stub, store).run()
    assert len(store.page_ids()) == 5
    assert syncer(stub, store).run(allow_removal=True).removed == sorted(
        f"confluence-{i}" for i in (1002, 1003, 1004, 1005)
    )
    assert store.page_ids() == ["confluence-1001"]


def test_a_lost_state_or_lost_page_is_recovered_without_duplicates(stub, tmp_path):
    store = EvidenceStore(tmp_path, embed_model=HashingEmbedding())
    syncer(stub, store).run()
    before = evidences(store)
    (tmp_path / SYNC_STATE).unlink()  # as if the process died after the store's write
    report = syncer(stub, store).run()
    assert len(report.fetched) == 5 and len(report.ingest.unchanged) == 5 and evidences(store) == before
    store.ingest([], remove=[OTA], allow_removal=True)  # the store lost a page (e.g. check --repair)
    assert syncer(stub, store).run().fetched == [OTA] and evidences(store) == before


def test_two_scopes_share_a_store_and_a_page_leaves_only_when_no_scope_lists_it(stub, tmp_path):
    store = EvidenceStore(tmp_path, embed_model=HashingEmbedding())
    syncer(stub, store).run()
    tree = syncer(stub, store, space_key=None, page_ids=["1003"], include_children=True)
    stub.add_pages([StubPage("1010", "Build farm", "<p>The build farm has 12 runners.</p>", "AUR", parent="1003")])
    assert tree.run().fetched == [OTA, "confluence-1010"]
    syncer(stub, store).run()  # the space's sync lists the new page too
    stub.move("1010", parent="1001")  # leaves the tree, stays in the space
    assert tree.run().removed == [] and "confluence-1010" in store.page_ids()


def test_an_auth_error_while_listing_changes_nothing(stub, tmp_path):
    store = EvidenceStore(tmp_path, embed_model=HashingEmbedding())
    syncer(stub, store).run()
    stub.token = "rotated"
    with pytest.raises(ConfluenceError, match="space AUR"):
        syncer(stub, store).run()
    assert len(store.page_ids()) == 5
