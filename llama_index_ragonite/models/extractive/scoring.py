"""Scoring answer units against the question, and choosing the ones to answer with.

A unit's score is the IDF-weighted share of the question's content words it holds (words
matched on their English or German Snowball stem; words found only in the unit's page title
or section count at ``header_weight``), plus a bonus for identifiers (numbers, versions,
product names) matched verbatim, which match whatever the question's language. Units that
merely restate the question are damped (``novelty``). Content words and language are
text.py's rules, shared with the retriever and the question completer.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, FrozenSet, List, Sequence, Set, Tuple

import Stemmer

from llama_index_ragonite.languages import LANGUAGES, alternation, every
from llama_index_ragonite.models.extractive.units import Unit, list_item_text
from llama_index_ragonite.text import QUESTION_WORDS, content_words, detect_language

_IDENT = re.compile(r"\w+(?:[.\-_/+:]\w+)*", re.UNICODE)
_STEMMERS = tuple(Stemmer.Stemmer(t.stemmer) for t in LANGUAGES.values())


@lru_cache(maxsize=65536)
def word_keys(word: str) -> FrozenSet[str]:
    """A word's match keys: its Snowball stems in every language (and the word itself)."""
    return frozenset({word, *(s.stemWord(word) for s in _STEMMERS)})


_COGNATE_SPELLING = tuple(pair for t in LANGUAGES.values() for pair in t.cognate_spelling)
COGNATE_PREFIX = 6


@lru_cache(maxsize=65536)
def quote_word_keys(word: str) -> FrozenSet[str]:
    """``word_keys`` plus a cognate key: the first ``COGNATE_PREFIX`` letters of the word spelled
    alike across German and English ("Plattform"/"Platform", "Prozessoren"/"Processors(s)").

    Why: a German question names English table headers in German; these keys choose which cells
    and clauses to quote, never whether to answer (scoring and the scope check do not use them)."""
    spelled = word.lower()
    for a, b in _COGNATE_SPELLING:
        spelled = spelled.replace(a, b)
    spelled = re.sub(r"(.)\1+", r"\1", spelled)
    keys = word_keys(word)
    return keys | {"~" + spelled[:COGNATE_PREFIX]} if len(spelled) >= COGNATE_PREFIX and spelled.isalpha() else keys


def quote_keys(text: str) -> FrozenSet[str]:
    return frozenset(k for w in answer_words(text) for k in quote_word_keys(w))


def quote_terms(text: str) -> FrozenSet[str]:
    """What ``text`` says, for composing: its ``quote_keys`` and its identifiers."""
    return quote_keys(text) | frozenset(identifiers(text))


def answer_words(text: str) -> List[str]:
    """The content words the answerer matches: text.py's rule, question words dropped too."""
    return content_words(text, QUESTION_WORDS)


def unit_keys(text: str) -> FrozenSet[str]:
    return frozenset(k for w in answer_words(text) for k in word_keys(w))


def identifiers(text: str) -> List[str]:
    """Tokens that match across languages, lower-cased: with a digit (7040, 1.14.0, x86-64), an
    inner capital (OptiPlex, BIOS, XenClient) or joining ``. _ / + :`` (qemu_dm, policy/modules).
    Plain hyphenated words are not identifiers: German compounds ("Build-Standorte") are."""
    out = []
    for token in _IDENT.findall(text):
        inner = token[1:]
        if any(c.isdigit() for c in token) or any(c.isupper() for c in inner) or re.search(r"\w[._/+:]\w", token):
            if len(token) > 1:
                out.append(token.lower())
    return out


# Words that open a question; capitalized inside a question, one starts the user's own words after those
# the offline completer carried over ("… GPU passthrough What was the QEMU version …").
OPENERS = every("sentence_openers")
_INNER_OPENER = re.compile(r"(?<=\s)(?:" + "|".join(sorted(w.capitalize() for w in OPENERS)) + r")\b")


