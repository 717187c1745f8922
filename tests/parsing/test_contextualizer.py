import pytest
from fakes import HashingEmbedding, of_type, parse
from llama_index.core import VectorStoreIndex
from llama_index.core.ingestion import IngestionCache, IngestionPipeline
from llama_index.core.schema import Document, MetadataMode

from llama_index_ragonite import EvidenceContextualizer, HTMLEvidenceParser
from llama_index_ragonite.parsing.contextualizer import SETTINGS, nearest_line

PAGE = (
    "<p>This page lists the team.</p><h1>Team</h1><h2>Members</h2>"
    "<table><tr><th>Member</th><th>Task</th></tr><tr><td>Alice</td><td>Parsing</td></tr>"
    "<tr><td>Bob</td><td>Ranking</td></tr><tr><td>Carol</td><td>Answering</td></tr></table>"
    "<ul><li>Weekly call on Monday</li><li>Retro on Friday</li></ul>"
)


def contextualized(**kwargs):
    return EvidenceContextualizer(**kwargs)(parse(PAGE))


def test_all_context_for_a_row_uses_neighbouring_rows_not_the_table():
    nodes = contextualized(row_context="neighbours")
    bob = of_type(nodes, "table_row")[1]
    assert bob.metadata["context"] == (
        "Page: Test page\nSection: Team > Members\n"
        "Before: Row 1 in Table 1: Member is Alice, and Task is Parsing\n"
        "After: Row 3 in Table 1: Member is Carol, and Task is Answering"
    )
    first, last = of_type(nodes, "table_row")[0], of_type(nodes, "table_row")[-1]
    assert "Before: This page lists the team." in first.metadata["context"]
    assert "After: - Weekly call on Monday" in last.metadata["context"]


def test_table_neighbours_contribute_their_nearest_row_only():
    nodes = contextualized()
    passage, lst = nodes[0], of_type(nodes, "list")[0]
    assert passage.metadata["context"].endswith("After: Row 1 in Table 1: Member is Alice, and Task is Parsing")
    assert "Before: Row 3 in Table 1: Member is Carol, and Task is Answering" in lst.metadata["context"]
    assert "Alice" not in lst.metadata["context"]


def test_raw_evidence_stays_the_node_text_while_embed_and_llm_views_get_context():
    row = of_type(contextualized(), "table_row")[1]
    assert row.text == row.get_content() == "Row 2 in Table 1: Member is Bob, and Task is Ranking"
    llm, embed = row.get_content(MetadataMode.LLM), row.get_content(MetadataMode.EMBED)
    assert llm.startswith("Page: Test page\nSection: Team > Members\nBefore:")  # the LLM (and BM25) see neighbours
    assert embed == "Page: Test page\nSection: Team > Members\n\n" + row.text  # the embedding does not, by default
    for content in (llm, embed):
        assert content.endswith("\n\nRow 2 in Table 1: Member is Bob, and Task is Ranking")
        assert "position" not in content and "https://" not in content
    with_neighbours = of_type(EvidenceContextualizer(embed_neighbours=True)(parse(PAGE)), "table_row")[1]
    assert with_neighbours.get_content(MetadataMode.EMBED) == llm


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_paper_settings(setting):
    nodes = EvidenceContextualizer.from_setting(setting)(parse(PAGE))
    bob = of_type(nodes, "table_row")[1]
    ctx = bob.metadata["context"]
    assert ("Page:" in ctx) == (setting in ("TTL", "ALL"))
    assert ("Section:" in ctx) == (setting in ("HDR", "ALL"))
    assert ("Before:" in ctx) == (setting in ("BEF", "ALL"))
    assert ("After:" in ctx) == (setting in ("AFT", "ALL"))
    if setting == "NONE":
        assert bob.get_content(MetadataMode.EMBED) == bob.text
    assert EvidenceContextualizer.from_setting(setting).setting == setting


def test_unknown_setting_and_custom_mix():
    with pytest.raises(ValueError, match="Unknown contextualization 'SOME'"):
        EvidenceContextualizer.from_setting("SOME")
    assert EvidenceContextualizer(before=False, after=False).setting == "TITLE+HEADING"


def test_neighbour_context_is_bounded():
    long_text = " ".join(f"w{i}" for i in range(500))
    nodes = parse(f"<p>{long_text}</p><h2>H</h2><p>short</p>")
    EvidenceContextualizer(neighbour_words=10)(nodes)
    before = nodes[1].metadata["context"].split("Before: ")[1]
    assert before == " ".join(f"w{i}" for i in range(10)) + " …"
    assert nearest_line("a\nb c d", "last", 2) == "b c …" and nearest_line("", "first", 5) == ""


def test_idempotent_and_missing_neighbours_are_skipped():
    nodes = parse(PAGE)
    ctx = EvidenceContextualizer()
    once = [n.get_content(MetadataMode.EMBED) for n in ctx(nodes)]
    twice = [n.get_content(MetadataMode.EMBED) for n in ctx(nodes)]
    assert once == twice
    alone = ctx([parse(PAGE)[3]])[0]  # Bob's row without its neighbours in the batch
    assert "Before:" not in alone.metadata["context"] and "Section:" in alone.metadata["context"]


