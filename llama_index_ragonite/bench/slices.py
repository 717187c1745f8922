"""Named subsets of the ConfQuestions questions that the reports break their metrics down by.

``RECORD_SLICES`` select per-question records of ``ragonite bench`` (JSON dicts);
``QUESTION_SLICES`` select ``Question`` objects, for the scripts under ``benchmarks/``.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Tuple

from llama_index_ragonite.bench.confquestions import Question

RECORD_SLICES: List[Tuple[str, Callable[[dict], bool]]] = [
    ("all", lambda r: True),
    ("simple", lambda r: r["q_type"] == "simple"),
    ("complex", lambda r: r["q_type"] == "complex"),
    ("passage", lambda r: r["source"] == "passage"),
    ("list", lambda r: r["source"] == "list"),
    ("table", lambda r: r["source"] == "table"),
    ("EN", lambda r: r["lang"] == "en"),
    ("DE", lambda r: r["lang"] == "de"),
    *[(f"turn {t}", lambda r, t=t: r["turn"] == t) for t in range(1, 6)],
    ("turns 6-10", lambda r: r["turn"] >= 6),
]

QuestionSlice = Callable[[Question], bool]

QUESTION_SLICES: Dict[str, QuestionSlice] = {
    "all": lambda q: True,
    "en": lambda q: q.lang == "en",
    "de": lambda q: q.lang == "de",
    "turn 1": lambda q: q.turn == 1,
    "turns 2+": lambda q: q.turn > 1,
    "simple": lambda q: q.q_type == "simple",
    "complex": lambda q: q.q_type == "complex",
    "passage": lambda q: q.source == "passage",
    "list": lambda q: q.source == "list",
    "table": lambda q: q.source == "table",
}


def question_slices(*names: str) -> Dict[str, QuestionSlice]:
    """The named question slices, in the order given (the order of a table's columns)."""
    return {name: QUESTION_SLICES[name] for name in names}