def asked_part(question: str) -> str:
    """The user's own words of a question: after the last capitalized opener inside it, else all of it.

    Why: a completed follow-up ("platform failed UEFI OTA upgrade Which firmware does it run?") asks
    what its own words ask; the carried words only say which thing it is about."""
    inner = list(_INNER_OPENER.finditer(question))
    return question[inner[-1].start() :] if inner else question


_REFERENT = re.compile(r"\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*")  # "(Laptop policy 2024 (archived))"


def own_words(question: str) -> str:
    """A completed follow-up's own words: without its bracketed referent (``chat.completion.with_referent``;
    one level of brackets inside it, a page title's "(archived)", stays part of it)."""
    return _REFERENT.sub(" ", question).strip() or question


# Words that open a yes/no question ("Is guest hibernation supported …?", "Wurden alle … getestet?").
_AUXILIARIES = every("yes_no_openers")
_NEGATION = re.compile(alternation("negation_patterns", words=False), re.I)


def is_yes_no(question: str) -> bool:
    """A question the user's own words open with an auxiliary verb: answered by a polarity, not a thing."""
    words = asked_part(question).split()
    first = words[0].lower() if words else ""
    return first in _AUXILIARIES and not (first == "was" and language(question) == "de")  # German "was": what


def negates(text: str) -> bool:
    return bool(_NEGATION.search(text))


def language(text: str) -> str:
    """The language of ``text``: "en", "de" or "" (a tie: undecided), by the retriever's rule."""
    return detect_language(text, tie="")


@dataclass(frozen=True)
class UnitFeatures:
    """What scoring reads of each unit: its match keys, its topic's keys, its and its topic's identifiers."""

    words: List[FrozenSet[str]]
    topics: List[FrozenSet[str]]
    ids: List[Set[str]]


def unit_features(units: Sequence[Unit]) -> UnitFeatures:
    topic_cache: Dict[str, Tuple[FrozenSet[str], FrozenSet[str]]] = {}
    for u in units:
        if u.topic not in topic_cache:
            topic_cache[u.topic] = (unit_keys(u.topic), frozenset(identifiers(u.topic)))
    return UnitFeatures(
        words=[unit_keys(u.text) for u in units],
        topics=[topic_cache[u.topic][0] for u in units],
        ids=[set(identifiers(u.text)) | topic_cache[u.topic][1] for u in units],
    )


@dataclass(frozen=True)
class QuestionWeights:
    """The question's content words (as match keys) and identifiers, each with its IDF over the units."""

    words: List[Tuple[FrozenSet[str], float]]
    ids: List[Tuple[str, float]]
    total: float  # the denominator: what a unit holding every word scores
    keys: FrozenSet[str]  # all match keys of the question's words


def question_weights(
    question: str, units: Sequence[Unit], features: UnitFeatures, unmatched_weight: float
) -> QuestionWeights:
    """IDF (``log(1 + N / (df + 0.5))``) of each question word and identifier; words no unit or
    topic holds weigh ``unmatched_weight`` in ``total`` when question and units differ in language."""
    n = len(units)

    def idf(df: int) -> float:
        return math.log(1.0 + n / (df + 0.5))

    q_lang, s_lang = language(question), language(" ".join(u.text for u in units))
    foreign = unmatched_weight if q_lang and s_lang and q_lang != s_lang else 1.0
    all_topics = frozenset().union(*features.topics)
    words = []
    total = 0.0
    for w in dict.fromkeys(answer_words(question)):
        keys = word_keys(w)
        df = sum(1 for s in features.words if keys & s)
        words.append((keys, idf(df)))
        total += idf(df) * (1.0 if df or keys & all_topics else foreign)
    ids = [(t, idf(sum(1 for s in features.ids if t in s))) for t in dict.fromkeys(identifiers(question))]
    return QuestionWeights(
        words=words, ids=ids, total=total or 1.0, keys=frozenset(k for keys, _ in words for k in keys)
    )


