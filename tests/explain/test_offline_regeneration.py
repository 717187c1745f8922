"""Counterfactual regenerations with the offline answerer read the nodes, as the chat engine's answer step does."""

import asyncio

from fakes import parse
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite import EvidenceContextualizer, ExtractiveAnswerer, ExtractiveSynthesizer
from llama_index_ragonite.explain.regeneration import AnswerRegenerator

PAGE = (
    "<h1>Equipment</h1><p>Every new colleague gets a laptop by role, ordered by IT two weeks before the start.</p>"
    "<table><tr><th>Role</th><th>RAM</th></tr><tr><td>Sales</td><td>16 GB</td></tr>"
    "<tr><td>Engineering</td><td>32 GB, and 64 GB on request</td></tr></table>"
)


class NoPrompts(ExtractiveAnswerer):
    def complete(self, prompt, formatted=False, **kwargs):
        raise AssertionError("the offline regeneration formatted a prompt for the answerer to parse back")


def test_the_offline_answerer_regenerates_from_the_nodes_not_from_a_prompt():
    nodes = [NodeWithScore(node=n, score=1.0) for n in EvidenceContextualizer()(parse(PAGE, table_granularity="rows"))]
    answerer = NoPrompts(by_meaning=False)
    regenerator = AnswerRegenerator(llm=answerer)
    question = "How much RAM do engineers get?"
    answers = asyncio.run(regenerator.aanswer_many(question, [nodes, nodes[:2]], among=nodes))
    assert answers[0] == ExtractiveSynthesizer(answerer).answer(question, nodes)
    assert "64 GB on request" in answers[0] and "64 GB" not in (answers[1] or "")
    assert regenerator.calls == 2 and not regenerator.errors
