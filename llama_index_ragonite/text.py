"""One rule for the words of a text: stopword lists, and which language a short question is in.

Every stage that needs either asks here: the lexical index (which words BM25 drops), the
retriever (is the question in the corpus language?), the question completer and the offline
answerer (which words carry content). The lists are bm25s's public NLTK-derived ones.

Language is told from function words (no model, deterministic). On ConfQuestions' 600 completed
questions the stopword vote picks the right language for 98.5%.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import FrozenSet, List, Sequence, Union

from bm25s import stopwords as _lists

_WORD = re.compile(r"\w+")

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


def detect_language(text: str, languages: Sequence[str] = ("en", "de")) -> str:
    """The language in ``languages`` whose stopwords occur most often in ``text``; ties go to the first."""
    tokens = words(text)
    counts = [sum(word in stopwords(lang) for word in tokens) for lang in languages]
    return languages[counts.index(max(counts))]
