"""Every evidence node carries its structure as metadata, consistent with its rendered text, and
the structure keys change nothing the embedding model or the LLM reads."""

from pathlib import Path

import pytest
from llama_index.core.schema import Document, MetadataMode, NodeRelationship

from llama_index_ragonite import EvidenceContextualizer, HTMLEvidenceParser, load_pages
from llama_index_ragonite.parsing.structure import STRUCTURE_KEYS, structure_list

SAMPLE_WIKI = Path(__file__).resolve().parents[2] / "examples" / "sample_wiki"
CONFQUESTIONS_PAGES = ("confluence-002", "confluence-113", "confluence-039")  # tables, meeting notes, code


def contextualized(documents, **parser_settings):
    return EvidenceContextualizer()(HTMLEvidenceParser(**parser_settings).get_nodes_from_documents(documents))


def pages(confquestions_documents):
    return load_pages(SAMPLE_WIKI) + [load_pages(confquestions_documents / f"{p}.json")[0] for p in CONFQUESTIONS_PAGES]


def verbalized(meta):
    """The row sentence from the fields alone, for rows with headers (no spanning label row)."""
    pairs = [(h, c) for h, c in zip(structure_list(meta, "headers"), structure_list(meta, "cells")) if c]
    body = ", and ".join(f"{h} is {c}" if h else c for h, c in pairs)
    return f"Row {meta['row_index']} in Table {meta['table_index']}: {body}"


def test_fields_agree_with_the_rendered_text(confquestions_documents):
    nodes = contextualized(pages(confquestions_documents))
    by_id = {n.node_id: n for n in nodes}
    checked_rows = 0
    for node in nodes:
        meta = node.metadata
        assert meta["page_id"] == node.ref_doc_id
        assert " > ".join(structure_list(meta, "headings")) == meta["heading_path"]
        for side, label in (("before", "Before"), ("after", "After")):
            if f"{side}_id" in meta:
                assert meta[f"{side}_id"] in by_id
                assert f"{label}: {meta[f'{side}_text']}" in meta["context"].split("\n")
            else:
                assert f"\n{label}: " not in "\n" + meta["context"]
        if meta["evidence_type"] == "table":
            assert meta["table_id"] == node.node_id
        if meta["evidence_type"] != "table_row":
            continue
        headers, cells = structure_list(meta, "headers"), structure_list(meta, "cells")
        assert " | ".join(headers) == meta["column_headers"] and len(cells) == len(headers)
        assert meta["table_id"] == node.relationships[NodeRelationship.PARENT].node_id
        if any(headers) and sum(bool(c) for c in cells) > 1:
            assert node.text == verbalized(meta)
            checked_rows += 1
    assert checked_rows >= 20


def test_piped_rows_are_their_cells(confquestions_documents):
    nodes = HTMLEvidenceParser(linearizer="piped").get_nodes_from_documents(pages(confquestions_documents))
    rows = [n for n in nodes if n.metadata["evidence_type"] == "table_row"]
    assert len(rows) >= 20
    for row in rows:
        assert row.text.split("\n")[-1] == " | ".join(structure_list(row.metadata, "cells"))


@pytest.mark.parametrize("contextualize", [False, True])
def test_structure_keys_are_in_no_view(confquestions_documents, contextualize):
    """Byte for byte what the views read without the keys (CHANGELOG: no store is re-embedded)."""
    nodes = HTMLEvidenceParser().get_nodes_from_documents(pages(confquestions_documents))
    if contextualize:
        nodes = EvidenceContextualizer(after_position="end", embed_neighbours=True)(nodes)
    for node in nodes:
        assert any(k in node.metadata for k in STRUCTURE_KEYS)
        views = [node.get_content(mode) for mode in (MetadataMode.EMBED, MetadataMode.LLM)]
        for key in STRUCTURE_KEYS:
            node.metadata.pop(key, None)
        assert views == [node.get_content(mode) for mode in (MetadataMode.EMBED, MetadataMode.LLM)]


def test_modified_time_and_where_it_came_from(confquestions_documents, tmp_path):
    json_page = load_pages(confquestions_documents / "confluence-002.json")[0]
    html = "<html><head><meta name='dcterms.modified' content='2025-03-01'></head><body><p>Hi</p></body></html>"
    (tmp_path / "page.html").write_text("<p>Undated</p>")
    documents = [
        json_page,
        Document(id_="c", text="<p>Hi</p>", metadata={"last_modified": "2024-05-06T10:00:00Z"}),
        Document(id_="m", text=html),
        load_pages(tmp_path / "page.html")[0],
        Document(id_="none", text="<p>Hi</p>"),
    ]
    found = {
        n.ref_doc_id: (n.metadata.get("modified"), n.metadata.get("modified_source")) for n in contextualized(documents)
    }
    assert found[json_page.id_] == (json_page.metadata["date"], "page_field")
    assert found["c"] == ("2024-05-06T10:00:00Z", "confluence") and found["m"] == ("2025-03-01", "html_meta")
    assert found["page.html"][1] == "file_mtime" and found["page.html"][0].startswith("20")
    assert found["none"] == (None, None)
