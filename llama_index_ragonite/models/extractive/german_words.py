"""Whether a capitalized word of a German question is a German word or a name.

Why: German capitalizes every noun, so case alone cannot tell "Seriennummer" from a product or
code name such as "Bookworm" or "Nuvoton"; only the names must occur in the sources for a question
to be answerable from them (``scope.unsupported_terms``). A German word list tells them apart:
pyspellchecker's (MIT, about 340,000 word forms), loaded on the first German question.

No list holds every German word: compounds are read through their parts ("Energieverwaltungsgeräte":
Energie + Verwaltung + s + Geräte; "Umschalttasten": um + schalt + Tasten), inflected forms through
their stem ("Jungs"), long derivations through their suffix ("Verifizierbarkeit", "Deskriptoren"),
and a long word with one letter typed too many through the word without it ("Schreibberechtigunngen").
A word that passes none of these is taken for a name; English words inside German questions
("Protocol", "Lake") are names too, which is what they usually are there.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Collection

# Endings that only German word formation produces; a long word with one is German however rare.
_DERIVATIONS = tuple("ität itäten keit keiten heit heiten ung ungen schaft ismus ionen oren".split())
_PREFIXES = frozenset(
    "ab an auf aus be bei ein ent er ge miss mit nach um un ur ver vor weg zer zu über unter wieder".split()
)
_LINKS = ("", "s", "es", "n", "en", "e", "er")  # joints between the parts of a compound ("Sicherheit-s-…")
_INFLECTIONS = ("", "e", "en", "n", "er", "ern", "s", "es")
_MIN_PART = 3
_MIN_SLIP = 10  # shorter words may be names one letter away from a German word


@lru_cache(maxsize=1)
def _lexicon() -> Collection[str]:
    from spellchecker import SpellChecker

    return SpellChecker(language="de", case_sensitive=False).word_frequency.dictionary


def _listed(word: str) -> bool:
    """``word`` or its stem (an inflection ending removed) is in the word list."""
    lexicon = _lexicon()
    return any(
        word.endswith(ending) and len(word) - len(ending) >= _MIN_PART and word[: len(word) - len(ending)] in lexicon
        for ending in _INFLECTIONS
    )


def is_german_word(word: str) -> bool:
    """``word`` is German: listed, inflected from a listed stem, a compound of German parts, a long
    derivation with a German suffix, or a long word typed with one letter too many."""
    word = word.lower().strip("-")
    if len(word) < _MIN_PART or not word.isalpha():
        return False
    return _formed(word) or (
        len(word) >= _MIN_SLIP and any(_formed(word[:i] + word[i + 1 :]) for i in range(len(word)))
    )


@lru_cache(maxsize=65536)
def _formed(word: str) -> bool:
    """Listed, inflected, derived, or a head (a listed word, or a prefix) joined to a German tail."""
    if _listed(word) or (len(word) >= 8 and word.endswith(_DERIVATIONS)):
        return True
    for cut in range(2, len(word) - _MIN_PART + 1):
        head, tail = word[:cut], word[cut:]
        if head in _PREFIXES or any(
            head.endswith(link) and len(head) - len(link) >= _MIN_PART and _formed(head[: len(head) - len(link)])
            for link in _LINKS
        ):
            if _formed(tail):
                return True
    return False
