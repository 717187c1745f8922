"""ConfluenceStorageReader (stub server), space HTML exports, and the breadcrumb context field."""

from __future__ import annotations

import json
import zipfile

import pytest
from confluence_stub import ConfluenceStub, StubPage, confquestions_pages, sample_wiki_pages
from fakes import REPO, parse, parse_trees_left

from llama_index_ragonite import EvidenceContextualizer, HTMLEvidenceParser, load_pages
from llama_index_ragonite.errors import PageLoadError
from llama_index_ragonite.parsing.confluence import ConfluenceClient, ConfluenceStorageReader, load_export

STORAGE_PAGE = (
    '<p>See <ac:link><ri:page ri:content-title="OTA update server" /></ac:link> first.</p>'
    '<ac:structured-macro ac:name="info" ac:schema-version="1"><ac:rich-text-body><p>Builds run nightly.</p>'
    "</ac:rich-text-body></ac:structured-macro>"
    '<h2>Commands</h2><ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash</ac:parameter>'
    "<ac:plain-text-body><![CDATA[make release && ./publish.sh]]></ac:plain-text-body></ac:structured-macro>"
    "<table><tbody><tr><th>Board</th><th>Status</th></tr><tr><td>T14</td><td>"
    '<ac:structured-macro ac:name="status"><ac:parameter ac:name="title">PASS</ac:parameter></ac:structured-macro>'
    "</td></tr></tbody></table>"
)


@pytest.fixture
def stub():
    with ConfluenceStub(max_limit=3) as server:
        server.add_pages(sample_wiki_pages(REPO / "examples" / "sample_wiki"))
        server.add_pages([StubPage("2001", "Build notes", STORAGE_PAGE, "AUR", parent="1003", labels=("build", "ci"))])
        yield server


def reader(stub, **fields):
    return ConfluenceStorageReader(client=ConfluenceClient(stub.url), **fields)


def test_a_space_loads_as_storage_format_documents_with_metadata(stub):
    docs = {d.id_: d for d in reader(stub, space_key="AUR").load_data()}
    assert sorted(docs) == [f"confluence-{i}" for i in (1001, 1002, 1003, 1004, 1005, 2001)]
    build = docs["confluence-2001"]
    assert build.text == STORAGE_PAGE  # storage format, untouched
    meta = build.metadata
    assert meta["title"] == "Build notes" and meta["space"] == "AUR" and meta["page_id"] == "2001"
    assert meta["version"] == 1 and meta["last_modified"].startswith("2024-11-15")
    assert meta["labels"] == "build, ci"
    assert meta["breadcrumb"] == "Aurora home > OTA update server" and meta["ancestor_ids"] == "1001,1003"
    assert meta["url"] == f"{stub.url}/spaces/AUR/pages/2001/Build+notes"
    assert all(isinstance(v, (str, int)) for v in meta.values())  # Chroma stores flat values only
    assert "breadcrumb" not in docs["confluence-1001"].metadata  # the home page has no ancestors


def test_storage_format_macros_parse_into_evidences(stub):
    [doc] = reader(stub, page_ids=["2001"]).load_data()
    nodes = HTMLEvidenceParser().get_nodes_from_documents([doc])
    texts = " | ".join(n.get_content() for n in nodes)
    assert "See OTA update server first." in texts and "Builds run nightly." in texts
    assert "make release && ./publish.sh" in texts
    rows = [n for n in nodes if n.metadata["evidence_type"] == "table_row"]
    assert rows and "PASS" in rows[0].get_content() and "T14" in rows[0].get_content()
    assert all(n.ref_doc_id == "confluence-2001" and n.metadata["breadcrumb"] for n in nodes)


def test_page_ids_with_children_cql_and_lazy_loading(stub):
    titles = [d.metadata["title"] for d in reader(stub, page_ids=["1003"], include_children=True).load_data()]
    assert titles == ["OTA update server", "Build notes"]
    assert [d.id_ for d in reader(stub, page_ids=[1003]).load_data()] == ["confluence-1003"]
    found = reader(stub, cql='space = "AUR" and label = "onboarding"').lazy_load_data()
    assert not isinstance(found, list) and [d.id_ for d in found] == ["confluence-1002"]
    both = reader(stub, space_key="AUR").load_data(space_key=None, page_ids=["1002"])  # arguments override
    assert len(both) == 6  # the field's space stays, the page is in it: no duplicate
    with pytest.raises(ValueError, match="Nothing to load"):
        reader(stub).load_data()


