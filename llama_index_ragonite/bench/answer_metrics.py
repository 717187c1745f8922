"""Lexical answer metrics in the style of Unitxt's RAG metrics (pure functions).

- ``normalize_answer``: SQuAD normalization (lower case, punctuation and English articles
  removed, whitespace collapsed), then whitespace tokens.
- ``token_recall`` (answer correctness): share of the gold answer's tokens (as a multiset)
  found in the generated answer; the maximum over the references.
- ``token_f1`` (answer correctness, SQuAD v1.1 style): harmonic mean of the precision and
  recall of the answer's tokens against a gold answer (multisets); the maximum over the
  references. Unlike recall it charges an answer for everything it says beyond the gold one.
- ``k_precision`` (faithfulness, Adlakha et al. 2023): share of the answer's tokens found in
  the retrieved evidence; Unitxt treats every evidence as a reference and takes the maximum.

Recall and K-precision are Unitxt's ``TokenOverlap`` (recall resp. precision); all three are
``0.0`` when nothing overlaps.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import List, Sequence

from llama_index_ragonite.prompts import OUT_OF_SCOPE, strip_citations

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's ``normalize_answer``."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def tokens(text: str) -> List[str]:
    return normalize_answer(text).split()


def _overlap(prediction: str, reference: str) -> tuple:
    """(precision, recall) of the prediction's tokens against one reference."""
    pred, ref = tokens(prediction), tokens(reference)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0, 0.0
    return same / len(pred), same / len(ref)


def token_recall(answer: str, references: Sequence[str]) -> float:
    """Answer correctness: max over gold references of the share of their tokens in ``answer``."""
    return max((_overlap(answer, ref)[1] for ref in references), default=0.0)


def token_f1(answer: str, references: Sequence[str]) -> float:
    """Answer correctness: max over gold references of SQuAD's token F1 of ``answer``."""
    best = 0.0
    for ref in references:
        precision, recall = _overlap(answer, ref)
        if precision and recall:
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def k_precision(answer: str, contexts: Sequence[str]) -> float:
    """Faithfulness: max over retrieved evidences of the share of ``answer``'s tokens found in it."""
    return max((_overlap(answer, ctx)[0] for ctx in contexts), default=0.0)


def answer_text(answer: str, label: str = "") -> str:
    """What the metrics score: the answer without ``[Source i]`` markers and without ``label``
    (e.g. the extractive answerer's "Extractive answer: "), which no reference contains."""
    text = answer.strip()
    if label and text.startswith(label.strip()):
        text = text[len(label.strip()) :]
    return strip_citations(text)


def is_out_of_scope(answer: str) -> bool:
    return OUT_OF_SCOPE.rstrip(".").lower() in answer.lower()
