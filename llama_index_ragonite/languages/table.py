"""The shape of one language's table (``Language``): which words each offline rule reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import FrozenSet, Mapping, Tuple


@dataclass(frozen=True)
class Language:
    """One language's words, by the rule that reads them."""

    code: str  # "en"
    name: str  # "English": written into LLM prompts ("Write the questions in English")
    stemmer: str  # its Snowball algorithm (PyStemmer): words match on their stems
    stopwords: Tuple[str, ...]  # votes for the language of a text (text.detect_language)
    content_stopwords: Tuple[str, ...]  # words that never carry content (text.content_words)
    # -- the shape of a question
    question_starts: FrozenSet[str]  # a question or request may open with these (text.is_request)
    sentence_openers: FrozenSet[str]  # capitalised inside a completed question, they start the user's own words
    yes_no_openers: FrozenSet[str]  # a question opening with one is answered by a polarity
    question_words: FrozenSet[str]  # shape a question, not its answer, and are no stopwords
    conversation_words: FrozenSet[str]  # filler ("tell me", "thanks"): never a follow-up's topic
    leading_prepositions: FrozenSet[str]  # may precede the question word ("In which year …?")
    determiners: FrozenSet[str]  # a topic noun follows them (follow-up suggestions)
    # -- pointing back to an earlier turn
    pointing_words: FrozenSet[str]  # pronouns and demonstratives that point back
    ellipsis_openers: Tuple[str, ...]  # "and …?", "what about …?": the turn continues the last one
    expletive_patterns: Tuple[str, ...]  # a pointing word used expletively ("is it possible to")
    relative_pointers: Mapping[str, FrozenSet[str]] = field(
        default_factory=dict
    )  # word: points back first or after these only
    article_pointers: FrozenSet[str] = frozenset()  # point back unless a capitalised noun follows ("das")
    polite_pronouns: FrozenSet[str] = frozenset()  # as written, not first: a form of address ("Sie")
    verb_pronouns: FrozenSet[str] = frozenset()  # also a verb that ends a clause ("sein") before ``clause_ends``
    clause_ends: FrozenSet[str] = frozenset()
    # -- what a question asks for and whether a text holds it (models/extractive/answer_types.py)
    asks_patterns: Mapping[str, Tuple[str, ...]] = field(default_factory=dict)  # kind: the question's own words
    months: Tuple[str, ...] = ()
    weekdays: Tuple[str, ...] = ()
    number_words: Tuple[str, ...] = ()  # counts ("one" is none: "one of them" counts nothing)
    one_patterns: Tuple[str, ...] = ()  # "a"/"one" before a time unit ("a week", "eine Woche")
    time_units: Tuple[str, ...] = ()
    periodic: Tuple[str, ...] = ()  # "weekly"
    clock_words: Tuple[str, ...] = ()  # after an hour ("2 pm", "14 Uhr")
    person_titles: Tuple[str, ...] = ()  # as written, before a name ("Dr", "Frau")
    negation_patterns: Tuple[str, ...] = ()
    # -- page furniture and writing
    byline_openers: Tuple[str, ...] = ()  # a footer line, not an answer ("last updated …")
    about_page: Tuple[str, ...] = ()  # a question about the page itself asks for its byline
    abbreviations: Tuple[str, ...] = ()  # end with a full stop but no sentence ("e.g.")
    # -- cutting a quote to the point (models/extractive/compose.py)
    clause_connectives: Tuple[str, ...] = ()  # after a comma they open a clause that may be cut ("which", "weil")
    subordinators: Tuple[str, ...] = ()  # open a subordinate clause, whose subject is no answer's ("once", "if")
    copulas: Tuple[str, ...] = ()  # "The main build script is do_build.sh": the subject before it may go
    copula_modifiers: Tuple[str, ...] = ()  # after a copula, the subject must stay ("is not", "is still")
    participle_patterns: Tuple[str, ...] = ()  # a verb form after a copula ("is located"): the subject stays
    cognate_spelling: Tuple[Tuple[str, str], ...] = ()  # spelled alike with the other languages ("k" → "c")
    # -- what LLMs write around a rephrased question, and follow-up phrasing
    rephrase_labels: Tuple[str, ...] = ()  # "Rephrased question:" → "rephrased"
    rephrase_nouns: Tuple[str, ...] = ()  # "question", "statement"
    source_words: Tuple[str, ...] = ()  # "[Source 1]", "[Quelle 1]": a reply that cites has answered
    follow_up_phrases: Mapping[str, str] = field(default_factory=dict)  # cell / topic / untitled
    # another page states the answer's statement with other values (models/extractive/conflicts.py):
    # older / newer / differs (times unknown or equal); {title}, {answer_title}, {quote} (cited)
    conflict_phrases: Mapping[str, str] = field(default_factory=dict)


def words(text: str) -> FrozenSet[str]:
    """The whitespace-separated words of ``text``: how the tables write their word sets."""
    return frozenset(text.split())