def test_listing_fetches_no_bodies_and_fetch_gets_them_in_batches(stub):
    r = reader(stub, space_key="AUR")
    listed = r.list_pages()
    assert listed["confluence-2001"].version == 1 and listed["confluence-2001"].ancestor_ids == ("1001", "1003")
    assert stub.requests == {"list": 2} and all("body" not in path for _, path, _ in stub.log)
    docs = r.fetch([p.page_id for p in listed.values()])
    assert {d.id_ for d in docs} == set(listed) and stub.requests["body"] == 2  # 6 pages, 3 per response
    assert r.class_name() == "ConfluenceStorageReader" and r.scope()["space"] == "AUR"


def test_confquestions_pages_keep_their_ids_and_parse(confquestions_documents):
    with ConfluenceStub() as stub:
        stub.add_pages(confquestions_pages(confquestions_documents, 3))
        docs = reader(stub, space_key="OXT").load_data()
    record = json.loads(sorted(confquestions_documents.glob("*.json"))[0].read_text())
    assert any(d.text == record["content"] and f"/pages/{d.metadata['page_id']}/" in record["url"] for d in docs)
    assert all(HTMLEvidenceParser().get_nodes_from_documents([d]) for d in docs)


# -- space HTML export -------------------------------------------------------------------------------
EXPORT_PAGE = """<!DOCTYPE html><html><head><title>Aurora : {title}</title></head><body>
<div id="page"><div id="main"><div id="main-header"><div id="breadcrumb-section"><ol id="breadcrumbs">
<li class="first"><span><a href="index.html">Aurora</a></span></li>{crumbs}</ol></div>
<h1 id="title-heading" class="pagetitle"><span id="title-text"> Aurora : {title} </span></h1></div>
<div id="content" class="view"><div class="page-metadata">Created by Alice, last modified by Bob on Mar 03, 2024</div>
<div id="main-content" class="wiki-content group">{body}</div></div></div></div></body></html>"""


def make_export(path):
    crumb = '<li><span><a href="Aurora-home_1001.html">Aurora home</a></span></li>'
    ota = (REPO / "examples" / "sample_wiki" / "ota-server.html").read_text()
    body = ota.split("<body>")[1].split("</body>")[0]
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("AUR/index.html", "<html><body><h2>Available Pages:</h2></body></html>")
        archive.writestr(
            "AUR/Aurora-home_1001.html", EXPORT_PAGE.format(title="Aurora home", crumbs="", body="<p>Hi</p>")
        )
        archive.writestr(
            "AUR/OTA-update-server_1003.html", EXPORT_PAGE.format(title="OTA update server", crumbs=crumb, body=body)
        )
        archive.writestr("AUR/attachments/1003/diagram.html", "<html>not a page</html>")
        archive.writestr("AUR/styles/site.css", "body {}")
    return path


def test_a_space_export_gives_the_same_document_shape(tmp_path, stub):
    docs = load_export(make_export(tmp_path / "AUR.zip"))
    assert [d.id_ for d in docs] == ["confluence-1001", "confluence-1003"]
    ota = docs[1]
    assert ota.metadata["title"] == "OTA update server" and ota.metadata["space"] == "AUR"
    assert ota.metadata["breadcrumb"] == "Aurora home" and ota.metadata["ancestor_ids"] == "1001"
    assert ota.metadata["last_modified"] == "Mar 03, 2024" and ota.metadata["url"].endswith(
        "#AUR/OTA-update-server_1003.html"
    )
    api = {d.id_: d for d in reader(stub, space_key="AUR").load_data()}
    assert set(api) >= {d.id_ for d in docs}  # the API and the export name a page alike
    nodes = HTMLEvidenceParser().get_nodes_from_documents([ota])
    assert any("Bob owns the service" in n.get_content() for n in nodes)
    assert [d.id_ for d in load_pages(tmp_path / "AUR.zip")] == ["confluence-1001", "confluence-1003"]
    live = load_export(tmp_path / "AUR.zip", base_url="https://wiki.example/wiki")
    assert live[1].metadata["url"] == "https://wiki.example/wiki/pages/viewpage.action?pageId=1003"


