import pytest

from llama_index_ragonite.parsing.linearize import LINEARIZERS, get_linearizer, verbalize_row, verbalize_table
from llama_index_ragonite.parsing.tables import Table, TableRow


@pytest.fixture
def team():
    return Table(
        1,
        ["Member", "Task", "Status"],
        [TableRow(1, ["Alice", "Similarity function", ""]), TableRow(2, ["Bob", "Parser | HTML", "done"])],
    )


def test_verbalized_row_matches_the_paper(team):
    assert verbalize_row(team, team.rows[0]) == "Row 1 in Table 1: Member is Alice, and Task is Similarity function"
    assert (
        verbalize_table(team).split("\n")[1]
        == "Row 2 in Table 1: Member is Bob, and Task is Parser | HTML, and Status is done"
    )


def test_grid_linearizers(team):
    row, table = get_linearizer("piped")
    assert table(team) == "Member | Task | Status\nAlice | Similarity function | \nBob | Parser | HTML | done"
    row, table = get_linearizer("markdown")
    assert table(team).split("\n")[:3] == [
        "| Member | Task | Status |",
        "| --- | --- | --- |",
        "| Alice | Similarity function |  |",
    ]
    assert row(team, team.rows[1]).split("\n")[-1] == "| Bob | Parser \\| HTML | done |"
    row, table = get_linearizer("html")
    assert table(team).split("\n")[:2] == ["<table>", "<tr><th>Member</th><th>Task</th><th>Status</th></tr>"]
    assert row(team, team.rows[1]).endswith("<tr><td>Bob</td><td>Parser | HTML</td><td>done</td></tr>\n</table>")
    row, table = get_linearizer("text")
    assert row(team, team.rows[0]) == "Member Task Status\nAlice Similarity function"


def test_every_linearizer_writes_one_line_per_row(team):
    for name, (row, table) in LINEARIZERS.items():
        lines = table(team).split("\n")
        assert sum("Bob" in line for line in lines) == 1, name
        assert "Alice" in row(team, team.rows[0]) and "Bob" not in row(team, team.rows[0]), name


def test_key_value_and_section_rows():
    kv = Table(
        2, ["", ""], [TableRow(1, ["Version", "9.0"]), TableRow(2, ["Owner", "Eric", "Rich"])], header_column=True
    )
    assert verbalize_row(kv, kv.rows[0]) == "Row 1 in Table 2: Version is 9.0"
    assert verbalize_row(kv, kv.rows[1]) == "Row 2 in Table 2: Owner is Eric, Rich"
    section = Table(1, ["A", "B"], [TableRow(1, ["Part two", ""], spans_all_columns=True)])
    assert verbalize_row(section, section.rows[0]) == "Row 1 in Table 1: Part two"


def test_header_only_table_and_unknown_linearizer():
    assert verbalize_table(Table(3, ["Name", "Date"])) == "Table 3: Name, Date"
    with pytest.raises(ValueError, match="Unknown table linearizer 'csv'"):
        get_linearizer("csv")
