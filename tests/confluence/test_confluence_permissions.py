"""Who may read a synced page is Confluence's answer: space viewers AND the page's and its ancestors' restrictions.

A stub Confluence (loopback, real response shapes) with three spaces, pages restricted to a user
and to a group, a restriction inherited from a parent, and three users in different groups.
Every page holds a marker string no other page has; no answer, source, completed question or
follow-up shown to a user holds the marker, title, id or URL of a page they may not read.
"""

from __future__ import annotations

import pytest
from confluence_stub import ConfluenceStub, StubPage
from fakes import HashingEmbedding

from llama_index_ragonite import EvidenceStore, HybridRetriever, RagoniteChatEngine
from llama_index_ragonite.index.access import Principal
from llama_index_ragonite.index.confluence_sync import ConfluenceSync
from llama_index_ragonite.parsing.confluence import ConfluenceClient, ConfluenceStorageReader
from llama_index_ragonite.parsing.confluence.permissions import Readers

PAGES = [  # id, space, parent, title, text, read restriction (user ids, groups)
    ("11", "ENG", None, "Build farm", "The build farm has 40 runners in rack 7. MARK-E1", None),
    ("12", "ENG", None, "Launch codes", "The launch window opens on a Tuesday. MARK-E2", (("acc-alice",), ())),
    ("13", "ENG", "12", "Launch rehearsal", "The rehearsal uses the blue console. MARK-E3", None),  # inherits 12's
    ("21", "HR", None, "Holiday calendar", "Holidays are booked in the calendar tool. MARK-H1", None),
    ("22", "HR", None, "Salary bands", "Salary bands are reviewed every March. MARK-H2", ((), ("hr-leads",))),
    ("31", "PUB", None, "Canteen", "The canteen serves soup on Fridays. MARK-P1", None),
]
SPACES = {"ENG": ((), ("eng",)), "HR": ((), ("hr",)), "PUB": ((), ("confluence-users",))}
ALICE = Principal.of("acc-alice", ["eng", "confluence-users"])
BOB = Principal.of("acc-bob", ["hr", "confluence-users"])
CAROL = Principal.of("acc-carol", ["hr", "hr-leads", "eng", "confluence-users"])
READS = {
    ALICE: {"11", "12", "13", "31"},
    BOB: {"21", "31"},
    CAROL: {"11", "21", "22", "31"},  # not 12 (restricted to alice) nor 13 (inherits it)
}
QUESTIONS = [
    "How many runners does the build farm have?",
    "When does the launch window open?",
    "Which console does the launch rehearsal use?",
    "How are holidays booked?",
    "When are salary bands reviewed?",
    "What does the canteen serve on Fridays?",
    "Tell me about the launch codes",
    "What is in rack 7?",
    "Which pages mention March?",
    "What happens on Tuesday?",
]


def stub_pages():
    return [
        StubPage(id=i, title=title, body=f"<h1>{title}</h1><p>{text}</p>", space=space, parent=parent, readers=readers)
        for i, space, parent, title, text, readers in PAGES
    ]


@pytest.fixture
def stub():
    with ConfluenceStub(space_readers=dict(SPACES)) as server:
        server.add_pages(stub_pages())
        yield server


def sync(stub, store):
    client = ConfluenceClient(stub.url, sleep=lambda s: None)
    return ConfluenceSync(store, ConfluenceStorageReader(client=client, cql="type = page"))


def seen_by(store, principal):
    retriever = HybridRetriever.from_store(store, top_n=10, principal=principal)
    return {h.node.ref_doc_id.removeprefix("confluence-") for q in QUESTIONS for h in retriever.retrieve(q)}


def leaked(text: str, readable: set) -> set:
    """Markers, titles, ids or URLs of pages outside ``readable`` that ``text`` holds."""
    found = set()
    for page_id, _, _, title, body, _ in PAGES:
        if page_id not in readable and any(s in text for s in (body.split()[-1], title, f"confluence-{page_id}")):
            found.add(page_id)
    return found


