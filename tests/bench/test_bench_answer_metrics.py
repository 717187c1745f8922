import pytest

from llama_index_ragonite.bench.answer_metrics import (
    answer_text,
    is_out_of_scope,
    k_precision,
    normalize_answer,
    token_f1,
    token_recall,
    tokens,
)
from llama_index_ragonite.prompts import OUT_OF_SCOPE


def test_squad_normalization():
    assert normalize_answer("The  Version, 2.0!") == "version 20"
    assert normalize_answer("An apple and a theory") == "apple and theory"  # articles only as whole words
    assert normalize_answer("  ") == ""


def test_token_f1_by_hand():
    # answer "Bob owns the OTA server" -> bob owns ota server (4); gold "Bob owns it" -> bob owns it (3)
    # overlap 2: precision 2/4, recall 2/3, F1 = 2 * 0.5 * 0.667 / 1.167 = 0.571
    assert token_f1("Bob owns the OTA server", ["Bob owns it"]) == pytest.approx(4 / 7)
    assert token_f1("Bob owns the OTA server", ["nobody", "Bob owns it", "OTA"]) == pytest.approx(4 / 7)  # best
    assert token_f1("QEMU 1.4", ["qemu 1.4"]) == pytest.approx(1.0)
    assert token_f1("Carol", ["Bob owns it"]) == 0.0 and token_f1("Carol", []) == 0.0


def test_token_recall_by_hand():
    # gold "Bruno Keller owns it" -> bruno keller owns it (4 tokens); answer holds bruno, keller
    assert token_recall("Owner: Bruno Keller.", ["Bruno Keller owns it"]) == pytest.approx(2 / 4)
    # multiset: a gold token counts as often as it appears in both
    assert token_recall("yes", ["yes yes"]) == pytest.approx(1 / 2)
    assert token_recall("yes yes no", ["yes yes"]) == 1.0
    assert token_recall("nothing shared", ["March 2024"]) == 0.0


def test_token_recall_is_the_maximum_over_references():
    assert token_recall("in March 2024", ["March 2024", "the third month of 2024"]) == 1.0
    assert token_recall("in March 2024", ["third month of 2024", "March"]) == 1.0
    assert token_recall("x", []) == 0.0


def test_k_precision_by_hand():
    # answer tokens: it ships in march 2024 (5); evidence holds ships, in, march, 2024 -> 4/5
    evidence = "The Falcon release ships in March 2024."
    assert k_precision("It ships in March 2024", [evidence]) == pytest.approx(4 / 5)
    # Unitxt: each evidence is a reference, the best one counts (no concatenation)
    assert k_precision("march monday", ["in March", "every Monday"]) == pytest.approx(1 / 2)
    assert k_precision("anything", []) == 0.0


def test_answer_text_drops_label_and_citations():
    raw = "Extractive answer: It ships in March 2024 [Source 1]. Owner Bruno [Sources 2, 3]"
    assert answer_text(raw, "Extractive answer: ") == "It ships in March 2024. Owner Bruno"
    assert answer_text("Extractive answer: x", "") == "Extractive answer: x"


def test_out_of_scope():
    assert is_out_of_scope(OUT_OF_SCOPE) and is_out_of_scope("Sorry. " + OUT_OF_SCOPE.lower())
    assert not is_out_of_scope("It ships in March.")


def test_a_removed_citation_leaves_words_that_start_with_punctuation_apart():
    """The .config stays a word of its own: the space goes only before punctuation that ends a clause."""
    answer = "Extractive answer: Edit the .config file [Source 1]. Then run ./setup [Source 2], once."
    assert answer_text(answer, "Extractive answer: ") == "Edit the .config file. Then run ./setup, once."
    # by hand: answer tokens edit config file then run setup once (7; "the" is an article)
    # gold "the .config file" -> config file (2), both in the answer: recall 2/2
    assert token_recall(answer_text(answer, "Extractive answer: "), ["the .config file"]) == 1.0
    # context "Edit the .config file, then run ./setup once." -> edit config file then run setup once: 7 of 7
    context = "Edit the .config file, then run ./setup once."
    assert k_precision(answer_text(answer, "Extractive answer: "), [context]) == 1.0
    # a marker before a word's own punctuation: "see [Source 1] .bashrc" keeps ".bashrc" a word of its own
    assert tokens(answer_text("Open [Source 1] .bashrc now.")) == ["open", "bashrc", "now"]
