"""Malformed markup a wiki export produces reads as a browser's HTML5 parser reads it.

Each expectation is what the WHATWG tree-construction algorithm builds (what a
browser's DOM inspector shows), checked on the tree and on the evidences.
"""

import pytest
from fakes import parse

from llama_index_ragonite.parsing.html_text import parse_html, render
from llama_index_ragonite.parsing.tables import parse_table

ISSUE_TABLE = "<table><tr><th>K<th>V<tr><td>alpha<td>1<tr><td>beta<td>2<ul><li>item one<li>item two</table>"


def evidences(html: str) -> list[tuple[str, str]]:
    return [(n.metadata["evidence_type"], n.text) for n in parse(html)]


def shape(html: str) -> list[list[str]]:
    """Cell texts per row of the first table, as the tree holds them (row by row, inline text)."""
    table = parse_html(html).find("table")
    rows = [row for row in table.find_all("tr") if row.find_parent("table") is table]
    return [[render(cell, inline=True) for cell in row.find_all(("td", "th"), recursive=False)] for row in rows]


@pytest.mark.fault(
    "table with unclosed <th>/<td>/<tr> and a list in a cell",
    "HTML5 reading: a header row K | V and two data rows; the list stays in the last cell",
)
def test_unclosed_cells_and_rows_give_a_header_and_two_rows_with_the_list_in_the_last_cell():
    soup = parse_html(ISSUE_TABLE)
    table = parse_table(soup.find("table"), index=1)
    assert table.headers == ["K", "V"]
    assert [row.values for row in table.rows] == [["alpha", "1"], ["beta", "2; item one; item two"]]
    last_cell = soup.find_all("tr")[-1].find_all("td")[-1]
    assert soup.find("ul").parent is last_cell
    assert [li.get_text() for li in last_cell.find_all("li")] == ["item one", "item two"]
    assert evidences(ISSUE_TABLE) == [
        (
            "table",
            "Row 1 in Table 1: K is alpha, and V is 1\nRow 2 in Table 1: K is beta, and V is 2; item one; item two",
        ),
        ("table_row", "Row 1 in Table 1: K is alpha, and V is 1"),
        ("table_row", "Row 2 in Table 1: K is beta, and V is 2; item one; item two"),
    ]


def test_unclosed_paragraphs_are_siblings():
    soup = parse_html("<p>one<p>two<div>three</div>")
    assert [tag.name for tag in soup.children] == ["p", "p", "div"]
    assert evidences("<p>one<p>two<p>three") == [("passage", "one\ntwo\nthree")]


def test_unclosed_list_items_are_siblings_and_a_nested_list_stays_in_its_item():
    soup = parse_html("<ul><li>a<li>b<ul><li>b1<li>b2</ul><li>c</ul>")
    top = soup.find("ul")
    assert [li.find(string=True) for li in top.find_all("li", recursive=False)] == ["a", "b", "c"]
    assert evidences("<ul><li>a<li>b<ul><li>b1<li>b2</ul><li>c</ul>") == [("list", "- a\n- b\n  - b1\n  - b2\n- c")]


def test_unclosed_cells_split_the_row():
    assert shape("<table><tr><td>x<td>y<td>z</table>") == [["x", "y", "z"]]


def test_stray_end_tags_are_ignored():
    assert evidences("<div><p>a</p></div></div></span><p>b</p></div>") == [("passage", "a\nb")]
    assert parse_html("</div>text").get_text() == "text"


@pytest.mark.fault("nested tables without <tbody>", "the inner table stays inside its cell; no row is emitted twice")
def test_nested_tables_without_tbody_stay_inside_their_cell():
    html = "<table><tr><td>outer<table><tr><td>inner 1<td>inner 2</table><td>after</table><p>next"
    soup = parse_html(html)
    outer, inner = soup.find_all("table")
    assert inner.parent.name == "td" and inner.find_parent("table") is outer
    assert [[c.name for c in row.children] for row in outer.tbody.children] == [["td", "td"]]
    assert shape(html) == [["outer; inner 1, inner 2", "after"]]
    assert evidences(html)[-1] == ("passage", "next")


