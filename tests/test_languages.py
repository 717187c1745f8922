"""The language tables: each is complete, and the offline rules read every table's words."""

from __future__ import annotations

import re
from dataclasses import fields

import pytest
import Stemmer

from llama_index_ragonite.chat.suggestions import question_language
from llama_index_ragonite.languages import LANGUAGES, Language, alternation, every, language_table
from llama_index_ragonite.models.extractive.answer_types import asked_type, holds_type
from llama_index_ragonite.models.extractive.units import split_units
from llama_index_ragonite.text import content_words, detect_language, is_request, pointing_word

TABLES = list(LANGUAGES.values())


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.code)
def test_every_table_fills_what_every_rule_reads(table: Language) -> None:
    assert Stemmer.Stemmer(table.stemmer).stemWord("questions")
    for name in ("stopwords", "content_stopwords", "question_starts", "sentence_openers", "yes_no_openers",
                 "pointing_words", "ellipsis_openers", "months", "weekdays", "number_words", "time_units"):  # fmt: skip
        assert getattr(table, name), f"{table.code}: {name} is empty"
    assert set(table.asks_patterns) == {"date", "count", "duration", "amount", "person"}
    assert set(table.follow_up_phrases) == {"cell", "topic", "untitled"}
    assert table.sentence_openers <= table.question_starts and table.yes_no_openers <= table.question_starts
    for name in ("asks_patterns", "expletive_patterns", "negation_patterns", "one_patterns"):
        value = getattr(table, name)
        for pattern in (p for v in value.values() for p in v) if isinstance(value, dict) else value:
            re.compile(pattern)


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.code)
def test_the_rules_read_each_table(table: Language) -> None:
    for word in table.question_starts:
        assert is_request(f"{word.capitalize()} the Aurora release")
        assert question_language(f"{word} Aurora") == ("de" if word == "was" else table.code)  # "was …": German
    for word in table.pointing_words - table.verb_pronouns:
        assert pointing_word(f"Where does Aurora ship {word}?") == word
    for word in table.question_words | set(table.content_stopwords):
        assert not content_words(f"Aurora {word}", table.question_words)[1:]
    for month in table.months:
        assert holds_type(f"on 3 {month} 2024", "date")
    assert detect_language(" ".join(sorted(table.stopwords)[:20]), languages=tuple(LANGUAGES)) == table.code


def test_answer_types_are_asked_in_either_language() -> None:
    assert asked_type("Who is the vet?") == asked_type("Wer ist der Tierarzt?") == "person"
    assert asked_type("How much is a rabbit?") == asked_type("Was kostet ein Kaninchen?") == "amount"
    assert asked_type("When does it open?") == asked_type("Wann öffnet es?") == "date"
    assert holds_type("Dr. Okafor is the resident vet.", "person") and holds_type("Frau Yilmaz hilft.", "person")


def test_abbreviations_of_every_table_end_no_sentence() -> None:
    assert split_units("Bring papers, e.g. Your passport. Dann z.B. Den Ausweis.") == [
        "Bring papers, e.g. Your passport.",
        "Dann z.B. Den Ausweis.",
    ]


def test_unions_and_alternations_cover_every_table() -> None:
    assert every("question_starts") == frozenset().union(*(t.question_starts for t in TABLES))
    months = re.compile(alternation("months") + r"$", re.I)
    assert all(months.match(m) for t in TABLES for m in t.months)
    assert language_table("fr") is LANGUAGES["en"] and language_table("de").name == "German"
    assert {f.name for f in fields(Language)} >= {"code", "name", "stemmer"}
