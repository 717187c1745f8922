import json

import pytest
from fakes import of_type, parse
from llama_index.core.schema import Document, MetadataMode, NodeRelationship

from llama_index_ragonite import HTMLEvidenceParser, load_pages
from llama_index_ragonite.parsing.loaders import PageLoadError

PAGE = (
    "<h1>Team</h1><p>Who does what.</p>"
    "<table><tr><th>Member</th><th>Task</th></tr><tr><td>Alice</td><td>Parsing</td></tr>"
    "<tr><td>Bob</td><td>Ranking</td></tr></table>"
    "<h2>Notes</h2><ul><li>weekly call</li></ul>"
)


def test_nodes_metadata_and_page_order():
    nodes = parse(PAGE)
    assert [n.metadata["evidence_type"] for n in nodes] == ["passage", "table", "table_row", "table_row", "list"]
    assert [n.metadata["position"] for n in nodes] == [1, 2, 3, 4, 5]
    row = nodes[3]
    assert row.text == "Row 2 in Table 1: Member is Bob, and Task is Ranking"
    assert row.metadata["title"] == "Test page" and row.metadata["url"] == "https://wiki.example/p/1"
    assert row.metadata["heading_path"] == "Team" and row.metadata["heading"] == "Team"
    assert (row.metadata["table_index"], row.metadata["row_index"]) == (1, 2)
    assert row.metadata["column_headers"] == "Member | Task"
    assert nodes[4].metadata["heading_path"] == "Team > Notes"
    # metadata values are flat (vector stores such as Chroma reject lists)
    assert all(isinstance(v, (str, int, float)) for n in nodes for v in n.metadata.values())


def test_relationships_source_prev_next_parent_child():
    p, table, r1, r2, lst = parse(PAGE)
    rel = NodeRelationship
    assert all(n.relationships[rel.SOURCE].node_id == "page" for n in (p, table, r1, r2, lst))
    assert p.relationships[rel.NEXT].node_id == table.node_id
    assert table.relationships[rel.PREVIOUS].node_id == p.node_id
    assert table.relationships[rel.NEXT].node_id == lst.node_id
    assert lst.relationships[rel.PREVIOUS].node_id == table.node_id
    # rows chain among themselves and hand over to the table's neighbours
    assert r1.relationships[rel.PREVIOUS].node_id == p.node_id
    assert r1.relationships[rel.NEXT].node_id == r2.node_id
    assert r2.relationships[rel.NEXT].node_id == lst.node_id
    assert [c.node_id for c in table.relationships[rel.CHILD]] == [r1.node_id, r2.node_id]
    assert r1.relationships[rel.PARENT].node_id == table.node_id
    assert r1.relationships[rel.PARENT].hash == table.hash
    assert rel.PARENT not in p.relationships


def test_table_granularity_options():
    rows_only = parse(PAGE, table_granularity="rows")
    assert [n.metadata["evidence_type"] for n in rows_only] == ["passage", "table_row", "table_row", "list"]
    assert rows_only[1].relationships[NodeRelationship.PREVIOUS].node_id == rows_only[0].node_id
    tables_only = parse(PAGE, table_granularity="table")
    assert [n.metadata["evidence_type"] for n in tables_only] == ["passage", "table", "list"]
    assert NodeRelationship.CHILD not in tables_only[1].relationships
    with pytest.raises(ValueError):
        HTMLEvidenceParser(table_granularity="cells")
    with pytest.raises(ValueError, match="Unknown table linearizer"):
        HTMLEvidenceParser(linearizer="csv")


def test_linearizer_option_changes_table_text():
    nodes = parse(PAGE, linearizer="markdown")
    assert of_type(nodes, "table")[0].text.startswith("| Member | Task |\n| --- | --- |")


def test_ids_and_text_are_deterministic_and_depend_on_page_and_granularity():
    a, b = parse(PAGE), parse(PAGE)
    assert [n.node_id for n in a] == [n.node_id for n in b]
    assert [n.hash for n in a] == [n.hash for n in b]
    assert len({n.node_id for n in a}) == len(a)
    assert a[0].node_id != parse(PAGE, doc_id="other")[0].node_id
    assert a[0].node_id != parse(PAGE, table_granularity="rows")[0].node_id


def test_structural_metadata_is_hidden_from_embeddings_and_prompts():
    row = of_type(parse(PAGE), "table_row")[0]
    embed = row.get_content(MetadataMode.EMBED)
    assert "row_index" not in embed and "https://wiki.example" not in embed
    assert "Test page" in embed and row.get_content() == row.text


def test_include_metadata_false_keeps_only_evidence_metadata():
    doc = Document(id_="d", text=PAGE, metadata={"title": "T", "owner": "ops"})
    nodes = HTMLEvidenceParser(include_metadata=False).get_nodes_from_documents([doc])
    assert "owner" not in nodes[0].metadata and nodes[0].metadata["title"] == "Team"  # first heading


def test_include_prev_next_rel_false():
    nodes = HTMLEvidenceParser(include_prev_next_rel=False).get_nodes_from_documents([Document(id_="d", text=PAGE)])
    assert not any(NodeRelationship.NEXT in n.relationships for n in nodes)
    assert NodeRelationship.PARENT in nodes[2].relationships


# ---- bad input ---------------------------------------------------------------


@pytest.mark.fault("page is empty, blank, an empty <p> or only a comment", "no evidences, no error")
@pytest.mark.parametrize("text", ["", "   \n ", "<p></p>", "<!-- only a comment -->", "<html><body></body></html>"])
def test_empty_pages_give_no_nodes(text):
    assert parse(text) == []


