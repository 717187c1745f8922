"""Benchmark records in the fields of Unitxt's RAG tasks, one JSON line per question and configuration.

Unitxt's end-to-end RAG task (``tasks.rag.end_to_end``) takes the inputs ``question``,
``question_id``, ``metadata_field`` (a string) and the references ``reference_answers``,
``reference_contexts``, ``reference_context_ids``, ``is_answerable_label``; its prediction is a
``RagResponse`` (``answer``, ``contexts``, ``context_ids``, ``is_answerable``: ``unitxt.types.RagResponse``,
whose ``context_ids`` its context-correctness metrics copy to the prediction; ``contexts_ids`` is an input of
another task, ``tasks.rag.response_generation``; ``contexts_id`` is no field of either). Each line carries
the task's fields under its own names, and the prediction both nested as ``prediction`` and at the
top level under the same names (so one line is both a test instance and its prediction).

ConfQuestions' gold is a page, not an evidence: context ids are page keys (the Confluence page
id, ``bench.metrics.page_key``), so Unitxt's context correctness (MRR of the first gold id)
is this suite's page-level MRR. ``question`` is the gold completed question (standalone, as the
task expects; records written before it was kept give the run's own completion); the turn as
asked is in ``metadata_tags["turn_text"]``. Every ConfQuestions
question is answerable (``is_answerable_label`` true); a run's answer is answerable unless it is
the out-of-scope sentence. ``contexts`` are the retrieved evidences as the answerer saw them.
``metadata_field`` is the JSON of the configuration, the conversation, turn, language, question type
and answer source, the turn as asked and the evidence ids (the task types it as one string).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Sequence

from llama_index.core.schema import BaseNode, MetadataMode

from llama_index_ragonite.bench.answer_metrics import is_out_of_scope
from llama_index_ragonite.bench.metrics import page_key

TASK_FIELDS = (
    "question_id",
    "question",
    "metadata_field",
    "reference_answers",
    "reference_contexts",
    "reference_context_ids",
    "is_answerable_label",
    "prediction",
)


def unitxt_record(record: dict, nodes: Mapping[str, BaseNode], configuration: str) -> dict:
    """One benchmark record in Unitxt's RAG fields; ``nodes``: the run's evidences by node id."""
    contexts = [nodes[i].get_content(MetadataMode.LLM) if i in nodes else "" for i in record["retrieved_ids"]]
    context_ids = [page_key(url) for url in record["retrieved_urls"]]
    answerable = not is_out_of_scope(record["answer"])
    tags = {
        "configuration": configuration,
        "conv_id": str(record["conv_id"]),
        "turn": str(record["turn"]),
        "lang": record["lang"],
        "q_type": record["q_type"],
        "answer_source": record["source"],
        "turn_text": record["question"],
        "evidence_ids": json.dumps(record["retrieved_ids"]),
    }
    prediction = {
        "answer": record["answer"],
        "contexts": contexts,
        "context_ids": context_ids,
        "is_answerable": answerable,
    }
    return {
        "question_id": record["id"],
        "question": record.get("gold_completed_question") or record["completed_question"],
        "metadata_field": json.dumps(tags, ensure_ascii=False),
        "reference_answers": [record["gold_answer"]],
        "reference_contexts": [],
        "reference_context_ids": sorted({page_key(u) for u in record["gold_urls"] if u}),
        "is_answerable_label": True,
        **prediction,
        "prediction": prediction,
    }


def write_unitxt(runs: Iterable[tuple], path: Path) -> int:
    """Write ``(configuration name, records, nodes by id)`` runs to ``path`` (JSONL); returns the line count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for name, records, nodes in runs:
            for record in records:
                out.write(json.dumps(unitxt_record(record, nodes, name), ensure_ascii=False) + "\n")
                count += 1
    return count


def nodes_by_id(nodes: Sequence[BaseNode]) -> Dict[str, BaseNode]:
    return {n.node_id: n for n in nodes}


def read_unitxt(path: Path) -> List[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
