"""Follow-up suggestions: from the evidences' content, in the user's language, by the LLM when there is one."""

import asyncio
from typing import Any, List, Optional

import pytest
from fakes import WIKI_PAGES, HashingEmbedding, KeywordLLM, parse
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.schema import Document, NodeWithScore

from llama_index_ragonite import RagoniteChatEngine
from llama_index_ragonite.chat.suggestions import FollowUpSuggester, parse_follow_ups, suggest_follow_ups
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.retrieval.retriever import HybridRetriever
from llama_index_ragonite.text import detect_language

NODES = [NodeWithScore(node=n, score=1.0) for key, html in WIKI_PAGES.items() for n in parse(html, key)]
BOB_ROW = 3  # 1-based: team table, Alice row, Bob row, install list, install passage, FAQ passage
TITLES = {n.node.metadata["title"].lower() for n in NODES} | {n.node.metadata["heading"].lower() for n in NODES}


class SuggestingLLM(CustomLLM):
    """Answers answer prompts with ``answer``, follow-up prompts with ``suggestions`` (or raises ``fail``)."""

    answer: str = "Bob ranks evidences [Source 1]."
    suggestions: str = "1. Was macht Alice?\n2. Wie lange dauert die Installation?\n3. Was braucht ein Upgrade?"
    fail: Any = None
    delay: float = 0.0
    prompts: List[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="suggesting")

    def _text(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if "Follow-up questions:" not in prompt:
            return self.answer
        if self.fail is not None:
            raise self.fail
        return self.suggestions

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._text(prompt))

    @llm_completion_callback()
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        await asyncio.sleep(self.delay)
        return CompletionResponse(text=self._text(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self._text(prompt)
        yield CompletionResponse(text=text, delta=text)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = EvidenceStore(tmp_path_factory.mktemp("store"), embed_model=HashingEmbedding())
    s.ingest([Document(id_=k, text=v, metadata={"url": f"https://wiki.example/{k}"}) for k, v in WIKI_PAGES.items()])
    return s


def engine(store, llm: Optional[Any] = None, **kwargs) -> RagoniteChatEngine:
    llm = llm if llm is not None else SuggestingLLM(prompts=[])
    return RagoniteChatEngine(HybridRetriever.from_store(store), llm=llm, complete_questions=False, **kwargs)


# -- offline ------------------------------------------------------------------------------


def test_suggestions_are_built_from_the_evidences_content():
    suggestions = suggest_follow_ups(NODES, "What is the task of Bob?", cited=[BOB_ROW])
    assert suggestions[0] == "What is the Task of Alice?"  # the asked column, in the table's other row
    assert any("reboot" in q or "installing" in q for q in suggestions)  # the other passages' topics
    assert all(detect_language(q, tie="en") == "en" for q in suggestions)
    assert not any(q.lower().rstrip("?").endswith(t) for q in suggestions for t in TITLES)  # not only titles


def test_a_german_turn_gets_german_suggestions():
    suggestions = suggest_follow_ups(NODES, "Wer parst die Wiki-Seiten?", cited=[2])
    assert suggestions and all(q.startswith(("Was ist", "Was sagt")) for q in suggestions)
    assert "Was ist Task bei Bob?" in suggestions  # the asked column, another row
    assert suggest_follow_ups(NODES, "Wer parst die Wiki-Seiten?", language="en", cited=[2])[0].startswith("What")


def test_a_cited_row_suggests_its_other_cells():
    row = parse(
        "<title>Release tests</title><h1>BIOS</h1><table><tr><th>Platform</th><th>BIOS</th><th>Firmware</th></tr>"
        "<tr><td>Lenovo T14</td><td>R1MET</td><td>1.32</td></tr><tr><td>HP 8300</td><td>v02</td><td>2.1</td></tr></table>",
        "bios",
    )
    nodes = [NodeWithScore(node=n, score=1.0) for n in row if n.metadata["evidence_type"] == "table_row"]
    suggestions = suggest_follow_ups(nodes, "Which BIOS does the Lenovo T14 run?", cited=[1])
    assert suggestions[:2] == ["What is the Firmware of Lenovo T14?", "What is the BIOS of HP 8300?"]


def test_a_passage_topic_is_a_name_in_it_before_the_first_word_after_an_article():
    page = parse(
        "<title>OTA update server</title><h1>Architecture</h1>"
        "<p>The server is a stateless HTTPS service behind the company load balancer.</p>",
        "ota",
    )
    nodes = [NodeWithScore(node=n, score=1.0) for n in page]
    (suggestion,) = suggest_follow_ups(nodes, "Who owns the OTA server?")
    assert suggestion.endswith("say about HTTPS service?")  # not "stateless", the word after "a"


def test_an_out_of_scope_turn_suggests_only_evidences_that_share_a_word_with_the_question():
    assert suggest_follow_ups(NODES, "What is the weather in Paris?", answered=False) == []
    related = suggest_follow_ups(NODES, "Do over-the-air upgrades work in Paris?", answered=False)
    assert len(related) == 1 and related[0].endswith("say about reboot?")  # the FAQ passage, the only one on upgrades
    assert suggest_follow_ups(NODES, "What is the weather in Paris?")  # answered: every evidence may be asked about


def test_the_engine_suggests_nothing_unrelated_after_an_out_of_scope_answer(store):
    chat = RagoniteChatEngine(HybridRetriever.from_store(store), complete_questions=False)
    response = chat.chat("What is the weather in Paris?")
    assert "cannot be found" in str(response) and response.turn.follow_ups == []


def test_nothing_to_suggest_without_evidence_or_when_switched_off():
    assert suggest_follow_ups([], "Who?") == [] and suggest_follow_ups(NODES, "Who?", limit=0) == []


def test_the_offline_engine_suggests_in_the_turns_language(store):
    chat = RagoniteChatEngine(HybridRetriever.from_store(store), complete_questions=False)
    german = chat.chat("Welche Aufgabe hat Bob im Team?")
    assert german.turn.language == "de" and german.turn.follow_ups
    assert all(detect_language(q, tie="de") == "de" for q in german.turn.follow_ups)
    assert "follow_ups" not in german.turn.prompts  # the extractive answerer is never asked for them


# -- with an LLM ------------------------------------------------------------------------------


def test_an_llm_writes_the_suggestions_in_the_users_language(store):
    llm = SuggestingLLM(prompts=[])
    response = engine(store, llm).chat("Welche Aufgabe hat Bob im Team?")
    assert response.turn.follow_ups == [
        "Was macht Alice?",
        "Wie lange dauert die Installation?",
        "Was braucht ein Upgrade?",
    ]
    [answer_prompt, prompt] = llm.prompts  # one extra call, after the answer
    assert prompt == response.turn.prompts["follow_ups"] and answer_prompt == response.turn.prompts["answer"]
    assert "in German" in prompt and "Welche Aufgabe hat Bob im Team?" in prompt and "Ranking evidences" in prompt
    assert response.metadata["follow_ups"] == response.turn.follow_ups


@pytest.mark.fault(
    "the LLM fails or answers garbage when asked for follow-up suggestions",
    "the offline suggestions instead; the turn's answer stands",
)
@pytest.mark.parametrize(
    "llm",
    [
        SuggestingLLM(fail=TimeoutError("slow"), prompts=[]),
        SuggestingLLM(suggestions="Sure! Here are some ideas.", prompts=[]),
        SuggestingLLM(suggestions="What does Alice do?\nHow long does installing take?", prompts=[]),  # not German
        KeywordLLM(keyword="Bob", prompts=[]),
    ],
    ids=["raises", "no questions", "wrong language", "keyword llm"],
)
def test_a_failed_or_garbled_llm_suggestion_falls_back_to_offline(store, llm):
    question = "Welche Aufgabe hat Bob im Team?"
    response = engine(store, llm).chat(question)
    assert response.response and response.turn.warning is None
    offline = suggest_follow_ups(response.source_nodes, question, language="de", cited=response.turn.cited)
    assert response.turn.follow_ups == offline and offline


def test_streaming_and_async_turns_get_llm_suggestions_too(store):
    streamed = engine(store).stream_chat("Welche Aufgabe hat Bob im Team?")
    assert "".join(streamed.response_gen) and streamed.turn.follow_ups[0] == "Was macht Alice?"
    answered = asyncio.run(engine(store).achat("Welche Aufgabe hat Bob im Team?"))
    assert answered.turn.follow_ups[0] == "Was macht Alice?"


def test_suggestions_are_optional(store):
    llm = SuggestingLLM(prompts=[])
    response = engine(store, llm, follow_ups=0).chat("Which task does Bob have?")
    assert response.turn.follow_ups == [] and len(llm.prompts) == 1  # no extra call


def test_concurrent_turns_each_get_their_own_languages_suggestions(store):
    llm = SuggestingLLM(suggestions="What does Alice do?\nWas macht Alice?", delay=0.02, prompts=[])

    async def run():
        return await asyncio.gather(
            engine(store, llm).achat("Which task does Bob have?"),
            engine(store, llm).achat("Welche Aufgabe hat Bob im Team?"),
        )

    english, german = asyncio.run(run())
    assert english.turn.follow_ups == ["What does Alice do?"] and german.turn.follow_ups == ["Was macht Alice?"]


def test_parse_follow_ups_keeps_questions_only():
    reply = '1. "What does Alice do?"\n- How long does installing take?\nHere you go\nWhat does Alice do?\n[Source 1]?'
    assert parse_follow_ups(reply, "Who?", "en", 3) == ["What does Alice do?", "How long does installing take?"]
    assert FollowUpSuggester(limit=2).ask(NODES, "Who?", "en", {}) is None  # no LLM: offline