def test_plain_text_is_one_passage():
    nodes = parse("Just some words, no tags at all.\nSecond line.")
    assert [(n.metadata["evidence_type"], n.text) for n in nodes] == [
        ("passage", "Just some words, no tags at all. Second line.")
    ]


@pytest.mark.fault(
    "unclosed <p>, <li>, <td> and stray end tags",
    "read as a browser reads them; stray end tags ignored",
)
def test_unclosed_and_stray_tags():
    nodes = parse("<h1>Title<p>para one<p>para two<ul><li>item<li>item two</ul><table><tr><td>x<td>y")
    assert [(n.metadata["evidence_type"], n.text) for n in nodes] == [
        ("passage", "para one\npara two"),
        ("list", "- item\n- item two"),
        ("table", "Row 1 in Table 1: x, and y"),  # two cells, as a browser reads the unclosed <td>s
        ("table_row", "Row 1 in Table 1: x, and y"),
    ]
    assert nodes[0].metadata["heading_path"] == "Title"
    assert parse("</div></p>text</table>")[0].text == "text"


@pytest.mark.fault(
    "markup nested 2000 levels deep",
    "parsed without RecursionError; the evidences and heading path are kept",
)
def test_markup_nested_2000_deep():
    html = "<div>" * 2000 + "<h2>Deep</h2><p>bottom</p><ul><li>item</li></ul>" + "</div>" * 2000
    nodes = parse(html)
    assert [(n.metadata["evidence_type"], n.text) for n in nodes] == [("passage", "bottom"), ("list", "- item")]
    assert nodes[0].metadata["heading_path"] == "Deep"


def test_lists_nested_2000_deep():
    html = "<ul><li>x" * 2000 + "</li></ul>" * 2000
    nodes = parse(html)
    assert len(nodes) == 1 and nodes[0].text.count("x") == 2000


@pytest.mark.fault("table with 20,000 rows", "parsed in bounded time: one table evidence and 20,000 row evidences")
def test_table_with_20000_rows():
    rows = "".join(f"<tr><td>r{i}</td><td>v{i}</td></tr>" for i in range(20000))
    nodes = parse(f"<table><tr><th>K</th><th>V</th></tr>{rows}</table>")
    assert len(nodes) == 20001
    assert nodes[-1].text == "Row 20000 in Table 1: K is r19999, and V is v19999"
    assert len(nodes[0].relationships[NodeRelationship.CHILD]) == 20000


@pytest.mark.fault(
    "page file is not valid UTF-8 and declares no charset",
    "its encoding is detected (charset-normalizer) and logged with the file's name; no U+FFFD where one fits",
)
def test_an_undeclared_non_utf8_file_is_read_in_its_detected_encoding(tmp_path, caplog):
    page = tmp_path / "bad.html"
    page.write_bytes("<h1>Café</h1><p>Die Führungskraft prüft die Abrechnung und gibt sie frei.</p>".encode("cp1252"))
    with caplog.at_level("INFO"):
        docs = load_pages(page)
    nodes = HTMLEvidenceParser().get_nodes_from_documents(docs)
    assert nodes[0].text == "Die Führungskraft prüft die Abrechnung und gibt sie frei."
    assert nodes[0].metadata["heading"] == "Café"
    assert "bad.html is not UTF-8 and declares no charset; read as" in caplog.text


@pytest.mark.fault(
    "page file declares a charset (<meta charset>, a BOM) other than UTF-8",
    "read in the declared charset: 'Führungskraft', never 'F\ufffdhrungskraft'",
)
def test_a_declared_charset_is_honoured(tmp_path):
    html = (
        '<html><head><meta charset="windows-1252"><title>Rollen</title></head><body><p>Führungskraft: Jürgen Groß</p>'
    )
    (tmp_path / "meta.html").write_bytes(html.encode("cp1252"))
    equiv = html.replace(
        '<meta charset="windows-1252">', '<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'
    )
    (tmp_path / "equiv.html").write_bytes(equiv.encode("latin-1"))
    (tmp_path / "bom.html").write_bytes(html.replace("windows-1252", "utf-8").encode("utf-16"))
    for name in ("meta.html", "equiv.html", "bom.html"):
        (doc,) = load_pages(tmp_path / name)
        assert "Führungskraft: Jürgen Groß" in doc.text and "\ufffd" not in doc.text, name


@pytest.mark.fault(
    "page file or source folder does not exist",
    "PageLoadError naming the path ('no such file or folder')",
)
@pytest.mark.fault("JSON page is not valid JSON", "PageLoadError naming the file ('not valid JSON')")
@pytest.mark.fault("JSON page has no string 'content' field", "PageLoadError naming the file and the missing field")
def test_loader_errors_name_the_file(tmp_path):
    with pytest.raises(PageLoadError, match="no such file"):
        load_pages(tmp_path / "missing")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(PageLoadError, match="bad.json: not valid JSON"):
        load_pages(bad)
    bad.write_text(json.dumps({"title": "no content"}))
    with pytest.raises(PageLoadError, match="string 'content' field"):
        load_pages(bad)


def test_loader_reads_json_pages_and_html_folders_with_stable_ids(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.html").write_text("<title>A</title><p>x</p>")
    (tmp_path / "p.json").write_text(json.dumps({"id": "conf-1", "title": "P", "url": "u", "content": "<p>y</p>"}))
    (tmp_path / "notes.css").write_text("ignored {}")  # not a page nor an attachment format
    docs = load_pages(tmp_path)
    assert [d.id_ for d in docs] == ["conf-1", "sub/a.html"]
    by_id = {d.id_: d for d in docs}
    assert by_id["conf-1"].metadata == {"title": "P", "url": "u"}
    nodes = HTMLEvidenceParser().get_nodes_from_documents(docs)
    assert {n.metadata["title"] for n in nodes} == {"A", "P"}
