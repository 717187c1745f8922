"""Retrieval narrowed before ranking: LlamaIndex ``MetadataFilters`` and what a principal may read, on every side."""

import asyncio

import pytest
from fakes import HashingEmbedding
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import Document
from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

from llama_index_ragonite import EvidenceStore, ExtractiveAnswerer, HybridRetriever, RagoniteChatEngine
from llama_index_ragonite.index.access import NOBODY, Audience, PageAccess, Principal
from llama_index_ragonite.retrieval.narrowing import acting_as, matches

PAGES = {  # page id: (space, labels, title, text); each page holds a marker no other page has
    "ops-1": ("OPS", "howto, backup", "Backups", "Nightly backups run at 02:00 on the vault host. MARK-OPS-ONE"),
    "ops-2": ("OPS", "release", "Release checklist", "The release manager signs the backups report. MARK-OPS-TWO"),
    "hr-1": ("HR", "howto", "Salaries", "Salary reviews happen in March; payroll backups are encrypted. MARK-HR-ONE"),
    "hr-2": ("HR", "policy", "Parental leave", "Parental leave lasts 16 weeks for every parent. MARK-HR-TWO"),
    "pub-1": ("PUB", "", "Cafeteria", "The cafeteria opens at 8; the menu backups are on the wiki. MARK-PUB-ONE"),
}
ACCESS = {
    "hr-1": PageAccess(space=Audience(groups=frozenset({"hr"}))),
    "hr-2": PageAccess(space=Audience(groups=frozenset({"hr"})), restrictions=(Audience(users=frozenset({"carol"})),)),
    "ops-2": NOBODY,  # its permissions could not be read
}
ALICE, BOB, CAROL = Principal.of("alice", ["eng"]), Principal.of("bob", ["hr"]), Principal.of("carol", ["hr"])
ERIN = Principal.of("carol", ["eng"])  # a user the page restriction names, but not in the space's group
READS = {
    ALICE: {"ops-1", "pub-1"},
    BOB: {"ops-1", "pub-1", "hr-1"},
    CAROL: {"ops-1", "pub-1", "hr-1", "hr-2"},
    ERIN: {"ops-1", "pub-1"},  # an intersection: the restriction alone does not open the space
}
QUESTIONS = [
    "When do backups run?",
    "Who signs the backups report?",
    "When are salary reviews?",
    "How long is parental leave?",
    "When does the cafeteria open?",
    "Which host holds the backups?",
    "Are payroll backups encrypted?",
    "What is on the release checklist?",
]


def documents():
    return [
        Document(
            id_=page,
            text=f"<title>{title}</title><h1>{title}</h1><p>{text}</p>",
            metadata={"title": title, "space": space, "labels": labels, "url": f"https://wiki.example/{page}"},
        )
        for page, (space, labels, title, text) in PAGES.items()
    ]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    built = EvidenceStore(tmp_path_factory.mktemp("narrowing") / "s", embed_model=HashingEmbedding())
    built.ingest(documents(), access=ACCESS)
    return built


def marks(text: str) -> set:
    return {page for page, (*_, body) in PAGES.items() if body.split()[-1] in text}


def test_filters_select_on_every_side_before_ranking(store):
    ops = MetadataFilters(filters=[MetadataFilter(key="space", value="OPS")])
    wide = HybridRetriever.from_store(store, k_lexical=1, k_dense=1, top_n=5)
    narrow = HybridRetriever.from_store(store, k_lexical=1, k_dense=1, top_n=5, filters=ops)
    question = "payroll salary reviews backups encrypted"
    assert {h.node.ref_doc_id for h in wide.retrieve(question)} == {"hr-1"}  # a post-filter would leave nothing
    hits = narrow.retrieve(question)
    assert hits and {h.node.metadata["space"] for h in hits} == {"OPS"}
    assert all(set(h.ranks) <= {"lexical", "dense", "title"} for h in hits) and any("lexical" in h.ranks for h in hits)
    howto = MetadataFilters(filters=[MetadataFilter(key="labels", value="howto", operator=FilterOperator.CONTAINS)])
    labelled = HybridRetriever.from_store(store, top_n=10, filters=howto).retrieve("backups salary")
    assert {h.node.ref_doc_id for h in labelled} == {"ops-1", "hr-1"}
    assert {h.node.ref_doc_id for h in asyncio.run(narrow.aretrieve(question))} <= {"ops-1", "ops-2"}