def test_an_exports_page_trees_are_freed_as_each_page_is_read(tmp_path, stub):
    archive = make_export(tmp_path / "AUR.zip")
    with parse_trees_left() as left:
        docs = load_export(archive)
    assert len(docs) == 2 and left[0] < 10, f"{left[0]} elements of the pages' trees still alive"


def test_a_zip_that_is_not_an_export_is_a_clear_error(tmp_path):
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    with pytest.raises(PageLoadError, match="not a readable zip"):
        load_pages(tmp_path / "bad.zip")
    with zipfile.ZipFile(tmp_path / "empty.zip", "w") as archive:
        archive.writestr("notes.txt", "hello")
    with pytest.raises(PageLoadError, match="no pages"):
        load_pages(tmp_path / "empty.zip")


# -- breadcrumb as context ------------------------------------------------------------------------------
def test_the_breadcrumb_is_an_optional_context_field():
    nodes = parse("<title>Build notes</title><p>Builds run nightly.</p>")
    for node in nodes:
        node.metadata["breadcrumb"] = "Aurora home > OTA update server"
    off = EvidenceContextualizer()
    assert "Aurora home" not in off(nodes)[0].metadata["context"]
    assert "breadcrumb" not in off.fingerprint_settings()  # stored fingerprints stay as they were
    on = EvidenceContextualizer(breadcrumb=True)
    context = on(nodes)[0].metadata["context"]
    assert (
        context.splitlines()[0].startswith("Page: ")
        and context.splitlines()[1] == "In: Aurora home > OTA update server"
    )
    assert on.fingerprint_settings()["breadcrumb"] is True and on.setting == "ALL+BREADCRUMB"
    assert EvidenceContextualizer.from_recorded(on.to_dict()).breadcrumb


def test_an_exports_attachments_are_read_under_their_page(tmp_path):
    """Issue 61: an export's attachments (stored under their attachment id) are pages of evidences of their
    container page, named as the page lists them, a PDF one document per page."""
    from fpdf import FPDF

    pdf = FPDF()
    for text in ("Reisekosten im Ueberblick.", "Die Hotelgrenze in Kopenhagen betraegt 185 Euro."):
        pdf.add_page()
        pdf.set_font("helvetica", size=11)
        pdf.multi_cell(0, 6, text)
    make_export(tmp_path / "AUR.zip")
    link = '<h2>Attachments:</h2><a href="attachments/1005/98765.pdf">Reiserichtlinie 2026.pdf</a>'
    travel = EXPORT_PAGE.format(title="Travel", crumbs="", body=f"<p>Trips.</p>{link}")
    with zipfile.ZipFile(tmp_path / "AUR.zip", "a") as archive:
        archive.writestr("AUR/Travel_1005.html", travel)
        archive.writestr("AUR/attachments/1005/98765.pdf", bytes(pdf.output()))
        archive.writestr("AUR/attachments/1005/notes.csv", "Stadt,Hotelgrenze\nKopenhagen,185\n")
        archive.writestr("AUR/attachments/4242/orphan.csv", "a,b\n1,2\n")  # a page the export does not hold
    docs = {d.id_: d for d in load_export(tmp_path / "AUR.zip")}
    doc = docs["confluence-1005/att98765#page=2"]  # the id the REST sync gives the same attachment
    assert doc.metadata["title"] == "Reiserichtlinie 2026.pdf (page 2)"
    assert "185 Euro" in doc.text and doc.metadata["location"] == 2 and doc.metadata["container_page_id"] == "1005"
    assert doc.metadata["breadcrumb"] == "Travel" and doc.metadata["space"] == "AUR"
    assert "confluence-1005/attnotes" in docs and not any("orphan" in i for i in docs)
    assert (
        sorted(load_export(tmp_path / "AUR.zip", attachments=False), key=lambda d: d.id_)[-1].id_ == "confluence-1005"
    )
    assert len(load_export(tmp_path / "AUR.zip", attachments=False)) == 3
