from llama_index_ragonite.parsing.html_text import parse_html
from llama_index_ragonite.parsing.tables import parse_table


def table_of(html: str):
    return parse_table(parse_html(html).find("table"), index=1)


def test_stacked_headers_with_rowspan_and_colspan_are_joined_per_column():
    t = table_of(
        "<table><tr><th rowspan='2'>Build</th><th colspan='2'>Legacy</th><th colspan='2'>UEFI</th></tr>"
        "<tr><th>Install</th><th><p>OTA</p><p>8.0 → 9.0</p></th><th>Install</th><th>OTA</th></tr>"
        "<tr><td>6662</td><td>N/A</td><td>Pass</td><td>Fail</td><td>Pass</td></tr></table>"
    )
    assert t.headers == ["Build", "Legacy / Install", "Legacy / OTA; 8.0 → 9.0", "UEFI / Install", "UEFI / OTA"]
    assert [r.values for r in t.rows] == [["6662", "N/A", "Pass", "Fail", "Pass"]]


def test_rowspan_repeats_the_value_in_each_covered_row_and_colspan_fills_one_column():
    t = table_of(
        "<table><tr><th>Build</th><th>Platform</th><th>A</th><th>B</th></tr>"
        "<tr><td rowspan='2'>6662</td><td>Dell</td><td colspan='2'>Not supported</td></tr>"
        "<tr><td>HP</td><td>Pass</td><td>Fail</td></tr></table>"
    )
    assert [r.values for r in t.rows] == [["6662", "Dell", "Not supported", ""], ["6662", "HP", "Pass", "Fail"]]


def test_first_row_is_the_header_when_there_is_no_th():
    t = table_of("<table><tr><td>Member</td><td>Task</td></tr><tr><td>Alice</td><td>Parsing</td></tr></table>")
    assert t.headers == ["Member", "Task"]
    assert [r.values for r in t.rows] == [["Alice", "Parsing"]]


def test_key_value_table_has_a_header_column_and_no_header_row():
    t = table_of("<table><tr><th>Version</th><td>9.0</td></tr><tr><th>Owner</th><td>Eric</td></tr></table>")
    assert t.header_column and not t.has_headers
    assert [r.values for r in t.rows] == [["Version", "9.0"], ["Owner", "Eric"]]


def test_header_row_and_header_column_together():
    t = table_of("<table><tr><th></th><th>Q1</th><th>Q2</th></tr><tr><th>Sales</th><td>10</td><td>12</td></tr></table>")
    assert t.headers == ["", "Q1", "Q2"] and not t.header_column
    assert t.rows[0].values == ["Sales", "10", "12"]


def test_nested_table_lists_and_breaks_are_flattened_into_the_cell():
    t = table_of(
        "<table><tr><th>Name</th><th>Details</th></tr><tr><td>Bob</td><td>"
        "<ul><li>OTA server</li><li>notes</li></ul>line one<br/>line two"
        "<table><tr><td>inner a</td><td>inner b</td></tr></table></td></tr></table>"
    )
    assert t.rows[0].values == ["Bob", "OTA server; notes; line one; line two; inner a, inner b"]


def test_empty_cells_rows_and_tables():
    t = table_of("<table><tr><th>A</th><th>B</th></tr><tr><td></td><td> </td></tr><tr><td>x</td><td></td></tr></table>")
    assert [r.values for r in t.rows] == [["x", ""]]
    assert t.rows[0].index == 1
    assert table_of("<table><tr><td> </td></tr></table>") is None
    assert table_of("<table></table>") is None


def test_a_single_cell_across_the_row_is_a_section_label():
    t = table_of("<table><tr><th>A</th><th>B</th></tr><tr><td colspan='2'>Section two</td></tr></table>")
    assert t.rows[0].spans_all_columns


def test_a_table_of_only_th_is_data():
    t = table_of("<table><tr><th>a</th><th>b</th></tr><tr><th>c</th><th>d</th></tr></table>")
    assert t.header_column and not t.has_headers
    assert [r.values for r in t.rows] == [["a", "b"], ["c", "d"]]


def test_absurd_spans_are_clamped():
    t = table_of("<table><tr><th>A</th></tr><tr><td colspan='99999' rowspan='99999'>x</td></tr></table>")
    assert len(t.headers) == 1000 and len(t.rows) == 1
