"""A source row's table comes from its structure fields; nodes of older stores from its sentence."""

from pathlib import Path

from llama_index.core.schema import Document, NodeWithScore

from llama_index_ragonite import EvidenceContextualizer, HTMLEvidenceParser, load_pages
from llama_index_ragonite.parsing.structure import STRUCTURE_KEYS
from llama_index_ragonite.serve.turns import source_json, table_cells

SAMPLE_WIKI = Path(__file__).resolve().parents[2] / "examples" / "sample_wiki"


def rows_of(documents, linearizer="verbalized"):
    nodes = EvidenceContextualizer()(HTMLEvidenceParser(linearizer=linearizer).get_nodes_from_documents(documents))
    return [n for n in nodes if n.metadata["evidence_type"] == "table_row"]


def shown_table(node):
    return source_json(1, NodeWithScore(node=node, score=1.0))["table"]


def test_rows_read_from_fields_as_their_sentence_reads(confquestions_documents):
    rows = rows_of(load_pages(SAMPLE_WIKI) + load_pages(confquestions_documents / "confluence-002.json"))
    parsed = [(row, table_cells(row.text, "row")) for row in rows]
    assert sum(cells is not None for _, cells in parsed) >= 20
    for row, cells in parsed:
        shown = shown_table(row)
        if cells is not None and len(set(shown[0])) == len(shown[0]):
            assert shown == cells
        elif cells is not None:  # a header named twice: the sentence read back keeps one of its cells
            assert len(shown[1]) > len(cells[1]) and set(shown[1]) >= set(cells[1])
        old = row.model_copy(update={"metadata": {k: v for k, v in row.metadata.items() if k not in STRUCTURE_KEYS}})
        assert shown_table(old) == cells


def test_cells_that_read_like_the_sentence_and_other_linearizers():
    html = (
        "<table><tr><th>Role</th><th>Note</th></tr><tr><td>Sales</td><td>Laptop, and Dock is optional</td></tr></table>"
    )
    page = [Document(id_="p", text=html)]
    (row,) = rows_of(page)
    assert shown_table(row) == [["Role", "Note"], ["Sales", "Laptop, and Dock is optional"]]
    assert table_cells(row.text, "row") != shown_table(row)  # the sentence alone splits the cell
    (piped,) = rows_of(page, "piped")
    assert shown_table(piped) == shown_table(row)


def test_a_confluence_comment_source_is_shown_as_a_comment():
    from llama_index.core.schema import TextNode

    node = TextNode(text="This changed in March: the new contact is Jana.", metadata={"evidence_type": "comment"})
    assert source_json(1, NodeWithScore(node=node, score=1.0))["kind"] == "comment"
