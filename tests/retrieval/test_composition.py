"""``HybridRetriever`` composes sides and fuses: the built-in sides, their keeping and the narrowing are given to it."""

import asyncio
import inspect
import warnings

import pytest
from fakes import HashingEmbedding, KeywordReranker
from llama_index.core import VectorStoreIndex
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters
from test_sides import QUESTION, Listed, wiki_nodes

from llama_index_ragonite import BuiltInSides, HybridRetriever, LexicalIndex, Narrowing, SideSettings
from llama_index_ragonite.chat.turn_access import store_reader
from llama_index_ragonite.index.access import Principal
from llama_index_ragonite.retrieval.keeping import FollowingSides, MirroredSides

QUESTIONS = [QUESTION, "How do I reboot after the upgrade?", "Wer rankt die Evidenzen?", "installer"]


def parts():
    nodes = wiki_nodes()
    lexical = LexicalIndex()
    lexical.upsert(nodes)
    return nodes, VectorStoreIndex(nodes, embed_model=HashingEmbedding()), lexical


def ranked(retriever, asynchronous=False):
    run = (lambda q: asyncio.run(retriever.aretrieve(q))) if asynchronous else retriever.retrieve
    return [[(h.node.node_id, h.score, h.ranks) for h in run(q)] for q in QUESTIONS]


def test_the_constructor_takes_at_most_eight_parameters():
    assert len(inspect.signature(HybridRetriever.__init__).parameters) - 1 <= 8  # less self


def test_the_keywords_of_0x_warn_and_rank_as_the_built_in_sides_do():
    nodes, index, lexical = parts()
    page = nodes[0].ref_doc_id
    filters = MetadataFilters(filters=[MetadataFilter(key="title", value=nodes[0].metadata["title"])])
    settings = SideSettings(k_lexical=4, k_dense=6, k_titles=3, title_weight=0.5, cross_lingual_lexical_weight=0.2)
    new = HybridRetriever(BuiltInSides(index, lexical, settings=settings), top_n=7, narrowing=Narrowing(filters))
    new.add_side("mine", Listed(nodes[:3]), weight=0.5)
    reranked = HybridRetriever(BuiltInSides(index, lexical), fusion="rerank+rrf", reranker=KeywordReranker())
    with pytest.warns(DeprecationWarning, match=r"BuiltInSides\(dense, lexical"):
        old = HybridRetriever(
            dense=index,
            lexical=lexical,
            k_lexical=4,
            k_dense=6,
            k_titles=3,
            title_weight=0.5,
            cross_lingual_lexical_weight=0.2,
            top_n=7,
            filters=filters,
            sides={"mine": Listed(nodes[:3])},
        )
    old.sides["mine"].weight = 0.5
    with pytest.warns(DeprecationWarning):
        positional = HybridRetriever(index, lexical, fusion="rerank+rrf", reranker=KeywordReranker())
    assert ranked(old) == ranked(new) and ranked(old, asynchronous=True) == ranked(new)
    assert {h.node.ref_doc_id for q in QUESTIONS for h in new.retrieve(q)} == {page}  # filtered, every side
    assert ranked(positional) == ranked(reranked)
    assert old.built_in is not None and old.built_in.settings == settings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new way and the factories warn about nothing
        HybridRetriever(BuiltInSides(index, lexical), top_n=3)
        HybridRetriever.from_index(index, k_lexical=3, top_n=3)


