"""Explanations of a stored turn, as the page shows them.

A turn is explained from what the answer saw: the evidences it stored, in prompt order, the
completed question, the answer and the LLM that wrote it (the conversation's current LLM
when that one is no longer configured). ``counterfactual`` is the paper's attribution, ``naive``
and ``surrogate`` the other attributions; ``combination`` and ``permutation`` are RAGE's
explanations with their answer distribution, rules, answer groupings and the perturbations that
changed the answer. Each takes the options ``explain_options`` lets a user set. Evidence numbers
in the JSON are 1-based, as the sources of the turn are.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from llama_index_ragonite.explain.perturbations import Perturbation, PerturbationReport
from llama_index_ragonite.explain.query_engine import nothing_to_explain
from llama_index_ragonite.serve.explain_options import ATTRIBUTORS, RAGE, checked_options
from llama_index_ragonite.serve.turns import nodes_from_records

__all__ = ["explain_turn"]


def explain_turn(
    sessions: Any,
    owner: str,
    conversation_id: str,
    number: int,
    method: str,
    options: Optional[dict] = None,
    principal: Any = None,
) -> Dict[str, Any]:
    """Run ``method`` with ``options`` on turn ``number`` and keep the result with the turn (sync: call it
    off the event loop); the result names the options it ran with. Only a turn whose pages the caller
    may still read is explained, and only over its own evidences (``Sessions.stored_turn``)."""
    options = checked_options(method, options)  # refused before any work
    turn, records, settings = sessions.stored_turn(owner, conversation_id, number, principal)
    result = {
        **_explain(sessions, conversation_id, turn, records, settings, method, options, principal),
        "options": options,
    }
    sessions.records.add_explanation(conversation_id, number, method, result)
    sessions.access_log.write("explanation", principal, owner, conversation_id, turn=number, method=method)
    return result


def _explain(
    sessions: Any,
    conversation_id: str,
    turn: Dict[str, Any],
    records: List[dict],
    settings: Dict[str, Any],
    method: str,
    options: Dict[str, Any],
    principal: Any,
) -> Dict[str, Any]:
    nodes = nodes_from_records(records)
    stored_out_of_scope = bool(turn.get("out_of_scope"))  # as the turn was stored (turns.turn_json)
    nothing = nothing_to_explain(turn.get("answer") or "", len(nodes), stored_out_of_scope)
    if nothing:
        raise ValueError(nothing)
    run_settings = sessions.turn_settings(turn, settings)
    engine, _ = sessions.engine(conversation_id, run_settings, principal)
    question, answer = turn["completed_question"], turn["answer"]
    if method in ATTRIBUTORS:
        attribution = ATTRIBUTORS[method].from_engine(engine, **options).attribute(question, nodes, answer)
        return _attribution(method, attribution, turn)
    explainer = RAGE[method](
        llm=engine.llm, prompt=engine.answer_prompt, synthesizer=engine.answer_synthesizer, **options
    )
    return _rage(method, explainer.explain(question, nodes, answer))


def _attribution(method: str, attribution: Any, turn: Dict[str, Any]) -> Dict[str, Any]:
    data = attribution.to_dict()
    cited = set(turn.get("cited") or [])
    return {
        "method": method,
        "shares": [
            {"evidence": i, "share": share, "cited": i in cited}
            for i, share in enumerate(attribution.evidence_shares, 1)
        ],
        "clusters": data["clusters"],
        "spread": (attribution.settings or {}).get("spread", "split"),  # near-duplicates split a share, or each show it
        "claims": data["claims"],
        "complete": attribution.complete,
        "incomplete": attribution.incompleteness(),
        "text": attribution.to_text(),
        "llm_calls": attribution.llm_calls,
        "seconds": attribution.wall_time_s,
    }


def _one_based(indices) -> List[int]:
    return [i + 1 for i in indices]


def _perturbation(p: Perturbation) -> Dict[str, Any]:
    return {
        "kind": p.kind,
        "description": p.describe(),
        "evidences": _one_based(p.evidences),
        "removed": _one_based(p.removed),
        "kendall_tau": p.kendall_tau,
        "answer": p.answer,
        "changed": p.changed,
        "failed": p.failed,
    }


def _rage(method: str, report: PerturbationReport) -> Dict[str, Any]:
    analysis = report.analysis  # the answer distribution is its own analysis, separate from the search
    groupings = [
        {"answer": s.text, "original": s.original, "count": s.count, "perturbations": [_perturbation(p) for p in m]}
        for s, m in (analysis.groupings if analysis else [])
    ]
    return {
        "method": method,
        "mode": report.mode,
        "question": report.question,
        "original_answer": report.original_answer,
        "explanation": _perturbation(report.explanation) if report.explanation else None,
        "counterfactual_answer": report.counterfactual_answer,
        "answer_distribution": [
            {"answer": s.text, "share": s.share, "count": s.count, "original": s.original} for s in report.distribution
        ],
        "rules": [
            {
                "text": r.text,
                "answer": r.answer,
                "support": r.support,
                "relation": r.relation,
                "evidences": _one_based(r.evidences),
                "position": None if r.position is None else r.position + 1,
            }
            for r in report.rules
        ],
        "groupings": groupings,
        "counterfactuals": [_perturbation(p) for p in report.perturbations if p.changed],
        "tried": [_perturbation(p) for p in report.perturbations],  # the answer-counterfactuals table
        "perturbations": len(analysis.perturbations) if analysis else 0,
        "complete": report.complete,
        "incomplete": report.incompleteness(),
        "text": report.to_text(),
        "llm_calls": report.llm_calls,
        "seconds": report.wall_time_s,
    }