def test_filters_through_a_stock_query_engine_and_the_chat_engine(store):
    hr = MetadataFilters(filters=[MetadataFilter(key="space", value="HR")])
    retriever = HybridRetriever.from_store(store, top_n=5, filters=hr)
    engine = RetrieverQueryEngine.from_args(retriever, llm=ExtractiveAnswerer())
    response = engine.query("When do backups run?")
    assert {n.node.metadata["space"] for n in response.source_nodes} == {"HR"}
    assert marks(str(response)) <= {"hr-1", "hr-2"}
    chat = RagoniteChatEngine.from_store(store.path, embed_model=HashingEmbedding(), retriever_kwargs={"filters": hr})
    turn = chat.chat("When does the cafeteria open?")
    assert {n.node.ref_doc_id for n in turn.source_nodes} <= {"hr-1", "hr-2"} and "MARK-PUB" not in turn.response


def test_each_principal_reads_only_the_pages_confluence_would_show(store):
    retriever = HybridRetriever.from_store(store, top_n=10)
    assert {h.node.ref_doc_id for h in retriever.retrieve("backups leave salary cafeteria release")} == set(PAGES)
    for principal, readable in READS.items():
        own = HybridRetriever.from_store(store, top_n=10, principal=principal)
        seen = {h.node.ref_doc_id for q in QUESTIONS for h in own.retrieve(q)}
        assert seen == readable, principal
        with acting_as(principal):  # per call, on a retriever shared by everyone
            assert {h.node.ref_doc_id for q in QUESTIONS for h in retriever.retrieve(q)} == readable
        with acting_as(CAROL):  # a retriever made for one user never widens for another: both must read it
            assert {h.node.ref_doc_id for q in QUESTIONS for h in own.retrieve(q)} == readable & READS[CAROL]
        chat = RagoniteChatEngine.from_store(store.path, embed_model=HashingEmbedding(), principal=principal)
        for question in QUESTIONS:
            response = chat.chat(question)
            shown = " ".join([response.response, response.completed_question, *response.turn.follow_ups])
            shown += " ".join(n.node.get_content() + str(n.node.metadata) for n in response.source_nodes)
            assert marks(shown) <= readable and {n.node.ref_doc_id for n in response.source_nodes} <= readable


def test_a_permission_change_propagates_without_reembedding(tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    store.ingest(documents(), access=ACCESS)
    reader = HybridRetriever.from_store(EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding()), top_n=10)
    with acting_as(BOB):
        assert "hr-2" not in {h.node.ref_doc_id for h in reader.retrieve("How long is parental leave?")}
    opened = {**ACCESS, "hr-2": PageAccess(space=Audience(groups=frozenset({"hr"})))}  # the restriction removed
    report = store.ingest(documents(), access=opened)
    assert report.nodes_written == 0 and sorted(report.unchanged) == sorted(PAGES)  # nothing re-embedded
    with acting_as(BOB):  # the reader follows the new generation
        assert "hr-2" in {h.node.ref_doc_id for h in reader.retrieve("How long is parental leave?")}
    store.ingest(documents(), access={**opened, "hr-2": NOBODY})
    with acting_as(CAROL):
        assert "hr-2" not in {h.node.ref_doc_id for h in reader.retrieve("How long is parental leave?")}


def test_metadata_filters_are_evaluated_as_llamaindex_defines_them():
    meta = {"space": "OPS", "labels": "howto, backup", "version": 3}
    f = MetadataFilter
    assert matches(
        meta, MetadataFilters(filters=[f(key="space", value="OPS"), f(key="version", value=2, operator=">")])
    )
    assert not matches(meta, MetadataFilters(filters=[f(key="labels", value="how", operator=FilterOperator.CONTAINS)]))
    either = MetadataFilters(filters=[f(key="space", value="HR"), f(key="labels", value=["backup"], operator="any")])
    either.condition = FilterCondition.OR
    assert matches(meta, either)
    nested = MetadataFilters(filters=[either, f(key="space", value=["HR", "PUB"], operator=FilterOperator.NIN)])
    assert matches(meta, nested)
    assert not matches(meta, MetadataFilters(filters=[f(key="owner", value="x")]))  # a key the node lacks
    negated = MetadataFilters(filters=[f(key="space", value="OPS")], condition=FilterCondition.NOT)
    assert not matches(meta, negated)


def test_filters_narrow_a_stock_index_too():
    from llama_index.core import VectorStoreIndex
    from llama_index.core.ingestion import IngestionPipeline

    from llama_index_ragonite import EvidenceContextualizer, HTMLEvidenceParser

    nodes = IngestionPipeline(transformations=[HTMLEvidenceParser(), EvidenceContextualizer()]).run(
        documents=documents()
    )
    index = VectorStoreIndex(nodes, embed_model=HashingEmbedding())  # SimpleVectorStore: narrowed by node_ids
    pub = MetadataFilters(filters=[MetadataFilter(key="space", value="PUB")])
    hits = HybridRetriever.from_index(index, k_lexical=1, k_dense=1, top_n=5, filters=pub).retrieve("backups")
    assert hits and {h.node.ref_doc_id for h in hits} == {"pub-1"} and any("dense" in h.ranks for h in hits)