@pytest.mark.fault(
    "pages restricted in Confluence (by user, by group, inherited from a parent) in spaces of different viewers",
    "each user retrieves and is shown only what Confluence would show them: no marker, title or id of another page",
    area="access",
)
def test_each_user_sees_only_what_confluence_would_show(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    report = sync(stub, store).run()
    assert report.listed == 6 and not report.unreadable
    for principal, readable in READS.items():
        assert seen_by(store, principal) == readable, principal
        chat = RagoniteChatEngine.from_store(store.path, embed_model=HashingEmbedding(), principal=principal)
        for question in QUESTIONS:
            response = chat.chat(question)
            shown = " ".join([response.response, response.completed_question, *response.turn.follow_ups])
            shown += " ".join(f"{n.node.get_content()} {n.node.metadata}" for n in response.source_nodes)
            assert not leaked(shown, readable), (principal, question)


@pytest.mark.fault(
    "a restriction added to a page, a group removed from a space's viewers, a page moved into a restricted space",
    "hidden from the users it no longer admits at the next sync, with nothing fetched or re-embedded for a restriction",
    area="access",
)
def test_a_restriction_change_propagates_at_the_next_sync_without_refetching(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    sync(stub, store).run()
    assert "31" in seen_by(store, BOB)
    stub.pages["31"].readers = ((), ("eng",))  # the canteen page restricted to eng: no new version
    restricted = sync(stub, store).run()
    assert restricted.fetched == [] and restricted.ingest.nodes_written == 0  # nothing fetched or re-embedded
    assert "31" not in seen_by(store, BOB) and "31" in seen_by(store, ALICE)
    stub.pages["12"].readers = None  # the launch page opened to its space: its child opens too
    sync(stub, store).run()
    assert {"12", "13"} <= seen_by(store, CAROL)
    stub.space_readers["HR"] = ((), ("hr-leads",))  # the group hr removed from the space's viewers
    sync(stub, store).run()
    assert "21" not in seen_by(store, BOB) and "21" in seen_by(store, CAROL)
    stub.move("11", space="HR")  # the build farm page moved into HR: alice (eng) loses it
    sync(stub, store).run()
    assert "11" not in seen_by(store, ALICE) and "11" in seen_by(store, CAROL)


@pytest.mark.fault(
    "the sync account may not read a space's permissions (not a space administrator)",
    "the space's pages are readable by nobody, named in the sync report with the fix; never readable by everyone",
    area="access",
)
def test_unreadable_space_permissions_make_pages_readable_by_nobody(stub, tmp_path):
    stub.space_admin = False
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    report = sync(stub, store).run()
    assert len(report.unreadable) == 6 and "administrators" in next(iter(report.unreadable.values()))
    assert all(not seen_by(store, principal) for principal in READS)
    client = ConfluenceClient(stub.url, sleep=lambda s: None)
    named = {key: Readers(groups=groups) for key, (_, groups) in SPACES.items()}  # the operator names the viewers
    ConfluenceSync(store, ConfluenceStorageReader(client=client, cql="type = page"), space_readers=named).run()
    assert seen_by(store, BOB) == READS[BOB]


def test_a_restricted_ancestor_outside_the_scope_still_restricts(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    client = ConfluenceClient(stub.url, sleep=lambda s: None)
    ConfluenceSync(store, ConfluenceStorageReader(client=client, page_ids=["13"])).run()  # 12 is not synced
    assert seen_by(store, ALICE) == {"13"} and seen_by(store, CAROL) == set()


@pytest.mark.fault(
    "a listing that does not say who may read its pages (a proxy dropped the restrictions expansion)",
    "those pages are readable by nobody until a sync can read their restrictions",
    area="access",
)
def test_a_listing_without_restrictions_hides_its_pages(stub, tmp_path):
    def strip(handler, status, payload):
        for result in payload.get("results", []) if isinstance(payload, dict) else []:
            result.pop("restrictions", None)
        return payload

    stub.hostile = strip
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    report = sync(stub, store).run()
    assert len(report.unreadable) == 6 and all(not seen_by(store, p) for p in READS)


def test_the_command_line_searches_as_a_user(stub, tmp_path, capsys, monkeypatch):
    from llama_index.core import Settings

    from llama_index_ragonite.cli import main

    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    sync(stub, store).run()
    monkeypatch.setattr(Settings, "_embed_model", HashingEmbedding())  # the store's model, as a user sets it
    for user, groups, principal in (("acc-bob", "hr,confluence-users", BOB), ("acc-alice", "eng", ALICE)):
        assert main(["search", "--store", str(store.path), "--as", user, "--groups", groups, "launch window"]) == 0
        out = capsys.readouterr().out
        assert not leaked(out, READS[principal])
    assert "Launch codes" in out  # alice's page, found for alice
    assert main(["search", "--store", str(store.path), "--groups", "hr", "x"]) == 2  # groups without a user


@pytest.mark.fault(
    "`ragonite serve` over a store whose pages carry Confluence permissions, with no way to tell its users apart",
    "refused at start, naming the store, --users, --trust-proxy and --every-user-reads-everything",
    area="access",
)
def test_serve_refuses_a_store_with_permissions_until_told_everyone_may_read_it(stub, tmp_path):
    from llama_index_ragonite.serve.config import ServeConfig, ServeConfigError

    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    sync(stub, store).run()
    with pytest.raises(ServeConfigError, match="not everyone may read.*--users.*--trust-proxy.*--every-user-reads"):
        ServeConfig.from_args([f"wiki={store.path}"])
    with pytest.raises(ServeConfigError, match="not everyone may read"):  # tokens say who owns, not who reads
        ServeConfig.from_args([f"wiki={store.path}"], tokens=["a-token-of-16-chars"])
    assert ServeConfig.from_args([f"wiki={store.path}"], every_user_reads_everything=True).domains
