"""One rule for the words of a text: stopword lists, which words carry content, and which
language a short question is in.

Every stage that needs either asks here: the lexical index (which words BM25 drops), the
retriever, the question completer and the offline answerer (is the question in the corpus'
or the sources' language? ``detect_language``; which words carry content? ``content_words``).
The stopword lists are bm25s's public NLTK-derived ones; every other word a rule here reads
(question words, conversational filler, words that point back) comes from the language tables
(``languages/``), one per language.

Language is told from function words (no model, deterministic). On ConfQuestions' 600 completed
questions the stopword vote picks the right language for 98.5% (raw turns: 587 of 600).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import FrozenSet, Iterable, List, Optional, Sequence, Union

from bm25s import stopwords as _lists

from llama_index_ragonite.languages import LANGUAGES, alternation, every

_WORD = re.compile(r"\w+")
# Identifiers stay whole: "9.0.2", "OXT-243", "DISTRO_FEATURE", "TXT-Testing".
_TERM = re.compile(r"\w+(?:[.\-_/]\w+)*")

STOPWORD_LISTS = {
    "en": _lists.STOPWORDS_EN,
    "english": _lists.STOPWORDS_EN,
    "en_plus": _lists.STOPWORDS_EN_PLUS,
    "english_plus": _lists.STOPWORDS_EN_PLUS,
    "de": _lists.STOPWORDS_GERMAN,
    "german": _lists.STOPWORDS_GERMAN,
    "nl": _lists.STOPWORDS_DUTCH,
    "fr": _lists.STOPWORDS_FRENCH,
    "es": _lists.STOPWORDS_SPANISH,
    "pt": _lists.STOPWORDS_PORTUGUESE,
    "it": _lists.STOPWORDS_ITALIAN,
    "ru": _lists.STOPWORDS_RUSSIAN,
    "sv": _lists.STOPWORDS_SWEDISH,
    "no": _lists.STOPWORDS_NORWEGIAN,
    "zh": _lists.STOPWORDS_CHINESE,
    "tr": _lists.STOPWORDS_TURKISH,
    "ko": _lists.STOPWORDS_KOREAN,
    "da": _lists.STOPWORDS_DANISH,
}


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_unicode(text: str) -> str:
    """``text`` with lone surrogates (undecodable bytes an LLM client kept) as U+FFFD: storable and printable."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def stopword_list(stopwords: Union[str, Sequence[str], None]) -> List[str]:
    """Resolve ``stopwords`` (language codes joined by ``+`` such as ``"en+de"``, one code, a word
    list, or None) to one sorted word list; an unknown code is a ``ValueError`` naming the known ones."""
    if stopwords is None:
        return []
    if isinstance(stopwords, str):
        words: set = set()
        for code in stopwords.split("+"):
            code = code.strip().lower()
            if code not in STOPWORD_LISTS:
                raise ValueError(f"unknown stopword language {code!r}: use one of {', '.join(sorted(STOPWORD_LISTS))}")
            words.update(STOPWORD_LISTS[code])
        return sorted(words)
    return list(stopwords)


@lru_cache(maxsize=None)
def stopwords(language: str) -> FrozenSet[str]:
    """The stopwords of one language code (or ``+``-joined codes), as a set."""
    return frozenset(stopword_list(language))


def words(text: str) -> List[str]:
    """Lower-cased word tokens (``\\w+``) of ``text``."""
    return _WORD.findall(text.lower())


def detect_language(text: str, languages: Sequence[str] = ("en", "de"), tie: Optional[str] = None) -> str:
    """The language in ``languages`` whose stopwords occur most often in ``text``.

    Ties go to the first of the tied languages, or to ``tie`` when given: the retriever must
    pick a side, the answerer abstains (``tie=""``) rather than guess.
    """
    tokens = words(text)
    counts = [sum(word in stopwords(lang) for word in tokens) for lang in languages]
    best = max(counts)
    if tie is not None and counts.count(best) > 1:
        return tie
    return languages[counts.index(best)]


