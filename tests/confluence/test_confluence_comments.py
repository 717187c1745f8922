"""A page's comments synced from Confluence (``comments`` option): under the page's permissions, re-indexed when
they change, evidences of kind ``comment`` with their author and date.

A stub Confluence (loopback, real response shapes) holds footer and inline comments (one resolved, one a reply)
on an open page and on a page restricted to one user. Every comment holds a marker no other text has.
"""

from __future__ import annotations

import pytest
from confluence_stub import ConfluenceStub, StubPage
from fakes import HashingEmbedding

from llama_index_ragonite import EvidenceStore, HybridRetriever
from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.index.access import Principal
from llama_index_ragonite.index.confluence_attachments import AttachmentOptions
from llama_index_ragonite.index.confluence_comments import CommentOptions
from llama_index_ragonite.index.confluence_sync import ConfluenceSync
from llama_index_ragonite.parsing.confluence import ConfluenceClient, ConfluenceStorageReader
from llama_index_ragonite.parsing.confluence.comments import list_comments

ALICE = Principal.of("acc-alice", ["eng"])
BOB = Principal.of("acc-bob", ["eng"])
QUESTIONS = [
    "Who is the new travel contact?",
    "Is the hotel cap still 120 euros?",
    "When does the launch move?",
    "launch budget approval",
    "travel contact hotel cap launch budget visa",
]


@pytest.fixture
def stub():
    with ConfluenceStub(space_readers={"ENG": ((), ("eng",))}) as server:
        server.add_pages(
            [
                StubPage("11", "Travel", "<p>Travel rules for all staff. The hotel cap is 100 euros.</p>", "ENG"),
                StubPage("12", "Launch", "<p>The launch plan.</p>", "ENG", readers=(("acc-alice",), ())),
            ]
        )
        server.ids = {
            "contact": server.comment(
                "11", "<p>This changed in March: the new travel contact is Mia. MARK-C1</p>", "Alice"
            ),
            "cap": server.comment(
                "11",
                "<p>The hotel cap is 120 euros now. MARK-C2</p>",
                "Bob",
                location="inline",
                resolution="resolved",
                selection="The hotel cap is 100 euros.",
            ),
            "launch": server.comment(
                "12", "<p>The launch moves to June; budget approval pending. MARK-R1</p>", "Alice"
            ),
        }
        server.ids["reply"] = server.comment(
            "12", "<p>Budget approval came through. MARK-R2</p>", "Carol", parent=server.ids["launch"]
        )
        yield server


def sync(stub, store, comments=True, **options):
    client = ConfluenceClient(stub.url, sleep=lambda s: None)
    reader = ConfluenceStorageReader(client=client, space_key="ENG")
    options = CommentOptions(enabled=comments, **options)
    return ConfluenceSync(store, reader, attachments=AttachmentOptions(enabled=False), comments=options).run()


def seen_by(store, principal):
    retriever = HybridRetriever.from_store(store, top_n=10, principal=principal)
    return {h.node.ref_doc_id for q in QUESTIONS for h in retriever.retrieve(q)}


def comment_docs(store, page=None):
    return {d for d in store.page_ids() if "/comment" in d and (page is None or d.startswith(f"confluence-{page}/"))}


def nodes_of(store, doc_id):
    return [store.lexical.get_node(n) for n, p in store.lexical.node_pages().items() if p == doc_id]


def texts(store) -> str:
    return " ".join(n.get_content() for d in comment_docs(store) for n in nodes_of(store, d))


