"""Out-of-scope cues that hold in any language: what the question names that no source holds.

Why: a question about "the Lenovo ThinkPad X1 Carbon" or "OpenXT 12" over pages that know only
other machines and releases finds rows that match every other word of it ("BIOS version",
"measurement test"), so a score threshold alone answers it with the wrong machine's row. What
such questions share is a name the evidence never mentions; names, model numbers and versions
are written the same in German and English questions, so the cue needs no translation.

A question is unsupported by the prompt's sources (page titles, sections and context lines
included) when

* one of its identifiers (``scoring.identifiers``: 7040, X1, GeForce, SHA-256) occurs in none of
  them; a hyphenated German compound ("OpenXT-9.0-Messtest") counts through its identifier parts,
  a part written with an inner capital ("OpenStack-Version", "VirtualBox-Image") included: lower-cased,
  the whole compound looks like a plain word, but such a part is a product name;
* a name followed by a number ("OpenXT 12", "Windows 11", "Pi 4", "Optiplex 3080") occurs in none
  of them as that pair, although the name alone may ("OpenXT 9.0" holds no "OpenXT 12");
* a capitalized word inside the question, a proper name ("Kubernetes", "Infineon", "Scarthgap"),
  matches no word of them. German capitalizes every noun, so in a German question only the
  capitalized words that are no German words (``german_words.is_german_word``) count as names
  ("Bookworm", "Nuvoton"; not "Seriennummer"). A name inside a link's URL
  ("maps?q=…+Australia") is not one the sources state.

Spelling that differs from the sources' is not a missing name: words the sources write joined
("Open XT" for "OpenXT"), a number joined to a unit ("32-bit" is no model "Bug 32"), a second
capital typed by a slip ("SPeicherschutz") and German words in capitals for emphasis ("die NUTZBARE
Größe").

A name of letters only (no digit) that differs from a word of the sources by a typing slip
("Measuremnt", "SELunux", "Architecure": at most one edit in a long word) counts as found:
questions are typed by people, and a slip is no other name. Numbers and versions must match
exactly ("OpenXT 12" is no slip of "OpenXT 9.0").
"""

from __future__ import annotations

import re
from typing import Callable, FrozenSet, List, Sequence

from llama_index_ragonite.models.extractive.german_words import is_german_word
from llama_index_ragonite.models.extractive.scoring import (
    OPENERS,
    answer_words,
    asked_part,
    identifiers,
    language,
    unit_keys,
    word_keys,
)
from llama_index_ragonite.models.extractive.units import ROW, Unit
from llama_index_ragonite.text import (
    CONVERSATION_WORDS,
    QUESTION_WORDS,
    content_terms,
    is_fragment,
    refers_back,
    stopwords,
    words,
)

# a name, then its number; not a number joined to a unit ("32-bit", "4-core")
_NAME_NUMBER = re.compile(
    r"(?<![.!?:]\s)(?<!^)\b([A-Z][A-Za-z]{1,}|[A-Z]{2,})[\s\-_]+v?(\d+(?:\.\d+)*)(?![\w.]*\d)(?!-[a-z])"
)
_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec januar februar märz mai juni juli oktober dezember "
    "version versions release releases build builds".split()
)
_CAPITALIZED = re.compile(r"(?<![.!?:]\s)(?<!^)\b([A-ZÄÖÜ][a-zäöüß]{2,})\b")
_SHIFT_SLIP = re.compile(r"\b([A-ZÄÖÜ])([A-ZÄÖÜ])([a-zäöüß]{5,})\b")  # "SPeicherschutz"
_SHOUTED = re.compile(r"[A-ZÄÖÜ]{5,}")
# The wiki's own platform: a question names it for where a page lives ("the Confluence page on …",
# "the JIRA issue key"), and pages rarely name it; it tells nothing about what the sources hold.
_PLATFORM = frozenset({"confluence", "jira", "wiki"})
_LANGUAGE_SAMPLE = 4000  # characters of the sources that tell their language
_URL = re.compile(r"\b(?:https?://|www\.)\S+")
_RATE = re.compile(r"([a-zäöü]{2,})/([a-z])")  # a unit of measure: "gbit/s", "mb/s"
_WORD_PAIR = re.compile(r"\b(?=([A-Za-z]+)\s+([A-Za-z]+)\b)")
# The measure a how-question asks for ("how long", "wie oft"): part of its question words, not its topic.
# "many", "much" and "viele" are question words already (text.QUESTION_WORDS).
_MEASURE = re.compile(
    r"(?i)\b(?:how|wie)\s+(?:long|often|far|old|big|large|high|fast|soon|late|hot|cold|heavy|deep|wide|tall"
    r"|lange|oft|weit|alt|groß|hoch|schnell|bald|spät|heiß|kalt|schwer|tief|breit|teuer)\b"
)