def test_tr_directly_in_table_gets_an_implied_tbody():
    soup = parse_html("<table><tr><th>A</th></tr><tr><td>1</td></tr></table>")
    assert [child.name for child in soup.table.children] == ["tbody"]
    assert evidences("<table><tr><th>A</th></tr><tr><td>1</td></tr></table>")[1] == (
        "table_row",
        "Row 1 in Table 1: A is 1",
    )


def test_missing_table_end_at_the_end_of_the_document():
    html = "<p>Intro</p><table><tr><th>Name<th>Role<tr><td>Ann<td>Dev<tr><td>Bo<td>Ops"
    assert shape(html) == [["Name", "Role"], ["Ann", "Dev"], ["Bo", "Ops"]]
    assert [kind for kind, _ in evidences(html)] == ["passage", "table", "table_row", "table_row"]


@pytest.mark.fault(
    "text loose inside <table> (outside any cell)",
    "moved before the table, as HTML5 foster-parenting does",
)
def test_text_loose_in_a_table_is_moved_before_it():
    """Foster parenting: a browser shows stray table text above the table, it is not lost."""
    assert evidences("<table>Note:<tr><td>a</td><td>b</td></tr></table>")[0] == ("passage", "Note:")


def test_tags_in_any_case_read_alike():
    html = "<TABLE><Tr><TH>K<th>V</TH><TR><TD>a<Td>b</TABLE><UL><LI>x<li>y</ul><P>end"
    assert evidences(html) == evidences("<table><tr><th>K<th>V</th><tr><td>a<td>b</table><ul><li>x<li>y</ul><p>end")
    assert evidences(html) == [
        ("table", "Row 1 in Table 1: K is a, and V is b"),
        ("table_row", "Row 1 in Table 1: K is a, and V is b"),
        ("list", "- x\n- y"),
        ("passage", "end"),
    ]
    macro = (
        '<AC:STRUCTURED-MACRO AC:NAME="info"><ac:rich-text-body><p>Note</p></ac:rich-text-body></AC:STRUCTURED-MACRO>'
    )
    assert parse_html(macro).find("ac:structured-macro")["ac:name"] == "info"


@pytest.mark.fault("malformed character entities", "decoded as a browser decodes them")
def test_entity_soup_decodes_as_a_browser_does():
    html = "<p>a &amp b &lt;c&gt; &copy 2020 &notit; &#x41;&#66 &nbsp;x &bogus; &#0; &#x110000;</p>"
    assert parse_html(html).p.get_text() == "a & b <c> © 2020 ¬it; AB \u00a0x &bogus; \ufffd \ufffd"
    # in attribute values a legacy entity followed by "=" or a letter stays as written
    assert parse_html('<a href="?a=1&copy=2&amp;b=3&notx">l</a>').a["href"] == "?a=1&copy=2&b=3&notx"


def test_xhtml_self_closed_storage_elements_close_themselves():
    html = '<p>See <ac:link><ri:page ri:content-title="Home"/></ac:link> since <time datetime="2020-01-02"/> now</p>'
    assert evidences(html) == [("passage", "See Home since 2020-01-02 now")]


@pytest.mark.fault(
    "markup deeper than the HTML5 tree-builder limit",
    "parsed with html.parser (logged), the page is still read",
)
def test_pathologically_deep_markup_falls_back_to_html_parser(monkeypatch, caplog):
    """HTML5 tree construction is quadratic in depth; past the limit the page is still read, nested as written."""
    from llama_index_ragonite.parsing import html_text

    monkeypatch.setattr(html_text, "MAX_HTML5_DEPTH", 50)
    html = "<div>" * 60 + "<table><tr><td>a<td>b</table><p>deep" + "</div>" * 60
    assert evidences(html)[-1] == ("passage", "deep")
    assert "parsed with html.parser" in caplog.text
    monkeypatch.setattr(html_text, "MAX_HTML5_DEPTH", 10_000)
    assert evidences(html)[0] == ("table", "Row 1 in Table 1: a, and b")