# ---------------------------------------------------------------------- content words

# Questions and conversations come in English and German (ConfQuestions asks in both), so the
# content-word rule drops the function words of every language, whatever the question's language.
# Interrogatives and auxiliaries the stock lists lack: they shape a question, not its answer.
QUESTION_WORDS = every("question_words")
# Conversational filler ("tell me", "thanks", "übrigens", "erzähl mal"): never what a follow-up's topic
# is, so the question completer does not carry it over.
CONVERSATION_WORDS = every("conversation_words")


@lru_cache(maxsize=64)
def _dropped(extra: FrozenSet[str]) -> FrozenSet[str]:
    return every("content_stopwords") | extra


def content_words(text: str, extra: Iterable[str] = (), *, whole_identifiers: bool = False) -> List[str]:
    """The words of ``text`` that carry content: no English or German stopword, no word in
    ``extra`` (case-insensitive), no single letter (single digits stay), no bare underscores.

    ``whole_identifiers=False`` gives lower-cased ``\\w+`` words, for matching; ``True`` gives
    the tokens as written with identifiers kept whole ("OXT-243", "9.0.2"), for quoting them
    into a query. Callers that also drop question words or conversational filler pass
    ``QUESTION_WORDS`` / ``CONVERSATION_WORDS`` as ``extra``.
    """
    drop = _dropped(extra if isinstance(extra, frozenset) else frozenset(w.lower() for w in extra))
    tokens = _TERM.findall(text) if whole_identifiers else words(text)
    return [t for t in tokens if t.lower() not in drop and (len(t) > 1 or t.isdigit()) and t.strip("_")]


# What a carried term may be (question completion) is the content-word rule above (English and German stopwords,
# whatever the turn's language, as ConfQuestions asks in both), minus question words and
# conversational filler; identifiers stay whole ("9.0.2", "OXT-243", "DISTRO_FEATURE").
COMPLETION_STOPWORDS = QUESTION_WORDS | CONVERSATION_WORDS


def content_terms(text: str, extra: Iterable[str] = ()) -> List[str]:
    """The words of ``text`` that can name a topic: no stopwords, question words, filler or ``extra``
    words, no single letters (digits stay); identifiers whole, case as written."""
    return content_words(text, COMPLETION_STOPWORDS | {w.lower() for w in extra}, whole_identifiers=True)


def carried_terms(user_turns: Sequence[str], message: str, max_terms: int = 20, extra: Iterable[str] = ()) -> List[str]:
    """Terms to carry into ``message``: those of the first user turn (the topic), then the previous one's.

    Terms already in ``message`` are skipped (case-insensitive), each term comes once, at
    most ``max_terms`` in all. Why these two turns: the first one names the topic (on
    ConfQuestions, P@1 with the previous turn alone is 0.58, with the first 0.75-0.78, with
    both 0.77-0.79; all earlier turns gave no more). ``extra``: more words never to carry.
    """
    seen = {t.lower() for t in content_terms(message, extra)}
    sources = [user_turns[0]] + ([user_turns[-1]] if len(user_turns) > 1 else [])
    out: List[str] = []
    for source in sources:
        for term in content_terms(source, extra):
            if term.lower() not in seen:
                seen.add(term.lower())
                out.append(term)
    return out[:max_terms]


# ---------------------------------------------------------------------- does a turn need its conversation?

