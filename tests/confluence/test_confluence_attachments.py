"""A page's attachments synced from Confluence: under the page's permissions, downloaded only when they change.

A stub Confluence (loopback, real response shapes) holds a PDF, a workbook and a Word file (written here with
fpdf2, openpyxl and python-docx) on an open page and on a page restricted to one user. Every attachment holds
a marker no other file has; the download route's request count says what a sync fetched.
"""

from __future__ import annotations

import io

import pytest
from confluence_stub import ConfluenceStub, StubPage
from fakes import HashingEmbedding

from llama_index_ragonite import EvidenceStore, HybridRetriever
from llama_index_ragonite.errors import MassRemovalError
from llama_index_ragonite.index.access import Principal
from llama_index_ragonite.index.confluence_attachments import AttachmentOptions
from llama_index_ragonite.index.confluence_sync import ConfluenceSync
from llama_index_ragonite.parsing.confluence import ConfluenceClient, ConfluenceStorageReader

pytest.importorskip("fpdf")
pytest.importorskip("docx")

PDF, XLSX = "application/pdf", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
ALICE = Principal.of("acc-alice", ["eng"])
BOB = Principal.of("acc-bob", ["eng"])
QUESTIONS = [
    "What is the travel allowance per day?",
    "How much does the premium plan cost?",
    "Who signs the launch checklist?",
    "What is the launch budget?",
    "travel allowance premium plan launch checklist budget",
]


def pdf(text: str) -> bytes:
    from fpdf import FPDF

    doc = FPDF()
    doc.add_page()
    doc.set_font("Helvetica", size=12)
    doc.multi_cell(0, 8, text)
    return bytes(doc.output())


def xlsx(rows) -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    for row in rows:
        book.active.append(list(row))
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def docx(text: str) -> bytes:
    from docx import Document

    doc = Document()
    doc.add_paragraph(text)
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


@pytest.fixture
def stub():
    with ConfluenceStub(space_readers={"ENG": ((), ("eng",))}) as server:
        server.add_pages(
            [
                StubPage("11", "Travel", "<p>Travel rules are in the attached policy.</p>", "ENG"),
                StubPage("12", "Launch", "<p>The launch plan.</p>", "ENG", readers=(("acc-alice",), ())),
            ]
        )
        server.ids = {
            "policy": server.attach("11", "policy.pdf", pdf("The travel allowance is 42 euros per day. MARK-A1"), PDF),
            "prices": server.attach("11", "prices.xlsx", xlsx([("Plan", "Price"), ("premium plan MARK-A2", 99)]), XLSX),
            "checklist": server.attach(
                "12", "checklist.docx", docx("The launch checklist is signed by Ada. MARK-R1"), DOCX
            ),
            "budget": server.attach("12", "budget.pdf", pdf("The launch budget is 7 million. MARK-R2"), PDF),
        }
        yield server


def sync(stub, store, **options):
    client = ConfluenceClient(stub.url, sleep=lambda s: None)
    reader = ConfluenceStorageReader(client=client, space_key="ENG")
    return ConfluenceSync(store, reader, attachments=AttachmentOptions(**options)).run()


def seen_by(store, principal):
    retriever = HybridRetriever.from_store(store, top_n=10, principal=principal)
    return {h.node.ref_doc_id for q in QUESTIONS for h in retriever.retrieve(q)}


def texts(store, pages) -> str:
    return " ".join(
        store.lexical.get_node(n).get_content() for n, p in store.lexical.node_pages().items() if p in pages
    )


def docs_of(store, page: str, att_id: str):
    return [d for d in store.page_ids() if d.split("#")[0] == f"confluence-{page}/{att_id}"]