def test_visible_metadata_keys_and_works_after_core_splitters():
    from llama_index.core.node_parser import SentenceSplitter

    doc = Document(id_="d", text="First sentence here. " * 40 + "Last words.", metadata={"title": "T", "team": "ops"})
    nodes = SentenceSplitter(chunk_size=64, chunk_overlap=0).get_nodes_from_documents([doc])
    EvidenceContextualizer(visible_metadata_keys=["team"])(nodes)
    llm, embed = nodes[1].get_content(MetadataMode.LLM), nodes[1].get_content(MetadataMode.EMBED)
    assert "Page: T" in llm and "Before: First sentence here." in llm and "ops" in llm
    assert "Page: T" in embed and "Before:" not in embed and "ops" in embed


def test_ingestion_pipeline_cache_tells_configurations_apart():
    assert EvidenceContextualizer().to_dict() != EvidenceContextualizer.from_setting("TTL").to_dict()
    assert HTMLEvidenceParser().to_dict() != HTMLEvidenceParser(linearizer="markdown").to_dict()
    docs = [Document(id_="team", text=PAGE, metadata={"title": "Team page"})]
    cache = IngestionCache()
    outputs = {}
    for setting in ("ALL", "TTL"):
        pipeline = IngestionPipeline(
            transformations=[HTMLEvidenceParser(), EvidenceContextualizer.from_setting(setting)], cache=cache
        )
        outputs[setting] = [n.get_content(MetadataMode.EMBED) for n in pipeline.run(documents=docs)]
    assert outputs["ALL"] != outputs["TTL"]
    assert all("Before:" not in text for text in outputs["TTL"])


def test_stock_ingestion_pipeline_and_vector_index_with_stable_ids():
    docs = [Document(id_="team", text=PAGE, metadata={"title": "Team page"})]
    embed = HashingEmbedding()
    runs = []
    for _ in range(2):
        pipeline = IngestionPipeline(transformations=[HTMLEvidenceParser(), EvidenceContextualizer(), embed])
        nodes = pipeline.run(documents=docs)
        runs.append(nodes)
    assert [n.node_id for n in runs[0]] == [n.node_id for n in runs[1]]
    assert [n.embedding for n in runs[0]] == [n.embedding for n in runs[1]]
    index = VectorStoreIndex(runs[0], embed_model=embed)
    bob = of_type(runs[0], "table_row")[1]
    hits = index.as_retriever(similarity_top_k=1).retrieve(bob.get_content(MetadataMode.EMBED))
    assert hits[0].node.node_id == bob.node_id and hits[0].score == pytest.approx(1.0)
    assert hits[0].node.text == "Row 2 in Table 1: Member is Bob, and Task is Ranking"

    index2 = VectorStoreIndex.from_documents(
        docs, transformations=[HTMLEvidenceParser(), EvidenceContextualizer()], embed_model=embed
    )
    assert sorted(index2.index_struct.nodes_dict) == sorted(n.node_id for n in runs[0])


async def _acall(nodes):
    return await EvidenceContextualizer().acall(nodes)


def test_async_paths():
    import asyncio

    doc = Document(id_="team", text=PAGE)
    nodes = asyncio.run(HTMLEvidenceParser().aget_nodes_from_documents([doc]))
    assert [n.node_id for n in nodes] == [n.node_id for n in HTMLEvidenceParser().get_nodes_from_documents([doc])]
    out = asyncio.run(_acall(nodes))
    assert all("context" in n.metadata for n in out)


MATRIX_PAGE = (
    "<h2>Tests</h2><p>Owned by Kyle.</p><p>All tests ran on QEMU 1.4.</p>"
    "<table><tr><th>Machine</th><th>Card</th></tr><tr><td>HP z220</td><td>Radeon HD 7750</td></tr>"
    "<tr><td>HP 8300</td><td>Firepro W600</td></tr><tr><td>HP 8300</td><td>Radeon HD 7750</td></tr></table>"
    "<p>*Tested on 32-bit Windows.</p><h2>Next</h2><p>Unrelated.</p>"
)


@pytest.mark.parametrize("granularity", ["both", "rows"])
def test_table_row_context_takes_the_text_around_the_table(granularity):
    nodes = EvidenceContextualizer(row_context="table")(parse(MATRIX_PAGE, table_granularity=granularity))
    rows = of_type(nodes, "table_row")
    assert len(rows) == 3
    for row in rows:  # every row, not only the first and the last
        assert row.metadata["context"] == (
            "Page: Test page\nSection: Tests\nBefore: All tests ran on QEMU 1.4.\nAfter: *Tested on 32-bit Windows."
        )
    footer = next(n for n in nodes if n.text == "*Tested on 32-bit Windows.")
    assert "Before: Row 3 in Table 1: Machine is HP 8300, and Card is Radeon HD 7750\n" in footer.metadata["context"]
    if granularity == "both":  # the table itself keeps its own neighbours
        table = of_type(nodes, "table")[0]
        assert "Before: All tests ran on QEMU 1.4.\nAfter: *Tested on 32-bit Windows." in table.metadata["context"]


