"""ConfQuestions conversations played turn by turn through the chat engine of a given package copy.

What the experiments ``completion`` and ``graph_spread`` share (``calibrate_scope`` reads the lists): the
off-topic requests asked after each conversation (``benchmarks/off_topic_questions.json``: each list
written after the previous ones, its note says when and what was chosen on it), the conversations of our
own (``benchmarks/completion_conversations.json``), and ``play``, run in a child process (``Bench.call``)
with the package copy to measure (the baseline's or this tree's) first on ``sys.path``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Dict, List

from harness import CHECKOUT

OWN = CHECKOUT / "benchmarks" / "completion_conversations.json"
LISTS: Dict[str, Dict[str, List[str]]] = json.loads(
    (CHECKOUT / "benchmarks" / "off_topic_questions.json").read_text(encoding="utf-8")
)["lists"]
OFF_TOPIC = LISTS["off_topic"]  # asked by the conversation's own engine
LATER_LISTS = tuple(key for key in LISTS if key != "off_topic")  # each by an engine seeded with the history


def play(data: str, store: str) -> dict:
    """Play every conversation, then the off-topic requests, through the engine of the package first on
    ``sys.path``: per turn the completed question, the sources' pages, the out-of-scope decision."""
    from harness.store import open_all_store
    from llama_index_ragonite import RagoniteChatEngine
    from llama_index_ragonite.bench.confquestions import load_questions
    from llama_index_ragonite.prompts import OUT_OF_SCOPE
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    questions = load_questions(Path(data))
    retriever = HybridRetriever.from_store(open_all_store(Path(store), Path(data)), k_lexical=10, k_dense=10, top_n=10)
    conversations: Dict[tuple, list] = {}
    for i, q in enumerate(questions):
        conversations.setdefault((q.conv_id, q.lang), []).append(i)
    turns: List[dict] = [{} for _ in questions]
    result = dict(turns=turns, off_topic=[], own=[], **{key: [] for key in LATER_LISTS})
    start = time.perf_counter()

    def ask(engine, message):
        r = engine.chat(message)
        return dict(
            completed=r.completed_question,
            urls=[n.node.metadata.get("url", "") for n in r.source_nodes],
            title=r.source_nodes[0].node.metadata.get("title") if r.source_nodes else None,
            out_of_scope=OUT_OF_SCOPE.rstrip(".") in r.response,
            choice=(r.metadata.get("retrieval") or {}).get("choice", ""),
            answer=r.response[:2000],
        )

    for n, ((_, lang), indices) in enumerate(conversations.items()):
        engine = RagoniteChatEngine.from_defaults(retriever, follow_ups=0)
        for i in indices:
            turns[i] = ask(engine, questions[i].question)
        history = list(engine.chat_history)
        result["off_topic"].append(ask(engine, OFF_TOPIC[lang][n % len(OFF_TOPIC[lang])]))
        for key in LATER_LISTS:
            side = RagoniteChatEngine.from_defaults(retriever, chat_history=history, follow_ups=0)
            question = LISTS[key][lang][n % len(LISTS[key][lang])]
            result[key].append(dict(ask(side, question), question=question))
    for conversation in json.loads(OWN.read_text(encoding="utf-8"))["conversations"]:
        engine = RagoniteChatEngine.from_defaults(retriever, follow_ups=0)
        result["own"].append([ask(engine, turn["q"]) for turn in conversation["turns"]])
    result["wall_s"] = time.perf_counter() - start
    result["package"] = str(Path(sys.modules["llama_index_ragonite"].__file__).parent.parent)
    return result


def played(bench, code: Path = None, store: Path = None) -> dict:
    """``play`` in a child process importing the package from ``code`` (None: this checkout), on ``store``."""
    result = bench.call("play", code, data=str(bench.data.resolve()), store=str((store or bench.store_path).resolve()))
    if Path(result["package"]).resolve() != (code or CHECKOUT).resolve():
        raise SystemExit(f"the child imported the package from {result['package']}, not from {code or CHECKOUT}")
    return result


def list_label(key: str) -> str:
    """A later list's column name ("held_out_off_topic" -> "held-out")."""
    return key.removesuffix("_off_topic").replace("_", "-")


def refused(run: dict, key: str) -> str:
    """How many requests of one off-topic list were answered out of scope: "n/m"."""
    asked = run.get(key, [])
    return f"{sum(o['out_of_scope'] for o in asked)}/{len(asked)}"
