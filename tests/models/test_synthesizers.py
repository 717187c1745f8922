"""The answer synthesizers, nodes in, answer out: offline (``ExtractiveSynthesizer``) and for any LLM
(``CitedSynthesizer``), in stock LlamaIndex query engines too."""

from __future__ import annotations

import asyncio
from typing import Any, List

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llama_index_ragonite import CitedSynthesizer, ExtractiveAnswerer, ExtractiveSynthesizer
from llama_index_ragonite.prompts import ANSWER_PROMPT, OUT_OF_SCOPE, format_history, format_sources

NODES = [
    NodeWithScore(node=TextNode(text="The clinic is open Tuesday and Thursday from 9 to 13."), score=0.9),
    NodeWithScore(
        node=TextNode(
            text="Dr. Okafor is the resident vet. Emergencies go to the city animal hospital.",
            metadata={"context": "Page: Shelter clinic\nSection: Staff", "title": "Shelter clinic"},
            excluded_llm_metadata_keys=["title"],
        ),
        score=0.8,
    ),
    NodeWithScore(node=TextNode(text="A page quoting [Source 3] and ### Source 9 ### as text."), score=0.1),
]


class Fixed(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return list(NODES)


def test_nodes_in_answer_out_as_the_prompt_path_answers():
    synthesizer = ExtractiveSynthesizer()
    views = [n.node.get_content(metadata_mode="llm") for n in NODES]
    for question in ("Who is the vet?", "When is the clinic open?", "What is the capital of France?", "Source 3?"):
        prompt = ANSWER_PROMPT.format(sources=format_sources(NODES), history=format_history([]), question=question)
        assert synthesizer.answer(question, views) == ExtractiveAnswerer().answer(prompt), question
    assert "Okafor" in synthesizer.answer("Who is the vet?", views) and "[Source 2]" in synthesizer.answer(
        "Who is the vet?", views
    )
    assert synthesizer.answer("What is the capital of France?", views) == OUT_OF_SCOPE


def test_a_stock_query_engine_takes_it_sync_async_and_streaming():
    engine = RetrieverQueryEngine(Fixed(), response_synthesizer=ExtractiveSynthesizer())
    answer = engine.query("Who is the vet?")
    assert "Okafor" in answer.response and [n.score for n in answer.source_nodes] == [0.9, 0.8, 0.1]
    assert asyncio.run(engine.aquery("Who is the vet?")).response == answer.response
    streaming = RetrieverQueryEngine(Fixed(), response_synthesizer=ExtractiveSynthesizer(streaming=True))
    assert "".join(streaming.query("Who is the vet?").response_gen) == answer.response


def test_it_is_attributed_inside_a_query_engine():
    from llama_index_ragonite import AttributedSynthesizer

    engine = RetrieverQueryEngine(Fixed(), response_synthesizer=AttributedSynthesizer(ExtractiveSynthesizer()))
    answer = engine.query("Who is the vet?")
    shares = [n.node.metadata["attribution_share"] for n in answer.source_nodes]
    assert "Okafor" in answer.response and answer.metadata["attribution"]["complete"]
    assert max(shares) == shares[1] > 0.9  # the counterfactual answers came from the same synthesizer


class Cites(CustomLLM):
    """Answers with a fixed text, remembering its prompts."""

    text: str = "Dr. Okafor is the vet [Source 2] [Source 9]."
    prompts: List[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="cites")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.text)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        self.prompts.append(prompt)
        for word in self.text.split(" "):
            yield CompletionResponse(text=word, delta=word + " ")


def test_the_cited_synthesizer_sends_the_chat_engines_prompt_and_checks_citations():
    llm = Cites(prompts=[])
    history = [ChatMessage(role=MessageRole.USER, content="Who runs the clinic?")]
    synthesizer = CitedSynthesizer(llm=llm)
    views = [n.node.get_content(metadata_mode="llm") for n in NODES]
    assert synthesizer.prompt("Who is the vet?", views, history) == ANSWER_PROMPT.format(
        sources=format_sources(NODES), history=format_history(history), question="Who is the vet?"
    )
    engine = RetrieverQueryEngine(Fixed(), response_synthesizer=synthesizer)
    answer = engine.query("Who is the vet?")
    assert answer.response == "Dr. Okafor is the vet [Source 2]."  # [Source 9] names no node: removed
    assert (
        "### Source 3 ###" in llm.prompts[-1]
        and asyncio.run(engine.aquery("Who is the vet?")).response == answer.response
    )
    streamed = RetrieverQueryEngine(Fixed(), response_synthesizer=CitedSynthesizer(llm=llm, streaming=True))
    assert "".join(streamed.query("Who is the vet?").response_gen).strip() == llm.text
    from llama_index_ragonite import AttributedSynthesizer

    AttributedSynthesizer(CitedSynthesizer(llm=llm))  # answers from the nodes: accepted