def unsupported_terms(question: str, source_text: str) -> List[str]:
    """The question's names, identifiers and name-number pairs that ``source_text`` never holds."""
    text = source_text.lower()
    question = _as_the_sources_write(question, text)
    lang = _language_of(question)
    german = lang == "de"
    shouted = {w.lower() for w in _SHOUTED.findall(question) if is_german_word(w)} if german else set()
    missing = [t for t in dict.fromkeys(identifiers(question)) if t not in shouted and not _holds_identifier(t, text)]
    missing += [p for p in dict.fromkeys(_compound_names(question)) if not _holds_identifier(p.lower(), text)]
    ignored = _MONTHS | OPENERS | QUESTION_WORDS | stopwords("en") | stopwords("de")
    for name, number in _NAME_NUMBER.findall(question):
        if name.lower() in ignored:
            continue
        # the name, at most two words (a model name, "is" of a table cell), then the number
        pair = re.compile(rf"\b{re.escape(name.lower())}\W+(?:[\w.]+\W+){{0,2}}?v?{re.escape(number)}(?!\d)")
        if name.lower() in text and not pair.search(text):
            missing.append(f"{name} {number}")
    prose = _URL.sub(" ", text)  # a name inside a link ("maps?q=…+Australia") is not what a page states
    keys = unit_keys(prose)
    names = [w for w in dict.fromkeys(_CAPITALIZED.findall(question)) if w.lower() not in ignored]
    missing += [w for w in names if not word_keys(w.lower()) & keys and not (german and is_german_word(w))]
    missing += _unsupported_request(question, keys, lang, prose)
    return [m for m in missing if m.lower() not in _PLATFORM and not _typing_slip(m, prose)]


def _language_of(question: str) -> str:
    """``language``, or for a question too short for it ("Who wrote Hamlet?") German when most of its
    lower-case words are German words, else English."""
    detected = language(question)
    if detected:
        return detected
    lower = re.findall(r"\b[a-zäöüß]+\b", question)
    return "de" if lower and 2 * sum(map(is_german_word, lower)) > len(lower) else "en"


def _unsupported_request(question: str, keys: FrozenSet[str], lang: str, prose: str) -> List[str]:
    """The user's own words of a completed follow-up when the sources together hold fewer than half of them
    (``[]`` otherwise); for a turn that points back, when they hold none.

    Why: the words carried from earlier turns find the conversation's page whatever is asked, so a new
    request that names nothing ("How do I bake a chocolate cake?") arrives completed and scores as if
    on topic. Such a request brings its own topic, and one ordinary word the pages share ("How do I keep
    my cat off the table?") does not make it theirs; a turn that points back is about the carried topic,
    so one word of it the sources hold is enough. Only where question and sources share a language: a
    translation shares no words.

    Words that name no topic do not count as the request's own: conversational filler ("What will the
    weather be like …?") and the measure of a how-question from a fixed list ("How long should an egg
    boil?"), which pages share with any request. A short request whose language the detector leaves
    open is judged by the word list ("How do I cook spaghetti properly?"). A turn that points back
    keeps its measure ("How long are they retained?"): it is about the carried topic, and its other words
    may be just a verb the page inflects otherwise ("retention")."""
    asked = asked_part(question)
    if asked == question or _language_of(asked) != lang or language(prose[:_LANGUAGE_SAMPLE]) != lang:
        return []
    points_back = refers_back(asked)
    words_of = asked if points_back else _MEASURE.sub(" ", asked)
    own = [w for w in dict.fromkeys(answer_words(words_of)) if w not in CONVERSATION_WORDS]
    held = sum(bool(word_keys(w) & keys) for w in own)
    return [asked] if own and (held == 0 if points_back else 2 * held < len(own)) else []


