"""A few real ConfQuestions pages, read from the benchmark folder (never copied here)."""

from fakes import of_type

from llama_index_ragonite import EvidenceContextualizer, HTMLEvidenceParser, load_pages


def nodes_of(folder, page_id):
    nodes = HTMLEvidenceParser().get_nodes_from_documents(load_pages(folder / f"{page_id}.json"))
    return EvidenceContextualizer()(nodes)


def test_measurement_table_with_stacked_headers_and_jira_cells(confquestions_documents):
    nodes = nodes_of(confquestions_documents, "confluence-002")
    rows = of_type(nodes, "table_row")
    row = next(n for n in rows if "Dell OptiPlex 7040" in n.text and n.metadata["table_index"] == 1)
    assert "BIOS is 1.14.0" in row.text and "Legacy / Install is Pass" in row.text
    assert any("OXT-1654" in n.text for n in rows)
    assert all("System JIRA" not in n.text and "serverId" not in n.text for n in nodes)
    assert row.metadata["url"].endswith("/pages/761823271/OpenXT+9.0+Measurement+Test")


def test_meeting_notes_with_users_tasks_and_decisions(confquestions_documents):
    nodes = nodes_of(confquestions_documents, "confluence-113")
    texts = [n.text for n in nodes]
    assert any(t.startswith("[ ] Everyone: review") for t in texts)
    assert any("- Start time for community call moved from 11am to 2pm Eastern" in t for t in texts)
    assert sum(t.count("Start time for community call") for t in texts) == 1  # ADF content not doubled
    assert any("2018-08-17" in t for t in texts)


def test_code_macros_keep_their_cdata_bodies(confquestions_documents):
    nodes = nodes_of(confquestions_documents, "confluence-039")
    assert any("/home/<your-user>/.cache/smartcard_list.txt" in n.text for n in nodes)


def test_whole_corpus_parses_with_stable_unique_ids(confquestions_documents):
    docs = load_pages(confquestions_documents)
    first = HTMLEvidenceParser().get_nodes_from_documents(docs)
    second = HTMLEvidenceParser().get_nodes_from_documents(docs)
    assert len(docs) == 215
    assert [n.node_id for n in first] == [n.node_id for n in second]
    assert len({n.node_id for n in first}) == len(first)
    assert {d.id_ for d in docs} == {n.ref_doc_id for n in first}  # every page yields evidence
