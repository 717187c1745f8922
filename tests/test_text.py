import pytest
from fakes import HashingEmbedding

from llama_index_ragonite.chat.completion import content_terms
from llama_index_ragonite.models.extractive import language as answerer_language
from llama_index_ragonite.models.extractive.scoring import answer_words
from llama_index_ragonite.text import (
    CONVERSATION_WORDS,
    QUESTION_WORDS,
    content_words,
    detect_language,
    stopwords,
    words,
)


def test_detects_english_and_german_questions_by_their_function_words():
    assert detect_language("Which firmware did the Lenovo T14 run in the test?") == "en"
    assert detect_language("Welche Firmware hatte das Lenovo T14 bei dem Test?") == "de"
    assert detect_language("Lenovo T14 firmware") == "en"  # no function words: the first language
    assert detect_language("Lenovo T14 firmware", languages=("de", "en")) == "de"
    assert detect_language("Quel firmware pour le Lenovo T14 ?", languages=("en", "de", "fr")) == "fr"


def test_a_tie_goes_to_the_first_language_unless_told_otherwise():
    assert detect_language("Lenovo T14 firmware", tie="") == ""
    assert detect_language("Was ist mit TPM?", tie="") == "de"  # "was" counts for both, "ist" for German
    assert detect_language("Was bedeutet TPM?") == "en"  # 1:1, the first language
    assert detect_language("Was bedeutet TPM?", tie="") == ""


def test_content_words_drop_english_and_german_stopwords_and_single_letters():
    assert content_words("Which BIOS did the Dell 7040 use in v 2 of the test?") == [
        "bios", "dell", "7040", "use", "2", "test",
    ]  # fmt: skip
    assert content_words("Welches BIOS hatte der Dell 7040 im Test?") == ["bios", "dell", "7040", "test"]
    assert content_words("__ _ a 1") == ["1"]


def test_content_words_extra_words_and_whole_identifiers():
    question = "How many TPM versions were in OXT-243 on 9.0.2 with DISTRO_FEATURE?"
    assert content_words(question) == ["many", "tpm", "versions", "oxt", "243", "9", "0", "2", "distro_feature"]
    assert content_words(question, extra=["MANY", "tpm"]) == ["versions", "oxt", "243", "9", "0", "2", "distro_feature"]
    assert content_words(question, QUESTION_WORDS, whole_identifiers=True) == [
        "TPM", "versions", "OXT-243", "9.0.2", "DISTRO_FEATURE",
    ]  # fmt: skip


QUESTIONS = [
    ("en", "Which BIOS version did the Dell OptiPlex 7040 have in the OpenXT 9.0 tests?"),
    ("en", "And what about the TPM, could you tell me that too?"),
    ("en", "Is the installer signed?"),
    ("de", "Welche BIOS-Version hatte der Dell OptiPlex 7040 bei den OpenXT 9.0 Tests?"),
    ("de", "Und was ist mit dem TPM, kannst du mir das auch sagen?"),
    ("de", "Wurde der Installer signiert?"),
    ("mixed", "Was ist the measured launch of Xen?"),
    ("mixed", "Welche tests did the Dell 9010 pass?"),
    ("none", "OptiPlex 7040 BIOS?"),
]


def retriever_language(question: str) -> str:
    """The language the retriever acts on: the corpus language ("en") when BM25 keeps full weight."""
    from llama_index.core import VectorStoreIndex

    from llama_index_ragonite.index.lexical import LexicalIndex
    from llama_index_ragonite.retrieval.built_in import BuiltInSides, SideSettings
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    settings = SideSettings(corpus_language="en", cross_lingual_lexical_weight=0.5)
    retriever = HybridRetriever(
        BuiltInSides(VectorStoreIndex([], embed_model=HashingEmbedding()), LexicalIndex(), settings=settings)
    )
    return "en" if retriever.sides["lexical"].weight_for(question) == 1.0 else "de"


@pytest.mark.parametrize("expected, question", QUESTIONS)
def test_retriever_answerer_and_completer_agree_on_the_language(expected, question):
    lang = detect_language(question)
    if expected in ("en", "de"):
        assert lang == expected
    assert retriever_language(question) == lang
    assert answerer_language(question) in (lang, "")  # the answerer abstains on a tie, never contradicts
    # The completer drops the function words of both languages, so of whichever is detected.
    carried = {w for term in content_terms(question) for w in words(term)}
    assert not carried & (stopwords("en") | stopwords("de"))


@pytest.mark.parametrize("expected, question", QUESTIONS)
def test_completer_and_answerer_share_one_content_word_rule(expected, question):
    """Same rule, different arguments: the completer also drops conversational filler and keeps
    identifiers whole; otherwise they pick the same words."""
    answerer = answer_words(question)
    assert answerer == content_words(question, QUESTION_WORDS)
    completer = [w for term in content_terms(question) for w in words(term)]
    assert completer == [w for w in answerer if w not in CONVERSATION_WORDS]
