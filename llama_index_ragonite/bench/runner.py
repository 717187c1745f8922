"""Run one configuration over ConfQuestions, conversation by conversation, into a resumable JSONL.

Each conversation (one ``conv_id`` in one language) goes turn by turn through a
``RagoniteChatEngine`` with its own memory, reset between conversations, as a user would
chat. Completion ``none`` sends the raw turn with completion off, ``human`` sends the gold
completed question with completion off, ``offline``/``llm`` send the raw turn and let the
engine's completer rewrite it. One JSON line per question is appended (and flushed) as soon
as it is answered, so a crash or Ctrl-C loses at most the question in flight; on restart,
answered questions are skipped and a conversation interrupted mid-way gets its earlier turns'
recorded messages back as chat history instead of being asked again.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms.llm import LLM
from llama_index.core.schema import MetadataMode

from llama_index_ragonite.bench.answer_metrics import answer_text, is_out_of_scope, k_precision, token_recall
from llama_index_ragonite.bench.config import BenchConfig
from llama_index_ragonite.bench.confquestions import Question
from llama_index_ragonite.bench.judge import judge
from llama_index_ragonite.bench.metrics import gold_keys, mrr_at_k, precision_at_1, recall_at_k
from llama_index_ragonite.chat.engine import RagoniteChatEngine

logger = logging.getLogger(__name__)

ANSWERS = "answers.jsonl"
CONFIG = "config.json"
# Optional hook for attribution accuracy: (question, response) -> {method: URL of the top-attributed evidence}.
AttributionHook = Callable[[Question, object], Dict[str, str]]
# Optional model-based scores (bench.model_metrics.ModelMetrics): (question, answer, contexts) -> {metric: score}.
ScoreHook = Callable[[str, str, List[str]], Dict[str, float]]


def question_id(q: Question) -> str:
    return f"{q.conv_id}/{q.turn}/{q.lang}"


def conversations(questions: Sequence[Question]) -> List[List[Question]]:
    """Questions grouped by (conversation, language), in order of first appearance, turns ascending."""
    groups: Dict[Tuple[str, str], List[Question]] = {}
    for q in questions:
        groups.setdefault((q.conv_id, q.lang), []).append(q)
    return [sorted(turns, key=lambda q: q.turn) for turns in groups.values()]


def read_records(path: Path) -> List[dict]:
    """The complete JSON lines of ``path``; a torn last line (a crash mid-write) is cut off the file."""
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        logger.warning("%s: dropping an incomplete last line (interrupted run)", path)
        with open(path, "r+b") as handle:
            handle.truncate(end)
    return [json.loads(line) for line in data[:end].decode("utf-8").splitlines() if line.strip()]


@dataclass
class ConfigRun:
    """One configuration's run folder: ``config.json`` and ``answers.jsonl``."""

    folder: Path
    config: BenchConfig
    name: str

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        file = self.folder / CONFIG
        wanted = {"name": self.name, "config": self.config.to_dict()}
        if file.exists():
            recorded = json.loads(file.read_text())
            if recorded != wanted:
                raise ValueError(f"{self.folder} holds a run of another configuration ({recorded}); use a new --out")
        else:
            file.write_text(json.dumps(wanted, indent=1, sort_keys=True))

    @property
    def answers(self) -> Path:
        return self.folder / ANSWERS

    def records(self) -> List[dict]:
        return read_records(self.answers)


def finished(run: ConfigRun, questions: Sequence[Question]) -> Optional[List[dict]]:
    """The run's records in question order when every question is answered, else None."""
    done = {r["id"]: r for r in run.records()}
    if any(question_id(q) not in done for q in questions):
        return None
    return [done[question_id(q)] for q in questions]


def make_engine(config: BenchConfig, retriever, llm: Optional[LLM]) -> RagoniteChatEngine:
    completer = None
    if config.completion == "offline":
        from llama_index_ragonite.chat.completion import OfflineQuestionCompleter

        completer = OfflineQuestionCompleter()
    elif config.completion == "llm":
        from llama_index_ragonite.chat.completion import LLMQuestionCompleter

        completer = cast(Any, LLMQuestionCompleter(llm=llm))
    return RagoniteChatEngine(
        retriever,
        llm=llm,
        completer=completer,
        top_k=config.top_k,
        complete_questions=config.completion in ("offline", "llm"),
        follow_ups=0,
    )