# Page bylines and footers the parser keeps as passages: they match "who"/"when" questions by name and date
# but answer them only when the question asks about the page itself (its owner, author, last update).
_BYLINE = re.compile(r"^" + alternation("byline_openers"), re.IGNORECASE)
_ABOUT_PAGE = frozenset(k for w in every("about_page") for k in word_keys(w))
LEAD_IN_FACTOR = 1.0  # a unit ending with ":" announces the answer ("three requirements:"), it does not give it
BYLINE_FACTOR = 0.5


def form_factor(text: str, question_keys: FrozenSet[str]) -> float:
    """Damping for units that look like an answer but are not one: bylines and lead-ins."""
    if _BYLINE.match(text) and not question_keys & _ABOUT_PAGE:
        return BYLINE_FACTOR
    return LEAD_IN_FACTOR if text.rstrip().endswith(":") else 1.0


def novelty_factor(text: str, question_keys: FrozenSet[str], novelty: float) -> float:
    """``1 - novelty`` for a unit with no content word beyond the question's, rising to 1 at three."""
    new = sum(1 for w in answer_words(text) if not (word_keys(w) & question_keys))
    return 1.0 - novelty * max(0.0, 1.0 - new / 3.0)


def score_units(
    question: str,
    units: Sequence[Unit],
    header_weight: float = 1.0,
    identifier_weight: float = 0.25,
    unmatched_weight: float = 0.5,
    novelty: float = 0.5,
) -> List[float]:
    """Content score of each unit for the question, about 0..1 (rank prior not included).

    Args:
        question: the question text.
        units: all units of the prompt (IDF is computed over them, so words that every
            source repeats weigh little).
        header_weight: credit for a question word found only in the unit's topic (page
            title, section) instead of the unit itself.
        identifier_weight: extra credit (x idf share) per question identifier (number,
            version, product name) found verbatim in the unit or its topic.
        unmatched_weight: weight, in the denominator, of question words that no source holds
            when the question's language differs from the sources' (likely translations, not
            missing facts); in the same language they weigh fully.
        novelty: penalty (0..1) for units with fewer than three content words beyond the
            question's: they restate the question rather than answer it.

    Returns:
        One score per unit: idf-weighted share of the question's content words that the unit
        (or, at ``header_weight``, its topic) holds, plus the identifier bonus.
    """
    if not units:
        return []
    features = unit_features(units)
    q = question_weights(question, units, features, unmatched_weight)
    scores = []
    for unit, words, topic, ids in zip(units, features.words, features.topics, features.ids):
        s = 0.0
        for keys, v in q.words:
            if keys & words:
                s += v
            elif keys & topic:
                s += header_weight * v
        s += identifier_weight * sum(v for t, v in q.ids if t in ids)
        s /= q.total
        if novelty and not (unit.earlier_answer and _is_cell_quote(unit.text)):  # asked cells: short by design
            s *= novelty_factor(unit.text, q.keys, novelty)
        scores.append(s * form_factor(unit.text, q.keys))
    return scores


_CELL = re.compile(r"^[^,.]{1,60} is [^,]+$")


def _is_cell_quote(text: str) -> bool:
    """An answer that quotes a row's asked cells ("Platform is X, and Firmware is 2.1.0")."""
    cells = text.rstrip(".").split(", and ")
    return len(cells) >= 2 and all(_CELL.match(c.strip()) for c in cells)


def rank_bonus(rank: int, n_sources: int, rank_prior: float) -> float:
    """Retrieval-rank prior: ``rank_prior`` for the first source, decaying linearly to ``rank_prior / n``."""
    return rank_prior * (n_sources - rank) / max(n_sources, 1)