def test_one_narrowing_reaches_every_built_in_side_and_yours():
    nodes, index, lexical = parts()
    page = nodes[0].ref_doc_id
    narrowing = Narrowing(MetadataFilters(filters=[MetadataFilter(key="title", value=nodes[0].metadata["title"])]))
    retriever = HybridRetriever(BuiltInSides(index, lexical), narrowing=narrowing)
    retriever.add_side("mine", Listed(nodes[-3:]))  # other pages' nodes: cut by the same narrowing
    assert retriever.narrowing is narrowing and retriever.built_in.narrowing is narrowing
    for question in QUESTIONS:
        hits = retriever.retrieve(question)
        assert hits and {h.node.ref_doc_id for h in hits} == {page}
    by_keywords = HybridRetriever(BuiltInSides(index, lexical), filters=narrowing.filters)
    assert ranked(by_keywords) == ranked(HybridRetriever(BuiltInSides(index, lexical), narrowing=narrowing))
    with pytest.raises(ValueError, match="not both"):
        HybridRetriever(BuiltInSides(index, lexical), narrowing=narrowing, filters=narrowing.filters)
    with pytest.raises(ValueError, match="narrow the built-in sides"):
        HybridRetriever({"mine": Listed(nodes)}, principal=Principal.of("alice"))


def test_following_and_mirroring_are_the_sides_given_not_constructor_arguments(tmp_path):
    from llama_index_ragonite.index.store import EvidenceStore

    nodes, index, _ = parts()
    mirrored = HybridRetriever.from_index(index)
    assert isinstance(mirrored.built_in, MirroredSides) and mirrored.store is None
    assert ranked(HybridRetriever(MirroredSides(index))) == ranked(mirrored)
    store = EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    store.ingest(_documents())
    following = HybridRetriever.from_store(store, top_n=5)
    assert isinstance(following.built_in, FollowingSides) and following.store is store  # handed over publicly
    assert ranked(HybridRetriever(FollowingSides(store), top_n=5)) == ranked(following)
    assert store_reader(following, Principal.of("alice"))({"team"})


def test_setting_a_part_is_deprecated_and_rebuilds_the_sides():
    nodes, index, lexical = parts()
    retriever = HybridRetriever(BuiltInSides(index, lexical))
    fewer = LexicalIndex()
    fewer.upsert(nodes[:2])
    with pytest.warns(DeprecationWarning, match=r"built_in.use\(lexical="):
        retriever.lexical = fewer
    assert retriever.sides["lexical"].retriever.lexical is fewer and retriever.lexical is fewer


def test_the_settings_attributes_of_0x_still_read_with_a_warning():
    nodes, index, lexical = parts()
    retriever = HybridRetriever(BuiltInSides(index, lexical, settings=SideSettings(k_lexical=3, title_weight=0.5)))
    with pytest.warns(DeprecationWarning, match=r"built_in.settings.k_lexical"):
        assert retriever.k_lexical == 3
    with pytest.warns(DeprecationWarning, match=r"built_in.settings.title_weight"):
        assert retriever.title_weight == 0.5
    with pytest.warns(DeprecationWarning, match=r"lexical_weight\(query\)"):
        assert (
            retriever.lexical_weight("Wer rankt die Evidenzen?")
            == retriever.built_in.settings.cross_lingual_lexical_weight
        )
    own = HybridRetriever({"mine": Listed(nodes)})
    with pytest.warns(DeprecationWarning), pytest.raises(AttributeError, match="no built-in sides"):
        assert own.k_dense is None  # raises first


def _documents():
    from fakes import wiki_documents

    return wiki_documents()


def test_a_mirrored_index_still_narrows_its_dense_side_before_ranking_after_a_rebuild():
    from llama_index.core.schema import TextNode

    nodes, index, _ = parts()
    on_page = [n for n in nodes if n.ref_doc_id == nodes[0].ref_doc_id]
    filters = MetadataFilters(filters=[MetadataFilter(key="title", value=nodes[0].metadata["title"])])
    retriever = HybridRetriever.from_index(index, filters=filters, k_dense=3)

    def dense_hits():
        return [h for h in retriever.retrieve("How do I reboot after the upgrade?") if "dense" in h.ranks]

    assert len(dense_hits()) == min(3, len(on_page))
    index.insert_nodes([TextNode(id_="flux", text="The flux capacitor needs 1.21 gigawatts.")])  # a rebuild
    assert len(dense_hits()) == min(3, len(on_page))  # its 3 best among the allowed, not 3 best cut after
