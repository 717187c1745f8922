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

from llama_index_ragonite.loaders import PageLoadError, load_pages


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


def _check(root: Path) -> Path:
    if not (root / "qa-pairs.json").is_file() or not (root / "documents").is_dir():
        raise PageLoadError(f"{root}: not a ConfQuestions folder (expected qa-pairs.json and documents/)")
    return root


def load_corpus(root: Union[str, Path]) -> List[Document]:
    return load_pages(_check(Path(root)) / "documents")


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
                        Question(
                            conv_id=str(conv["conv_id"]),
                            turn=int(turn["turn_id"]),
                            lang=lang,
                            question=turn[f"q_{lang}"],
                            completed=turn[f"completed_q_{lang}"],
                            gold_urls=tuple(turn["a_url"]),
                            answer=turn["a"],
                            source=turn["a_source"],
                            q_type=turn["q_type"],
                        )
                    )
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise PageLoadError(f"{path}: damaged benchmark file ({type(err).__name__}: {err})") from None
    return out