def test_neighbour_row_context_and_the_mode_in_the_fingerprint():
    assert EvidenceContextualizer().row_context == "table"  # the paper's Figure 3 is the default
    nodes = EvidenceContextualizer(row_context="neighbours")(parse(MATRIX_PAGE))
    middle = of_type(nodes, "table_row")[1]
    assert "QEMU" not in middle.metadata["context"]
    assert "Before: Row 1 in Table 1: Machine is HP z220" in middle.metadata["context"]
    assert "After: Row 3 in Table 1: Machine is HP 8300" in middle.metadata["context"]
    table_mode, neighbour_mode = (EvidenceContextualizer(row_context=m).to_dict() for m in ("table", "neighbours"))
    assert table_mode["row_context"] == "table" and table_mode != neighbour_mode
    assert EvidenceContextualizer.from_setting("ALL", row_context="table").row_context == "table"
    with pytest.raises(ValueError):
        EvidenceContextualizer(row_context="cells")


def test_table_row_context_without_the_table_or_its_neighbours_in_the_batch():
    nodes = parse(MATRIX_PAGE, table_granularity="rows")
    rows = of_type(nodes, "table_row")
    alone = EvidenceContextualizer(row_context="table")(rows)  # the rows only: nothing around the table
    assert all("Before:" not in r.metadata["context"] and "After:" not in r.metadata["context"] for r in alone)
    no_before = EvidenceContextualizer(row_context="table", before=False)(parse(MATRIX_PAGE))
    assert all("Before:" not in r.metadata["context"] for r in of_type(no_before, "table_row"))
    assert all("After: *Tested" in r.metadata["context"] for r in of_type(no_before, "table_row"))


def test_table_row_context_on_a_huge_table_stays_linear():
    body = "".join(f"<tr><td>m{i}</td><td>c{i}</td></tr>" for i in range(3000))
    page = f"<p>Intro.</p><table><tr><th>M</th><th>C</th></tr>{body}</table><p>Footer.</p>"
    rows = of_type(EvidenceContextualizer(row_context="table")(parse(page, table_granularity="rows")), "table_row")
    assert rows[1500].metadata["context"].endswith("Before: Intro.\nAfter: Footer.")


def test_after_placed_at_the_end_follows_the_evidence_in_every_view_as_in_the_paper():
    from llama_index_ragonite.models.extractive.llm_adapter.prompt import split_source, view_source
    from llama_index_ragonite.models.extractive.sources import node_source
    from llama_index_ragonite.parsing.contextualizer import shown_context

    passage = contextualized(after_position="end")[0]
    after = "After: Row 1 in Table 1: Member is Alice, and Task is Parsing"
    assert after not in passage.metadata["context"] and passage.metadata["context"].startswith("Page: Test page")
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):  # the template is every view's
        assert passage.get_content(mode).endswith("This page lists the team.\n\n" + after)
    assert passage.get_content() == "This page lists the team."  # the raw evidence stays addressable
    for source in (view_source(1, passage.get_content(MetadataMode.LLM)), node_source(1, passage)):
        assert (source.evidence, source.after, source.topic) == ("This page lists the team.", after[7:], "Test page")
    assert split_source(passage.get_content(MetadataMode.LLM))[1] == "This page lists the team."
    assert shown_context(passage).endswith(after)  # what the web app shows as the evidence's context
    header = contextualized()[0]
    assert shown_context(header) == header.metadata["context"] and header.metadata["context"].endswith(after)
    assert (
        contextualized(after_position="end", title=False, heading=False, before=False)[0].metadata["context"] == after
    )


def test_the_placement_is_recorded_only_when_it_is_the_paper_s_so_older_stores_keep_theirs():
    assert "after_position" not in EvidenceContextualizer().to_dict()
    assert "after_position" not in EvidenceContextualizer().fingerprint_settings()
    recorded = EvidenceContextualizer(after_position="end").to_dict()
    assert recorded["after_position"] == "end"
    assert EvidenceContextualizer.from_recorded(recorded).after_position == "end"
    assert EvidenceContextualizer.from_recorded({"title": True}).after_position == "header"
    braces = Document(text="<p>Use {x}.</p><ul><li>Then {y} and {{z}}.</li></ul>", metadata={"title": "T"})
    first = EvidenceContextualizer(after_position="end")(HTMLEvidenceParser().get_nodes_from_documents([braces]))[0]
    assert first.get_content(MetadataMode.LLM).endswith("Use {x}.\n\nAfter: - Then {y} and {{z}}.")
    back = EvidenceContextualizer()([first])[0]  # re-contextualized with the header placement: the line moves back
    assert back.text_template == "{metadata_str}\n\n{content}" and "After:" not in back.get_content(MetadataMode.EMBED)