def unrelated_request(question: str, source_text: str, similarity: Callable[[str], float], floor: float) -> bool:
    """A completed follow-up in another language than the sources whose own words bear no similarity
    to the chosen evidence: ``similarity(asked part)`` (a cross-lingual embedding cosine) at or below ``floor``.

    Why: ``_unsupported_request`` compares words, so it needs one language; "Wie backe ich einen
    Schokoladenkuchen?" shares no word with English pages, and neither do the answerable German
    follow-ups. A turn that points back ("Was wird aufgrund dieser Tatsache empfohlen?") or is a
    fragment is left alone: its own words say little of what it asks."""
    asked = asked_part(question)
    if asked == question or refers_back(asked) or is_fragment(asked) or not content_terms(asked):
        return False
    return _language_of(asked) != language(source_text[:_LANGUAGE_SAMPLE]) and similarity(asked) <= floor


def _as_the_sources_write(question: str, text: str) -> str:
    """``question`` with two words joined where the sources write them as one ("Open XT" → "OpenXT")
    and a slipped second capital lowered ("SPeicherschutz" → "Speicherschutz")."""
    text_words = set(words(text))
    for first, second in _WORD_PAIR.findall(question):
        if (first + second).lower() in text_words:
            question = re.sub(rf"\b{re.escape(first)}\s+{re.escape(second)}\b", first + second, question)
    return _SHIFT_SLIP.sub(lambda m: m.group(1) + m.group(2).lower() + m.group(3), question)


def _typing_slip(term: str, text: str) -> bool:
    """``term`` (letters only, 7 or more) is one edit away from a word of ``text`` (a typo, not another name)."""
    term = term.lower()
    if len(term) < 7 or not term.isalpha():
        return False
    words = {w for w in re.findall(r"[^\W\d_]+", text) if abs(len(w) - len(term)) <= 1}
    return any(_one_edit(term, w) for w in words)


def _one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by one substitution, insertion or deletion (or not at all)."""
    if len(a) > len(b):
        a, b = b, a
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), len(a))
    return a[i + (len(a) == len(b)) :] == b[i + 1 :]


def _holds_identifier(token: str, text: str) -> bool:
    """``token`` (or its singular) in ``text``; a compound joined by - or / through its identifier parts."""
    if token in text or (token.endswith("s") and token[:-1] in text):
        return True
    rate = _RATE.fullmatch(token)
    if rate:  # a unit of measure ("gbit/s", "mb/s"): held as written, "gb/s" or "gbps"; else no figure in it
        return bool(re.search(rf"\b{re.escape(rate[1][:2])}\w*\s*(?:/|p|per)\s*{rate[2]}\b", text))
    parts = re.split(r"[-/]", token)
    return len(parts) > 1 and all(p in text for p in parts if identifiers(p) and not p.isalpha())


_COMPOUND = re.compile(r"\b\w+(?:-\w+)+\b")


def _compound_names(question: str) -> List[str]:
    """Parts of hyphenated compounds with an inner capital, as written ("OpenStack" of "OpenStack-Version");
    all-capital parts (GPU, TPM) are ``identifiers`` already."""
    return [
        part
        for compound in _COMPOUND.findall(question)
        for part in compound.split("-")
        if len(part) > 2 and part.isalpha() and not part.isupper() and part[1:] != part[1:].lower()
    ]


def context_instead(question: str, units: Sequence[Unit], chosen: List[int], scores: Sequence[float]) -> List[int]:
    """A chosen row gives way to a unit of its page, its context text first, that holds an identifier
    of the question the row lacks ("the QEMU version in these tests": QEMU 1.4 is stated above the
    table, which reaches each row as its context, not in any row)."""
    if not chosen or not ROW.match(units[chosen[0]].text):
        return chosen
    best = units[chosen[0]]
    lacking = set(identifiers(question)) - set(identifiers(best.topic)) - set(identifiers(best.text))
    if not lacking:
        return chosen
    options = [
        i
        for i, u in enumerate(units)
        if u.topic == best.topic and not ROW.match(u.text) and lacking & set(identifiers(u.text))
    ]
    return [max(options, key=lambda i: (units[i].source == best.source, scores[i]))] if options else chosen
