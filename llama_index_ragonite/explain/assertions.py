"""What an answer asserts and what an evidence states: the information attribution compares besides embeddings.

``same_information`` keeps only evidences of the same text in one cluster (its own docstring). For
answers: a cell answer and the answer given without its row can differ in one version number
("Firmware 2.0.4" against "Firmware 1.9.2") and embed almost alike, so an embedding similarity alone
calls removing the row no change and the explanation comes out flat. The values an answer asserts are
read from the evidences' own structure (a row's cells, ``parsing.structure.CELLS``) and from the
digits it states, never from a word list; ``agreement`` is the Jaccard overlap of two answers'
values, and ``weighed`` lets it weigh half of the similarity the attributors use, the embedding's cosine
the other half (the rest of the text counts through the embedding, and two alternatives that keep none
of the values still differ by their cosine instead of tying at zero).
"""

from __future__ import annotations

import re
from typing import AbstractSet, Dict, FrozenSet, Iterable, List, Sequence

from llama_index.core.schema import MetadataMode, NodeWithScore

from llama_index_ragonite.parsing.linearize import without_row_position
from llama_index_ragonite.parsing.structure import CELLS, structure_list
from llama_index_ragonite.prompts import strip_citations

_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_SPACE = re.compile(r"\s+")


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def evidence_values(nodes: Sequence[NodeWithScore]) -> FrozenSet[str]:
    """The cells of the retrieved rows (normalised): what a cell answer can assert.

    A cell of one character or without a letter or digit asserts nothing worth comparing (a dash,
    an "x" for yes); numbers are found in the answer itself.
    """
    values = set()
    for n in nodes:
        for cell in structure_list(n.node.metadata, CELLS):
            cell = _normal(cell)
            if len(cell) > 1 and any(ch.isalnum() for ch in cell):
                values.add(cell)
    return frozenset(values)


def asserted(answer: str, values: AbstractSet[str]) -> FrozenSet[str]:
    """The values of ``values`` that ``answer`` states (as whole words), and the numbers it states."""
    text = _normal(strip_citations(answer))
    found = {m.group(0) for m in _NUMBER.finditer(text)}
    for value in values:
        at = text.find(value)
        while at >= 0:
            end = at + len(value)
            if (at == 0 or not text[at - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
                found.add(value)
                break
            at = text.find(value, at + 1)
    return frozenset(found)


def agreement(answer: FrozenSet[str], alternative: FrozenSet[str]) -> float:
    """Jaccard overlap of two answers' asserted values; 1.0 when neither asserts any."""
    union = answer | alternative
    return len(answer & alternative) / len(union) if union else 1.0


def weighed(cosine: float, agreement: float) -> float:
    """The similarity of two answers: their cosine, halved as far as they disagree on asserted values."""
    return cosine * (1.0 + agreement) / 2.0


def agreements(answer: str, alternatives: Iterable[str], values: AbstractSet[str]) -> list[float]:
    """``agreement`` of ``answer`` with each alternative."""
    base = asserted(answer, values)
    return [agreement(base, asserted(a, values)) for a in alternatives]


def same_information(groups: List[List[int]], nodes: Sequence[NodeWithScore]) -> List[List[int]]:
    """``groups`` split so that a cluster holds only evidences that state the same text (near-duplicates).

    Why: the paper's DBSCAN (eps 0.005, set for bge-m3) groups copies of one evidence on two page
    versions; a smaller model puts two rows of one table, or one row on two versions with another
    firmware number, closer than that, and a cluster of different information cannot say which of
    them caused the answer. The text compared is the evidence's own (no context lines), with case,
    spacing and a row's ``Row i in Table j:`` position ignored. The same text is one cluster even where
    DBSCAN parted it (its vectors embed each page's title: the same information, two shares)."""

    def information(i: int) -> str:
        text = nodes[i].node.get_content(MetadataMode.NONE)
        return " ".join(" ".join(without_row_position(line) for line in text.split("\n")).casefold().split())

    split: List[List[int]] = []
    for group in groups:
        by_text: Dict[str, List[int]] = {}
        for i in group:
            by_text.setdefault(information(i), []).append(i)
        split.extend(by_text.values())
    merged: Dict[str, List[int]] = {}  # the same text on two pages is one cluster however far their vectors
    for cluster in split:
        merged.setdefault(information(cluster[0]), []).extend(cluster)
    return sorted((sorted(c) for c in merged.values()), key=lambda c: c[0])