@pytest.mark.fault(
    "comments on a page restricted in Confluence",
    "readable by exactly the page's readers: a user who may not read the page never retrieves its comments",
    area="access",
)
def test_a_restricted_pages_comments_never_reach_other_users(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    report = sync(stub, store)
    assert sorted(report.comments_indexed) == sorted(stub.ids.values()) and not report.comments_failed
    restricted = comment_docs(store, "12")
    assert restricted == {f"confluence-12/comment{stub.ids['launch']}", f"confluence-12/comment{stub.ids['reply']}"}
    assert all(store.access.pages[d] == store.access.pages["confluence-12"] for d in restricted)
    assert not seen_by(store, BOB) & restricted  # 0 leaks
    assert seen_by(store, ALICE) & restricted  # the retrieval reaches them for a reader
    assert seen_by(store, BOB) & comment_docs(store, "11")
    stub.pages["12"].readers = None  # the restriction lifted: the comments open with the page, none rebuilt
    assert sync(stub, store).comments_indexed == []
    assert seen_by(store, BOB) & restricted
    stub.pages["12"].readers = (("acc-alice",), ())  # restricted again while comments are off: they close too
    assert sync(stub, store, comments=False).comments_indexed == []
    assert not seen_by(store, BOB) & restricted


def test_comment_evidences_carry_kind_author_date_and_resolution(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    sync(stub, store)
    contact = nodes_of(store, f"confluence-11/comment{stub.ids['contact']}")
    assert contact and {n.metadata["evidence_type"] for n in contact} == {"comment"}
    meta = contact[0].metadata
    assert (meta["author"], meta["created"][:10], meta["comment_location"], meta["resolved"]) == (
        "Alice",
        "2025-02-01",
        "footer",
        False,
    )
    assert meta["title"] == "Travel: comment by Alice, 2025-02-01" and meta["page_title"] == "Travel"
    assert f"focusedCommentId={stub.ids['contact']}" in meta["url"]
    assert "Page: Travel: comment by Alice, 2025-02-01" in contact[0].get_content(metadata_mode="llm")
    assert "MARK-C1" in contact[0].get_content()
    cap = nodes_of(store, f"confluence-11/comment{stub.ids['cap']}")[0].metadata
    assert (cap["comment_location"], cap["resolved"], cap["author"]) == ("inline", True, "Bob")
    assert cap["comment_selection"] == "The hotel cap is 100 euros."
    page = nodes_of(store, "confluence-11")
    assert page and {n.metadata["evidence_type"] for n in page} == {"passage"}  # the page's own are untouched


def test_added_edited_and_deleted_comments_are_exactly_what_the_next_sync_changes(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    sync(stub, store)
    again = sync(stub, store)
    assert again.comments_indexed == [] and again.ingest.nodes_written == 0 and not again.removed
    stub.edit_comment(stub.ids["contact"], "<p>The new travel contact is Noah. MARK-C3</p>")
    stub.delete_comment(stub.ids["reply"])
    added = stub.comment("11", "<p>Visa costs are refunded too. MARK-C4</p>", "Dan")
    listings = stub.routes["comments"]
    report = sync(stub, store)
    assert stub.routes["comments"] - listings == 2  # one listing per page in scope
    assert sorted(report.comments_indexed) == sorted([stub.ids["contact"], added])
    assert report.removed == [f"confluence-12/comment{stub.ids['reply']}"]
    text = texts(store)
    assert "MARK-C3" in text and "MARK-C1" not in text and "MARK-C4" in text and "MARK-R2" not in text
    assert "MARK-C2" in text and "MARK-R1" in text  # the others stay
    stub.edit("11", title="Travel policy")  # the page's new version renames its comments' titles
    assert sorted(sync(stub, store).comments_indexed) == sorted([stub.ids["contact"], stub.ids["cap"], added])
    assert nodes_of(store, f"confluence-11/comment{added}")[0].metadata["title"].startswith("Travel policy: ")
    stub.delete("12")  # the page leaves the scope: its comments go with it
    sync(stub, store)
    assert not comment_docs(store, "12")


def test_resolved_comments_can_be_left_out(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    sync(stub, store)
    cap = f"confluence-11/comment{stub.ids['cap']}"
    assert cap in comment_docs(store)
    report = sync(stub, store, resolved=False)
    assert report.removed == [cap] and cap not in comment_docs(store)


def test_comments_are_off_by_default(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    client = ConfluenceClient(stub.url, sleep=lambda s: None)
    reader = ConfluenceStorageReader(client=client, space_key="ENG")
    report = ConfluenceSync(store, reader).run()
    assert stub.routes["comments"] == 0 and not report.comments_indexed and not comment_docs(store)
    assert "comments" not in client.requests


@pytest.mark.fault(
    "a comment listing of the wrong shape (a location that is no location, a body that is no string)",
    "a ConfluenceError naming the field; the page's comments indexed before stay",
    area="confluence",
)
def test_a_malformed_comment_listing_names_the_field_and_keeps_the_comments(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    sync(stub, store)
    before = comment_docs(store)

    def hostile(handler, status, payload):
        if "/child/comment" in handler.path and isinstance(payload, dict) and payload.get("results"):
            payload["results"][0]["body"] = {"storage": {"value": 42}}
        return payload

    stub.hostile = hostile
    client = ConfluenceClient(stub.url, sleep=lambda s: None)
    with pytest.raises(ConfluenceError, match=r"results\[0\]\.body\.storage\.value is a number"):
        list_comments(client, "11")
    report = sync(stub, store)
    assert set(report.comments_failed) == {"confluence-11", "confluence-12"}
    assert comment_docs(store) == before and not report.removed


def test_the_command_indexes_comments_only_with_the_flag(stub, tmp_path, capsys, monkeypatch):
    from llama_index.core import Settings

    from llama_index_ragonite.cli import main

    monkeypatch.setattr(Settings, "_embed_model", HashingEmbedding())
    args = ["index", "confluence", "--url", stub.url, "--space", "ENG", "--store", str(tmp_path / "s"), "--quiet"]
    assert main([*args, "--no-attachments"]) == 0 and stub.routes["comments"] == 0
    assert main([*args, "--no-attachments", "--comments", "--no-resolved-comments"]) == 0
    assert "comments: 3 indexed" in capsys.readouterr().out  # the resolved inline one left out
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    assert len(comment_docs(store)) == 3 and f"confluence-11/comment{stub.ids['cap']}" not in comment_docs(store)
