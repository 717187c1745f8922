"""The answer synthesizers, nodes in, answer out: offline (``ExtractiveSynthesizer``) and for any LLM
(``CitedSynthesizer``), in stock LlamaIndex query engines too."""

from __future__ import annotations

import asyncio
from typing import Any, List

from fakes import parse
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from llama_index_ragonite import CitedSynthesizer, EvidenceContextualizer, ExtractiveSynthesizer
from llama_index_ragonite.models.extractive import node_source
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


HANDBOOK = (
    "<h1>Equipment</h1><p>Every new colleague gets a laptop by role, ordered by IT two weeks before the start.</p>"
    "<table><tr><th>Role</th><th>Model</th><th>RAM</th></tr>"
    "<tr><td>Sales</td><td>Lenovo ThinkPad X1 Carbon</td><td>16 GB</td></tr>"
    "<tr><td>Engineering</td><td>Dell Precision 5570</td><td>32 GB, and 64 GB on request</td></tr></table>"
    "<p>Broken laptops go to the service desk on floor 2.</p>"
)
QUESTIONS = ("How much RAM do engineers get?", "Where do broken laptops go?", "When does IT order the laptop?")


def never_rendered(node):
    """``node`` with its structure fields and no rendered context: no header key, LlamaIndex's templates."""
    metadata = {k: v for k, v in node.metadata.items() if k not in ("context", "embed_context")}
    return TextNode(id_=node.node_id, text=node.text, metadata=metadata, relationships=node.relationships)


def test_the_offline_synthesizer_answers_from_structure_fields_without_rendered_text():
    rendered = EvidenceContextualizer()(parse(HANDBOOK, table_granularity="rows"))
    fields = [never_rendered(n) for n in rendered]
    labels = ("Page:", "Section:", "Before:", "After:")
    assert not any(label in n.get_content(MetadataMode.LLM) for n in fields for label in labels)
    assert all("before_text" in n.metadata or "after_text" in n.metadata for n in fields)
    synthesizer = ExtractiveSynthesizer()
    scored = [NodeWithScore(node=n, score=1.0 - i / 10) for i, n in enumerate(fields)]
    answers = {q: synthesizer.answer(q, scored) for q in QUESTIONS}
    shown = [NodeWithScore(node=n, score=1.0 - i / 10) for i, n in enumerate(rendered)]
    assert answers == {q: synthesizer.answer(q, shown) for q in QUESTIONS}  # the same as from the rendered nodes
    assert "floor 2 [Source 4]" in answers["Where do broken laptops go?"]
    # the cell "32 GB, and 64 GB on request" is read from the row's fields, not cut at the sentence's ", and "
    assert "Engineering: 32 GB, and 64 GB on request [Source 3]" in answers["How much RAM do engineers get?"]
    assert "two weeks" in answers["When does IT order the laptop?"]

    class Retrieved(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
            return list(scored)

    engine = RetrieverQueryEngine(Retrieved(), response_synthesizer=ExtractiveSynthesizer())
    assert {q: engine.query(q).response for q in QUESTIONS} == answers
    assert {q: asyncio.run(engine.aquery(q)).response for q in QUESTIONS} == answers


def test_a_counterfactual_withheld_neighbour_line_is_not_read_from_the_fields():
    from llama_index_ragonite.explain.regeneration import withheld

    rendered = EvidenceContextualizer()(parse(HANDBOOK, table_granularity="rows"))
    row, footer = (NodeWithScore(node=n, score=1.0) for n in rendered[2:4])
    assert node_source(1, row.node).after == "Broken laptops go to the service desk on floor 2."
    kept = withheld([row], [footer])[0].node
    source = node_source(1, kept)
    assert kept.metadata["after_text"] and source.after == "" and source.context == source.before.strip() != ""


def test_texts_alone_are_read_as_llm_views():
    views = [n.node.get_content(metadata_mode="llm") for n in NODES]
    answer = ExtractiveSynthesizer().get_response("Who is the vet?", views)
    assert "Okafor" in answer and "[Source 2]" in answer
    assert ExtractiveSynthesizer().get_response("What is the capital of France?", views) == OUT_OF_SCOPE


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