def run_config(
    run: ConfigRun,
    questions: Sequence[Question],
    retriever,
    llm: Optional[LLM] = None,
    judge_llm: Optional[LLM] = None,
    attribute: Optional[AttributionHook] = None,
    show_progress: bool = True,
    score: Optional[ScoreHook] = None,
) -> List[dict]:
    """Answer every question not yet in ``run.answers``; returns all records, in question order.

    ``score``: more scores per answer (model-based metrics), given the gold completed question,
    the scored answer text and the retrieved evidences as the answerer saw them."""
    engine = make_engine(run.config, retriever, llm)
    label = getattr(engine.llm, "label", "")  # the extractive answerer's prefix
    done = {r["id"]: r for r in run.records()}
    todo = sum(question_id(q) not in done for q in questions)
    bar = _progress(todo, run.name, show_progress)
    with open(run.answers, "a", encoding="utf-8") as out:
        for turns in conversations(questions):
            engine.reset()
            replay: List[ChatMessage] = []
            for q in turns:
                if question_id(q) in done:
                    record = done[question_id(q)]
                    replay += [
                        ChatMessage(role=MessageRole.USER, content=record["message"]),
                        ChatMessage(role=MessageRole.ASSISTANT, content=record["answer"]),
                    ]
                    continue
                record = _ask(engine, q, run, label, replay or None, judge_llm, attribute, score)
                replay = []
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                out.flush()
                done[record["id"]] = record
                bar.update(1)
    bar.close()
    return [done[question_id(q)] for q in questions]


def _ask(engine, q: Question, run: ConfigRun, label: str, history, judge_llm, attribute, score) -> dict:
    message = q.completed if run.config.completion == "human" else q.question
    start = time.perf_counter()
    response = engine.chat(message, chat_history=history)
    seconds = time.perf_counter() - start
    nodes = response.source_nodes
    urls = [n.node.metadata.get("url", "") for n in nodes]
    gold = gold_keys(q.gold_urls)
    answer = answer_text(response.response, label)
    contexts = [n.node.get_content(MetadataMode.LLM) for n in nodes]
    scores = {
        "p1": precision_at_1(urls, gold),
        "mrr": mrr_at_k(urls, gold, run.config.top_k),
        "recall": recall_at_k(urls, gold, run.config.top_k),
        "token_recall": token_recall(answer, [q.answer]),
        "k_precision": k_precision(answer, contexts),
        "out_of_scope": float(is_out_of_scope(response.response)),
    }
    if score is not None:
        scores.update(score(q.completed, answer, contexts))
    if judge_llm is not None:
        scores["relevance"] = cast(float, judge(judge_llm, q.completed, q.answer, answer))
    record = {
        "id": question_id(q),
        "conv_id": q.conv_id,
        "turn": q.turn,
        "lang": q.lang,
        "q_type": q.q_type,
        "source": q.source,
        "question": q.question,
        "message": message,
        "completed_question": response.completed_question,
        "gold_completed_question": q.completed,
        "gold_urls": list(q.gold_urls),
        "gold_answer": q.answer,
        "retrieved_ids": [n.node.node_id for n in nodes],
        "retrieved_urls": urls,
        "retrieved_types": [n.node.metadata.get("evidence_type", "") for n in nodes],
        "answer": response.response,
        "cited_sources": list(response.turn.cited),
        "cited_urls": [urls[i - 1] for i in response.turn.cited],
        "scores": scores,
        "seconds": round(seconds, 4),
    }
    if attribute is not None:
        record["attribution"] = attribute(q, response)
    return record


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, name: str, show: bool):
    if not show or total == 0:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm comes with llama-index-core
        return _NoBar()
    return tqdm(total=total, desc=name, unit="q")
