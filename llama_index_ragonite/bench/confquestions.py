"""The ConfQuestions benchmark on disk: its 215 pages and 600 questions (300 turns x EN/DE).

Read from the benchmark folder as released (default ``../shared/datasets/confquestions``
in this project's checkout; pass your own clone of the origin repository).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import List, Tuple, Union

from llama_index.core.schema import Document

from llama_index_ragonite.parsing.loaders import PageLoadError, load_pages


@dataclass(frozen=True)
class Question:
    conv_id: str
    turn: int  # 1-based position in the conversation
    lang: str  # "en" or "de"
    question: str  # as asked in the conversation
    completed: str  # the human-completed, self-contained question
    gold_urls: Tuple[str, ...]
    answer: str
    source: str  # evidence type holding the answer: passage / list / table
    q_type: str  # simple / complex


SOURCES = ("passage", "list", "table")
Q_TYPES = ("simple", "complex")


def _check(root: Path) -> Path:
    if not root.is_dir():
        raise PageLoadError(f"{root}: no such folder (give a ConfQuestions clone with --data or $CONFQUESTIONS_DIR)")
    if not (root / "qa-pairs.json").is_file() or not (root / "documents").is_dir():
        raise PageLoadError(f"{root}: not a ConfQuestions folder (expected qa-pairs.json and documents/)")
    return root


def load_corpus(root: Union[str, Path]) -> List[Document]:
    docs = load_pages(_check(Path(root)) / "documents", strict=True)  # a benchmark never skips a damaged page
    if not docs:
        raise PageLoadError(f"{Path(root) / 'documents'}: no page files (.json/.html)")
    return docs


def _validated(q: Question) -> Question:
    """The fields the benchmark relies on, checked: a damaged entry fails here, not mid-run."""
    problems = [name for name in ("conv_id", "question", "completed", "answer") if not getattr(q, name).strip()]
    if not q.gold_urls or not all(isinstance(u, str) and u for u in q.gold_urls):
        problems.append("a_url")
    if q.source not in SOURCES:
        problems.append(f"a_source={q.source!r}")
    if q.q_type not in Q_TYPES:
        problems.append(f"q_type={q.q_type!r}")
    if problems:
        raise ValueError(f"conversation {q.conv_id!r}, turn {q.turn} ({q.lang}): bad {', '.join(problems)}")
    return q


def load_questions(root: Union[str, Path]) -> List[Question]:
    """All questions, conversation by conversation, turn by turn, English before German."""
    path = _check(Path(root)) / "qa-pairs.json"
    try:
        conversations = json.loads(path.read_text(encoding="utf-8"))
        out = []
        for conv in conversations:
            for turn in conv["turns"]:
                for lang in ("en", "de"):
                    out.append(
                        _validated(
                            Question(
                                conv_id=str(conv["conv_id"]),
                                turn=int(turn["turn_id"]),
                                lang=lang,
                                question=turn[f"q_{lang}"],
                                completed=turn[f"completed_q_{lang}"],
                                gold_urls=tuple(turn["a_url"]) if isinstance(turn["a_url"], list) else (),
                                answer=turn["a"],
                                source=turn["a_source"],
                                q_type=turn["q_type"],
                            )
                        )
                    )
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as err:
        raise PageLoadError(f"{path}: damaged benchmark file ({type(err).__name__}: {err})") from None
    return out