# Words that point back to something said before. "that", "it", "es" and "das" are also
# relative pronouns, expletives or articles: ``pointing_end`` looks at their neighbours.
ANAPHORA_WORDS = every("pointing_words")
# Where an ellipsis starts: "And the firmware?", "What about TPM?", "Und die Firmware?", "Was ist mit TPM?".
# Tried and not kept (issue 45): "And …" as an ellipsis only before a fragment ("Und welches Diensthandy
# bekommen Leute im Vertrieb?" is a question of its own); on benchmarks/heldout_wiki_b (13e9fb6) answerable
# accuracy 0.323 without it, 0.308 with it (ellipsis turns 0.273 vs 0.212): most such turns lean on the last one.
_ELLIPSIS = re.compile(r"^\W*" + alternation("ellipsis_openers") + r"\b", re.I)
_EXPLETIVE = re.compile(alternation("expletive_patterns", words=False), re.I)
_RELATIVE_POINTERS = {word: after for t in LANGUAGES.values() for word, after in t.relative_pointers.items()}
# The words a question starts with; a turn that starts otherwise and is short is a fragment.
_QUESTION_START = every("question_starts")
_LEADING_PREPOSITIONS = every("leading_prepositions")
_ARTICLE_POINTERS = every("article_pointers")
_POLITE_PRONOUNS = every("polite_pronouns")
_VERB_PRONOUNS = every("verb_pronouns")
_CLAUSE_END = every("clause_ends")
_NOUN_OPENERS = frozenset("\"'„“‚‘«")


def refers_back(text: str) -> bool:
    """Does the turn point back (a pronoun, a demonstrative, an ellipsis) rather than name its subject?

    "Where is it located?", "What was the QEMU version in these tests?", "Und die Firmware?",
    "Wofür steht das?"; not "Is it possible to …", "How long does it take to …", "Gibt es …", "the cases that include …",
    "das Host-Szenario" (an article before a noun), the polite "Sie", or "sein" ending a clause
    ("Wie heiß muss der Ofen sein?": the verb; the possessive precedes its noun).
    """
    return bool(_ELLIPSIS.match(text)) or pointing_word(text) is not None


def pointing_word(text: str) -> Optional[str]:
    """The first word of ``text`` that points back ("it", "these", "dort", "das" before no noun), or None."""
    end = pointing_end(text)
    return re.findall(r"\w+", text[:end])[-1] if end is not None else None


def pointing_end(text: str) -> Optional[int]:
    """Where the first word of ``text`` that points back ends (an offset into ``text``), or None."""
    blanked = _EXPLETIVE.sub(lambda m: " " * len(m.group(0)), text)  # offsets stay those of ``text``
    found = list(re.finditer(r"\w+|[^\w\s]", blanked))
    tokens = [m.group(0) for m in found]
    for i, token in enumerate(tokens):
        low, before = token.lower(), tokens[i - 1].lower() if i else ""
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if (
            (
                low in ANAPHORA_WORDS
                and not (token in _POLITE_PRONOUNS and i > 0)
                and not (low in _VERB_PRONOUNS and _ends_clause(after))
            )
            or (low in _RELATIVE_POINTERS and (not before or before in _RELATIVE_POINTERS[low]))
            or (low in _ARTICLE_POINTERS and before and not after[:1].isupper())  # "Ist das vorgeschrieben?"
        ):
            return found[i].end()
    return None


def _ends_clause(after: str) -> bool:
    """The token after a German "sein" ends its clause (punctuation, a conjunction, an auxiliary): the verb."""
    return not after or (
        after in _CLAUSE_END if after.isalpha() else after not in _NOUN_OPENERS and not after.isdigit()
    )


def is_fragment(text: str) -> bool:
    """A short turn that is no question of its own: "TPM?", "Version 9.0.2 then?", "Nur die Firmware."."""
    tokens = words(text)
    if len(tokens) > 1 and tokens[0] in _LEADING_PREPOSITIONS:
        tokens = tokens[1:]
    return bool(tokens) and tokens[0] not in _QUESTION_START and len(content_terms(text)) <= 3


def is_request(text: str) -> bool:
    """A question or a request: it ends with a question mark or opens with a question word or an
    imperative ("What…", "Wer…", "List…", "Nenne…"). An answer ("Dogs cost 120 EUR.") is neither."""
    tokens = words(text)
    return text.rstrip().endswith("?") or (bool(tokens) and tokens[0] in _QUESTION_START)
