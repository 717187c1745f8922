"""The context header and the row sentence, rendered from the structure fields alone."""

from pathlib import Path

from llama_index_ragonite import EvidenceContextualizer, HTMLEvidenceParser, load_pages
from llama_index_ragonite.parsing.rendering import context_lines, row_sentence, without_row_position
from llama_index_ragonite.parsing.structure import STRUCTURE_KEYS, structure_list

SAMPLE_WIKI = Path(__file__).resolve().parents[2] / "examples" / "sample_wiki"


def nodes_of(documents):
    return EvidenceContextualizer()(HTMLEvidenceParser().get_nodes_from_documents(documents))


def test_fields_render_the_header_the_contextualizer_wrote(confquestions_documents):
    documents = load_pages(SAMPLE_WIKI) + load_pages(confquestions_documents / "confluence-002.json")
    nodes = nodes_of(documents)
    assert sum("Before: " in n.metadata["context"] for n in nodes) >= 10
    for node in nodes:
        fields = {k: v for k, v in node.metadata.items() if k in STRUCTURE_KEYS or k == "title"}
        assert "\n".join(context_lines(fields)) == node.metadata["context"]
        assert "\n".join(context_lines(fields, before=False, after=False)) == node.metadata["embed_context"]


def test_row_sentence_from_headers_and_cells(confquestions_documents):
    rows = [n for n in nodes_of(load_pages(SAMPLE_WIKI)) if n.metadata["evidence_type"] == "table_row"]
    assert rows
    for row in rows:
        meta = row.metadata
        pairs = list(zip(structure_list(meta, "headers"), structure_list(meta, "cells")))
        assert row.text == row_sentence(meta["row_index"], meta["table_index"], [(h, c) for h, c in pairs if c])
        assert without_row_position(row.text).startswith(f"{pairs[0][0]} is {pairs[0][1]}")


def test_a_node_of_an_older_store_renders_its_section_from_heading_path():
    old = {"title": "Release testing", "heading_path": "Install > Legacy"}
    assert context_lines(old) == ["Page: Release testing", "Section: Install > Legacy"]
    assert context_lines({**old, "headings": '["Install", "Legacy"]', "before_text": "Intro."}, title=False) == [
        "Section: Install > Legacy",
        "Before: Intro.",
    ]
