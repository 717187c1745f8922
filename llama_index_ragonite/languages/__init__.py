"""Every word the offline layer knows of a language, one ``Language`` table per language.

Why one place: the offline completer, answerer and follow-up suggester read a question's shape
(does it point back? what does it ask for? which language is it in?) from function words. Those
words used to sit beside each rule, English and German mixed in one list. Here each language is
one table (``english.py``, ``german.py``); the rules in ``text.py``, ``models/extractive`` and
``chat/`` read the union of the tables (``every``), so a question is read the same whatever
language it is asked in, and a language is added by writing one table and listing it in
``LANGUAGES``. Fields named ``*_patterns`` hold regular-expression fragments; the others hold
words or phrases, lower-case unless the field says "as written".
"""

from __future__ import annotations

import re
from typing import Dict, FrozenSet

from llama_index_ragonite.languages.english import ENGLISH
from llama_index_ragonite.languages.german import GERMAN
from llama_index_ragonite.languages.table import Language

__all__ = ["LANGUAGES", "Language", "alternation", "every", "language_table"]


LANGUAGES: Dict[str, Language] = {table.code: table for table in (ENGLISH, GERMAN)}


def language_table(code: str) -> Language:
    """The table of ``code``, English when there is none (the pages' language by default)."""
    return LANGUAGES.get(code, LANGUAGES["en"])


def every(name: str) -> FrozenSet[str]:
    """The union of one field over every language's table."""
    return frozenset(word for table in LANGUAGES.values() for word in getattr(table, name))


def alternation(name: str, words: bool = True) -> str:
    """A regular-expression group of one field over every table, longest first (so "march" is tried
    before "mar"); ``words``: escape them (fields of words, not ``*_patterns``)."""
    items = sorted(every(name), key=lambda w: (-len(w), w))
    return "(?:" + "|".join(re.escape(w) if words else w for w in items) + ")"
