from fakes import parse_trees_left

from llama_index_ragonite.parsing.extraction import extract_evidences, extract_page


def kinds(evidences):
    return [(e.type, e.text) for e in evidences]


def test_headings_at_every_level_split_passages_and_build_the_path():
    html = (
        "<p>Intro</p><h1>A</h1><p>a text</p><h2>B</h2><p>b text</p><h3>C</h3><h4>D</h4><h5>E</h5><h6>F</h6>"
        "<p>deep</p><h2>G</h2><p>g text</p>"
    )
    ev = extract_evidences(html)
    assert kinds(ev) == [
        ("passage", "Intro"),
        ("passage", "a text"),
        ("passage", "b text"),
        ("passage", "deep"),
        ("passage", "g text"),
    ]
    assert [e.heading_path for e in ev] == [(), ("A",), ("A", "B"), ("A", "B", "C", "D", "E", "F"), ("A", "G")]


def test_passages_lists_tables_in_page_order_and_nested_lists_stay_inside():
    html = (
        "<h2>Setup</h2><p>Before the list.</p><ul><li>one<ol><li>nested</li></ol></li><li>two</li></ul>"
        "<p>Between.</p><table><tr><th>K</th><th>V</th></tr><tr><td>a</td><td>1</td></tr></table><p>After.</p>"
    )
    ev = extract_evidences(html)
    assert [e.type for e in ev] == ["passage", "list", "passage", "table", "passage"]
    assert ev[1].text == "- one\n  1. nested\n- two"
    assert ev[3].rows[0].text == "Row 1 in Table 1: K is a, and V is 1"
    assert ev[3].rows[0].column_headers == ("K", "V") and ev[3].rows[0].table_index == 1


def test_page_without_headings_is_passages_and_page_that_is_only_a_table():
    assert kinds(extract_evidences("<p>one</p><p>two</p>")) == [("passage", "one\ntwo")]
    ev = extract_evidences("<table><tr><th>A</th></tr><tr><td>x</td></tr><tr><td>y</td></tr></table>")
    assert [e.type for e in ev] == ["table"] and len(ev[0].rows) == 2
    assert ev[0].heading_path == ()


def test_tables_and_lists_inside_containers_and_panels_are_found():
    html = (
        "<ac:layout><ac:layout-section><ac:layout-cell><h1>Layout</h1><div>text <b>bold</b> more"
        '<ac:structured-macro ac:name="info"><ac:parameter ac:name="title">Panel</ac:parameter><ac:rich-text-body>'
        "<table><tr><th>A</th></tr><tr><td>in panel</td></tr></table></ac:rich-text-body></ac:structured-macro>"
        "</div></ac:layout-cell></ac:layout-section></ac:layout><p>tail</p>"
    )
    ev = extract_evidences(html)
    assert kinds(ev)[:1] == [("passage", "text bold more\nPanel")]
    assert ev[1].type == "table" and ev[1].heading_path == ("Layout",)
    assert kinds(ev)[2] == ("passage", "tail")


def test_nested_tables_are_not_emitted_twice_and_tables_are_numbered_per_page():
    html = (
        "<table><tr><th>Outer</th></tr><tr><td><table><tr><td>inner</td></tr></table></td></tr></table>"
        "<table><tr><th>Second</th></tr><tr><td>x</td></tr></table>"
    )
    ev = extract_evidences(html)
    assert [(e.type, e.table_index) for e in ev] == [("table", 1), ("table", 2)]
    assert ev[0].rows[0].text == "Row 1 in Table 1: Outer is inner"


def test_lists_typed_as_lines_become_lists():
    html = (
        "<p>Plain paragraph.</p><p>- Value: trust<br/>- Value: access control</p>"
        "<p>NAME-SERVICE)<br/>- design input<br/>- Value: port</p>"
        "<div>* first</div><div>* second</div><p>End.</p><p>* lonely bullet</p>"
    )
    ev = extract_evidences(html)
    assert kinds(ev) == [
        ("passage", "Plain paragraph."),
        ("list", "- Value: trust\n- Value: access control"),
        ("list", "NAME-SERVICE)\n- design input\n- Value: port"),
        ("list", "* first\n* second"),
        ("passage", "End.\n* lonely bullet"),
    ]


def test_task_lists_and_adf_decisions_are_lists():
    html = (
        "<h2>Action items</h2><ac:task-list><ac:task><ac:task-id>1</ac:task-id><ac:task-status>complete"
        "</ac:task-status><ac:task-body>Review</ac:task-body></ac:task><ac:task><ac:task-id>2</ac:task-id>"
        "<ac:task-status>incomplete</ac:task-status><ac:task-body>Ship</ac:task-body></ac:task></ac:task-list>"
        '<h2>Decisions</h2><ac:adf-extension><ac:adf-node type="decision-list"><ac:adf-content>Use Zoom</ac:adf-content>'
        "</ac:adf-node><ac:adf-fallback><ul><li>Use Zoom</li></ul></ac:adf-fallback></ac:adf-extension>"
    )
    assert kinds(extract_evidences(html)) == [("list", "[x] Review\n[ ] Ship"), ("list", "- Use Zoom")]


def test_empty_sections_keep_their_heading_as_a_passage():
    ev = extract_evidences("<h2>Date</h2><h2>Attendees</h2><p>Eric</p><h2>Empty at the end</h2>")
    assert kinds(ev) == [("passage", "Date"), ("passage", "Eric"), ("passage", "Empty at the end")]
    assert ev[1].heading_path == ("Attendees",)


def test_title_comes_from_title_tag_else_first_heading():
    assert extract_page("<title>T</title><h1>H</h1><p>x</p>").title == "T"
    assert extract_page("<p>x</p><h2>First</h2>").title == "First"
    assert extract_page("<p>x</p>").title == ""


def test_navigation_macros_and_empty_elements_make_no_evidence():
    html = '<p></p><p> </p><ac:structured-macro ac:name="toc"></ac:structured-macro><ul></ul><table></table>'
    assert extract_evidences(html) == []


def test_a_pages_tree_is_freed_when_extraction_returns_not_at_the_next_garbage_collection():
    """bs4 trees are reference cycles: left alone, a large table's tree outlives its extraction
    until the cyclic collector runs, through the embedding of its rows."""
    rows = "".join(f"<tr><td>case {i}</td><td>passed</td></tr>" for i in range(200))
    page = f"<h1>Matrix</h1><p>All runs.</p><table><tr><th>Case</th><th>Status</th></tr>{rows}</table>"
    with parse_trees_left() as left:
        extracted = extract_page(page)
    assert len(extracted.evidences[-1].rows) == 200 and extracted.title == "Matrix"
    assert left[0] < 10, f"{left[0]} elements of the parsed tree still alive"