@pytest.mark.fault(
    "attachments on a page restricted in Confluence",
    "readable by exactly the page's readers: a user who may not read the page never retrieves its attachments",
    area="access",
)
def test_a_restricted_pages_attachments_never_reach_other_users(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    report = sync(stub, store)
    assert sorted(report.attachments_fetched) == sorted(stub.ids.values()) and not report.attachments_failed
    restricted = {d for d in store.page_ids() if d.startswith("confluence-12/")}
    assert restricted and all(store.access.pages[d] == store.access.pages["confluence-12"] for d in restricted)
    assert not seen_by(store, BOB) & restricted  # 0 leaks
    assert seen_by(store, ALICE) & restricted  # the retrieval reaches them for a reader
    assert {d for d in seen_by(store, BOB) if d.startswith("confluence-11/")}
    page = store.manifest["pages"]
    assert f"confluence-11/{stub.ids['policy']}#page=1" in page
    stub.pages["12"].readers = None  # the restriction lifted: the attachments open with the page, nothing downloaded
    before = stub.routes["download"]
    assert sync(stub, store).attachments_fetched == [] and stub.routes["download"] == before
    assert seen_by(store, BOB) & restricted


def test_only_changed_added_attachments_are_downloaded_and_deleted_ones_removed(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    sync(stub, store)
    assert stub.routes["download"] == 4
    again = sync(stub, store)
    assert again.attachments_fetched == [] and stub.routes["download"] == 4 and again.ingest.nodes_written == 0
    kept_policy, kept_checklist = docs_of(store, "11", stub.ids["policy"]), docs_of(store, "12", stub.ids["checklist"])
    stub.change_attachment(stub.ids["prices"], xlsx([("Plan", "Price"), ("premium plan MARK-A3", 120)]))
    stub.delete_attachment(stub.ids["budget"])
    added = stub.attach("11", "notes.docx", docx("Visa costs are refunded. MARK-A4"), DOCX)
    listings = stub.routes["attachments"]
    report = sync(stub, store)
    assert stub.routes["download"] == 4 + 2  # exactly the changed and the added one
    assert sorted(report.attachments_fetched) == sorted([stub.ids["prices"], added])
    assert stub.routes["attachments"] - listings == 2  # one listing per page in scope
    assert docs_of(store, "12", stub.ids["budget"]) == []  # the deleted one's evidences are gone
    assert docs_of(store, "11", stub.ids["policy"]) == kept_policy  # the others stay
    assert docs_of(store, "12", stub.ids["checklist"]) == kept_checklist
    assert docs_of(store, "11", added)
    prices = texts(store, docs_of(store, "11", stub.ids["prices"]))
    assert "MARK-A3" in prices and "MARK-A2" not in prices
    stub.delete("12")  # the page leaves the scope: its attachments go with it
    sync(stub, store, enabled=True)
    assert not [d for d in store.page_ids() if d.startswith("confluence-12")]


@pytest.mark.fault(
    "an attachment that changed in Confluence cannot be downloaded at the next sync (HTTP 500 after retries)",
    "its previous evidences are kept and it is reported; the sync after fetches it",
    area="confluence",
)
def test_a_failing_download_keeps_the_previous_evidences(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    sync(stub, store)
    policy = docs_of(store, "11", stub.ids["policy"])
    stub.change_attachment(stub.ids["policy"], pdf("The travel allowance is 50 euros per day. MARK-A5"))
    stub.failing_downloads.add(stub.ids["policy"])
    report = sync(stub, store)
    assert list(report.attachments_failed) == [f"confluence-11/{stub.ids['policy']} (policy.pdf)"]
    assert "HTTP 500" in next(iter(report.attachments_failed.values()))
    assert docs_of(store, "11", stub.ids["policy"]) == policy
    assert "MARK-A1" in texts(store, policy) and "MARK-A5" not in texts(store, policy)
    stub.failing_downloads.clear()
    assert sync(stub, store).attachments_fetched == [stub.ids["policy"]]
    assert "MARK-A5" in texts(store, docs_of(store, "11", stub.ids["policy"]))


def test_options_skip_a_media_type_and_a_size_and_switch_attachments_off(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    report = sync(stub, store, media_types={PDF: ".pdf"}, max_bytes=10**6)
    assert len(report.attachments_skipped) == 2 and "not indexed" in next(iter(report.attachments_skipped.values()))
    report = sync(stub, store, max_bytes=100)
    assert len(report.attachments_skipped) == 4 and not [d for d in store.page_ids() if "/att" in d]
    before = stub.routes["attachments"]
    sync(stub, store, enabled=False)
    assert stub.routes["attachments"] == before


@pytest.mark.fault(
    "attachments switched off after a sync that indexed them",
    "their evidences are removed (kept, their access entries would no longer follow a page restricted since)",
    area="access",
)
def test_switching_attachments_off_removes_those_synced_before(stub, tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    sync(stub, store)
    assert [d for d in store.page_ids() if "/att" in d]
    stub.pages["11"].readers = (("acc-alice",), ())  # the open page restricted meanwhile
    with pytest.raises(MassRemovalError):  # most of this small store: the usual guard, nothing changed
        sync(stub, store, enabled=False)
    client = ConfluenceClient(stub.url, sleep=lambda s: None)
    reader = ConfluenceStorageReader(client=client, space_key="ENG")
    ConfluenceSync(store, reader, attachments=AttachmentOptions(enabled=False)).run(allow_removal=True)
    assert not [d for d in store.page_ids() if "/att" in d]
    assert not {d for d in seen_by(store, BOB) if d.startswith("confluence-11")}