def select_units(
    units: Sequence[Unit],
    scores: Sequence[float],
    threshold: float,
    rank_prior: float,
    max_units: int,
    close_ratio: float,
    question: str = "",
) -> List[int]:
    """Indices of the units to answer with (empty: out of scope), best first.

    Ranking adds ``rank_bonus`` to each content score; the best unit must reach ``threshold``
    on its content score alone (the prior orders, it does not make confident). Further units
    come from other sources, differ in text, reach ``threshold`` and rank at least
    ``close_ratio`` x the best. Ties go to the earlier unit.
    """
    if not units:
        return []
    n_sources = max(u.rank for u in units) + 1
    totals = [s + rank_bonus(u.rank, n_sources, rank_prior) for u, s in zip(units, scores)]
    ranked = sorted(range(len(units)), key=lambda i: (-totals[i], i))
    best = ranked[0]
    if scores[best] < threshold:
        return []
    chosen = [best]
    compares = is_comparison(question)
    for i in ranked[1:]:
        if len(chosen) >= max_units or totals[i] < close_ratio * totals[best]:
            break
        if scores[i] >= threshold and all(
            units[i].source != units[j].source
            and units[i].text != units[j].text
            and (compares or parallel(units[i], units[j]))
            for j in chosen
        ):
            chosen.append(i)
    return chosen


_COMPARISON = re.compile(
    r"\b(?:or|vs\.?|versus|compare[ds]?|comparison|differ\w*|both|between|oder|beide\w*|vergleich\w*|unterschied\w*)\b",
    re.IGNORECASE,
)


def is_comparison(question: str) -> bool:
    """A question that weighs two things ("6.x or 7.x?"): its answer may quote two pages of one family."""
    return bool(_COMPARISON.search(question))


def parallel(a: Unit, b: Unit) -> bool:
    """Two items of one enumeration: rows of the same page's table, or list items (no sentence) of one page.

    Why: a second unit adds a part of the answer only as a further item of what the first one
    lists ("the W600 and the HD 7750"); a second sentence, or a row of another version's page
    (a 1.9 row for a 2.0 question), only dilutes it."""
    if a.topic != b.topic:
        return False
    if a.row and b.row:
        return True
    return not (a.row or b.row) and not _is_sentence(a.text) and not _is_sentence(b.text)


def _is_sentence(text: str) -> bool:
    return text.rstrip().endswith((".", "!", "?")) or len(text.split()) > 25


def similarity(cosine: float, floor: float) -> float:
    """A cosine rescaled so that ``floor`` (what unrelated texts score) is 0 and 1 stays 1."""
    return max(0.0, (cosine - floor) / (1.0 - floor))


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def context_instead(question: str, units: Sequence[Unit], chosen: List[int], scores: Sequence[float]) -> List[int]:
    """A chosen row gives way to a unit of its page, its context text first, that holds an identifier
    of the question the row lacks ("the QEMU version in these tests": QEMU 1.4 is stated above the
    table, which reaches each row as its context, not in any row)."""
    if not chosen or not units[chosen[0]].row:
        return chosen
    best = units[chosen[0]]
    lacking = set(identifiers(question)) - set(identifiers(best.topic)) - set(identifiers(best.text))
    if not lacking:
        return chosen
    options = [
        i for i, u in enumerate(units) if u.topic == best.topic and not u.row and lacking & set(identifiers(u.text))
    ]
    return [max(options, key=lambda i: (units[i].source == best.source, scores[i]))] if options else chosen


def prefer_item(units: Sequence[Unit], lexical: Sequence[float], chosen: List[int]) -> List[int]:
    """A whole list chosen first gives way to its best item unless the list holds more of the question's
    words (``lexical``, without the novelty damping): in its lead-in ("To volunteer you need:") or spread over its items. One item that
    answers is the smaller quote ("What should be rebooted after the upgrade?")."""
    if not chosen or not units[chosen[0]].whole_list:
        return chosen
    whole = units[chosen[0]]
    items = [
        i
        for i, u in enumerate(units)
        if u.source == whole.source and not u.whole_list and not u.from_context and list_item_text(u.text) in whole.text
    ]
    best = max(items, key=lambda i: lexical[i], default=None)
    if best is None or lexical[best] < lexical[chosen[0]]:
        return chosen
    return [best, *chosen[1:]]
